"""Reading one iteration's exact phase times and counts from RLlib's result dict (RLlib's result keys).

RLlib's ``timers/*`` are exponential moving averages (coefficient 0.01) that are never reset, so
the value in iteration N's result is mostly iteration 1's. :mod:`rlbench.adapters.rllib.config`
replaces RLlib's ``ema`` stats class with a plain mean that clears on every reduce
(``config.reporting(custom_stats_cls_lookup=...)``), and the driver's phase timers are registered
as sums (:data:`rlbench.adapters.rllib.timing.DRIVER_SUM_TIMERS`), so each is the phase's total in
that iteration: PPO runs one training step per iteration, IMPALA, APPO, DQN and SAC many (DQN and SAC:
one sampling round, one replay draw, one learner update and one weight sync each, until the iteration has
sampled ``min_sample_timesteps_per_iteration`` env steps).

The driver's split (``sample_s``, ``learn_s``, ``sync_s``) is the driver's own time: for PPO the
phases in turn; for IMPALA and APPO, whose env runners and learner threads keep working while the
driver loops, the driver's waits. What the env runners and learners themselves did is measured
where they run (:mod:`rlbench.adapters.rllib.timing`, :mod:`rlbench.adapters.rllib.learner_probe`).
"""

from __future__ import annotations

import math
from typing import Any

from rlbench.adapters.rllib import compat
from rlbench.adapters.vocabulary import EPISODE_METRICS

TIMER_SAMPLE = ("timers", "env_runner_sampling_timer")


#: IMPALA and APPO time their (non-blocking) fetch of ready samples under this key instead.
TIMER_SAMPLE_ASYNC = ("timers", "sample")


TIMER_LEARN = ("timers", "learner_update_timer")


TIMER_SYNC_WEIGHTS = ("timers", "synch_weights")


TIMER_SYNC_CONNECTORS = ("timers", "synch_env_connectors")


#: DQN and SAC (``DQN.training_step``): the sampled episodes stored, the train batch drawn, the priorities
#: updated from the TD errors. The driver's own work, outside the sampling, learning and sync timers.
TIMER_REPLAY_ADD = ("timers", "replay_buffer_add_data_timer")
TIMER_REPLAY_SAMPLE = ("timers", "replay_buffer_sampling_timer")
TIMER_REPLAY_UPDATE = ("timers", "replay_buffer_update_prios_timer")


#: Summed over env runners by rlbench's PhaseTimingCallback (rllib_timing.py).
ENV_RUNNERS_ENV_S = ("env_runners", "rlbench", "env_step_s")


ENV_RUNNERS_INFERENCE_S = ("env_runners", "rlbench", "inference_s")


#: Per env runner values logged by rlbench's PhaseTimingCallback: ``RUNNERS + (worker index, name)``.
RUNNERS = ("env_runners", "rlbench", "runner")


#: rlbench's learner probes (learner_probe.py), summed (lags: mean, max) over learners by RLlib.
LEARNERS_BUSY_S = ("learners", "rlbench", "busy_s")
LEARNERS_UPDATES = ("learners", "rlbench", "updates")
LEARNERS_SGD_STEPS = ("learners", "rlbench", "sgd_steps")
LEARNERS_LAG_MEAN = ("learners", "rlbench", "policy_lag_mean")
LEARNERS_LAG_MAX = ("learners", "rlbench", "policy_lag_max")
LEARNERS_TARGET_UPDATE_S = ("learners", "rlbench", "target_update_s")
LEARNERS_TARGET_UPDATES = ("learners", "rlbench", "target_updates")
LEARNERS_BATCHES = ("learners", "rlbench", "batches_built")
LEARNERS_BATCH_S = ("learners", "rlbench", "batch_s")
LEARNERS_UPDATE_S = ("learners", "rlbench", "update_s")
LEARNERS_COPY_S = ("learners", "rlbench", "copy_s")
LEARNERS_DEVICE_S = ("learners", "rlbench", "device_s")


