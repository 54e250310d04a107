"""Learning curves per configuration, and the return every configuration reached at equal env steps.

A trial's curve is its ``episode_return_mean`` at the end of each iteration against the env steps
it had sampled by then (or the training seconds, the sum of ``wall_s``), from the first iteration
(warm-up included: learning starts there). Iterations in which no episode ended (RLlib reports NaN)
are left out of the curve, never filled. Per configuration, the curves of its ok repeats are
interpolated linearly onto the union of their x values (never beyond a curve's own ends) and
summarized by the median, with the lowest and highest repeat as the band. At equal env steps, the
configurations below the best one, with the rank test's evidence (:func:`below_at_equal_steps`). Rules:
docs/ANALYSIS.md.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from rlbench.analysis.evidence import Below, lower_at_equal_steps, worth_saying
from rlbench.analysis.stats import rank_p

#: x axes of a learning curve: column name -> what it is.
CURVE_X = {"env_steps": "env steps sampled", "seconds": "training seconds (sum of iteration wall_s)"}
#: At most this many x points per configuration's curve (more are thinned evenly).
MAX_CURVE_POINTS = 300


@dataclass(frozen=True)
class Curve:
    """One trial's learning curve: per iteration with a return, the x values and the return."""

    env_steps: np.ndarray
    """Env steps sampled by the end of the iteration (cumulative)."""
    seconds: np.ndarray
    """Training seconds by then (cumulative ``wall_s``)."""
    returns: np.ndarray
    """``episode_return_mean`` of the iteration."""

    def x(self, axis: str) -> np.ndarray:
        """The x values for ``axis`` (a key of :data:`CURVE_X`)."""
        return self.env_steps if axis == "env_steps" else self.seconds

    @property
    def empty(self) -> bool:
        return len(self.returns) == 0


def trial_curves(iterations: pd.DataFrame, trial_ids) -> dict[str, Curve]:
    """Trial id -> its curve (iterations without a return left out), for the trials in ``trial_ids``.

    Vectorized over the whole table (one sort, one cumulative sum), then split by trial: a sweep of
    1,000 trials takes a fraction of a second.
    """
    its = iterations[iterations["trial_id"].isin(set(trial_ids))].sort_values(["trial_id", "iteration"])
    if its.empty:
        return {}
    by = its.groupby("trial_id", sort=False)
    steps = by["env_steps_sampled"].cumsum().to_numpy(dtype=float)
    seconds = by["wall_s"].cumsum().to_numpy(dtype=float)
    returns = its["episode_return_mean"].to_numpy(dtype=float)
    ids = its["trial_id"].to_numpy()
    bounds: np.ndarray = np.flatnonzero(ids[1:] != ids[:-1]) + 1
    out = {}
    for part in np.split(np.arange(len(ids)), bounds):
        keep = part[np.isfinite(returns[part])]
        out[ids[part[0]]] = Curve(steps[keep], seconds[keep], returns[keep])
    return out


def _interp(curve: Curve, x: str, at: np.ndarray) -> np.ndarray:
    """The curve's return at ``at`` (linear between its points; NaN outside its first and last x)."""
    if curve.empty:
        return np.full(len(at), np.nan)
    xs = curve.x(x)
    values = np.interp(at, xs, curve.returns)
    return np.where((at >= xs[0]) & (at <= xs[-1]), values, np.nan)


def _ok_trials(trials: pd.DataFrame) -> pd.DataFrame:
    return trials[trials["status"] == "ok"].sort_values(["index", "repeat"])


