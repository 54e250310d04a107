"""``compare.csv`` and ``compare.json``: one schema for both kinds of ``rlbench compare``.

``rlbench compare A B`` (two result folders, :mod:`rlbench.analysis.compare`) and ``rlbench compare DIR``
(one folder's variants, :mod:`rlbench.analysis.variants`) give the same rows: per grid point, B against
A, with the pair's figures in one :class:`~rlbench.analysis.change.Change` (unpaired for two folders,
paired by round for variants), one verdict word from the vocabulary of
:func:`~rlbench.analysis.evidence.change_verdict` and the sentence with its evidence. The files carry
:data:`~rlbench.analysis.change.COMPARISON_SCHEMA_VERSION` (docs/SCHEMA.md, "Comparison files").
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from rlbench.analysis.change import CHANGE_FIELDS, COMPARISON_SCHEMA_VERSION, Change, flat
from rlbench.analysis.findings import CONFIDENCE, SIGNIFICANCE
from rlbench.results.files import write_atomic, write_json
from rlbench.results.layout import COMPARE_CSV, COMPARE_JSON
from rlbench.results.tables import csv_bytes

#: The verdicts that fail a comparison (exit code 1) and count in ``compare.json``'s ``regressed``.
FAILING = ("regressed",)


@dataclass(frozen=True)
class TimeToTarget:
    """B against A in time to the stop target, where both sides ran with a target."""

    a_reached: str
    """``k/n``: of A's n ok repeats, k reached the target."""
    b_reached: str
    """Same in B."""
    a_time_to_target_s: float | None = None
    """Median ``time_to_target_s`` over A's repeats that reached it."""
    b_time_to_target_s: float | None = None
    """Same in B."""
    change: Change | None = None
    """B/A of the times (below 1: B reaches it sooner), unpaired over the repeats that reached it; None when
    the targets differ or a side never reached it."""
    verdict: str = ""
    """``sooner``, ``later`` (with evidence), ``no significant change``, ``no evidence yet: ...``, ``not reached
    in A`` (``in B``, ``in A and B``) or ``different targets``."""


@dataclass(frozen=True)
class ComparisonRow:
    """One grid point: side B against side A."""

    label: str
    """Its axis values, ``a=1, b=2`` (``all`` without axes)."""
    axes: dict[str, Any]
    """Axis column -> value (a variant is a side, never an axis)."""
    a: str
    """Side A: ``A`` (two folders: compare.json's ``a`` names it) or the reference variant."""
    b: str
    """Side B: ``B`` or the variant compared with the reference."""
    a_env_steps_per_s: float | None
    """A's median steady-state throughput (over what the interval resampled; variants: over rounds)."""
    b_env_steps_per_s: float | None
    """Same for B."""
    change: Change
    """The pair's figures (a side without the grid point: no ratio, its runs counted as 0)."""
    verdict: str
    """regressed, improved, small change, no significant change, ``no evidence yet: ...``, no data
    (:func:`~rlbench.analysis.evidence.change_verdict`), or only in A / only in B."""
    sentence: str
    """The comparison in words with its evidence (:func:`~rlbench.analysis.evidence.change_sentence`)."""
    time_to_target: TimeToTarget | None = None
    """Where both sides ran with a target (two folders only)."""


@dataclass(frozen=True)
class Comparison:
    """What ``rlbench compare`` compared, and its rows."""

    kind: str
    """``folders`` (``rlbench compare A B``) or ``variants`` (``rlbench compare DIR``)."""
    a: str
    """Folder A, the baseline (variants: the folder)."""
    b: str
    """Folder B, the candidate (variants: the same folder)."""
    threshold: float
    """The relative change that counts when it has evidence."""
    axes: list[str]
    """Axes the grid points were matched on."""
    rows: list[ComparisonRow]
    """One per grid point (and, for variants, per variant after the reference)."""

    @property
    def regressed(self) -> list[ComparisonRow]:
        """Rows whose B is lower than A by at least the threshold, with evidence."""
        return [r for r in self.rows if r.verdict in FAILING]


#: ``compare.csv``'s columns after the axis columns (one schema for both kinds; docs/SCHEMA.md).
CSV_COLUMNS: tuple[str, ...] = (
    "label",
    "a",
    "b",
    "a_env_steps_per_s",
    "b_env_steps_per_s",
    *CHANGE_FIELDS,
    "verdict",
    "sentence",
    "a_reached",
    "b_reached",
    "a_time_to_target_s",
    "b_time_to_target_s",
    *(f"time_to_target_{f}" for f in CHANGE_FIELDS),
    "time_to_target_verdict",
)


def to_frame(comparison: Comparison) -> pd.DataFrame:
    """The comparison as ``compare.csv``'s table: ``schema_version``, the axis columns, then :data:`CSV_COLUMNS`."""
    records = []
    for r in comparison.rows:
        ttt = r.time_to_target
        records.append(
            {
                "schema_version": COMPARISON_SCHEMA_VERSION,
                **{a: r.axes.get(a) for a in comparison.axes},
                "label": r.label,
                "a": r.a,
                "b": r.b,
                "a_env_steps_per_s": r.a_env_steps_per_s,
                "b_env_steps_per_s": r.b_env_steps_per_s,
                **flat(r.change),
                "verdict": r.verdict,
                "sentence": r.sentence,
                **{
                    k: None if ttt is None else getattr(ttt, k)
                    for k in ("a_reached", "b_reached", "a_time_to_target_s", "b_time_to_target_s")
                },
                **flat(None if ttt is None else ttt.change, "time_to_target_"),
                "time_to_target_verdict": None if ttt is None else ttt.verdict,
            }
        )
    columns = ["schema_version", *[a for a in comparison.axes if a not in CSV_COLUMNS], *CSV_COLUMNS]
    return pd.DataFrame(records, columns=columns)


def to_json(comparison: Comparison) -> dict[str, Any]:
    """``compare.json``'s body: the inputs, the failing count and every row (a pair's figures nested)."""
    return {
        "schema_version": COMPARISON_SCHEMA_VERSION,
        "kind": comparison.kind,
        "a": comparison.a,
        "b": comparison.b,
        "threshold": comparison.threshold,
        "confidence": CONFIDENCE,
        "significance": SIGNIFICANCE,
        "axes": comparison.axes,
        "regressed": len(comparison.regressed),
        "rows": [asdict(r) for r in comparison.rows],
    }


def write_outputs(comparison: Comparison, out_dir: Path) -> tuple[Path, Path]:
    """``compare.csv`` and ``compare.json`` into ``out_dir``; returns their paths."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    csv_path, json_path = out_dir / COMPARE_CSV, out_dir / COMPARE_JSON
    write_atomic(csv_path, csv_bytes(to_frame(comparison)))
    write_json(json_path, to_json(comparison))
    return csv_path, json_path
