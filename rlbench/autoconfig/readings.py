"""A finished trial read as autoconfig's reading, and the probes' costs, from the trial's iteration rows.

Pure functions over one trial's rows of the iterations table (``rlbench.results.tables.iterations_frame``
of its events): the steady window (:func:`rlbench.analysis.windows.steady`) and the throughput
(:func:`rlbench.analysis.trial_rows.steady_throughput`) are the analysis's own, so a probe, a search trial
and a sweep's trial read the same (issue 34: the driver had re-derived both from raw events). The
driver (``rlbench.run.autoconfig_driver.trial_files``) reads the files and hands the rows in.
"""

from __future__ import annotations

from dataclasses import replace

import pandas as pd

from rlbench.analysis.learner import WINDOW_COLUMNS, learn_window_columns
from rlbench.analysis.trial_rows import steady_throughput
from rlbench.analysis.windows import steady
from rlbench.autoconfig.ask_tell import TrialResult
from rlbench.autoconfig.model import ProbeCosts
from rlbench.spec.model import TrialConfig

#: Statuses that are a trial's final verdict (an interrupted one runs again on resume).
FINAL = ("ok", "failed", "timeout", "skipped")


def trial_result(
    request_id: str,
    status: str,
    iterations: pd.DataFrame,
    *,
    objective: str,
    target_iteration: int | None,
    charged_s: float | None,
    trial_wall_s: float | None,
) -> TrialResult:
    """One finished trial's reading.

    value: throughput, :func:`~rlbench.analysis.trial_rows.steady_throughput`; time to target, the training
    seconds to the target (the sum of iteration walls up to it), or the seconds it trained when it did not
    reach it (censored), and the env steps sampled over the same iterations. A trial that did not end
    ``ok``, or has no steady iteration, has no value (failed). Charged: the seconds it cost as measured
    from outside (``charged_s``), else the trial's wall; its training seconds are the iterations' walls,
    the rest cold start.

    Args:
        iterations: the trial's rows of the iterations table.
        target_iteration: the iteration at which the stop target was reached (None: not reached).
    """
    its = iterations.sort_values("iteration") if len(iterations) else iterations
    stead = steady(its) if len(its) else its
    trained = float(its["wall_s"].fillna(0.0).sum()) if len(its) else 0.0
    total = charged_s if charged_s is not None else (trial_wall_s or trained)
    iteration_s = float(stead["wall_s"].median()) if len(stead) else None
    value: float | None = None
    steps: float | None = None
    reached = True
    if status == "ok" and len(stead):
        if objective == "throughput":
            value = steady_throughput(stead)
        else:
            reached = target_iteration is not None
            upto = its if target_iteration is None else its[its["iteration"] <= target_iteration]
            value = float(upto["wall_s"].sum())
            steps = float(upto["env_steps_sampled"].fillna(0).sum())
    return TrialResult(
        request_id=request_id,
        value=value,
        wall_s=trained,
        cold_start_s=max(0.0, total - trained),
        reached=reached,
        iteration_s=iteration_s,
        env_steps=steps,
        curve=_curve(its),
    )


def _curve(its: pd.DataFrame) -> tuple[tuple[float, float], ...]:
    """(env steps sampled so far, ``episode_return_mean``) after each iteration that read a return."""
    if its.empty or "episode_return_mean" not in its:
        return ()
    steps = its["env_steps_sampled"].fillna(0).cumsum()
    return tuple((float(s), float(r)) for s, r in zip(steps, its["episode_return_mean"]) if r is not None and r == r)


def rest_per_step(iterations: pd.DataFrame, config: TrialConfig) -> float | None:
    """Seconds of sampling per env step per runner outside the env (inference, connectors), median over the
    steady iterations: ``sample_s`` is the driver's wall (the runners in parallel), ``env_step_s`` is summed
    over the runners."""
    stead = steady(iterations)
    runners = max(1, config.env_runners.num_env_runners)
    stead = stead[stead["env_steps_sampled"].fillna(0) > 0]
    if stead.empty:
        return None
    rows = (stead["sample_s"].fillna(0.0) * runners - stead["env_step_s"].fillna(0.0)) / stead["env_steps_sampled"]
    return float(rows.median())


def with_learn_windows(
    iterations: pd.DataFrame, utilization: pd.DataFrame, config: TrialConfig, *, learner_gpus: float, asynchronous: bool
) -> pd.DataFrame:
    """One trial's iteration rows with its learn windows' ``gpu_busy_pct`` and ``learn_cpus_used`` (what the sweep's
    tables hold: :func:`rlbench.analysis.learner.learn_window_columns`) from its utilization rows."""
    its = iterations.copy()
    if its.empty:
        return its
    trial = str(its["trial_id"].iloc[0])
    its[list(WINDOW_COLUMNS)] = learn_window_columns(
        its, utilization, {trial: (config.learners.num_learners, learner_gpus, asynchronous)}
    )
    return its


def _median(stead: pd.DataFrame, column: str) -> float | None:
    if column not in stead or stead[column].isna().all():
        return None
    return float(stead[column].median())