#: RLlib's count of training_step() calls in the iteration.
TRAINING_STEPS = ("num_training_step_calls_per_iteration",)


#: Learner connector pipeline (GAE etc.): one call per train batch built, its per-iteration mean the time of one
#: call: PPO's whole iteration (one batch); APPO's, IMPALA's, DQN's and SAC's many batches multiply it
#: (:func:`learner_split`). RLlib 2.60's key; each release's: :func:`.compat.connector_timer_key`.
LEARNER_CONNECTOR_S = ("learners", "__all_modules__", "learner_connector", "connector_pipeline_timer")


#: Result metrics a ``stop:`` target may name: short name -> its path in RLlib's result dict. The
#: path written with ``/`` (``env_runners/episode_return_mean``, Tune's spelling) is accepted too.
#: ``env_runners/episode_*`` are means over the episodes that ended during the iteration (RLlib
#: 2.60 clears its episode window on every reduce; see docs/ANALYSIS.md), NaN when none ended.
RESULT_METRICS: dict[str, tuple[str, ...]] = {
    **{
        key: ("env_runners", key)
        for key in (*EPISODE_METRICS, "num_episodes_lifetime", "num_env_steps_sampled_lifetime")
    },
    **{
        key: ("learners", "default_policy", key)
        for key in (
            "policy_loss",
            "vf_loss",
            "total_loss",
            "entropy",
            "mean_kl_loss",
            "vf_explained_var",
            "curr_kl_coeff",
        )
    },
}


def metric_names() -> list[str]:
    """Every name a stop target may use: the short names, then the ``/`` paths."""
    return list(RESULT_METRICS) + ["/".join(path) for path in RESULT_METRICS.values()]


#: Result metric -> the iterations-table column that holds it every iteration (:func:`iteration_timings`).
METRIC_COLUMNS: dict[str, str] = {"episode_return_mean": "episode_return_mean"}


def metric_column(name: str) -> str | None:
    """The iterations-table column of a metric named by its short name or its ``/`` path; None when the table
    has none (or the name is not a metric)."""
    try:
        path = metric_path(name)
    except KeyError:
        return None
    return next((column for metric, column in METRIC_COLUMNS.items() if RESULT_METRICS[metric] == path), None)


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


def sampling_split(
    sample_s: float, env_total_s: float, inference_total_s: float, *, sampling_runners: int
) -> dict[str, float]:
    """Split an iteration's sampling wall time into env, inference and the rest.

    ``env_total_s`` and ``inference_total_s`` are summed over the env runners that sampled (they
    run in parallel); divided by their number they become wall-equivalent seconds (the mean env
    runner's), so ``env_step_s + inference_s + sample_other_s == sample_s``. ``sample_other_s``
    holds the connectors, episode bookkeeping, transfer to the driver and the wait for the
    slowest runner.
    """
    env_step_s = env_total_s / sampling_runners
    inference_s = inference_total_s / sampling_runners
    return {"env_step_s": env_step_s, "inference_s": inference_s, "sample_other_s": sample_s - env_step_s - inference_s}


