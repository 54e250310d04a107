"""Compare: steady-state throughput of result set B against result set A, per configuration.

Configurations are matched by their grid-axis values (the axes both result sets share). Their repeats
are independent runs, so each match is an unpaired comparison (:func:`rlbench.analysis.change.unpaired`,
the one rule): the ratio B/A of median throughput with a 95% percentile-bootstrap interval that
resamples A and B independently, and the one-sided exact rank test of the repeats. The interval
resamples the repeats (each ok trial's steady-state median) when both sides have
:data:`~rlbench.analysis.findings.REPEATS_FOR_INTERVAL` of them, else the steady-state iterations
(pooled over the trials): a single run's iterations show within-run noise only, so that interval is
narrower than a run-to-run one; the ``basis`` column says which was used. Where both result sets ran
with the same target, time to target is compared too: B/A of the median ``time_to_target_s`` over the
repeats that reached it, by the same rule (it never decides the exit code).

A verdict (``regressed``, ``sooner``, ``no significant change``, ...) needs repeats enough for the rank
test to reach :data:`~rlbench.analysis.findings.SIGNIFICANCE` (3 a side): iterations of one run
cannot tell a change from that run's luck. With fewer the verdict says there is no evidence yet and
how many repeats would give it (:func:`~rlbench.analysis.evidence.missing_evidence`), and never fails
the comparison. The rows' schema: :mod:`rlbench.analysis.comparison`. See docs/ANALYSIS.md.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pandas as pd

from rlbench.analysis.change import unpaired
from rlbench.analysis.comparison import Comparison, ComparisonRow, TimeToTarget
from rlbench.analysis.configs import axis_pairs_text, result_axes
from rlbench.analysis.evidence import change_sentence, change_verdict, time_to_target_verdict
from rlbench.analysis.tables import read_tables
from rlbench.analysis.windows import steady
from rlbench.results.layout import ResultsFolder


def _key(values: list) -> str:
    return json.dumps([v.item() if hasattr(v, "item") else v for v in values], default=str)


def _median(values: list[float]) -> float | None:
    return float(pd.Series(values).median()) if values else None


def _side(trials: pd.DataFrame, iterations: pd.DataFrame, axes: list[str]) -> dict[str, dict[str, Any]]:
    """Per configuration key: its axis values, per-trial medians and pooled steady iteration throughputs."""
    ok = trials[(trials["status"] == "ok") & trials["env_steps_per_s"].notna()]
    target_ok = (
        trials[(trials["status"] == "ok") & trials["reached_target"].notna()]
        if "reached_target" in trials
        else trials.iloc[:0]
    )
    steady_its = steady(iterations) if not iterations.empty else iterations
    by_trial = (
        steady_its.groupby("trial_id")["env_steps_per_s"].apply(lambda s: s.dropna().tolist())
        if not steady_its.empty
        else pd.Series(dtype=object)
    )
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


def _time_to_target(a: dict[str, Any], b: dict[str, Any]) -> TimeToTarget | None:
    """B against A in time to target where both sides ran with a target (None otherwise)."""
    if "target" not in a or "target" not in b:
        return None
    reached = {"a_reached": a["reached"], "b_reached": b["reached"]}
    if a["target"] != b["target"]:
        return TimeToTarget(**reached, verdict="different targets")
    ta, tb = a["ttt"], b["ttt"]
    a_s, b_s = _median(ta), _median(tb)
    if not ta or not tb:
        return TimeToTarget(
            **reached,
            a_time_to_target_s=a_s,
            b_time_to_target_s=b_s,
            verdict="not reached in " + ("A" if not ta else "B") + (" and B" if not ta and not tb else ""),
        )
    change = unpaired(ta, tb)
    return TimeToTarget(
        **reached, a_time_to_target_s=a_s, b_time_to_target_s=b_s, change=change, verdict=time_to_target_verdict(change)
    )


def compare(a_dir: Path, b_dir: Path, threshold: float) -> Comparison:
    """Compare result set ``b_dir`` against the baseline ``a_dir`` (see the module docstring); a drop of at
    least ``threshold`` (relative) with evidence is ``regressed``."""
    ta, tb = read_tables(Path(a_dir)), read_tables(Path(b_dir))
    axes_a = result_axes(ResultsFolder(Path(a_dir)).read_manifest(), ta["trials"])
    axes_b = result_axes(ResultsFolder(Path(b_dir)).read_manifest(), tb["trials"])
    axes = [a for a in axes_a if a in axes_b]
    side_a = _side(ta["trials"], ta["iterations"], axes)
    side_b = _side(tb["trials"], tb["iterations"], axes)
    rows = []
    for key in list(side_a) + [k for k in side_b if k not in side_a]:
        a, b = side_a.get(key), side_b.get(key)
        present: dict[str, Any] = a or b or {}  # one side at least: the key came from one
        info = present["axes"]
        label = axis_pairs_text(info.items()) or "all"
        if a is None or b is None:
            only = "only in B" if a is None else "only in A"
            med = _median(present["repeats"])
            change = unpaired(a["repeats"] if a else [], b["repeats"] if b else [])  # no ratio: its runs counted
            medians = (None if a is None else med, None if b is None else med)
            verdict, sentence = only, f"{only}: {'A' if a is None else 'B'} has no such configuration"
            ttt = None
        else:
            change = unpaired(a["repeats"], b["repeats"], within=(a["iterations"], b["iterations"]))
            unit = "repeats" if change.basis == "repeats" else "iterations"
            medians = (_median(a[unit]), _median(b[unit]))
            verdict, sentence = change_verdict(change, threshold), change_sentence("A", "B", change)
            ttt = _time_to_target(a, b)
        rows.append(
            ComparisonRow(
                label=label,
                axes=info,
                a="A",
                b="B",
                a_env_steps_per_s=medians[0],
                b_env_steps_per_s=medians[1],
                change=change,
                verdict=verdict,
                sentence=sentence,
                time_to_target=ttt,
            )
        )
    return Comparison("folders", str(a_dir), str(b_dir), threshold, axes, rows)
