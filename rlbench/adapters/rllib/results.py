"""Reading one iteration's exact phase times and counts from RLlib's result dict (RLlib's result keys).

RLlib's ``timers/*`` are exponential moving averages (coefficient 0.01) that are never reset, so
the value in iteration N's result is mostly iteration 1's. :mod:`rlbench.adapters.rllib.config`
replaces RLlib's ``ema`` stats class with a plain mean that clears on every reduce
(``config.reporting(custom_stats_cls_lookup=...)``), so each timer in a result is the mean of the
values logged during that iteration alone; PPO times each phase once per training step and runs
one training step per iteration, so the mean is the phase's duration in that iteration.
"""

from __future__ import annotations

import math
from typing import Any

TIMER_SAMPLE = ("timers", "env_runner_sampling_timer")


TIMER_LEARN = ("timers", "learner_update_timer")


TIMER_SYNC_WEIGHTS = ("timers", "synch_weights")


TIMER_SYNC_CONNECTORS = ("timers", "synch_env_connectors")


#: Summed over env runners by rlbench's PhaseTimingCallback (rllib_timing.py).
ENV_RUNNERS_ENV_S = ("env_runners", "rlbench", "env_step_s")


ENV_RUNNERS_INFERENCE_S = ("env_runners", "rlbench", "inference_s")


#: Per env runner values logged by rlbench's PhaseTimingCallback: ``RUNNERS + (worker index, name)``.
RUNNERS = ("env_runners", "rlbench", "runner")


#: Learner connector pipeline (GAE etc.): one call per update, so the per-iteration mean is its time.
LEARNER_CONNECTOR_S = ("learners", "__all_modules__", "learner_connector", "connector_pipeline_timer")


#: Result metrics a ``stop:`` target may name: short name -> its path in RLlib's result dict. The
#: path written with ``/`` (``env_runners/episode_return_mean``, Tune's spelling) is accepted too.
#: ``env_runners/episode_*`` are means over the episodes that ended during the iteration (RLlib
#: 2.60 clears its episode window on every reduce; see docs/ANALYSIS.md), NaN when none ended.
RESULT_METRICS: dict[str, tuple[str, ...]] = {
    **{key: ("env_runners", key) for key in (
        "episode_return_mean", "episode_return_min", "episode_return_max", "episode_len_mean",
        "episode_len_min", "episode_len_max", "num_episodes", "num_episodes_lifetime",
        "num_env_steps_sampled_lifetime")},
    **{key: ("learners", "default_policy", key) for key in (
        "policy_loss", "vf_loss", "total_loss", "entropy", "mean_kl_loss", "vf_explained_var", "curr_kl_coeff")},
}


def metric_names() -> list[str]:
    """Every name a stop target may use: the short names, then the ``/`` paths."""
    return list(RESULT_METRICS) + ["/".join(path) for path in RESULT_METRICS.values()]


def metric_path(name: str) -> tuple[str, ...]:
    """The result-dict path of a metric named by its short name or its ``/`` path (KeyError otherwise)."""
    if name in RESULT_METRICS:
        return RESULT_METRICS[name]
    path = tuple(name.split("/"))
    if path in RESULT_METRICS.values():
        return path
    raise KeyError(name)


def metric_value(result: dict, name: str) -> float | None:
    """The metric's value in one iteration's result; None when the result lacks it or it is NaN
    (no episode ended in the iteration)."""
    value = _get(result, metric_path(name), default=float("nan"))
    return None if math.isnan(value) else value


def _get(result: dict, path: tuple, default: float = 0.0) -> float:
    node: Any = result
    for key in path:
        if not isinstance(node, dict) or key not in node:
            return default
        node = node[key]
    try:
        value = float(node)
    except (TypeError, ValueError):
        return default
    return default if math.isnan(value) else value


