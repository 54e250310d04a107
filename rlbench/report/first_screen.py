"""The report's first screen, and the terminal's last lines: the answer in a few lines, each section a link below.

The fastest configuration (by name, with its interval, and whether the evidence shows it beats the runner-up), why it
is as fast as it is (its bottleneck words, each explained: :data:`~rlbench.analysis.labels.LABEL_MEANINGS`), the one
change to make next (a verdict's short form, :attr:`~rlbench.analysis.findings.Verdict.short`, and the command), and
how far it runs from what its env and learner allow. Every full sentence stands once, further down (Recommendations,
Verdicts, What its env and learner allow); these lines say it short and point there. An autoconfig folder leads with
its own answer (its section) and gets none of this yet.
"""

from __future__ import annotations

import pandas as pd

from rlbench.analysis.advice import Recommendation
from rlbench.analysis.config_row import num
from rlbench.analysis.configs import config_label
from rlbench.analysis.findings import CONFIDENCE
from rlbench.analysis.labels import label_meanings
from rlbench.analysis.result_set import Analysis
from rlbench.report.blocks import Block, Bullets
from rlbench.report.section_input import SectionInput
from rlbench.report.style import fmt

#: The most lines the first screen may take (the title and the links to the sections included), checked by
#: tests/report/test_first_screen.py.
FIRST_SCREEN_LINES = 10


def _throughput(analysis: Analysis) -> Recommendation | None:
    return next((r for r in analysis.recs if r.column == "env_steps_per_s" and r.index is not None), None)


def _row(analysis: Analysis, index: int) -> pd.Series:
    return analysis.configs[analysis.configs["index"] == index].iloc[0]


def fastest_line(analysis: Analysis, rec: Recommendation | None) -> str:
    """``Fastest: a=1 at 1,255 env steps/s (95% CI 1,200-1,300); not yet shown to beat a=0 (1 run a side).``"""
    if rec is None:
        if analysis.no_recommendations:
            return "Fastest: none ranked: a --quick run checks that each configuration runs (Recommendations says why)."
        return "Fastest: no configuration was measured (Trials lists why)."
    row = _row(analysis, rec.index or 0)
    low, high = fmt(row.get("env_steps_per_s_ci_low")), fmt(row.get("env_steps_per_s_ci_high"))
    ci = f" ({CONFIDENCE:.0%} CI {low}-{high})" if low != "-" else " (one repeat: no interval)"
    cv = f"CV {num(row.get('env_steps_per_s_cv')) or 0.0:.0%}: more repeats or a quieter machine would settle it"
    noisy = ""
    if bool(row.get("noisy")):
        noisy = (
            f", the highest median of configurations all too noisy to rank ({cv})"
            if analysis.configs["noisy"].all()
            else f", too noisy to rank ({cv}) but ahead of every ranked one outright"
        )
    versus = f"; {rec.versus}" if rec.versus else "; the only configuration measured"
    return f"Fastest: {rec.label} at {fmt(rec.value)} env steps/s{ci}{noisy}{versus}."


def why_line(row: pd.Series) -> str:
    """``Why: sampling-bound: collecting samples takes most of each iteration.``"""
    words = str(row.get("bottleneck") or "-")
    known = dict(label_meanings(words))
    said = ", ".join(f"{w} ({known[w]})" if w in known else w for w in words.split(", "))
    return f"Why: {said}; Verdicts has the numbers."


#: Why a verdict that applies asks for no next sweep (:attr:`rlbench.analysis.Analysis.next_stop`), in words.
NO_NEXT = {
    "cores_limit": "no more env runners fit",
    "no_fit": "the knob its verdict names has no larger value that fits the trial's cores",
}


def next_line(analysis: Analysis, rec: Recommendation | None, command: str | None) -> str:
    """The one change to make next, and the command; or why there is none."""
    step = analysis.next
    if step is not None and command:
        where = "" if rec is not None and rec.index == step.index else f"from {_label(analysis, step.index)}, "
        values = ", ".join(str(v) for v in step.values)
        return f"Next: {where}{step.verdict.short} (over {values}): {command}"
    if step is not None:
        return "Next: next.yaml was not written (the note under Figures says why)."
    if analysis.next_stop:
        return f"Next: none: {NO_NEXT[analysis.next_stop]} (Verdicts says why)."
    return "Next: no verdict of the fastest names a knob to change (Verdicts)."


def _label(analysis: Analysis, index: int) -> str:
    return config_label(_row(analysis, index), analysis.axes)


def ceiling_line(row: pd.Series) -> str | None:
    """How far the configuration runs from what its env and learner allow here; None for a folder from before it."""
    if "ceiling_env_steps_per_s" not in row:
        return None
    ceiling, rate = num(row.get("ceiling_env_steps_per_s")), num(row.get("env_steps_per_s"))
    if ceiling is None or rate is None:
        return "Ceiling: not known here (no env ceiling measured; What its env and learner allow says why)."
    return (
        f"Ceiling: it runs at {rate / ceiling:.0%} of what its env and learner allow here ({fmt(ceiling)} env steps/s; "
        "What its env and learner allow names the lever)."
    )


def target_line(analysis: Analysis) -> str | None:
    """The fastest to the sweep's target, when it has one."""
    rec = next((r for r in analysis.recs if r.column == "time_to_target_s"), None)
    if rec is None:
        return None
    if rec.index is None:
        return "To target: no configuration reached it (Recommendations)."
    return f"To target: {rec.label} first, at {fmt(rec.value, 1)} s of training (Recommendations has the evidence)."


def first_screen_lines(analysis: Analysis, command: str | None) -> list[str]:
    """The answer in a few lines (``command``: the one that runs ``next.yaml``, when written); [] for an autoconfig
    folder (its own answer leads)."""
    if analysis.autoconfig is not None:
        return []
    rec = _throughput(analysis)
    lines = [fastest_line(analysis, rec)]
    if rec is not None:
        row = _row(analysis, rec.index or 0)
        lines += [why_line(row), next_line(analysis, rec, command)]
        lines += [line for line in (ceiling_line(row),) if line]
    lines += [line for line in (target_line(analysis),) if line]
    return lines


def first_screen(given: SectionInput) -> list[Block]:
    """The first screen's lines, boxed; the links to every section below are added by the document."""
    lines = first_screen_lines(given.analysis, given.written.command if given.written else None)
    return [Bullets(lines, boxed=True)] if lines else []