def learning_curves(
    trials: pd.DataFrame, iterations: pd.DataFrame, x: str, curves: dict[str, Curve] | None = None
) -> pd.DataFrame:
    """Per configuration (``index``) and x point: ``median``, ``low``, ``high`` of the ok repeats'
    returns there and ``n`` (how many repeats reach that x). ``x``: a key of :data:`CURVE_X`;
    ``curves``: :func:`trial_curves` of the ok trials, when already computed."""
    ok = _ok_trials(trials)
    curves = curves if curves is not None else trial_curves(iterations, ok["trial_id"])
    index_col: list[np.ndarray] = []
    x_col: list[np.ndarray] = []
    parts: dict[str, list[Any]] = {"median": [], "low": [], "high": [], "n": []}
    for index, trial_ids in ok.groupby("index", sort=True)["trial_id"]:
        mine = [curves[t] for t in trial_ids if t in curves and not curves[t].empty]
        if not mine:
            continue
        grid = np.unique(np.concatenate([c.x(x) for c in mine]))
        if len(grid) > MAX_CURVE_POINTS:
            grid = grid[np.linspace(0, len(grid) - 1, MAX_CURVE_POINTS).round().astype(int)]
        values = np.vstack([_interp(c, x, grid) for c in mine])
        n = np.isfinite(values).sum(axis=0)
        filled = np.where(n > 0, values, 0.0)  # columns with no repeat: computed on zeros, then masked
        with np.errstate(all="ignore"):
            for name, reduce in (("median", np.nanmedian), ("low", np.nanmin), ("high", np.nanmax)):
                parts[name].append(np.where(n > 0, reduce(filled, axis=0), np.nan))
        parts["n"].append(n)
        index_col.append(np.full(len(grid), int(index)))
        x_col.append(grid)
    if not index_col:
        return pd.DataFrame(columns=["index", "x", "median", "low", "high", "n"])
    return pd.DataFrame(
        {
            "index": np.concatenate(index_col),
            "x": np.concatenate(x_col),
            **{k: np.concatenate(v) for k, v in parts.items()},
        }
    )


@dataclass(frozen=True)
class EqualSteps:
    """Every configuration's return at the same env-step count."""

    env_steps: float | None
    """The count: the largest every ok repeat of every configuration sampled (None without curves)."""
    returns: dict[int, list[float]]
    """Configuration index -> each ok repeat's return there (interpolated; repeats without one left out)."""

    def median(self, index: int) -> float | None:
        """The configuration's median return there."""
        values = self.returns.get(index) or []
        return float(np.median(values)) if values else None


def returns_at_equal_steps(
    trials: pd.DataFrame, iterations: pd.DataFrame, curves: dict[str, Curve] | None = None
) -> EqualSteps:
    """Each configuration's returns at the largest env-step count that all of them reached
    (``curves``: :func:`trial_curves` of the ok trials, when already computed)."""
    ok = _ok_trials(trials)
    curves = curves if curves is not None else trial_curves(iterations, ok["trial_id"])
    curves = {t: c for t, c in curves.items() if not c.empty}
    if not curves:
        return EqualSteps(None, {})
    steps = min(float(c.env_steps[-1]) for c in curves.values())
    returns: dict[int, list[float]] = {}
    for index, trial_ids in ok.groupby("index", sort=True)["trial_id"]:
        values = [float(_interp(curves[t], "env_steps", np.array([steps]))[0]) for t in trial_ids if t in curves]
        values = [v for v in values if np.isfinite(v)]
        if values:
            returns[int(index)] = values
    return EqualSteps(steps, returns)


def below_at_equal_steps(equal: EqualSteps) -> list[Below]:
    """Configurations whose median return at equal env steps is below the best median by at least
    :data:`~rlbench.analysis.findings.CLEARLY_BELOW_FRAC` of its size, each with the one-sided exact rank
    test of its returns against the best's (:func:`~rlbench.analysis.stats.rank_p`); those the test shows
    below, and those with too few repeats for the test to show it (:func:`~rlbench.analysis.evidence.worth_saying`)."""
    medians = {i: m for i in equal.returns if (m := equal.median(i)) is not None}
    if len(medians) < 2:
        return []
    best = max(medians, key=lambda i: medians[i])
    best_median, best_values = medians[best], equal.returns[best]
    out = []
    for index, median in medians.items():
        values = equal.returns[index]
        if index == best or not lower_at_equal_steps(median, best_median):
            continue
        below = Below(index, median, best, best_median, len(values), len(best_values), rank_p(values, best_values))
        if worth_saying(below):
            out.append(below)
    return out
