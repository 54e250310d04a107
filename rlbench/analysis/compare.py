"""Compare: steady-state throughput of result set B against result set A, per configuration.

Configurations are matched by their grid-axis values (the axes both result sets share). For each
match the ratio B/A of median throughput gets a 95% percentile-bootstrap interval that resamples A
and B independently. The unit resampled is the repeat (each ok trial's steady-state median) when
both sides have at least 2 repeats, else the steady-state iteration (pooled over the trials): a
single run's iterations show within-run noise only, so that interval is narrower than a
run-to-run one; the ``basis`` column says which was used. Where both result sets ran with the same
target, time to target is compared too: B/A of the median ``time_to_target_s`` over the repeats that
reached it, with the same bootstrap over those repeats (it never decides the exit code).

A verdict (``regressed``, ``sooner``, ``no significant change``, ...) needs repeats enough for a rank
test to reach :data:`~rlbench.analysis.findings.SIGNIFICANCE` (3 a side): iterations of one run
cannot tell a change from that run's luck. With fewer the verdict says there is no evidence yet and
how many repeats would give it (:func:`~rlbench.analysis.findings.missing_evidence`), and never fails
the comparison. See docs/ANALYSIS.md.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from rlbench.analysis.configs import result_axes
from rlbench.analysis.findings import can_show, missing_evidence
from rlbench.analysis.stats import CONFIDENCE, ratio_ci
from rlbench.analysis.tables import read_tables
from rlbench.analysis.windows import steady
from rlbench.results.files import write_atomic, write_json
from rlbench.results.layout import COMPARE_CSV, COMPARE_JSON, ResultsFolder
from rlbench.results.tables import csv_bytes

@dataclass(frozen=True)
class ComparisonRow:
    """One configuration present in A and/or B."""

    label: str
    """Its axis values, ``a=1, b=2``."""
    axes: dict[str, Any]
    """Axis column -> value."""
    a_env_steps_per_s: float | None
    """Median steady-state throughput in A (over the resampled unit)."""
    b_env_steps_per_s: float | None
    """Same in B."""
    ratio: float | None
    """b / a."""
    ci_low: float | None
    """Lower end of the 95% interval of the ratio (None with fewer than 2 values on a side)."""
    ci_high: float | None
    """Upper end."""
    basis: str
    """What was resampled: ``repeats`` or ``iterations``."""
    n_a: int
    """Values on side A."""
    n_b: int
    """Values on side B."""
    verdict: str
    """regressed, improved, small change, no significant change, only in A, only in B, no data; or
    ``no evidence yet: ...`` with too few repeats a side for any of the first four."""
    a_reached: str | None = None
    """``k/n``: of A's n ok repeats, k reached the target (None without a target on both sides)."""
    b_reached: str | None = None
    """Same in B."""
    a_time_to_target_s: float | None = None
    """Median ``time_to_target_s`` over A's repeats that reached the target."""
    b_time_to_target_s: float | None = None
    """Same in B."""
    time_to_target_ratio: float | None = None
    """b / a of those medians (below 1: B reaches the target sooner)."""
    time_to_target_ci_low: float | None = None
    """Lower end of its 95% interval (repeats resampled; None with fewer than 2 reached on a side)."""
    time_to_target_ci_high: float | None = None
    """Upper end."""
    time_to_target_verdict: str | None = None
    """sooner, later, no significant change, not reached in A/B, different targets, or ``no evidence yet: ...``
    with too few repeats that reached it a side; None without targets on both sides."""


@dataclass(frozen=True)
class Comparison:
    """The comparison of two result sets."""

    a: str
    """Result set A (the baseline)."""
    b: str
    """Result set B (the candidate)."""
    threshold: float
    """Relative change that counts as a regression/improvement when significant."""
    axes: list[str]
    """Axes the configurations were matched on."""
    rows: list[ComparisonRow]
    """One per configuration."""

    @property
    def regressed(self) -> list[ComparisonRow]:
        """Rows that regressed beyond the threshold with significance."""
        return [r for r in self.rows if r.verdict == "regressed"]


def _key(values: list) -> str:
    return json.dumps([v.item() if hasattr(v, "item") else v for v in values], default=str)


def _side(trials: pd.DataFrame, iterations: pd.DataFrame, axes: list[str]) -> dict[str, dict[str, Any]]:
    """Per configuration key: its axis values, per-trial medians and pooled steady iteration throughputs."""
    ok = trials[(trials["status"] == "ok") & trials["env_steps_per_s"].notna()]
    target_ok = trials[(trials["status"] == "ok") & trials["reached_target"].notna()] \
        if "reached_target" in trials else trials.iloc[:0]
    steady_its = steady(iterations) if not iterations.empty else iterations
    by_trial = steady_its.groupby("trial_id")["env_steps_per_s"].apply(lambda s: s.dropna().tolist()) \
        if not steady_its.empty else pd.Series(dtype=object)
    out: dict[str, dict[str, Any]] = {}
    for _, group in trials.groupby("index", sort=True):
        first = group.iloc[0]
        key = _key([first[a] for a in axes])
        mine = ok[ok["index"] == first["index"]]
        its = [v for t in mine["trial_id"] for v in by_trial.get(t, [])]
        out[key] = {"axes": {a: first[a] for a in axes}, "repeats": mine["env_steps_per_s"].tolist(), "iterations": its}
        with_target = target_ok[target_ok["index"] == first["index"]]
        if len(with_target):
            reached = with_target[with_target["reached_target"].astype(bool)]
            out[key]["target"] = tuple(with_target.iloc[0][["target_metric", "target_threshold", "target_mode"]])
            out[key]["reached"] = f"{len(reached)}/{len(with_target)}"
            out[key]["ttt"] = pd.to_numeric(reached["time_to_target_s"], errors="coerce").dropna().tolist()
    return out