def sampling_split(sample_s: float, env_total_s: float, inference_total_s: float, *,
                   sampling_runners: int) -> dict[str, float]:
    """Split an iteration's sampling wall time into env, inference and the rest.

    ``env_total_s`` and ``inference_total_s`` are summed over the env runners that sampled (they
    run in parallel); divided by their number they become wall-equivalent seconds (the mean env
    runner's), so ``env_step_s + inference_s + sample_other_s == sample_s``. ``sample_other_s``
    holds the connectors, episode bookkeeping, transfer to the driver and the wait for the
    slowest runner.
    """
    env_step_s = env_total_s / sampling_runners
    inference_s = inference_total_s / sampling_runners
    return {"env_step_s": env_step_s, "inference_s": inference_s,
            "sample_other_s": sample_s - env_step_s - inference_s}


def runner_timings(result: dict) -> list[dict[str, Any]]:
    """Each env runner's own figures for the iteration, in worker-index order: ``env_runner`` (RLlib's
    worker index; 0 is the driver's local runner), ``pid``, ``env_steps``, ``env_step_s``,
    ``env_step_cpu_s`` (the sampling thread's CPU time inside the env), ``inference_s``, ``sample_s`` (wall time of its ``sample()`` calls) and ``sample_cpu_s`` (CPU
    time of its sampling thread in them); a value the runner did not log is None."""
    node: Any = result
    for key in RUNNERS:
        node = node.get(key) if isinstance(node, dict) else None
    if not isinstance(node, dict):
        return []
    rows = []
    for index in sorted((k for k in node if str(k).isdigit()), key=int):
        values = node[index] if isinstance(node[index], dict) else {}
        row: dict[str, Any] = {"env_runner": int(index)}
        for name in ("pid", "env_steps", "env_step_s", "env_step_cpu_s", "inference_s", "sample_s", "sample_cpu_s"):
            value = _get(values, (name,), default=float("nan"))
            row[name] = None if math.isnan(value) else (int(value) if name in ("pid", "env_steps") else value)
        rows.append(row)
    return rows


def iteration_timings(algo, result: dict, *, weight_bytes: int | None = None,
                      weight_receivers: int = 0) -> dict[str, Any]:
    """This iteration's exact phase times and step counts from its result dict.

    ``sync_s`` is the weight broadcast plus the env-connector state sync. RLlib times the latter
    after it has reduced the iteration's metrics, so the result shows it one iteration late; we
    read it from the algorithm's metrics logger right after ``train()`` returns instead.
    ``weight_sync_s`` is the broadcast alone (RLlib's ``synch_weights``). PPO broadcasts the
    inference-only RLModule's weights (``weight_bytes``, measured once after build) to every remote
    env runner once per iteration, so ``sync_bytes = weight_bytes x weight_receivers``.
    """
    connectors_s = _get({"m": algo.metrics.peek(TIMER_SYNC_CONNECTORS, default=0.0)}, ("m",))
    sample_s, learn_s = _get(result, TIMER_SAMPLE), _get(result, TIMER_LEARN)
    split = sampling_split(sample_s, _get(result, ENV_RUNNERS_ENV_S), _get(result, ENV_RUNNERS_INFERENCE_S),
                           sampling_runners=max(1, int(algo.config.num_env_runners or 0)))
    connector_s = _get(result, LEARNER_CONNECTOR_S)
    weight_sync_s = _get(result, TIMER_SYNC_WEIGHTS)
    sync_bytes = weight_bytes * weight_receivers if weight_bytes is not None else None
    return {
        "sample_s": sample_s,
        **split,
        "learn_s": learn_s,
        "learner_connector_s": connector_s,
        "sgd_s": learn_s - connector_s,
        "sync_s": weight_sync_s + connectors_s,
        "weight_sync_s": weight_sync_s,
        "sync_bytes": sync_bytes,
        "sync_bytes_per_s": sync_bytes / weight_sync_s if sync_bytes and weight_sync_s > 0 else None,
        "env_steps_sampled": int(_get(result, ("env_runners", "num_env_steps_sampled"))),
        "env_steps_trained": int(_get(result, ("learners", "__all_modules__", "num_env_steps_trained"))),
        "episode_return_mean": _get(result, ("env_runners", "episode_return_mean"), default=float("nan")),
        "runners": runner_timings(result),
    }