def learner_costs(
    iterations: pd.DataFrame, batch_per_learner: int, other: tuple[pd.DataFrame, int] | None = None
) -> tuple[float, float] | None:
    """(seconds per env step, seconds per minibatch step) of a probe's learner, from its steady iterations.

    ``learn_s = batch * per_env_step + sgd_steps * per_minibatch_step``. ``other`` (another probe's rows and batch
    per learner, on the same device, at another step count) makes two equations: both costs solved (clamped at 0,
    the first probe then fitted exactly). Else, on a GPU learner whose learn windows' busy share (``gpu_busy_pct``)
    was measured, the updates' idle share is per step: ``learn_update_s * (1 - busy) / sgd_steps`` (the launches and
    syncs the device waited through); otherwise everything is per env step (a minibatch's size then changes
    nothing in the model). None without a steady iteration that learned.
    """
    stead = steady(iterations)
    learn, steps = _median(stead, "learn_s"), _median(stead, "sgd_steps")
    if learn is None or batch_per_learner <= 0:
        return None
    sgd_step = 0.0
    second = None
    if other is not None:
        o = steady(other[0])
        learn2, steps2 = _median(o, "learn_s"), _median(o, "sgd_steps")
        second = None if learn2 is None or steps2 is None else (learn2, steps2, other[1])
    if second is not None and steps:
        learn2, steps2, batch2 = second  # learn = batch * s + steps * k, twice
        det = batch_per_learner * steps2 - batch2 * steps
        if abs(det) > 1e-9 * max(1.0, batch_per_learner * steps2):
            k = max(0.0, (batch_per_learner * learn2 - batch2 * learn) / det)
            s = max(0.0, learn - steps * k) / batch_per_learner
            return s, (learn - batch_per_learner * s) / steps  # after the clamp, the first probe still fits
    busy, update = _median(stead, "gpu_busy_pct"), _median(stead, "learn_update_s")
    if busy is not None and update is not None and steps:
        sgd_step = update * (1.0 - min(100.0, max(0.0, busy)) / 100.0) / steps
    return max(0.0, learn - (steps or 0.0) * sgd_step) / batch_per_learner, sgd_step


def probes_from(
    iterations: pd.DataFrame,
    config: TrialConfig,
    cores: int,
    *,
    batch_per_learner: int,
    ceiling_steps_per_s: float | None = None,
    other: tuple[pd.DataFrame, TrialConfig] | None = None,
    other_batch_per_learner: int | None = None,
) -> ProbeCosts | None:
    """The cost model's per-unit costs from the probe trial's steady iterations and the env ceiling.

    One env step: the ceiling's seconds per step in one process (envbench), else the trial's share of
    sampling spent in the env. One learner step: learn seconds per env step each learner trained on
    (``batch_per_learner``: the adapter's ``TrainBatch.per_learner``, its default where the spec sets none). Sync: sync
    seconds
    per runner. The rest of sampling per step (inference, connectors) is ``s + c/E`` with E envs per
    runner: ``other``, a second probe at another E, separates the per-step part s from the per-call part
    c (two equations); without it all of it is per step (c = 0: vectorizing then looks free of gain, so
    the model prunes nothing for it). None when the probe gave no steady iteration.
    """
    stead = steady(iterations)
    if stead.empty:
        return None

    def med(column: str) -> float:
        return float(stead[column].fillna(0.0).median())

    same_device = other is not None and (other[1].learners.num_gpus_per_learner > 0) == (
        config.learners.num_gpus_per_learner > 0
    )
    learner_other = (
        (other[0], other_batch_per_learner or batch_per_learner) if same_device and other is not None else None
    )

    runners = max(1, config.env_runners.num_env_runners)
    steps = med("env_steps_sampled")
    if steps <= 0:
        return None
    sample, env = med("sample_s"), med("env_step_s")
    per_step = sample * runners / steps
    env_step = min(per_step, env / steps)  # env_step_s: summed over the runners
    if ceiling_steps_per_s is not None and ceiling_steps_per_s > 0:
        env_step = 1.0 / ceiling_steps_per_s
    step_s, call_s = max(0.0, per_step - env_step), 0.0
    e1 = config.env_runners.num_envs_per_env_runner
    r1 = rest_per_step(iterations, config)
    r2 = rest_per_step(*other) if other is not None else None
    e2 = other[1].env_runners.num_envs_per_env_runner if other is not None else e1
    if r1 is not None and r2 is not None and e1 != e2:
        call_s = max(0.0, (r1 - r2) / (1.0 / e1 - 1.0 / e2))
        step_s = max(0.0, r1 - call_s / e1)
        call_s = (r1 - step_s) * e1  # after the clamp, r1 = s + c/E1 still holds
    learn, sync = med("learn_s"), med("sync_s")
    per_env_step, per_sgd_step = learner_costs(iterations, batch_per_learner, learner_other) or (
        learn / batch_per_learner,
        0.0,
    )
    gpu = config.learners.num_gpus_per_learner > 0  # the baseline's learner device: the other one is probed apart
    return ProbeCosts(
        env_step_s=env_step,
        inference_step_s=step_s,
        inference_call_s=call_s,
        learner_step_s=None if gpu else per_env_step,
        learner_sgd_step_s=0.0 if gpu else per_sgd_step,
        learner_gpu_step_s=per_env_step if gpu else None,
        learner_gpu_sgd_step_s=per_sgd_step if gpu else 0.0,
        sync_per_runner_s=sync / max(1, config.env_runners.num_env_runners),
        cores=max(1, cores),
        iteration_overhead_s=max(0.0, med("wall_s") - sample - learn - sync),
    )


def with_device_probe(
    probes: ProbeCosts, iterations: pd.DataFrame, config: TrialConfig, *, batch_per_learner: int
) -> ProbeCosts:
    """``probes`` with the learner costs of the other device, from a probe whose learner is there (a GPU learner
    beside a CPU baseline, or the reverse): without it, the model predicts no configuration on that device."""
    costs = learner_costs(iterations, batch_per_learner)
    if costs is None:
        return probes
    if config.learners.num_gpus_per_learner > 0:
        return replace(probes, learner_gpu_step_s=costs[0], learner_gpu_sgd_step_s=costs[1])
    return replace(probes, learner_step_s=costs[0], learner_sgd_step_s=costs[1])
