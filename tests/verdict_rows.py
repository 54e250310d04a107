"""Hand-made configuration rows that more than one test file reads (a verdict's inputs as the analysis' row holds
them)."""

#: A CPU learner that learns 80% of each iteration with its one thread busy, on a 4-core trial: short of threads.
SHORT = {
    "index": 3,
    "env_steps_per_s": 500.0,
    "learn_frac": 0.8,
    "sample_frac": 0.15,
    "learn_batch_s": 0.01,
    "learn_update_s": 2.0,
    "learn_cpus_used": 0.98,
    "driver_torch_threads": 1,
    "cpus": 4,
    "num_learners": 0,
    "learner_gpus": 0,
    "num_cpus_for_main_process": 1,
    "driver_cpus_allocated": 1.0,
    "env_runner_cpus_allocated": 1.0,
}
