"""The tables rlbench prints in a terminal: the planned trials, the sweep's results, a comparison.

A rich Table's string cells are markup: every cell that holds text not ours (values, reasons,
statuses and labels read from a folder) is a ``Text`` of :func:`~rlbench.results.text.plain`, so a
``[`` in it prints as a ``[`` and an escape sequence as ``\x1b``.
"""

from __future__ import annotations

import pandas as pd
from rich.table import Table
from rich.text import Text

from rlbench.analysis.compare import Comparison
from rlbench.analysis.stats import CONFIDENCE, interval_text
from rlbench.report.style import MAX_TABLE_ROWS, PHASES, fmt, pct
from rlbench.report.trial_plots import axis_columns
from rlbench.results.text import plain
from rlbench.spec.plan import TrialPlan


def _t(value, style: str = "") -> Text:
    """A cell of text that is not ours: plain, controls visible, never markup."""
    return Text(plain(value), style=style)


def plan_table(plans: list[TrialPlan]) -> Table:
    """The planned trials (``--dry-run``): cores, threads and each trial's fate; a grid value written
    relative to the machine shows what it resolved to, then how it was written: ``1 (cpus-1)``."""
    table = Table(title="planned trials")
    axes = list(plans[0].axes) if plans else []
    for column in ["trial", *axes, "cpus", "driver cores", "ray CPUs", "torch threads d/l/r", "seed", "fate"]:
        table.add_column(_t(column), overflow="fold")
    for p in plans:
        t = p.torch_threads
        table.add_row(p.trial_id, *[_t(f"{p.axes[a]} ({p.relative[a]})" if a in p.relative else p.axes[a])
                                    for a in axes],
                      str(p.cpus),
                      ",".join(map(str, p.driver_cores)) or "-", str(p.ray_cpus),
                      f"{t['driver']}/{t['learner']}/{t['env_runner']}", str(p.seed),
                      _t(f"skip: {p.skip_reason}", "yellow") if p.skip_reason else "run")
    return table


def results_table(trials: pd.DataFrame, axes: list[str], skip_groups: dict[str, str] | None = None) -> Table:
    """The final terminal table: one row per trial that was not skipped (at most
    :data:`MAX_TABLE_ROWS`, said in its caption), then one row per kind of skip reason
    (``skip_groups``: trial id -> its group, :func:`rlbench.spec.plan.skip_group`; without it,
    trials with the same reason share a row)."""
    axes = axis_columns(trials, axes)
    table = Table(title="rlbench sweep results", show_lines=False)
    skipped = trials[trials["status"] == "skipped"]
    ran = trials[trials["status"] != "skipped"]
    if len(ran) > MAX_TABLE_ROWS:
        table.caption = f"first {MAX_TABLE_ROWS} of {len(ran)} trials; all are in summary.csv and report.html"
        ran = ran.head(MAX_TABLE_ROWS)
    target = "reached_target" in trials and trials["reached_target"].notna().any()
    for column in ["trial", "status", *axes, "env steps/s", "sample", "learn", "sync", "other",
                   *(["to target"] if target else []), "note"]:
        table.add_column(_t(column), justify="right" if column not in ("trial", "status", "note") else "left",
                         overflow="fold")
    for _, r in ran.iterrows():
        status_style = {"ok": "green"}.get(r["status"], "red")
        reached = r.get("reached_target") if target else None
        to_target = "-" if reached is None or pd.isna(reached) else (
            f"{fmt(r.get('time_to_target_s'), 1)} s" if reached else "not reached")
        table.add_row(
            _t(r["trial_id"]), _t(r["status"], status_style), *[_t(r[a]) for a in axes],
            fmt(r.get("env_steps_per_s")), *[pct(r.get(f"{p}_frac")) for p in PHASES],
            *([to_target] if target else []),
            _t((r["reason"] or "")[:160]) if isinstance(r.get("reason"), str) else "",
        )
    groups: dict[str, list[pd.Series]] = {}
    for _, r in skipped.iterrows():
        reason = (skip_groups or {}).get(r["trial_id"]) or (r["reason"] if isinstance(r.get("reason"), str) else "")
        groups.setdefault(reason, []).append(r)
    for reason, rows in groups.items():
        values = [_t(", ".join(dict.fromkeys(str(r[a]) for r in rows))) for a in axes]
        table.add_row(_t(rows[0]["trial_id"]) if len(rows) == 1 else f"{len(rows)} trials", Text("skipped", style="yellow"),
                      *values, "-", "-", "-", "-", "-", *(["-"] if target else []), _t(reason[:160]))
    return table


def compare_table(comparison: Comparison) -> Table:
    """``rlbench compare``'s table (with time to target, B/A, where both sides had a target)."""
    table = Table(title=_t(f"B/A steady-state throughput  (A={comparison.a}, B={comparison.b}; "
                           f"threshold {comparison.threshold:.0%}, {CONFIDENCE:.0%} CI)"))
    target = any(r.time_to_target_verdict for r in comparison.rows)
    columns = ["configuration", "A env steps/s", "B env steps/s", "B/A", f"{CONFIDENCE:.0%} CI", "basis", "n A/B",
               "verdict"]
    if target:
        columns += ["reached A/B", "time to target A/B s", "B/A time", f"time {CONFIDENCE:.0%} CI", "to target"]
    for column in columns:
        table.add_column(column, justify="left" if column in ("configuration", "verdict", "basis", "to target")
                         else "right", overflow="fold")
    style = {"regressed": "red", "improved": "green", "small change": "yellow"}
    f = lambda v, d=0: "-" if v is None else f"{v:,.{d}f}"  # noqa: E731
    for r in comparison.rows:
        ci = interval_text(r.ci_low, r.ci_high)
        cells = [_t(r.label), f(r.a_env_steps_per_s), f(r.b_env_steps_per_s), f(r.ratio, 3), ci, _t(r.basis),
                 f"{r.n_a}/{r.n_b}", _t(r.verdict, style.get(r.verdict, "default"))]
        if target:
            tci = interval_text(r.time_to_target_ci_low, r.time_to_target_ci_high)
            cells += [f"{r.a_reached or '-'} / {r.b_reached or '-'}",
                      f"{f(r.a_time_to_target_s, 1)} / {f(r.b_time_to_target_s, 1)}", f(r.time_to_target_ratio, 3),
                      tci, _t(r.time_to_target_verdict or "-")]
        table.add_row(*cells)
    return table
