"""Record one real RLlib result dict per release family, for the compatibility seam's unit tests (no network there).

Run it with a release's own Python (a history environment: ``rlbench history`` makes them, or
``python -c "from rlbench.run.envs import ensure_env; print(ensure_env({'ray': '2.44.1'}))"``)::

    ENV/bin/python scripts/record_rllib_results.py tests/adapters/fixtures/rllib_results

It builds CartPole PPO and APPO as a trial does (rlbench's config: the per-iteration path of the running release,
the timing callback, the learner probes), with the driver's own env runner and learner, trains three iterations
and writes the third one's result dict (numbers made plain JSON) with what the trainer adds beside it (the
env-connector sync it peeks, the runner and learner counts, the release's read paths) to
``<folder>/<release>-<algo>.json``. Each file is a few kilobytes; the tests read them with no Ray running.
"""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path


def plain(value):
    """A result's value as JSON: numbers as floats (NaN as None), containers opened, anything else left out."""
    if isinstance(value, dict):
        out = {str(k): plain(v) for k, v in value.items()}
        return {k: v for k, v in out.items() if v is not _SKIP}
    if isinstance(value, (list, tuple)):
        return _SKIP  # per-episode lists and the like: nothing rlbench reads
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return value
    try:
        number = float(value)
    except (TypeError, ValueError):
        return _SKIP
    return None if math.isnan(number) else number


_SKIP = object()

#: What the seam reads (rlbench.adapters.rllib.results), kept; the rest of a result dict is left out of the fixture.
KEEP = {
    "timers": None,
    "num_training_step_calls_per_iteration": None,
    "env_runners": ("num_env_steps_sampled", "episode_return_mean", "rlbench"),
    "learners": ("__all_modules__", "rlbench", "default_policy"),
}


def kept(result: dict) -> dict:
    """The parts of a (plain) result dict the seam reads."""
    out = {}
    for key, inner in KEEP.items():
        if key in result:
            value = result[key]
            out[key] = (
                value if inner is None or not isinstance(value, dict) else {k: value[k] for k in inner if k in value}
            )
    return out


def record(folder: Path, algo: str) -> Path:
    import ray

    from rlbench.adapters.rllib import compat
    from rlbench.adapters.rllib.config import build_config
    from rlbench.adapters.rllib.learner_probe import install_on_learners
    from rlbench.adapters.rllib.results import TIMER_SYNC_CONNECTORS
    from rlbench.spec.model import TrialConfig

    config = TrialConfig.model_validate(
        {
            "algo": algo,
            "environment": {"env": "CartPole-v1"},
            "env_runners": {"num_env_runners": 0},
            "training": {"train_batch_size_per_learner": 200, "minibatch_size": 100, "num_epochs": 1},
            "reporting": {"min_time_s_per_iteration": 0, "min_sample_timesteps_per_iteration": 200},
            "rl_module": {"fcnet_hiddens": [16]},
        }
    )
    algo_obj = compat.build(build_config(config, seed=1))
    install_on_learners(algo_obj)
    try:
        for _ in range(3):
            result = algo_obj.train()
        peek = algo_obj.metrics.peek(TIMER_SYNC_CONNECTORS, default=0.0)
    finally:
        algo_obj.stop()
    body = {
        "release": ray.__version__,
        "algo": algo,
        "num_env_runners": 0,
        "num_learners": 0,
        "sync_connectors_peek": plain(peek),
        "read_paths": compat.paths_taken(),
        "result": kept(plain(result)),
    }
    folder.mkdir(parents=True, exist_ok=True)
    out = folder / f"{ray.__version__}-{algo}.json"
    out.write_text(json.dumps(body, indent=1, sort_keys=True) + "\n")
    return out


def main() -> None:
    import ray

    folder = Path(sys.argv[1])
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, logging_level="ERROR")
    try:
        for algo in ("PPO", "APPO"):
            try:
                print(record(folder, algo))
            except ValueError as e:  # RLlib 2.41-2.42 refuse APPO's CPU learner in the driver: nothing to record
                print(f"{algo}: not recorded: {e}")
    finally:
        ray.shutdown()


if __name__ == "__main__":
    main()