def throughput_verdict(ratio: float | None, significant: bool, threshold: float, repeats_a: int, repeats_b: int) -> str:
    """A configuration's throughput verdict; none from fewer repeats than a rank test needs (whatever
    the interval says: with one run a side it is the iterations' interval, within-run noise only)."""
    if ratio is None:
        return "no data"
    if not can_show(repeats_a, repeats_b):
        return missing_evidence(repeats_a, repeats_b)
    if not significant:
        return "no significant change"
    if ratio < 1 - threshold:
        return "regressed"
    if ratio > 1 + threshold:
        return "improved"
    return "small change"


def _time_to_target(a: dict[str, Any], b: dict[str, Any]) -> dict[str, Any]:
    """The time-to-target fields of a row where both sides ran with a target ({} otherwise)."""
    if "target" not in a or "target" not in b:
        return {}
    out: dict[str, Any] = {"a_reached": a["reached"], "b_reached": b["reached"]}
    if a["target"] != b["target"]:
        return {**out, "time_to_target_verdict": "different targets"}
    ta, tb = a["ttt"], b["ttt"]
    out["a_time_to_target_s"] = float(pd.Series(ta).median()) if ta else None
    out["b_time_to_target_s"] = float(pd.Series(tb).median()) if tb else None
    if not ta or not tb:
        return {**out, "time_to_target_verdict": "not reached in " + ("A" if not ta else "B") + (" and B" if not ta
                                                                                               and not tb else "")}
    r = ratio_ci(ta, tb)
    if not can_show(len(ta), len(tb)):
        said = missing_evidence(len(ta), len(tb))
    else:
        said = "no significant change" if not r.significant else ("later" if r.ratio > 1 else "sooner")
    return {**out, "time_to_target_ratio": r.ratio, "time_to_target_ci_low": r.ci_low,
            "time_to_target_ci_high": r.ci_high, "time_to_target_verdict": said}


def compare(a_dir: Path, b_dir: Path, threshold: float) -> Comparison:
    """Compare result set ``b_dir`` against the baseline ``a_dir`` (see the module docstring); a
    significant drop larger than ``threshold`` (relative) fails."""
    ta, tb = read_tables(Path(a_dir)), read_tables(Path(b_dir))
    axes_a = result_axes(ResultsFolder(Path(a_dir)).read_manifest(), ta["trials"])
    axes_b = result_axes(ResultsFolder(Path(b_dir)).read_manifest(), tb["trials"])
    axes = [a for a in axes_a if a in axes_b]
    side_a = _side(ta["trials"], ta["iterations"], axes)
    side_b = _side(tb["trials"], tb["iterations"], axes)
    rows = []
    for key in list(side_a) + [k for k in side_b if k not in side_a]:
        a, b = side_a.get(key), side_b.get(key)
        info = (a or b)["axes"]
        label = ", ".join(f"{k}={v}" for k, v in info.items()) or "all"
        if a is None or b is None:
            only = "only in B" if a is None else "only in A"
            present = b if a is None else a
            med = float(pd.Series(present["repeats"]).median()) if present["repeats"] else None
            rows.append(ComparisonRow(label, info, None if a is None else med, None if b is None else med, None,
                                      None, None, "-", len(a["repeats"]) if a else 0, len(b["repeats"]) if b else 0,
                                      only))
            continue
        basis = "repeats" if len(a["repeats"]) >= 2 and len(b["repeats"]) >= 2 else "iterations"
        xa, xb = a[basis], b[basis]
        r = ratio_ci(xa, xb)
        rows.append(ComparisonRow(
            label, info, float(pd.Series(xa).median()) if xa else None, float(pd.Series(xb).median()) if xb else None,
            r.ratio, r.ci_low, r.ci_high, basis, r.n_a, r.n_b,
            throughput_verdict(r.ratio, r.significant, threshold, len(a["repeats"]), len(b["repeats"])),
            **_time_to_target(a, b)))
    return Comparison(str(a_dir), str(b_dir), threshold, axes, rows)


def to_frame(comparison: Comparison) -> pd.DataFrame:
    """The comparison as a table (one row per configuration, axis values as columns)."""
    records = []
    for r in comparison.rows:
        d = asdict(r)
        axes = d.pop("axes")
        records.append({**axes, **d})
    return pd.DataFrame(records)


def write_outputs(comparison: Comparison, out_dir: Path) -> tuple[Path, Path]:
    """``compare.csv`` and ``compare.json`` into ``out_dir``; returns their paths."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    csv_path, json_path = out_dir / COMPARE_CSV, out_dir / COMPARE_JSON
    write_atomic(csv_path, csv_bytes(to_frame(comparison)))
    write_json(json_path, {
        "a": comparison.a, "b": comparison.b, "threshold": comparison.threshold, "confidence": CONFIDENCE,
        "axes": comparison.axes, "regressed": len(comparison.regressed),
        "rows": [asdict(r) for r in comparison.rows],
    })
    return csv_path, json_path
