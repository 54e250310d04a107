"""Time to target per configuration: how many repeats reached it, how soon (with a 95% bootstrap
CI across repeats, each its own seed), for how many CPU-seconds and how much energy; the ranking
and the Pareto frontier of hardware given against time to target.

The repeats counted are the ok trials (failed, skipped and timed-out ones are left out, as
everywhere). Times, env steps and energy are medians over the repeats that reached the target;
the share that reached it is reported beside them, and ranks by it first, so a configuration
that missed the target in a repeat never ranks above one that reached it in all. Rules:
docs/ANALYSIS.md.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from rlbench.analysis.stats import median_cis
from rlbench.analysis.trial_rows import CPU_ROLES, learner_gpus

#: Per-trial columns summarized over the repeats that reached the target (median).
TARGET_MEDIANS: tuple[str, ...] = (
    "time_to_target_s",
    "time_to_target_total_s",
    "env_steps_to_target",
    "iterations_to_target",
    "energy_to_target_j",
    "cpu_s_to_target",
)


def has_target(trials: pd.DataFrame) -> bool:
    """Whether the result set's trials ran with a target (``reached_target`` known for some)."""
    return "reached_target" in trials and trials["reached_target"].notna().any()


def cpus_given(trials: pd.DataFrame) -> pd.Series:
    """CPUs each trial's configuration allocates: driver + learners + env runners (the plan's rule)."""
    columns = [f"{r}_cpus_allocated" for r in CPU_ROLES if f"{r}_cpus_allocated" in trials]
    return trials[columns].astype(float).sum(axis=1, min_count=1) if columns else pd.Series(np.nan, trials.index)


def time_to_target(trials: pd.DataFrame, axes: list[str]) -> pd.DataFrame:
    """One row per configuration that has ok repeats with a target outcome.

    Columns: ``index``, the axes, ``repeats`` (ok repeats), ``reached`` (how many reached the
    target), ``reached_share``, ``cpus_given``, ``learner_gpus``; for each of :data:`TARGET_MEDIANS`
    the median over the repeats that reached it (``cpu_s_to_target`` = CPUs given x
    ``time_to_target_s``); ``time_to_target_s_ci_low``/``_ci_high`` (95% percentile bootstrap of that
    median, from 2 reached repeats up); ``final_episode_return_mean`` (median over the ok repeats);
    ``target_rank`` (1 = best: highest share, then shortest median time; NA when none reached);
    ``pareto`` (on the frontier of CPUs and GPUs given against median time, see :func:`target_front`).
    """
    if not has_target(trials):
        return pd.DataFrame()
    ok = trials[(trials["status"] == "ok") & trials["reached_target"].notna()].copy()
    if ok.empty:
        return pd.DataFrame()
    ok["cpus_given"] = cpus_given(ok)
    ok["cpu_s_to_target"] = ok["cpus_given"] * ok["time_to_target_s"].astype(float)
    ok["learner_gpus"] = learner_gpus(ok)
    rows, samples = [], []
    for index, group in ok.sort_values(["index", "repeat"]).groupby("index", sort=True):
        reached = group[group["reached_target"].astype(bool)]
        row = {
            "index": int(index),
            **{a: group[a].iloc[0] for a in axes if a in group},
            "repeats": len(group),
            "reached": len(reached),
            "reached_share": len(reached) / len(group),
            "cpus_given": float(group["cpus_given"].iloc[0]),
            "learner_gpus": float(group["learner_gpus"].iloc[0]),
        }
        for column in TARGET_MEDIANS:
            values = pd.to_numeric(reached[column], errors="coerce").dropna() if column in reached else pd.Series([])
            row[column] = float(values.median()) if len(values) else np.nan
        samples.append(pd.to_numeric(reached["time_to_target_s"], errors="coerce").dropna().to_numpy(dtype=float))
        finals = pd.to_numeric(group.get("final_episode_return_mean"), errors="coerce").dropna()
        row["final_episode_return_mean"] = float(finals.median()) if len(finals) else np.nan
        rows.append(row)
    frame = pd.DataFrame(rows)
    cis = median_cis(samples)  # every configuration's bootstrap in one batched call
    frame["time_to_target_s_ci_low"] = [np.nan if lo is None else lo for lo, _ in cis]
    frame["time_to_target_s_ci_high"] = [np.nan if hi is None else hi for _, hi in cis]
    ranked = frame[frame["reached"] > 0].sort_values(["reached_share", "time_to_target_s"], ascending=[False, True])
    frame["target_rank"] = pd.array([pd.NA] * len(frame), dtype="Int64")
    frame.loc[ranked.index, "target_rank"] = np.arange(1, len(ranked) + 1)
    frame["pareto"] = target_front(frame)
    return frame


def pareto_front(frame: pd.DataFrame, lower: Sequence[str], higher: Sequence[str]) -> pd.Series:
    """True for the rows no other row dominates: another dominates when it is no worse in every column (no higher
    in ``lower``'s, no lower in ``higher``'s) and strictly better in one. Every Pareto front the report draws is
    this one (time to target against the hardware given; autoconfig's CPUs against throughput)."""
    if frame.empty:
        return pd.Series(False, index=frame.index)
    # Pairwise at once (n x n): row b dominates column a when no worse in all columns and better in one.
    values = np.hstack([frame[list(lower)].to_numpy(dtype=float), -frame[list(higher)].to_numpy(dtype=float)])
    no_worse = (values[:, None, :] <= values[None, :, :]).all(axis=2)
    better = (values[:, None, :] < values[None, :, :]).any(axis=2)
    return pd.Series(~(no_worse & better).any(axis=0), index=frame.index)


def target_front(frame: pd.DataFrame) -> pd.Series:
    """The time-to-target frontier: CPUs and GPUs given, median ``time_to_target_s`` (lower is better) against the
    share of repeats that reached the target (higher); configurations that never reached it are never on it."""
    out = pd.Series(False, index=frame.index)
    measured = frame[frame["reached"] > 0]
    out[measured.index] = pareto_front(measured, ["cpus_given", "learner_gpus", "time_to_target_s"], ["reached_share"])
    return out


def eligible(frame: pd.DataFrame) -> pd.DataFrame:
    """The configurations a target recommendation may name: those that reached the target in the
    largest share of repeats any configuration did (never one that missed it where others did not)."""
    measured = frame[frame["reached"] > 0]
    if measured.empty:
        return measured
    return measured[measured["reached_share"] >= measured["reached_share"].max()]
