"""The steady state: which iterations and samples every steady-state figure is computed over.

Steady state means the iterations after the warm-up ones (``warmup`` false in iterations.parquet);
a trial's steady window runs from its first steady iteration's start to its last one's end
(``t_start_s``/``t_end_s``, seconds since the trial's launch, the clock of the utilization
samples). Nothing is smoothed or dropped: a trial without steady iterations has no window, and
its figures are null, not a guess.
"""

from __future__ import annotations

import numpy as np
import pandas as pd


def steady(iterations: pd.DataFrame) -> pd.DataFrame:
    """The steady-state iterations (warm-up ones left out)."""
    return iterations[~iterations["warmup"].astype(bool)]


def steady_window(iterations: pd.DataFrame) -> tuple[float, float] | None:
    """(start, end) in trial seconds of one trial's steady-state iterations, or None if there are none."""
    its = steady(iterations)
    if its.empty:
        return None
    return float(its["t_start_s"].min()), float(its["t_end_s"].max())


def steady_windows(iterations: pd.DataFrame) -> pd.DataFrame:
    """Every trial's steady window: indexed by trial_id, columns ``t0`` and ``t1`` (trials without one absent)."""
    return steady(iterations).groupby("trial_id").agg(t0=("t_start_s", "min"), t1=("t_end_s", "max"))


def in_steady_window(frame: pd.DataFrame, windows: pd.DataFrame) -> np.ndarray:
    """Which rows of ``frame`` (with ``trial_id`` and ``t_s``) lie inside their trial's steady window."""
    bounds = windows.reindex(frame["trial_id"].astype(str))
    t = frame["t_s"].to_numpy()
    return (t >= bounds["t0"].to_numpy()) & (t <= bounds["t1"].to_numpy())


def by_trial(frame: pd.DataFrame) -> dict[str, pd.DataFrame]:
    """trial_id -> that trial's rows, as slices of ``frame`` (stable-sorted by trial_id first if needed)."""
    if frame.empty:
        return {}
    codes, names = pd.factorize(frame["trial_id"])
    change: np.ndarray = np.flatnonzero(codes[1:] != codes[:-1]) + 1
    starts = np.concatenate([[0], change])
    if len(starts) != len(names):  # a trial's rows are not contiguous
        return by_trial(frame.iloc[np.argsort(codes, kind="stable")])
    ends = np.concatenate([change, [len(codes)]])
    return {str(names[codes[s]]): frame.iloc[s:e] for s, e in zip(starts, ends)}
