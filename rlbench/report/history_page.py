"""``history.html``: a package's performance history as one static page a project could publish (asv's site, in one
file): per configuration, throughput per release with its 95% interval and the iteration's split, each step's
verdict by the one change rule, the flagged steps with their confirmation and the API changes said as such.

Built as typed blocks (:mod:`rlbench.report.blocks`: every text escaped there) with one figure per configuration
embedded as a PNG, no script, no link out. What the words rest on: :mod:`rlbench.analysis.history.trends`.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from rlbench.analysis.findings import CONFIDENCE, ROUNDS_FOR_EVIDENCE
from rlbench.analysis.history.points import ChangePoint, span
from rlbench.analysis.history.runs import HistoryData
from rlbench.analysis.history.split import DRIVER_PHASES, PHASES
from rlbench.analysis.history.trends import ConfigTrend, VersionPoint, VersionStep
from rlbench.analysis.stats import interval_text
from rlbench.report.blocks import Block, Bullets, Figure, Heading, Paragraph, Table, to_html
from rlbench.report.document import _CSS
from rlbench.report.style import PHASE_COLORS, file_stem, fmt, plt, save
from rlbench.results.files import write_atomic

PHASE_WORDS = dict(PHASES)
#: The page's own styles beside the report's: a flagged or called step stands out in its table.
_PAGE_CSS = _CSS + "td.bad{color:#b00;font-weight:600}td.good{color:#070;font-weight:600}"


def _series(points: list[VersionPoint], get) -> np.ndarray:
    return np.array([np.nan if get(p) is None else get(p) for p in points], dtype=float)


def _phase_ms(point: VersionPoint, phase: str) -> float | None:
    return next((f.ms_per_k for f in point.phases if f.phase == phase), None)


def plot_release_history(trend: ConfigTrend, ax_top=None, ax_bottom=None):
    """Two panels: throughput per release (median, bars: its interval; a flagged step shaded, red for slower,
    green for faster, its paired ratio written over it) and the iteration split per release (milliseconds per
    1,000 env steps of the driver's four phases, stacked). Returns the two axes."""
    if ax_top is None or ax_bottom is None:
        _, (ax_top, ax_bottom) = plt.subplots(2, 1, figsize=(max(6.4, 0.42 * len(trend.points) + 2), 6.2), sharex=True)
    points, x = trend.points, np.arange(len(trend.points))
    med = _series(points, lambda p: p.env_steps_per_s)
    low = _series(points, lambda p: p.env_steps_per_s_ci_low)
    high = _series(points, lambda p: p.env_steps_per_s_ci_high)
    ax_top.errorbar(
        x, med, yerr=np.vstack([np.nan_to_num(med - low), np.nan_to_num(high - med)]), marker="o", capsize=3, lw=1
    )
    top = np.nanmax(high if np.isfinite(high).any() else med) if np.isfinite(med).any() else 1.0
    for i, step in enumerate(s for s in trend.steps if s.metric == "throughput"):
        if step.flagged:
            slower = step.verdict == "regressed"
            ax_top.axvspan(i + 0.1, i + 0.9, color="#C44E52" if slower else "#55A868", alpha=0.15, lw=0)
            ax_top.annotate(
                f"{step.change.paired_ratio:.2f}x {step.called}",
                (i + 0.5, top),
                ha="center",
                va="bottom",
                fontsize=7,
                color="#C44E52" if slower else "#2E7D32",
            )
    for i, p in enumerate(points):
        if p.ok_rounds == 0:
            ax_top.annotate(
                "failed" if p.failed else "no run", (i, 0), ha="center", va="bottom", fontsize=7, rotation=90
            )
    ax_top.set_ylabel("env steps/s (median)")
    ax_top.set_ylim(bottom=0, top=top * 1.15 if np.isfinite(top) and top > 0 else None)
    ax_top.grid(alpha=0.3)
    ax_top.set_title(f"{trend.label}: throughput, {CONFIDENCE:.0%} intervals", fontsize=9)
    bottom = np.zeros(len(points))
    for phase in DRIVER_PHASES:
        values = np.nan_to_num(_series(points, lambda p, phase=phase: _phase_ms(p, phase)))
        name = phase.removesuffix("_s")
        ax_bottom.bar(x, values, bottom=bottom, color=PHASE_COLORS[name], label=PHASE_WORDS[phase], width=0.7)
        bottom += values
    ax_bottom.set_ylabel("ms per 1,000 env steps")
    ax_bottom.set_title("the iteration's split (median over rounds)", fontsize=9)
    ax_bottom.legend(fontsize=7, ncols=4, loc="upper left", frameon=False)
    ax_bottom.set_ylim(top=max(bottom.max(), 1) * 1.25)
    ax_bottom.grid(alpha=0.3, axis="y")
    ax_bottom.set_xticks(x, [p.version for p in points], rotation=45 if len(points) > 6 else 0, ha="right")
    return ax_top, ax_bottom


def _step_cells(step: VersionStep | None) -> list[str]:
    if step is None:
        return ["", "", ""]
    c = step.change
    return [fmt(c.paired_ratio, 3), interval_text(c.paired_ci_low, c.paired_ci_high), step.called]


def _phase_cell(p: VersionPoint, phase: str) -> str:
    f = next((f for f in p.phases if f.phase == phase), None)
    if f is None:
        return "-"
    return f"{fmt(f.ms_per_k, 0)} ({interval_text(f.ci_low, f.ci_high, digits=0)})"


def trend_tables(trend: ConfigTrend, package: str) -> list[Table]:
    """The configuration's table (per release: throughput with its interval, rounds, the CPU its processes spent per
    1,000 env steps, the driver's split, the step from the release before) and its detailed split, folded."""
    steps = {s.after: s for s in trend.steps if s.metric == "throughput"}
    rows, detail = [], []
    for i, p in enumerate(trend.points):
        ci = interval_text(p.env_steps_per_s_ci_low, p.env_steps_per_s_ci_high, digits=0)
        rounds = f"{p.ok_rounds}" + (f" (+{p.failed} not ok)" if p.failed else "")
        cpu_ms = f"{fmt(p.cpu_ms_per_k)} ({interval_text(p.cpu_ms_per_k_ci_low, p.cpu_ms_per_k_ci_high, digits=0)})"
        rows.append(
            [p.version, fmt(p.env_steps_per_s), ci, rounds, cpu_ms if p.cpu_ms_per_k is not None else "-"]
            + [_phase_cell(p, phase) for phase in DRIVER_PHASES]
            + _step_cells(steps.get(p.version) if i else None)
        )
        detail.append([p.version] + [_phase_cell(p, phase) for phase, _ in PHASES[4:]])
    header = [package, "env steps/s", f"{CONFIDENCE:.0%} CI", "rounds ok", "CPU ms/1k steps"]
    header += [f"{PHASE_WORDS[p]} ms/1k steps" for p in DRIVER_PHASES]
    header += ["step ratio", f"step {CONFIDENCE:.0%} CI", "step"]
    return [
        Table(header, rows, frozenset({0, 3, len(header) - 1})),
        Table(
            [package] + [f"{words} ms/1k steps" for _, words in PHASES[4:]],
            detail,
            frozenset({0}),
            collapsed="the split in detail: sampling (env step, inference, the rest) and learning (the learner's "
            f"batch build, its minibatch updates, the rest), median ({CONFIDENCE:.0%} CI)",
        ),
    ]


def _cpu_words(step: VersionStep | None) -> str:
    """The CPU cost's step beside a throughput step: its ratio later/earlier (above 1: more CPU per env step) and
    whether the rule found a change."""
    c = step.change if step is not None else None
    if c is None or c.paired_ratio is None or c.paired_ratio <= 0:
        return ""
    low, high = (
        (None, None)
        if c.paired_ci_low is None or c.paired_ci_high is None
        else (1 / c.paired_ci_high, 1 / c.paired_ci_low)
    )
    said = "a change with evidence" if c.differs else "no evidence of a change"
    return f"; CPU per 1,000 env steps x{1 / c.paired_ratio:.3f} ({interval_text(low, high)}: {said})"


def step_lines(trend: ConfigTrend) -> list[str]:
    """Every throughput step in words: the change with its evidence, or "no evidence of a change"; the CPU cost's
    step beside it (a throughput that moved while the CPU per step did not points at the machine); a flagged step's
    confirmation and the phases that moved; an API change across it."""
    out = []
    cpu = {s.after: s for s in trend.steps if s.metric == "cpu_cost"}
    for step in (s for s in trend.steps if s.metric == "throughput"):
        head = f"{step.before} -> {step.after}: "
        if step.flagged:
            text = f"{step.called}: {step.sentence}"
            moved = [
                f"{PHASE_WORDS[ps.phase]} x{ps.change.paired_ratio:.2f}"
                for ps in step.phases
                if ps.change.differs and ps.change.paired_ratio is not None
            ]
            if moved:
                text += "; phases that moved (paired, with evidence): " + ", ".join(moved)
            if step.confirmation is not None:
                c = step.confirmation
                text += (
                    f"; confirmation ({step.confirmation_run}, {c.runs_a} rounds of the two releases alone): "
                    f"paired ratio {fmt(c.paired_ratio, 3)}, {CONFIDENCE:.0%} CI "
                    f"{interval_text(c.paired_ci_low, c.paired_ci_high)}"
                )
        elif step.verdict == "no data":
            text = step.sentence  # no data: <release> has no ok trial here
        elif step.change.runs_a < ROUNDS_FOR_EVIDENCE:
            text = step.verdict  # no evidence yet: N rounds together; what would show it
        elif step.verdict == "no significant change":
            text = f"no evidence of a change {step.sentence.removeprefix('no evidence of a difference ')}"
        else:  # a change with evidence, under the threshold
            text = f"{step.verdict}: {step.sentence}"
        if step.learning is not None and step.learning.verdict != "no data":
            text += f"; learning: {step.learning.verdict}, {step.learning.sentence}"
        if step.trade:
            text += f"; {step.trade}"
        text += _cpu_words(cpu.get(step.after))
        if step.api is not None and step.api.any:
            text += f". API: {step.api.words()}"
        out.append(head + text)
    return out


def _level(point: ChangePoint, value: float | None) -> str:
    return fmt(value, 0) if point.metric == "throughput" else fmt(value, 1)


def headline_points(trend: ConfigTrend) -> list[ChangePoint]:
    """The reported change points a page leads with: the throughput's (each names the phases that moved across it),
    and a phase's only where the throughput did not step between the same two releases (a phase that moved while
    another made up for it)."""
    reported = [p for p in trend.change_points if p.reported]
    steps = {(p.before, p.after) for p in reported if p.metric == "throughput"}
    return [p for p in reported if p.metric == "throughput" or (p.before, p.after) not in steps]


def change_point_line(point: ChangePoint) -> str:
    """A change point in one line: the series and where it steps, the segments' levels, the verdict with its
    evidence; for throughput the phases that moved (ms per 1,000 env steps), learning beside it, the trade, and the
    bisect command that finds the release."""
    unit = "env steps/s" if point.metric == "throughput" else "ms per 1,000 env steps"
    what = "throughput" if point.metric == "throughput" else PHASE_WORDS.get(point.metric, point.metric)
    segments = (
        f"{span(point.earlier)} against {span(point.later)}"
        if len(point.earlier) > 1 or len(point.later) > 1
        else "the two releases"
    )
    text = (
        f"{what} steps between {point.before} and {point.after} ({segments}: "
        f"{_level(point, point.level_before)} -> {_level(point, point.level_after)} {unit}): "
        f"{point.verdict}: {point.sentence}"
    )
    moved = [
        f"{PHASE_WORDS.get(m.phase, m.phase)} {fmt(m.ms_before, 1)} -> {fmt(m.ms_after, 1)} ms per 1,000 env steps "
        f"(x{m.change.effect:.2f})"
        for m in point.moved
    ]
    if moved:
        text += "; the phases that moved (paired, with evidence): " + ", ".join(moved)
    if point.learning is not None and point.learning.verdict != "no data":
        text += f"; learning: {point.learning.verdict}, {point.learning.sentence}"
    if point.trade:
        text += f"; {point.trade}"
    if point.bisect:
        where = (
            "the index was not read: the bisect says whether releases lie between"
            if point.between is None
            else f"{point.between} release{'s' if point.between != 1 else ''} between them in the index"
        )
        text += f"; to find the release ({where}): {point.bisect}"
    return text


def windows_words(data: HistoryData) -> str:
    """What a round was where some run read rounds as windows (``rounds_per_process``, issue 56); "" where none."""
    per = sorted({r.rounds_per_process for r in data.runs if r.rounds_per_process > 1})
    if not per:
        return ""
    k = "/".join(str(p) for p in per)
    return (
        f" Rounds were read warm: each release's trial process read {k} rounds as measured windows of one built "
        "trainer (its start, build and warm-up paid once, up to three releases' processes started together, none "
        "beside a measured window), the windows of up to three releases' processes in turns, "
        "so a round is a window and the independent repeats are the processes (the rounds over "
        f"{k}); on the 2-core machine where this was built a process's own offset was not measurable beside the "
        "windows' noise (docs/MEASUREMENT.md 11); the runs table says which runs read so."
    )


def _runs_table(data: HistoryData) -> Table:
    rows = [
        [
            r.name,
            r.kind,
            f"{r.versions[0]} .. {r.versions[-1]} ({len(r.versions)})" if r.versions else "-",
            str(r.rounds) + (f" ({r.rounds_per_process} a process)" if r.rounds_per_process > 1 else ""),
            f"{r.ok}/{r.trials}",
            r.started or "-",
            r.ended or "running or interrupted",
            fmt(r.foreign_cpu_pct, 0),
        ]
        for r in data.runs
    ]
    header = ["run", "kind", "releases", "rounds", "trials ok", "started", "ended", "others' CPU % of a core"]
    return Table(header, rows, frozenset({0, 1, 2, 5, 6}))


def page_blocks(
    data: HistoryData, trends: list[ConfigTrend], figures: dict[str, Path], *, title: str, threshold: float, intro: str
) -> list[Block]:
    """The page's blocks: what was measured, the answer, then one section per configuration."""
    package = data.package or "package"
    flagged = [(t, s) for t in trends for s in t.steps if s.flagged and s.metric == "throughput"]
    points = sorted(((t, p) for t in trends for p in headline_points(t)), key=lambda tp: -tp[1].size)
    cumulative = [(t, s) for t in trends for s in t.cumulative if s.flagged and s.metric == "throughput"]
    blocks: list[Block] = [
        Heading(title, 1),
        Paragraph(intro),
        Paragraph(
            f"Each release ran in a Python environment of its own; every round ran every configuration on every "
            f"release once, the releases back to back, so a step compares two releases round by round (paired). A "
            f"step gets a verdict by the one change rule: both {CONFIDENCE:.0%} intervals of the later/earlier ratio "
            f"on one side of 1 and the Wilcoxon signed-rank test agreeing, which takes {ROUNDS_FOR_EVIDENCE} rounds "
            f"together; it is flagged when it also moved by {threshold:.0%} or more, and called only once a separate "
            "interleaved run of its two releases alone agrees (a question mark: not confirmed yet)."
            + windows_words(data),
            muted=True,
        ),
        Heading("Change points over the whole history", 2),
        Bullets([f"{t.label}: {change_point_line(p)}" for t, p in points], boxed=True)
        if points
        else Paragraph(
            f"No series (throughput, or a phase of the split) steps by {threshold:.0%} or more with evidence "
            "between the segments a change-point fit finds, on any configuration."
        ),
        Paragraph(
            "Per configuration, the throughput and each phase of the split are read as one series over the releases; "
            "a penalised fit (ruptures' PELT on the releases' medians) says where the level may step, and each "
            "candidate is held to the same change rule as a step, between the releases of the segment before it and "
            "of the segment after it (each round's value the median over the segment's releases), biggest first.",
            muted=True,
        ),
        Heading("What changed", 2),
        Bullets([f"{t.label}, {s.before} -> {s.after}: {s.called}: {s.sentence}" for t, s in flagged], boxed=True)
        if flagged
        else Paragraph(f"No step changed throughput by {threshold:.0%} or more with evidence, on any configuration."),
        Heading("Cumulative: each release against the first and the last", 2),
        Bullets([f"{t.label}, {s.before} -> {s.after}: {s.verdict}: {s.sentence}" for t, s in cumulative])
        if cumulative
        else Paragraph(
            f"No release differs in throughput by {threshold:.0%} or more with evidence from the first or the "
            "last release, on any configuration."
        ),
    ]
    caption = (
        f"Top: median throughput over the rounds, bars: its {CONFIDENCE:.0%} bootstrap interval; a shaded "
        "step is flagged (its paired ratio and what it is called). Bottom: where an iteration's time "
        "goes, per 1,000 sampled env steps."
    )
    for trend in trends:
        blocks.append(Heading(trend.label, 2))
        if trend.label in figures:
            blocks.append(
                Figure(figures[trend.label], f"throughput and the iteration split per {package} release", caption)
            )
        blocks += [*trend_tables(trend, package), Heading("Each step", 3), Bullets(step_lines(trend))]
        failed = [p for p in trend.points if p.failed]
        if failed:
            blocks.append(
                Bullets(
                    [f"{p.version}: {p.failed} trial(s) not ok: {p.failure or 'no reason recorded'}" for p in failed]
                )
            )
    return [*blocks, Heading("Runs", 2), _runs_table(data)]


def write_page(
    path: Path, data: HistoryData, trends: list[ConfigTrend], *, title: str, threshold: float, intro: str
) -> Path:
    """``history.html`` (and one figure per configuration in ``plots/`` beside it); returns its path."""
    plots = path.parent / "plots"
    plots.mkdir(parents=True, exist_ok=True)
    figures = {}
    for trend in trends:
        fig, axes = plt.subplots(2, 1, figsize=(max(6.4, 0.42 * len(trend.points) + 2), 6.2), sharex=True)
        plot_release_history(trend, *axes)
        figures[trend.label] = save(fig, plots / f"history-{file_stem(trend.label)}.png")
    blocks = page_blocks(data, trends, figures, title=title, threshold=threshold, intro=intro)
    write_atomic(path, to_html(blocks, title, _PAGE_CSS).encode())
    return path
