"""Variants compared on each grid point: every variant against the first (the reference), paired by round.

A sweep with ``variants:`` runs every grid point once per variant per round, the variants of a
round back to back (:mod:`rlbench.spec.variants`). Per grid point and variant this computes, over
the ok trials' steady-state throughput (``env_steps_per_s``):

- the ratio of medians, variant / reference, with a bootstrap interval that resamples the two
  sides independently (:func:`~rlbench.analysis.stats.ratio_ci`);
- the paired ratio: the median over rounds of the round's variant / reference, with a bootstrap
  interval over the rounds (:func:`~rlbench.analysis.stats.median_ci`). The two sides of a round
  ran seconds apart, so the machine's drift over minutes cancels in it (docs/MEASUREMENT.md 7);
- a Wilcoxon signed-rank test (scipy.stats, exact) on the rounds' log ratios.

What that is called in words, and when: :func:`rlbench.analysis.findings.variant_verdict`.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats as scipy_stats

from rlbench.analysis.findings import variant_differs, variant_verdict
from rlbench.analysis.stats import CONFIDENCE, median_ci, ratio_ci
from rlbench.results.files import write_atomic, write_json
from rlbench.results.layout import COMPARE_CSV, COMPARE_JSON
from rlbench.results.tables import csv_bytes


@dataclass(frozen=True)
class VariantComparison:
    """One variant against the reference on one grid point."""

    label: str
    """The grid point's axis values, ``a=1, b=2`` (``all`` without grid axes)."""
    axes: dict[str, Any]
    """Grid axis column -> value (the variant not included)."""
    reference: str
    """The reference variant (the spec's first)."""
    variant: str
    """The variant compared with it."""
    reference_env_steps_per_s: float | None
    """Median over the reference's ok rounds of its steady-state throughput."""
    env_steps_per_s: float | None
    """Same for the variant."""
    ratio: float | None
    """variant / reference of those medians (below 1: the variant is slower)."""
    ci_low: float | None
    """Lower end of its 95% interval (the sides resampled independently; None with < 2 rounds a side)."""
    ci_high: float | None
    """Upper end."""
    paired_ratio: float | None
    """Median over the rounds both ran of variant / reference in that round."""
    paired_ci_low: float | None
    """Lower end of its 95% interval (rounds resampled; None with fewer than 2 paired rounds)."""
    paired_ci_high: float | None
    """Upper end."""
    rounds: int
    """Rounds in which both sides have an ok trial (the pairs)."""
    wilcoxon_p: float | None
    """Two-sided exact Wilcoxon signed-rank p-value of the rounds' log ratios (None without pairs)."""
    verdict: str
    """``B is 12.3% slower than A (...)``, or ``no evidence of a difference (...)`` (findings.py)."""

    @property
    def significant(self) -> bool:
        """Both intervals exclude 1, on the same side (:func:`~rlbench.analysis.findings.variant_differs`)."""
        return variant_differs(asdict(self))


def wilcoxon_p(ratios: list[float]) -> float | None:
    """Two-sided Wilcoxon signed-rank p-value of ``log(ratios)`` against 0 (exact for these few
    rounds); 1.0 when every ratio is 1, None without ratios."""
    logs = np.log(np.asarray(ratios, dtype=float))
    if len(logs) == 0:
        return None
    if np.all(logs == 0):
        return 1.0
    return float(scipy_stats.wilcoxon(logs, alternative="two-sided", zero_method="wilcox").pvalue)


def compare_pair(reference: dict[int, float], variant: dict[int, float]) -> dict[str, Any]:
    """The figures of one variant against the reference, each given as round -> throughput."""
    r = ratio_ci(list(reference.values()), list(variant.values()))
    both = sorted(set(reference) & set(variant))
    ratios = [variant[k] / reference[k] for k in both if reference[k] > 0]
    paired = median_ci(ratios)
    return {"reference_env_steps_per_s": _median(reference), "env_steps_per_s": _median(variant),
            "ratio": r.ratio, "ci_low": r.ci_low, "ci_high": r.ci_high, "paired_ratio": paired.median,
            "paired_ci_low": paired.ci_low, "paired_ci_high": paired.ci_high, "rounds": len(ratios),
            "wilcoxon_p": wilcoxon_p(ratios)}