def runner_timings(result: dict) -> list[dict[str, Any]]:
    """Each env runner's own figures for the iteration, in worker-index order: ``env_runner`` (RLlib's
    worker index; 0 is the driver's local runner), ``pid``, ``env_steps``, ``env_step_s``,
    ``env_step_cpu_s`` (the sampling thread's CPU time inside the env), ``inference_s``, ``sample_s`` (wall time of its
    ``sample()`` calls) and ``sample_cpu_s`` (CPU
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


def replay_timings(result: dict, *, learners: int) -> dict[str, Any]:
    """What an off-policy (replay) iteration adds to the split: the driver's seconds in its replay buffer,
    per part and in all (``replay_s``, inside ``other_s``: RLlib times them apart from sampling, learning and
    sync), and the learners' target-network updates (``target_update_s``, seconds per learner inside
    ``learn_s``; ``target_updates``, per learner)."""
    add_s, sample_s, update_s = (_get(result, k) for k in (TIMER_REPLAY_ADD, TIMER_REPLAY_SAMPLE, TIMER_REPLAY_UPDATE))
    return {
        "replay_add_s": add_s,
        "replay_sample_s": sample_s,
        "replay_update_s": update_s,
        "replay_s": add_s + sample_s + update_s,
        "target_update_s": _get(result, LEARNERS_TARGET_UPDATE_S) / learners,
        "target_updates": _get(result, LEARNERS_TARGET_UPDATES) / learners,
    }


def learner_split(
    result: dict, learn_s: float, *, learners: int, asynchronous: bool, at: compat.Release | None = None
) -> dict[str, Any]:
    """The learner's share of ``learn_s``, split where the learners measured it (per learner: summed over
    learners, divided by their number).

    ``learn_batch_s``: building train batches (the learner connector pipeline: GAE, and on a GPU learner the copy
    to the device and GAE's value pass there); ``learn_update_s``: the minibatch updates (``_update``);
    ``learn_other_s``: the rest of ``learn_s`` (the update loop's own work, the metrics' reduce, target-network
    updates, with remote learners the calls and the batch's transfer), None for an asynchronous algorithm, whose
    learners work beside the driver's ``learn_s`` (a wait). ``learn_batches``: train batches built;
    ``learner_connector_s``: RLlib's pipeline timer, its per-call mean times those batches (it was the mean of one
    call for APPO and IMPALA, which build many a iteration); None on RLlib 2.41-2.43, which have no such timer.
    ``learn_copy_s`` (host-to-device copies) and ``learn_device_s`` (the device's time in the updates, CUDA events)
    are logged by a GPU learner only: None on a CPU learner.
    """
    batch_s, update_s = _get(result, LEARNERS_BATCH_S) / learners, _get(result, LEARNERS_UPDATE_S) / learners
    batches = _get(result, LEARNERS_BATCHES) / learners
    connector = compat.connector_timer_key(at)
    copy_s = _get(result, LEARNERS_COPY_S, default=float("nan"))
    device_s = _get(result, LEARNERS_DEVICE_S, default=float("nan"))
    return {
        "learn_batches": batches,
        "learn_batch_s": batch_s,
        "learn_update_s": update_s,
        "learn_other_s": None if asynchronous else learn_s - batch_s - update_s,
        "learn_copy_s": None if math.isnan(copy_s) else copy_s / learners,
        "learn_device_s": None if math.isnan(device_s) else device_s / learners,
        "learner_connector_s": None if connector is None else _get(result, ("learners", *connector)) * batches,
    }


def iteration_timings(
    algo,
    result: dict,
    *,
    weight_bytes: int | None = None,
    weight_receivers: int = 0,
    replay: bool = False,
    updates_per_sync: int = 1,
    asynchronous: bool = False,
    at: compat.Release | None = None,
) -> dict[str, Any]:
    """This iteration's exact phase times and step counts from its result dict.

    ``sync_s`` is the weight broadcast plus the env-connector state sync. RLlib times the latter
    after it has reduced the iteration's metrics, so the result shows it one iteration late; we
    read it from the algorithm's metrics logger right after ``train()`` returns instead.
    ``weight_sync_s`` is the broadcast alone (RLlib's ``synch_weights``). PPO broadcasts the
    inference-only RLModule's weights (``weight_bytes``, measured once after build) to every remote
    env runner once per iteration, so ``sync_bytes = weight_bytes x weight_receivers``. DQN and SAC
    (``replay``) broadcast once per training step that learned, after its ``updates_per_sync`` learner updates
    (RLlib's round-robin weights: 1 unless ``training_intensity`` asks for more), so the bytes are that many
    times more: ``x learner_updates / updates_per_sync``.
    """
    connectors_s = _get({"m": algo.metrics.peek(TIMER_SYNC_CONNECTORS, default=0.0)}, ("m",))
    sample_s, learn_s = _get(result, TIMER_SAMPLE) + _get(result, TIMER_SAMPLE_ASYNC), _get(result, TIMER_LEARN)
    sampling_runners = max(1, int(algo.config.num_env_runners or 0))
    env_s, inference_s = _get(result, ENV_RUNNERS_ENV_S), _get(result, ENV_RUNNERS_INFERENCE_S)
    split = sampling_split(sample_s, env_s, inference_s, sampling_runners=sampling_runners)
    learners = max(1, int(algo.config.num_learners or 0))
    runners = runner_timings(result)
    counts = overlap_counts(result, runners, sampling_runners=sampling_runners, learners=learners)
    extra = replay_timings(result, learners=learners) if replay else {}
    split_learn = learner_split(result, learn_s, learners=learners, asynchronous=asynchronous, at=at)
    connector_s = split_learn["learner_connector_s"]
    weight_sync_s = _get(result, TIMER_SYNC_WEIGHTS)
    syncs = round(counts["learner_updates"] / updates_per_sync) if replay else 1
    sync_bytes = weight_bytes * weight_receivers * syncs if weight_bytes is not None else None
    sampled = int(_get(result, ("env_runners", "num_env_steps_sampled")))
    return {
        **counts,
        **extra,
        "updates_per_env_step": counts["sgd_steps"] / sampled if sampled else None,
        "sample_s": sample_s,
        **split,
        "learn_s": learn_s,
        **split_learn,
        "sgd_s": None if asynchronous or connector_s is None else learn_s - connector_s,
        "sync_s": weight_sync_s + connectors_s,
        "weight_sync_s": weight_sync_s,
        "sync_bytes": sync_bytes,
        "sync_bytes_per_s": sync_bytes / weight_sync_s if sync_bytes and weight_sync_s > 0 else None,
        "env_steps_sampled": sampled,
        "env_steps_trained": int(_get(result, ("learners", "__all_modules__", "num_env_steps_trained"))),
        "episode_return_mean": _get(result, ("env_runners", "episode_return_mean"), default=float("nan")),
        "runners": runners,
    }


def overlap_counts(
    result: dict, runners: list[dict[str, Any]], *, sampling_runners: int, learners: int
) -> dict[str, Any]:
    """What the env runners and learners did in the iteration, measured where they run.

    ``sampler_busy_s``: seconds inside ``sample()`` (each runner's ``sample_s``, :func:`runner_timings`),
    summed over the env runners and divided by the number that sample (wall-equivalent, like
    ``env_step_s``); None when no runner timed a call. ``learner_busy_s``,
    ``learner_updates``, ``sgd_steps``: the learners' busy seconds, weights versions and minibatch
    steps, divided by the number of learners (per learner). ``policy_lag_mean``/``_max``: over the
    iteration's minibatch updates, RLlib's lag of each (None when no update reported one).
    ``training_steps``: RLlib ``training_step()`` calls (PPO: 1).
    """
    lag_mean = _get(result, LEARNERS_LAG_MEAN, default=float("nan"))
    lag_max = _get(result, LEARNERS_LAG_MAX, default=float("nan"))
    return {
        "training_steps": int(_get(result, TRAINING_STEPS)),
        "sampler_busy_s": (
            sum(busy) / sampling_runners
            if (busy := [r["sample_s"] for r in runners if r.get("sample_s") is not None])
            else None
        ),
        "learner_busy_s": _get(result, LEARNERS_BUSY_S) / learners,
        "learner_updates": _get(result, LEARNERS_UPDATES) / learners,
        "sgd_steps": _get(result, LEARNERS_SGD_STEPS) / learners,
        "policy_lag_mean": None if math.isnan(lag_mean) else lag_mean,
        "policy_lag_max": None if math.isnan(lag_max) else lag_max,
    }
