"""Small builders shared by the autoconfig tests."""

from __future__ import annotations

from rlbench.autoconfig.model import Candidate, candidate_key


def cand(runners: int, envs: int = 1, *, learners: int = 0, gpus: float = 0.0, driver: int = 1, batch: int = 4000,
         cpus_per_runner: float = 1.0, cpus_limit: int | None = None) -> Candidate:
    """A candidate named by its runner and env counts (the only axes most tests vary)."""
    axes = {"num_env_runners": runners, "num_envs_per_env_runner": envs}
    if learners:
        axes["num_learners"] = learners
    if gpus:
        axes["learner_gpus"] = gpus
    return Candidate(key=candidate_key(axes), axes=tuple(axes.items()), num_env_runners=runners,
                     num_envs_per_env_runner=envs, num_cpus_per_env_runner=cpus_per_runner, num_learners=learners,
                     num_cpus_per_learner=0.0 if gpus else 1.0, num_gpus_per_learner=gpus,
                     num_cpus_for_main_process=driver, train_batch_size_per_learner=batch, cpus_limit=cpus_limit)