def _median(values: dict[int, float]) -> float | None:
    return float(np.median(list(values.values()))) if values else None


def variant_names(manifest: dict[str, Any], trials: pd.DataFrame) -> list[str]:
    """The variants in spec order (the first is the reference); [] for a sweep without variants."""
    spec = [v.get("name") for v in (manifest.get("spec") or {}).get("variants") or [] if isinstance(v, dict)]
    seen = [] if "variant" not in trials else list(trials.sort_values("index")["variant"].dropna().unique())
    return [n for n in spec if n in seen] + [n for n in seen if n not in spec] if spec or seen else []


@dataclass(frozen=True)
class GridPoint:
    """One grid point of a trials table: the rows that ran it (every variant or version of it)."""

    label: str
    """The axis values in words, ``a=1, b=2`` (``all`` without grid axes)."""
    axes: dict[str, Any]
    """Grid axis column -> value."""
    rows: pd.Index
    """The trials table's index labels of its trials."""


def grid_points(trials: pd.DataFrame, axes: list[str]) -> list[GridPoint]:
    """The distinct values of the ``axes`` columns, in the order of the trials' ``index`` (grid order).

    Values are told apart by their JSON text, so numpy scalars count as the Python values they hold
    (compare and history each grouped this way before sharing it)."""
    keys = pd.Series([json.dumps([_plain(v) for v in row], default=str) for row in trials[axes].itertuples(index=False)]
                     if axes else ["[]"] * len(trials), index=trials.index, dtype=object)
    order = keys.loc[trials.sort_values("index", kind="stable").index]
    out = []
    for key in dict.fromkeys(order):
        values = dict(zip(axes, json.loads(key)))
        out.append(GridPoint(", ".join(f"{a}={v}" for a, v in values.items()) or "all", values, keys.index[keys == key]))
    return out


def compare_variants(trials: pd.DataFrame, axes: list[str], names: list[str]) -> list[VariantComparison]:
    """Per grid point (``axes``: its columns, the variant not among them) and per variant after the
    first, that variant against the first. [] with fewer than two variants."""
    if len(names) < 2 or "variant" not in trials:
        return []
    ok = trials[(trials["status"] == "ok") & trials["env_steps_per_s"].notna() & trials["variant"].notna()]
    round_of = ok["round"] if "round" in ok else ok["repeat"]
    ok = ok.assign(_round=round_of.astype(int))
    out = []
    for point in grid_points(trials, axes):
        mine = ok.loc[ok.index.isin(point.rows)]
        per = {n: dict(zip(mine.loc[mine["variant"] == n, "_round"], mine.loc[mine["variant"] == n, "env_steps_per_s"]))
               for n in names}
        for name in names[1:]:
            figures = compare_pair(per[names[0]], per[name])
            out.append(VariantComparison(point.label, point.axes, names[0], name, **figures,
                                         verdict=variant_verdict(names[0], name, figures)))
    return out


def _plain(value: Any) -> Any:
    return value.item() if hasattr(value, "item") else value


def slower(rows: list[VariantComparison], threshold: float) -> list[VariantComparison]:
    """Variants slower than the reference beyond ``threshold`` (relative), with both intervals below 1."""
    return [r for r in rows if r.significant and r.paired_ratio is not None and r.paired_ratio < 1 - threshold]


def write_variant_outputs(rows: list[VariantComparison], source: str, threshold: float, out_dir: Path) -> tuple[Path, Path]:
    """``compare.csv`` and ``compare.json`` of the variants of one result set into ``out_dir``."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    csv_path, json_path = out_dir / COMPARE_CSV, out_dir / COMPARE_JSON
    frame = pd.DataFrame([{**r.axes, **{k: v for k, v in asdict(r).items() if k != "axes"}} for r in rows])
    write_atomic(csv_path, csv_bytes(frame))
    write_json(json_path, {"results": source, "threshold": threshold, "confidence": CONFIDENCE,
                           "slower": len(slower(rows, threshold)), "rows": [asdict(r) for r in rows]})
    return csv_path, json_path
