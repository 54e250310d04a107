"""A finished trial read as autoconfig's reading, and the probes' costs, from the trial's iteration rows.

Pure functions over one trial's rows of the iterations table (``rlbench.results.tables.iterations_frame``
of its events): the steady window (:func:`rlbench.analysis.windows.steady`) and the throughput
(:func:`rlbench.analysis.trial_rows.steady_throughput`) are the analysis's own, so a probe, a search trial
and a sweep's trial read the same (issue 34: the driver had re-derived both from raw events). The
driver (``rlbench.run.autoconfig_driver.trial_files``) reads the files and hands the rows in.
"""

from __future__ import annotations

import pandas as pd

from rlbench.analysis.trial_rows import steady_throughput
from rlbench.analysis.windows import steady
from rlbench.autoconfig.model import ProbeCosts
from rlbench.autoconfig.ask_tell import TrialResult
from rlbench.spec.model import TrialConfig

#: Statuses that are a trial's final verdict (an interrupted one runs again on resume).
FINAL = ("ok", "failed", "timeout", "skipped")


def trial_result(request_id: str, status: str, iterations: pd.DataFrame, *, objective: str, target_iteration: int | None,
                 charged_s: float | None, trial_wall_s: float | None) -> TrialResult:
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
    return TrialResult(request_id, value, trained, max(0.0, total - trained), reached, iteration_s, steps)


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


def probes_from(iterations: pd.DataFrame, config: TrialConfig, cores: int, *, batch_per_learner: int,
                ceiling_steps_per_s: float | None = None,
                other: tuple[pd.DataFrame, TrialConfig] | None = None) -> ProbeCosts | None:
    """The cost model's per-unit costs from the probe trial's steady iterations and the env ceiling.

    One env step: the ceiling's seconds per step in one process (envbench), else the trial's share of
    sampling spent in the env. One learner step: learn seconds per env step each learner trained on
    (``batch_per_learner``: the adapter's ``TrainBatch.per_learner``, its default where the spec sets none). Sync: sync seconds
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
    return ProbeCosts(env_step_s=env_step, inference_step_s=step_s, inference_call_s=call_s,
                  learner_step_s=learn / batch_per_learner, sync_per_runner_s=sync / max(1, config.env_runners.num_env_runners),
                  cores=max(1, cores), iteration_overhead_s=max(0.0, med("wall_s") - sample - learn - sync))
