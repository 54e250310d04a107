"""Variants compared on each grid point: every variant against the first (the reference), paired by round.

A sweep with ``variants:`` runs every grid point once per variant per round, the variants of a
round back to back (:mod:`rlbench.spec.variants`). Per grid point and variant, over the ok trials'
steady-state throughput (``env_steps_per_s``), the variant against the reference is a paired
comparison (:func:`rlbench.analysis.change.paired`, the one rule): the ratio of medians with an
interval that resamples the two sides independently, the paired ratio (the median over rounds of the
round's variant / reference, with an interval over the rounds: the two sides of a round ran seconds
apart, so the machine's drift over minutes cancels in it; docs/MEASUREMENT.md 7) and the exact
Wilcoxon signed-rank test of the rounds' log ratios. The rows are ``rlbench compare``'s
(:mod:`rlbench.analysis.comparison`); their words are :mod:`rlbench.analysis.evidence`'.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from rlbench.analysis.change import paired
from rlbench.analysis.comparison import Comparison, ComparisonRow
from rlbench.analysis.configs import axis_pairs_text, result_axes
from rlbench.analysis.evidence import change_sentence, change_verdict
from rlbench.analysis.findings import CHANGE_THRESHOLD
from rlbench.analysis.window_rounds import windows_as_rounds
from rlbench.results.layout import ResultsFolder


def _median(values: dict[int, float]) -> float | None:
    return float(np.median(list(values.values()))) if values else None


def variant_names(manifest: dict[str, Any], trials: pd.DataFrame) -> list[str]:
    """The variants in spec order (the first is the reference); [] for a sweep without variants."""
    spec = [v.get("name") for v in (manifest.get("spec") or {}).get("variants") or [] if isinstance(v, dict)]
    seen = [] if "variant" not in trials else list(trials.sort_values("index")["variant"].dropna().unique())
    return [n for n in spec if n in seen] + [n for n in seen if n not in spec] if spec or seen else []


@dataclass(frozen=True)
class GridPointRows:
    """One grid point of a trials table: the rows that ran it (every variant or version of it)."""

    label: str
    """The axis values in words, ``a=1, b=2`` (``all`` without grid axes)."""
    axes: dict[str, Any]
    """Grid axis column -> value."""
    rows: pd.Index
    """The trials table's index labels of its trials."""


def grid_points(trials: pd.DataFrame, axes: list[str]) -> list[GridPointRows]:
    """The distinct values of the ``axes`` columns, in the order of the trials' ``index`` (grid order).

    Values are told apart by their JSON text, so numpy scalars count as the Python values they hold
    (compare and history each grouped this way before sharing it)."""
    keys = pd.Series(
        [json.dumps([_plain(v) for v in row], default=str) for row in trials[axes].itertuples(index=False)]
        if axes
        else ["[]"] * len(trials),
        index=trials.index,
        dtype=object,
    )
    order = keys.loc[trials.sort_values("index", kind="stable").index]
    out = []
    for key in dict.fromkeys(order):
        values = dict(zip(axes, json.loads(key)))
        out.append(GridPointRows(axis_pairs_text(values.items()) or "all", values, keys.index[keys == key]))
    return out


def compare_variants(
    trials: pd.DataFrame,
    axes: list[str],
    names: list[str],
    threshold: float = CHANGE_THRESHOLD,
    iterations: pd.DataFrame | None = None,
) -> list[ComparisonRow]:
    """Per grid point (``axes``: its columns, the variant not among them) and per variant after the
    first, that variant against the first; ``threshold``: the change its verdict counts. [] with fewer
    than two variants. With ``iterations``, a warm trial's windows are its rounds (``rounds_per_process``,
    :func:`~rlbench.analysis.window_rounds.windows_as_rounds`), as the history reads them."""
    if len(names) < 2 or "variant" not in trials:
        return []
    if iterations is not None:
        trials = windows_as_rounds(trials, iterations)[0]
    ok = trials[(trials["status"] == "ok") & trials["env_steps_per_s"].notna() & trials["variant"].notna()]
    round_of = ok["round"] if "round" in ok else ok["repeat"]
    ok = ok.assign(_round=round_of.astype(int))
    out = []
    for point in grid_points(trials, axes):
        mine = ok.loc[ok.index.isin(point.rows)]
        per = {
            n: dict(zip(mine.loc[mine["variant"] == n, "_round"], mine.loc[mine["variant"] == n, "env_steps_per_s"]))
            for n in names
        }
        for name in names[1:]:
            change = paired(per[names[0]], per[name])
            out.append(
                ComparisonRow(
                    label=point.label,
                    axes=point.axes,
                    a=names[0],
                    b=name,
                    a_env_steps_per_s=_median(per[names[0]]),
                    b_env_steps_per_s=_median(per[name]),
                    change=change,
                    verdict=change_verdict(change, threshold),
                    sentence=change_sentence(names[0], name, change),
                )
            )
    return out


def _plain(value: Any) -> Any:
    return value.item() if hasattr(value, "item") else value


def variant_comparison(
    folder: Path, trials: pd.DataFrame, threshold: float, iterations: pd.DataFrame | None = None
) -> Comparison:
    """``rlbench compare DIR``: the variants of the sweep in ``folder`` (its ``trials`` table; its
    ``iterations``, for warm trials' windows), each against the first; no rows without two variants."""
    manifest = ResultsFolder(Path(folder)).read_manifest()
    axes = [a for a in result_axes(manifest, trials) if a != "variant"]
    rows = compare_variants(trials, axes, variant_names(manifest, trials), threshold, iterations)
    return Comparison("variants", str(folder), str(folder), threshold, axes, rows)
