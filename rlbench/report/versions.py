"""What ``rlbench history`` and ``rlbench bisect`` draw and print: the trend figure per configuration
and the terminal tables (every cell plain text: :func:`~rlbench.report.blocks.to_rich`)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from rich.table import Table as RichTable

from rlbench.analysis.bisect import BisectResult
from rlbench.analysis.findings import CONFIDENCE, ROUNDS_FOR_EVIDENCE
from rlbench.analysis.history.trends import METRICS, ConfigTrend
from rlbench.analysis.stats import interval_text
from rlbench.report.blocks import Cell, Table, to_rich
from rlbench.report.style import MAX_LINES, fmt, plt, save


def plot_trend(trend: ConfigTrend, metric: str, ax=None):
    """One configuration's median ``metric`` per version with its 95% interval; flagged steps marked
    in red between their two versions. Returns the axes."""
    column, unit = METRICS[metric]
    ax = ax or plt.subplots(figsize=(6.4, 3.6))[1]
    x = np.arange(len(trend.points))

    def series(name: str) -> np.ndarray:  # one field of every point, NaN where it is None
        return np.array([np.nan if getattr(p, name) is None else getattr(p, name) for p in trend.points], dtype=float)

    med, low, high = (series(f"{column}{end}") for end in ("", "_ci_low", "_ci_high"))
    ax.errorbar(x, med, yerr=np.vstack([np.nan_to_num(med - low), np.nan_to_num(high - med)]), marker="o", capsize=4)
    for i, step in enumerate(s for s in trend.steps if s.metric == metric):
        if step.flagged:
            ax.axvspan(i + 0.1, i + 0.9, color="#C44E52", alpha=0.15, lw=0)
            ax.annotate(
                f"{step.change.paired_ratio:.2f}x",
                ((i + i + 1) / 2, np.nanmax(med) if np.isfinite(med).any() else 0),
                ha="center",
                va="bottom",
                fontsize=8,
                color="#C44E52",
            )
    ax.set_xticks(x, [p.version for p in trend.points], rotation=30 if len(x) > 6 else 0)
    ax.set_ylabel(f"{unit} (median)")
    ax.set_ylim(bottom=0)
    ax.grid(alpha=0.3)
    ax.set_title(f"{trend.label}: {metric.replace('_', ' ')}", fontsize=9)
    return ax


def write_trend_figure(trends: list[ConfigTrend], path: Path) -> tuple[Path, str] | None:
    """``history.png``: a row per configuration (at most :data:`MAX_LINES`), a column per metric; the
    path and its caption, or None without configurations."""
    if not trends:
        return None
    shown = trends[:MAX_LINES]
    metrics = list(dict.fromkeys(s.metric for t in shown for s in t.steps)) or ["throughput"]
    fig, axes = plt.subplots(len(shown), len(metrics), figsize=(6.4 * len(metrics), 3.4 * len(shown)), squeeze=False)
    for row, trend in zip(axes, shown):
        for ax, metric in zip(row, metrics):
            plot_trend(trend, metric, ax)
    caption = (
        f"Median over the rounds per version; bars: {CONFIDENCE:.0%} bootstrap interval; shaded: a step with "
        "evidence of a change of at least the threshold (its paired ratio, later/earlier speed)."
        + (
            f" First {MAX_LINES} of {len(trends)} configurations; all are in history.json."
            if len(trends) > MAX_LINES
            else ""
        )
    )
    return save(fig, path), caption


def history_table(trends: list[ConfigTrend], package: str) -> RichTable:
    """Per configuration and version: throughput (and time to target) with intervals, and the step from
    the version before: its paired ratio, interval and verdict."""
    target = any(p.reached_target is not None for t in trends for p in t.points)
    header = [
        "configuration",
        package,
        "env steps/s",
        f"{CONFIDENCE:.0%} CI",
        *(["s to target", "reached"] if target else []),
        "step ratio",
        f"step {CONFIDENCE:.0%} CI",
        "step",
    ]
    rows = []
    for trend in trends:
        steps = {s.after: s for s in trend.steps if s.metric == "throughput"}
        for i, p in enumerate(trend.points):
            s = steps.get(p.version) if i else None
            cells: list[str | Cell] = [
                trend.label if i == 0 else "",
                p.version,
                fmt(p.env_steps_per_s),
                "-"
                if p.env_steps_per_s_ci_low is None
                else f"{fmt(p.env_steps_per_s_ci_low)}-{fmt(p.env_steps_per_s_ci_high)}",
            ]
            if target:
                cells += [fmt(p.time_to_target_s, 1), f"{p.reached_target}/{p.ok_rounds}"]
            if s is None:
                cells += ["", "", ""]
            else:
                c = s.change
                word = (
                    ("slower" if (c.paired_ratio or 1) < 1 else "faster")
                    if s.flagged
                    else "under threshold"
                    if c.differs
                    else "too few rounds"
                    if c.runs_a < ROUNDS_FOR_EVIDENCE
                    else "no evidence"
                )
                cells += [
                    fmt(c.paired_ratio, 3),
                    interval_text(c.paired_ci_low, c.paired_ci_high),
                    Cell(word, "red" if s.flagged and word == "slower" else "green" if s.flagged else "default"),
                ]
            rows.append(cells)
    title = f"{package} history (step: against the version above, paired by round; throughput)"
    return to_rich(Table(header, rows, frozenset({0, 1, len(header) - 1}), title=title))


def bisect_table(result: BisectResult) -> RichTable:
    """Every probe of a bisect: what against what, its ratio and interval, and the outcome."""
    header = [
        "probe",
        "reference",
        "candidate",
        "configuration",
        "paired ratio",
        f"{CONFIDENCE:.0%} CI",
        "rounds",
        "outcome",
    ]
    style = {"bad": "red", "good": "green", "unclear": "yellow", "no data": "yellow"}
    rows = []
    for p in result.probes:
        for j, (label, s) in enumerate(p.steps.items()):
            rows.append(
                [
                    p.purpose if j == 0 else "",
                    p.reference,
                    p.candidate,
                    label,
                    fmt(s.change.paired_ratio, 3),
                    interval_text(s.change.paired_ci_low, s.change.paired_ci_high),
                    str(s.change.runs_a),
                    Cell(p.outcome, style.get(p.outcome, "default")) if j == 0 else "",
                ]
            )
    return to_rich(Table(header, rows, frozenset({0, 1, 2, 3, 7}), title="bisect probes"))
