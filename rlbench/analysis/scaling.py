"""Scaling along each grid axis: speedup, efficiency, an Amdahl fit and the knee, per group of the other axes."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pandas as pd

from rlbench.analysis.config_row import num
from rlbench.analysis.configs import axis_pairs_text, is_missing
from rlbench.analysis.findings import KNEE_MARGIN
from rlbench.analysis.stats import fit_amdahl, is_number, knee

#: Scaling groups (combinations of the other axes) shown per axis in the report.
MAX_SCALING_GROUPS = 12


@dataclass(frozen=True)
class ScalingCurve:
    """Throughput along one axis with the other axes held fixed."""

    axis: str
    """The axis varied."""
    fixed: str
    """The other axes' values (``a=1, b=2``), or empty."""
    values: list
    """Axis values in ascending (or grid) order."""
    env_steps_per_s: list
    """Median throughput at each value (None when unmeasured)."""
    speedup: list
    """Throughput over the throughput at the smallest value."""
    efficiency: list
    """Speedup over the smallest positive value, divided by value / that value (None for non-numeric or 0)."""
    serial_frac: float | None
    """Amdahl serial fraction fitted over the positive values (None when not numeric or < 2 points)."""
    r2: float | None
    """Goodness of that fit (None with < 3 points)."""
    rmse: float | None
    """Root mean square error of the fitted speedups."""
    max_speedup: float | None
    """Amdahl's ceiling over the smallest positive value."""
    knee: Any
    """The smallest value within :data:`KNEE_MARGIN` of the best throughput."""
    best: Any
    """The value with the best throughput."""


def scaling_curves(configs: pd.DataFrame, axes: list[str], margin: float = KNEE_MARGIN) -> list[ScalingCurve]:
    """Every axis with at least 2 values, for every combination of the other axes."""
    curves: list[ScalingCurve] = []
    if configs.empty:
        return curves
    for axis in axes:
        if configs[axis].nunique(dropna=False) < 2:
            continue
        others = [a for a in axes if a != axis]
        groups = configs.groupby(others, dropna=False, sort=False) if others else [((), configs)]
        for key, group in groups:
            key = key if isinstance(key, tuple) else (key,)
            # a missing value (the spec's default: an off-grid baseline) sorts last and is left out of the fit
            numeric = all(is_number(v) or is_missing(v) for v in group[axis]) and any(is_number(v) for v in group[axis])
            group = group.sort_values(axis) if numeric else group.sort_values("index")
            values = group[axis].tolist()
            tp = [num(v) for v in group["env_steps_per_s"]]
            base = tp[0]
            speedup = [t / base if t is not None and base else None for t in tp]
            efficiency: list = [None] * len(values)
            fit = None
            if numeric:
                pos = [(i, float(v)) for i, v in enumerate(values) if float(v) > 0 and tp[i] is not None]
                known = {i: t for i, t in enumerate(tp) if t is not None}
                if pos and known[pos[0][0]]:
                    i0, x0 = pos[0]
                    rel = {i: known[i] / known[i0] for i, _ in pos}
                    for i, x in pos:
                        efficiency[i] = rel[i] / (x / x0)
                    fit = fit_amdahl([x for _, x in pos], [rel[i] for i, _ in pos], n0=x0)
            measured = [(v, t) for v, t in zip(values, tp) if t is not None]
            curves.append(
                ScalingCurve(
                    axis=axis,
                    fixed=axis_pairs_text(zip(others, key)),
                    values=values,
                    env_steps_per_s=tp,
                    speedup=speedup,
                    efficiency=efficiency,
                    serial_frac=fit.serial_frac if fit else None,
                    r2=fit.r2 if fit else None,
                    rmse=fit.rmse if fit else None,
                    max_speedup=fit.max_speedup if fit else None,
                    knee=knee(values, tp, margin),
                    best=max(measured, key=lambda p: p[1])[0] if measured else None,
                )
            )
    return curves
