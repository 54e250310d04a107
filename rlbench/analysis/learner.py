"""Why a learner is slow: its time split per trial, its learn windows' GPU and CPU use, and its CPU twin.

The adapters measure the split where the learner runs (docs/SCHEMA.md: ``learn_batch_s``, ``learn_update_s``,
``learn_other_s``; on a GPU ``learn_copy_s`` and ``learn_device_s``). This module adds what the utilization samples
say of each iteration's *learn window* (``gpu_busy_pct``: NVML, the learner GPUs' busy share; ``learn_cpus_used``:
the cores the learner's processes kept busy), turns a trial's steady iterations into its trials-table columns,
and finds each GPU configuration's CPU twin (the grid point one axis away whose learner is on the CPU: the one change
rule says whether the GPU bought anything). The verdicts are :func:`rlbench.analysis.findings.learner_verdicts`; the
sweep they ask for, :mod:`rlbench.analysis.next_step`.
Nothing is smoothed: a window with too few samples, or a trial without the columns (a folder from before them),
leaves a null.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd

from rlbench.analysis.change import unpaired
from rlbench.analysis.config_row import num
from rlbench.analysis.evidence import change_sentence
from rlbench.analysis.windows import by_trial

#: Per-iteration columns of the learner's split whose median over the steady iterations is the trials column of the
#: same name (seconds per iteration, per learner).
SPLIT_COLUMNS: tuple[str, ...] = (
    "learn_batch_s",
    "learn_update_s",
    "learn_other_s",
    "learn_copy_s",
    "learn_device_s",
    "learn_batches",
)
#: Per-iteration learn-window columns whose steady-state mean (weighted by the window's length) is the trials column.
WINDOW_COLUMNS: tuple[str, ...] = ("gpu_busy_pct", "learn_cpus_used")
#: Every per-trial learner column, summarized per configuration by its median over the ok repeats.
LEARNER_COLUMNS: tuple[str, ...] = (*SPLIT_COLUMNS, *WINDOW_COLUMNS, "sgd_step_s", "sgd_steps_per_iteration")
#: Fewest utilization samples inside a learn window for its means (as for the driver's idle share).
MIN_WINDOW_SAMPLES = 2


def learn_windows(its: pd.DataFrame, asynchronous: bool) -> tuple[np.ndarray, np.ndarray]:
    """(start, end) in trial seconds of each iteration's learn window. Synchronous algorithms sample, then learn,
    then sync (PPO's ``training_step``): ``t_start_s + sample_s`` to that plus ``learn_s``; asynchronous ones learn
    beside sampling all along: the whole iteration."""
    t0, t1 = its["t_start_s"].to_numpy(dtype=float), its["t_end_s"].to_numpy(dtype=float)
    if asynchronous:
        return t0, t1
    start = t0 + its["sample_s"].fillna(0.0).to_numpy(dtype=float)
    return start, start + its["learn_s"].fillna(0.0).to_numpy(dtype=float)


def window_means(t: np.ndarray, values: np.ndarray, t0: np.ndarray, t1: np.ndarray) -> np.ndarray:
    """Mean of ``values`` (sorted by ``t``) over the samples with ``t0 < t <= t1`` of each window; NaN with fewer
    than :data:`MIN_WINDOW_SAMPLES`."""
    csum = np.concatenate([[0.0], np.cumsum(values)])
    lo, hi = np.searchsorted(t, t0, side="right"), np.searchsorted(t, t1, side="right")
    n = hi - lo
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(n >= MIN_WINDOW_SAMPLES, (csum[hi] - csum[lo]) / n, np.nan)


def learn_window_columns(
    iterations: pd.DataFrame, utilization: pd.DataFrame, learners: dict[str, tuple[int, float, bool]]
) -> pd.DataFrame:
    """``gpu_busy_pct`` and ``learn_cpus_used`` of every iteration (same index as ``iterations``).

    ``learners``: trial_id -> (num_learners, learner GPUs, asynchronous). ``gpu_busy_pct``: the NVML utilization of
    the learner GPUs over the window (each GPU's mean; the mean of the ``ceil(learner GPUs)`` busiest, which are the
    learners' when the machine has more); null for a CPU learner. ``learn_cpus_used``: cores the learner's processes
    kept busy over the window (the driver's with ``num_learners: 0``, else the learner actors' per learner).
    """
    out = pd.DataFrame(np.nan, index=iterations.index, columns=list(WINDOW_COLUMNS))
    if iterations.empty or utilization.empty:
        return out
    gpu_rows = by_trial(utilization[(utilization["kind"] == "gpu") & utilization["gpu_util_pct"].notna()])
    procs = by_trial(utilization[utilization["kind"] == "process"])
    for trial_id, its in by_trial(iterations).items():
        num_learners, gpus, asynchronous = learners.get(trial_id, (0, 0.0, False))
        t0, t1 = learn_windows(its, asynchronous)
        rows = procs.get(trial_id)
        if rows is not None and not rows.empty:
            role = rows[
                (rows["role"] == "learner") if num_learners > 0 else (rows["role"] == "driver") & rows["node_id"].isna()
            ]
            busy = role.groupby("t_s", sort=True)["cpu_pct"].sum()
            if len(busy):
                cores = window_means(busy.index.to_numpy(dtype=float), busy.to_numpy(dtype=float) / 100.0, t0, t1)
                out.loc[its.index, "learn_cpus_used"] = cores / max(1, num_learners)
        g = gpu_rows.get(trial_id)
        if gpus > 0 and g is not None and not g.empty:
            means = [
                window_means(d["t_s"].to_numpy(dtype=float), d["gpu_util_pct"].to_numpy(dtype=float), t0, t1)
                for _, d in g.sort_values("t_s").groupby(["node_id", "gpu_index"], dropna=False, sort=True)
            ]
            busiest = np.sort(np.vstack(means), axis=0)[::-1][: max(1, math.ceil(gpus))]
            with np.errstate(invalid="ignore"):
                out.loc[its.index, "gpu_busy_pct"] = busiest.mean(axis=0)
    return out


def _weighted(values: pd.Series, weights: pd.Series) -> float | None:
    have = values.notna() & weights.notna() & (weights > 0)
    return float((values[have] * weights[have]).sum() / weights[have].sum()) if have.any() else None


def learner_columns(steady_its: pd.DataFrame) -> dict[str, Any]:
    """One trial's learner columns from its steady iterations: the split's medians, the learn windows' GPU and CPU
    use (means weighted by the window's length, ``learn_s``), ``sgd_step_s`` (update seconds per minibatch step over
    the steady iterations) and ``sgd_steps_per_iteration`` (median). Null where the iterations lack a column."""
    row: dict[str, Any] = {c: None for c in LEARNER_COLUMNS}
    if steady_its.empty:
        return row
    for column in SPLIT_COLUMNS:
        if column in steady_its and steady_its[column].notna().any():
            row[column] = float(steady_its[column].median())
    for column in WINDOW_COLUMNS:
        if column in steady_its:
            row[column] = _weighted(steady_its[column], steady_its["learn_s"])
    if "sgd_steps" in steady_its and steady_its["sgd_steps"].notna().any():
        row["sgd_steps_per_iteration"] = float(steady_its["sgd_steps"].median())
        if "learn_update_s" in steady_its and steady_its["learn_update_s"].notna().any():
            both = steady_its[steady_its["learn_update_s"].notna() & steady_its["sgd_steps"].notna()]
            steps = float(both["sgd_steps"].sum())
            row["sgd_step_s"] = float(both["learn_update_s"].sum()) / steps if steps > 0 else None
    return row


#: Columns :func:`cpu_twins` adds to a configuration row.
TWIN_COLUMNS: tuple[str, ...] = (
    "cpu_twin_index",
    "cpu_twin_env_steps_per_s",
    "cpu_twin_ratio",
    "cpu_twin_differs",
    "cpu_twin_evidence",
)


def cpu_twins(configs: pd.DataFrame, trials: pd.DataFrame, axes: list[str]) -> pd.DataFrame:
    """Per GPU-learner configuration (``learner_gpus`` > 0), its CPU twin: the configuration one grid axis away
    whose learner has no GPU (``learner_gpus: [0, 1]`` gives each GPU point one), and the one change rule over
    their repeats' throughput (:func:`rlbench.analysis.change.unpaired`, A the CPU learner, B the GPU one):
    ``cpu_twin_ratio`` (GPU / CPU, the ratio of medians), ``cpu_twin_differs`` and ``cpu_twin_evidence`` (the rule's
    sentence). Indexed like ``configs``; None without a twin."""
    out = pd.DataFrame({c: pd.Series([None] * len(configs), index=configs.index, dtype=object) for c in TWIN_COLUMNS})
    if configs.empty or not axes or "learner_gpus" not in configs:
        return out
    ok = trials[trials["status"] == "ok"] if "status" in trials else trials
    throughput = {i: ok.loc[ok["index"] == i, "env_steps_per_s"].dropna().tolist() for i in configs["index"]}
    cpu = configs[configs["learner_gpus"].fillna(0) == 0]
    for position, row in configs[configs["learner_gpus"].fillna(0) > 0].iterrows():
        twins = [c for _, c in cpu.iterrows() if sum(str(c[a]) != str(row[a]) for a in axes) == 1]
        if len(twins) != 1:
            continue
        twin = twins[0]
        change = unpaired(throughput[twin["index"]], throughput[row["index"]])
        values = (
            int(twin["index"]),
            num(twin.get("env_steps_per_s")),
            change.effect,
            change.differs,
            change_sentence("the CPU learner", "the GPU learner", change),
        )
        for column, value in zip(TWIN_COLUMNS, values):
            out.at[position, column] = value
    return out
