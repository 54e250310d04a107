"""Per trial: what the env runners and learners did while the driver waited, and how stale the samples were.

For PPO the driver's split of an iteration (``sample_s + learn_s + sync_s + other_s = wall_s``) is
the phases in turn. For APPO and IMPALA the env runners sample and the learner updates at the same
time as the driver loops, so the driver's split is its waits and the phases are measured where they
run: ``sampler_busy_s``, ``learner_busy_s`` and their least overlap ``busy_overlap_s``
(docs/SCHEMA.md). This module turns a trial's steady-state iterations into its trials-table
columns; nothing is smoothed, and an iteration without a value leaves the column null.
"""

from __future__ import annotations

from typing import Any

import pandas as pd

#: Per-iteration busy columns whose share of the steady-state wall time is a trials column ``<name>_frac``.
BUSY_COLUMNS: tuple[str, ...] = ("sampler_busy_s", "learner_busy_s", "busy_overlap_s")


def _share(its: pd.DataFrame, column: str) -> float | None:
    if its.empty or column not in its or its[column].isna().any():
        return None
    wall = float(its["wall_s"].sum())
    return float(its[column].sum()) / wall if wall > 0 else None


def _median(its: pd.DataFrame, column: str) -> float | None:
    if its.empty or column not in its or its[column].isna().all():
        return None
    return float(its[column].median())


def overlap_columns(
    asynchronous: bool, num_learners: int, steady_its: pd.DataFrame, learner_cpus_used: float | None
) -> dict[str, Any]:
    """The trials-table columns about overlap, learners and policy lag of one trial (steady-state iterations)."""
    row: dict[str, Any] = {"asynchronous": asynchronous}
    for column in BUSY_COLUMNS:
        row[f"{column.removesuffix('_s')}_frac"] = _share(steady_its, column)
    row["learn_s_per_iteration"] = _median(steady_its, "learn_s")
    row["learner_busy_s_per_iteration"] = _median(steady_its, "learner_busy_s")
    if not steady_its.empty and "learner_updates" in steady_its and steady_its["learner_updates"].notna().any():
        rate = steady_its["learner_updates"] / steady_its["wall_s"].where(steady_its["wall_s"] > 0)
        row["learner_updates_per_s"] = float(rate.median()) if rate.notna().any() else None
    else:
        row["learner_updates_per_s"] = None
    row["cpus_used_per_learner"] = (
        learner_cpus_used / num_learners if num_learners > 0 and learner_cpus_used is not None else None
    )
    row.update(lag_columns(steady_its))
    return row


def lag_columns(steady_its: pd.DataFrame) -> dict[str, float | None]:
    """``policy_lag_mean``: the mean lag over the steady-state minibatch updates (each iteration's mean
    weighted by its ``sgd_steps``); ``policy_lag_max``: the largest lag of any of them. None without
    a lag (no update reported one)."""
    if steady_its.empty or "policy_lag_mean" not in steady_its:
        return {"policy_lag_mean": None, "policy_lag_max": None}
    its = steady_its[steady_its["policy_lag_mean"].notna()]
    if its.empty:
        return {"policy_lag_mean": None, "policy_lag_max": None}
    weights = its["sgd_steps"].fillna(0).astype(float) if "sgd_steps" in its else pd.Series(0.0, its.index)
    if weights.sum() > 0:
        mean = float((its["policy_lag_mean"] * weights).sum() / weights.sum())
    else:
        mean = float(its["policy_lag_mean"].mean())
    top = its["policy_lag_max"].max() if "policy_lag_max" in its else None
    return {"policy_lag_mean": mean, "policy_lag_max": None if top is None or pd.isna(top) else float(top)}
