"""The tables rlbench prints in a terminal: the sweep's results, a comparison (the planned trials:
:mod:`rlbench.report.plan_table`, which a dry run imports without pandas).

Each is a :class:`~rlbench.report.blocks.Table` block drawn by the terminal backend
(:func:`~rlbench.report.blocks.to_rich`), which makes every cell a ``Text`` of
:func:`~rlbench.results.text.plain`, never markup: a ``[`` in a value, reason, status or label read
from a folder prints as a ``[`` and an escape sequence as ``\x1b``.
"""

from __future__ import annotations

import pandas as pd
from rich.table import Table as RichTable

from rlbench.analysis.comparison import Comparison
from rlbench.analysis.configs import axis_value_text
from rlbench.analysis.findings import CONFIDENCE
from rlbench.analysis.stats import interval_text
from rlbench.analysis.tables import UNREADABLE
from rlbench.report.blocks import Cell, Table, to_rich
from rlbench.report.style import MAX_TABLE_ROWS, PHASES, fmt, pct
from rlbench.report.trial_plots import axis_columns


def results_table(trials: pd.DataFrame, axes: list[str], skip_groups: dict[str, str] | None = None) -> RichTable:
    """The final terminal table: one row per trial that was not skipped (at most
    :data:`MAX_TABLE_ROWS`, said in its caption), then one row per kind of skip reason
    (``skip_groups``: trial id -> its group, :func:`rlbench.planning.skip_summary.skip_group`; without it,
    trials with the same reason share a row)."""
    axes = axis_columns(trials, axes)
    skipped = trials[trials["status"] == "skipped"]
    ran = trials[trials["status"] != "skipped"]
    caption = ""
    if len(ran) > MAX_TABLE_ROWS:
        caption = f"first {MAX_TABLE_ROWS} of {len(ran)} trials; all are in summary.csv and report.html"
        ran = ran.head(MAX_TABLE_ROWS)
    target = "reached_target" in trials and trials["reached_target"].notna().any()
    header = ["trial", "status", *axes, "env steps/s", *PHASES, *(["to target"] if target else []), "note"]
    rows: list[list[str | Cell]] = []
    for _, r in ran.iterrows():
        reached = r.get("reached_target") if target else None
        to_target = (
            "-"
            if reached is None or pd.isna(reached)
            else (f"{fmt(r.get('time_to_target_s'), 1)} s" if reached else "not reached")
        )
        rows.append(
            [
                str(r["trial_id"]),
                Cell(str(r["status"]), {"ok": "green"}.get(r["status"], "red")),
                *["?" if r["status"] == UNREADABLE else axis_value_text(r[a]) for a in axes],
                fmt(r.get("env_steps_per_s")),
                *[pct(r.get(f"{p}_frac")) for p in PHASES],
                *([to_target] if target else []),
                (r["reason"] or "")[:160] if isinstance(r.get("reason"), str) else "",
            ]
        )
    groups: dict[str, list[pd.Series]] = {}
    for _, r in skipped.iterrows():
        reason = (skip_groups or {}).get(r["trial_id"]) or (r["reason"] if isinstance(r.get("reason"), str) else "")
        groups.setdefault(reason, []).append(r)
    for reason, group in groups.items():
        values = [", ".join(dict.fromkeys(axis_value_text(r[a]) for r in group)) for a in axes]
        rows.append(
            [
                str(group[0]["trial_id"]) if len(group) == 1 else f"{len(group)} trials",
                Cell("skipped", "yellow"),
                *values,
                "-",  # env steps/s
                *["-" for _ in PHASES],
                *(["-"] if target else []),
                reason[:160],
            ]
        )
    left = frozenset({0, 1, len(header) - 1})
    return to_rich(Table(header, rows, left, title="rlbench sweep results", caption=caption), show_lines=False)


def compare_table(comparison: Comparison) -> RichTable:
    """``rlbench compare``'s table (with time to target, B/A, where both sides had a target)."""
    target = any(r.time_to_target for r in comparison.rows)
    header = [
        "configuration",
        "A env steps/s",
        "B env steps/s",
        "B/A",
        f"{CONFIDENCE:.0%} CI",
        "basis",
        "n A/B",
        "verdict",
    ]
    if target:
        header += ["reached A/B", "time to target A/B s", "B/A time", f"time {CONFIDENCE:.0%} CI", "to target"]
    style = {"regressed": "red", "improved": "green", "small change": "yellow"}
    rows: list[list[str | Cell]] = []
    for r in comparison.rows:
        c, t = r.change, r.time_to_target
        cells: list[str | Cell] = [
            r.label,
            fmt(r.a_env_steps_per_s),
            fmt(r.b_env_steps_per_s),
            fmt(c.ratio, 3),
            interval_text(c.ci_low, c.ci_high),
            c.basis,
            f"{c.n_a}/{c.n_b}",
            Cell(r.verdict, style.get(r.verdict, "default")),
        ]
        if target:
            tc = t.change if t else None
            cells += [
                f"{t and t.a_reached or '-'} / {t and t.b_reached or '-'}",
                f"{fmt(t and t.a_time_to_target_s, 1)} / {fmt(t and t.b_time_to_target_s, 1)}",
                fmt(tc and tc.ratio, 3),
                interval_text(tc.ci_low, tc.ci_high) if tc else "-",
                t and t.verdict or "-",
            ]
        rows.append(cells)
    left = frozenset(i for i, c in enumerate(header) if c in ("configuration", "verdict", "basis", "to target"))
    title = (
        f"B/A steady-state throughput  (A={comparison.a}, B={comparison.b}; "
        f"threshold {comparison.threshold:.0%}, {CONFIDENCE:.0%} CI)"
    )
    return to_rich(Table(header, rows, left, title=title))
