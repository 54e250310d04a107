"""Small builders shared by the autoconfig tests."""

from __future__ import annotations

from rlbench.autoconfig.model import Candidate, candidate_key


def cand(
    runners: int,
    envs: int = 1,
    *,
    learners: int = 0,
    gpus: float = 0.0,
    driver: int = 1,
    batch: int = 4000,
    cpus_per_runner: float = 1.0,
    cpus_limit: int | None = None,
) -> Candidate:
    """A candidate named by its runner and env counts (the only axes most tests vary)."""
    axes = {"num_env_runners": runners, "num_envs_per_env_runner": envs}
    if learners:
        axes["num_learners"] = learners
    if gpus:
        axes["learner_gpus"] = gpus
    cpus_per_learner = 0.0 if gpus else 1.0
    # what RLlib's ResourceDemand sums to for these knobs (no aggregator actors, no env runner GPUs), by hand
    return Candidate(
        key=candidate_key(axes),
        axes=tuple(axes.items()),
        num_env_runners=runners,
        num_envs_per_env_runner=envs,
        num_cpus_per_env_runner=cpus_per_runner,
        num_learners=learners,
        num_cpus_per_learner=cpus_per_learner,
        num_gpus_per_learner=gpus,
        num_cpus_for_main_process=driver,
        train_batch_size_per_learner=batch,
        batch_env_steps=batch * max(1, learners),
        cpus=runners * cpus_per_runner + learners * cpus_per_learner + driver,
        gpus=gpus * max(1, learners),
        cpus_limit=cpus_limit,
    )


def drive(stage, reading, wall_s: float = 10.0, cold_start_s: float = 2.0, fail=lambda req: False) -> list:
    """Run a stage to its end the way the sweep will: ask, run every request, tell. ``reading(req)``
    gives (value, reached); returns every result told, in order."""
    from rlbench.autoconfig.ask_tell import TrialResult

    told = []
    while requests := stage.ask():
        results = []
        for req in requests:
            value, reached = (None, True) if fail(req) else reading(req)
            results.append(TrialResult(req.request_id, value, wall_s, cold_start_s, reached))
        stage.tell(results)
        told += results
    return told


def noisy_throughput(truth: dict, cv: float, seed: int = 0):
    """Readings around each candidate's true throughput, Gaussian with this coefficient of variation,
    seeded per request so they do not depend on the order asked."""
    import numpy as np

    from rlbench.spec.seeds import derive_seed

    def reading(req):
        rng = np.random.default_rng([seed, derive_seed(0, req.request_id, sequence="request")])
        return float(truth[req.candidate_key] * (1 + cv * rng.standard_normal())), True

    return reading
