"""The steady state: which iterations and samples every steady-state figure is computed over.

Steady state means the iterations after the warm-up ones (``warmup`` false in iterations.parquet);
a trial's steady window runs from its first steady iteration's start to its last one's end
(``t_start_s``/``t_end_s``, seconds since the trial's launch, the clock of the utilization
samples); a warm trial (issue 56) has one such window per measured window, and the pauses between
them are in none. Nothing is smoothed or dropped: a trial without steady iterations has no window, and
its figures are null, not a guess.
"""

from __future__ import annotations

import numpy as np
import pandas as pd


def steady(iterations: pd.DataFrame) -> pd.DataFrame:
    """The steady-state iterations (warm-up ones left out)."""
    return iterations[~iterations["warmup"].astype(bool)]


def steady_window(iterations: pd.DataFrame) -> tuple[float, float] | None:
    """(start, end) in trial seconds of one trial's steady-state iterations, or None if there are none, or if they
    lie in several measured windows (a warm trial, issue 56): its pauses lie between them, so no one span is its
    steady state (its energy, read over one span, is then null, not a figure with the pauses in it)."""
    its = steady(iterations)
    if its.empty or _windows_of(its).nunique() > 1:
        return None
    return float(its["t_start_s"].min()), float(its["t_end_s"].max())


def _windows_of(its: pd.DataFrame) -> pd.Series:
    """Each row's measured window, -1 for a trial run once to its stop rule (no ``window``)."""
    if "window" not in its:
        return pd.Series(-1, index=its.index)
    return its["window"].astype("float64").fillna(-1.0).astype(int)


def steady_windows(iterations: pd.DataFrame) -> pd.DataFrame:
    """Every trial's steady windows: indexed by trial_id, columns ``t0`` and ``t1``; one row a trial, or a warm
    trial's one row per measured window (trials without steady iterations absent)."""
    its = steady(iterations)
    spans = (
        its.assign(_window=_windows_of(its))
        .groupby(["trial_id", "_window"])
        .agg(t0=("t_start_s", "min"), t1=("t_end_s", "max"))
    )
    return spans.reset_index(level="_window", drop=True)


def in_steady_window(frame: pd.DataFrame, windows: pd.DataFrame) -> np.ndarray:
    """Which rows of ``frame`` (with ``trial_id`` and ``t_s``) lie inside one of their trial's steady windows."""
    inside: np.ndarray = np.zeros(len(frame), dtype=bool)
    if windows.empty:
        return inside
    t = frame["t_s"].to_numpy()
    trials = frame["trial_id"].astype(str)
    layer = windows.groupby(level=0).cumcount().to_numpy()  # a trial's j-th window is in layer j
    for j in range(int(layer.max()) + 1):
        bounds = windows[layer == j].reindex(trials)
        inside |= (t >= bounds["t0"].to_numpy()) & (t <= bounds["t1"].to_numpy())
    return inside


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
