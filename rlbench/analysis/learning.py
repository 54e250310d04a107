"""The learning outcome of a trial: did it reach its target, how soon (seconds, env steps,
iterations, energy), and what return it ended with.

Everything is read off the trial's iterations table and its plan's target (the trial stops at the
first iteration whose ``target_value`` reaches the threshold; the analysis finds the same
iteration again from the table, the truth). Warm-up iterations count: learning starts at the
first iteration. Rules: docs/ANALYSIS.md.
"""

from __future__ import annotations

from typing import Any

import pandas as pd

from rlbench.adapters import FRAMEWORKS, get_adapter
from rlbench.analysis.energy import total_energy_j
from rlbench.planning.plan import TrialPlan

#: trials.parquet columns this module fills (docs/SCHEMA.md).
LEARNING_COLUMNS: tuple[str, ...] = (
    "seed",
    "target_metric",
    "target_threshold",
    "target_mode",
    "reached_target",
    "iterations_to_target",
    "time_to_target_s",
    "time_to_target_total_s",
    "env_steps_to_target",
    "energy_to_target_j",
    "final_episode_return_mean",
)

#: Of those, the whole numbers (nullable integers in trials.parquet).
COUNT_COLUMNS: tuple[str, ...] = ("seed", "iterations_to_target", "env_steps_to_target")


def first_reaching(its: pd.DataFrame, plan: TrialPlan) -> int | None:
    """Position (0-based, in iteration order) of the first iteration whose ``target_value`` reaches the
    plan's target, or None."""
    target = plan.stop_target
    if target is None or its.empty or "target_value" not in its:
        return None
    for position, value in enumerate(its["target_value"]):
        if target.reached(None if pd.isna(value) else float(value)):
            return position
    return None


def final_return(its: pd.DataFrame) -> float | None:
    """``episode_return_mean`` of the last iteration in which an episode ended (RLlib reports NaN for an
    iteration without one), or None."""
    if its.empty or "episode_return_mean" not in its:
        return None
    values = its["episode_return_mean"].dropna()
    return float(values.iloc[-1]) if len(values) else None


def learning_outcome(
    plan: TrialPlan, status: str, row: dict[str, Any], its: pd.DataFrame, utilization: pd.DataFrame
) -> dict[str, Any]:
    """The learning columns of one trial's row (:data:`LEARNING_COLUMNS`).

    ``its`` is the trial's iterations in order; ``row`` its row so far (``ray_init_s``, ``build_s``).
    Without a target every to-target column is None; a trial that was skipped has no outcome (None);
    any other trial either reached the target (True, the columns filled) or did not in the iterations
    it ran (False, the columns None).
    """
    its = its.sort_values("iteration") if len(its) else its
    target = plan.stop_target
    out: dict[str, Any] = {c: None for c in LEARNING_COLUMNS}
    out["seed"] = plan.seed
    out["final_episode_return_mean"] = final_return(its)
    if target is None:
        return out
    out.update(target_metric=target.metric, target_threshold=target.threshold, target_mode=target.mode)
    if status == "skipped":
        return out
    at = first_reaching(its, plan)
    out["reached_target"] = at is not None
    if at is None:
        return out
    upto = its.iloc[: at + 1]
    seconds = float(upto["wall_s"].sum())
    out["iterations_to_target"] = int(upto["iteration"].iloc[-1])
    out["time_to_target_s"] = seconds
    # a framework that starts no runtime (sb3, plain) has no ray_init_s: its wait is its build alone
    no_runtime = plan.config.framework in FRAMEWORKS and get_adapter(plan.config.framework).runtime is None
    startup = [0.0 if no_runtime else _number(row.get("ray_init_s")), _number(row.get("build_s"))]
    known = [v for v in startup if v is not None]
    out["time_to_target_total_s"] = seconds + sum(known) if len(known) == len(startup) else None
    out["env_steps_to_target"] = int(upto["env_steps_sampled"].sum())
    window = (float(upto["t_start_s"].iloc[0]), float(upto["t_end_s"].iloc[-1]))
    out["energy_to_target_j"] = total_energy_j(utilization, window)[0]
    return out


def _number(value: Any) -> float | None:
    """A finite number, or None (a missing cell may read as None or NaN)."""
    return None if value is None or value != value else float(value)
