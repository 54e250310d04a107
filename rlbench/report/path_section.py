"""The report's Autoconfig section for a walk (``autoconfig.json`` with ``mode: walk``): the endpoint against the
start, and "The path": one row a step (the verdict that named the knob, from and to, the speed-up with its
interval, the readings and seconds, whether the knob changes learning and what the move did to it), why the walk
stopped, and a figure of throughput at each point with its interval and the ceiling where one was measured.

autoconfig.json is read by the analysis (``Analysis.autoconfig``), typed once
(:class:`~rlbench.results.autoconfig_file.AutoconfigFile`: ``path[]`` a walk's ``PathStep`` field for field,
``walk_points[]`` its ``PointRead``); it is a file from a results folder, so a damaged or hostile value reads as None
and is drawn as a dash, never an error, and every text goes into blocks, which escape it where they are drawn; the
figure's words are plain text too (the report parses no mathtext).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd

from rlbench.analysis.autoconfig_run import AutoconfigRun
from rlbench.analysis.findings import CONFIDENCE
from rlbench.report.autoconfig_section import autoconfig_blocks, search_path
from rlbench.report.blocks import Block, Bullets, Figure, Heading, Paragraph, Table
from rlbench.report.style import fmt, new_axes, save_figures
from rlbench.results.autoconfig_file import AutoconfigFile, PathStepEntry, PointEntry
from rlbench.results.layout import ResultsFolder

#: The figure's file in ``plots/`` (``report_``: the report's own, not listed again under Figures).
PATH_FIGURE = "report_walk_path.png"


def _ratio(speedup: float | None, low: float | None, high: float | None) -> str:
    if speedup is None:
        return "-"
    return f"{speedup:.2f}x" + (f" ({low:.2f}-{high:.2f})" if low is not None and high is not None else "")


def answer_text(data: AutoconfigFile) -> str:
    """Where the walk ended, against where it started, with the evidence's shape and the seconds."""
    best, base, sp = data.best, data.baseline, data.speedup
    moves = [p for p in data.path if p.outcome != "stay"]
    if best is None:
        return f"The start gave no reading ({fmt(data.wall_s)} s of a {fmt(data.budget_s)} s budget)."
    ratio = _ratio(sp.ratio, sp.ci_low, sp.ci_high)
    where = (
        f"Endpoint: {best.key}, {len(moves)} move{'s' * (len(moves) != 1)} from the start "
        f"({None if base is None else base.key}), {ratio} its throughput"
        if moves
        else f"No move: the endpoint is the start ({best.key})"
    )
    unit = "env steps/s" if data.objective == "throughput" else "s to the target"
    readings = f"{fmt(data.probe_trials)} reading{'s' * (data.probe_trials != 1)}"
    stopped = (data.stop_text or data.stop_reason or "").split(": ", 1)[0]  # the reason's words, its detail below
    costly = [p for p in moves if p.learning_cost]
    which = "its one move" if len(moves) == 1 else f"{len(costly)} of its {len(moves)} moves"
    cost = (
        f"; {which} cost learning at equal env steps (step{'s' * (len(costly) > 1)} "
        f"{', '.join(str(p.step) for p in costly)}: the path's learning column)"
        if costly
        else ""
    )  # the objective is speed: a move that learns worse is taken and said here, first (a DQN walk, 2026-11-30)
    return (
        f"{where}{f' ({CONFIDENCE:.0%} interval in brackets)' if moves else ''}{cost}; median "
        f"{fmt(best.median, 1)} {unit}"
        + (f"; stopped: {stopped}" if stopped else "")
        + f". {fmt(data.trials_run)} race readings after the start's {readings}, {fmt(data.wall_s)} s of a "
        f"{fmt(data.budget_s)} s budget."
    )


def path_line(data: AutoconfigFile) -> str:
    """The walk's path in one line, its moves from the start: ``num_env_runners 1 -> 2 (1.57x), then 2 -> 3 (1.65x)``
    (issue 59: the path first); "" without a move."""
    moves = [p for p in data.path if p.outcome != "stay"]
    return ", then ".join(f"{_move(p).replace(': ', ' ')} ({_ratio(p.speedup, None, None)})" for p in moves)


def _move(p: PathStepEntry) -> str:
    """``axis: from -> to`` (a trade: ``; partner: from -> to``); a step that stayed, ``axis: stays at from`` (its
    values raced are the next column): ``8 -> 8`` read as a move."""
    if p.outcome == "stay":
        partner = f"; {p.partner_axis}: stays at {p.partner_from}" if p.partner_axis else ""
        return f"{p.axis}: stays at {p.from_value}{partner}"
    partner = f"; {p.partner_axis}: {p.partner_from} -> {p.partner_to}" if p.partner_axis else ""
    return f"{p.axis}: {p.from_value} -> {p.to_value}{partner}"


def _learning(p: PathStepEntry) -> str:
    """``speed only``, or what the knob changes in learning and what the move did to it."""
    if not p.changes_learning:
        return "speed only"
    return f"yes ({p.changes_learning})" + (f"; {p.learning}" if p.learning else "")


def path_rows(data: AutoconfigFile) -> list[list[str]]:
    """One row a step: step, verdict, the move, the values raced, outcome, speed-up, readings, rounds, seconds,
    learning."""
    return [
        [
            fmt(p.step),
            p.verdict_label or "-",
            _move(p),
            ", ".join(map(str, p.values)) or "-",
            str(p.outcome) + (" (cost learning)" if p.learning_cost else ""),
            _ratio(p.speedup, p.ci_low, p.ci_high),
            f"{fmt(p.readings_from)} + {fmt(p.readings_to)}",
            fmt(p.rounds),
            fmt(p.wall_s),
            _learning(p),
        ]
        for p in data.path
    ]


def _walk(run: AutoconfigRun | None) -> AutoconfigFile | None:
    return run.file if run is not None and run.file.mode == "walk" else None


def autoconfig_section(run: AutoconfigRun | None, out_dir: Path, trials: pd.DataFrame, axes: list[str]) -> list[Block]:
    """The report's Autoconfig section: a walk's (:func:`walk_blocks`), else a search's
    (:func:`~rlbench.report.autoconfig_section.autoconfig_blocks`); [] for a sweep's folder."""
    return walk_blocks(run, out_dir, trials, axes) or autoconfig_blocks(run, trials, axes)


def walk_blocks(run: AutoconfigRun | None, out_dir: Path, trials: pd.DataFrame, axes: list[str]) -> list[Block]:
    """The Autoconfig section of a walk's folder (its figure from ``plots/`` when drawn); [] for any other folder (a
    search's: its own section)."""
    data = _walk(run)
    if data is None:
        return []
    out: list[Block] = [Heading("Autoconfig: the walk", 2), Paragraph(answer_text(data), lead="Answer")]
    if path_line(data):
        out.append(Paragraph(path_line(data), lead="Path"))
    if data.evidence:  # its stop is the section's own paragraph below: not said twice
        evidence = data.evidence
        if data.stop_text and evidence.endswith(f" Stopped: {data.stop_text}."):
            evidence = evidence[: -len(f" Stopped: {data.stop_text}.")]
        out.append(Paragraph(evidence, lead="Evidence"))
    if data.design_note:
        out.append(Paragraph(data.design_note, muted=True))
    out += [
        Heading("The path", 3),
        Paragraph(
            "Each step follows the first verdict of the point it stands at that names a knob with a value that fits "
            "(a verdict blocked, or whose race showed no gain, is passed for the next; a knob that fits alone "
            "nowhere is traded against its partner, two knobs in one move; a knob that just paid is pushed its "
            "next value first), races those values against the point in interleaved rounds, and moves only when "
            "the one change rule "
            f"shows a gain of at least the run's tolerance ({fmt(data.tolerance_pct)}%); the speed-up is the "
            f"new point over the old (stay: the best value raced over the current), with its {CONFIDENCE:.0%} "
            "interval; readings: the old point's and the new's in the step's race (docs/AUTOCONFIG.md, The walk).",
            muted=True,
        ),
    ]
    rows = path_rows(data)
    header = ["step", "verdict", "move", "values raced", "outcome", "speed-up", "readings", "rounds", "s", "learning"]
    if rows:
        out.append(Table(header, rows, frozenset({1, 2, 3, 4, 9})))
    else:  # the start's verdict, which the walk stopped before following (budget, ceiling, no fit): what it read
        verdict = data.walk_points[-1].verdict if data.walk_points else None
        out.append(Paragraph("No step was raced." + (f" Its point's verdict: {verdict}" if verdict else "")))
    said = [
        f"step {p.step}: {p.verdict}"
        + ("" if not (p.passed or p.skipped or p.extra_rounds) or str(p.verdict).endswith(".") else ".")
        + (f" Passed first: {'; '.join(p.passed)}." if p.passed else "")
        + (f" Not run (cannot fit): {'; '.join(p.skipped)}." if p.skipped else "")
        + (f" Its race went on: {p.race_stop_reason}." if p.extra_rounds else "")
        for p in data.path
    ]
    if said:
        out.append(Bullets(said))
    out.append(Paragraph(data.stop_text or data.stop_reason or "-", lead="Stopped"))
    figure = ResultsFolder(Path(out_dir)).plots / PATH_FIGURE
    if figure.is_file():
        out.append(Figure(figure, "Throughput at each point of the walk", _figure_caption(data)))
    if "phase" in trials:
        out.append(search_path(trials, axes))
    return out


def _points(data: AutoconfigFile) -> list[PointEntry]:
    """The points the figure can place (a step read)."""
    return [p for p in data.walk_points if p.step is not None]


def _figure_caption(data: AutoconfigFile) -> str:
    measured = any(p.ceiling_env_steps_per_s is not None for p in _points(data))
    ceiling = (
        "crosses: what the point's env and learner allow here (its ceiling)"
        if measured
        else "no ceiling line: no env ceiling was measured for these points (env_ceiling_s: 0), and rlbench does not "
        "guess one"
    )
    return (
        f"Dots: the median throughput of the readings that put the walk at each point (the start's own; then each "
        f"step's race), bars: its {CONFIDENCE:.0%} interval; {ceiling}."
    )


def draw_path_figure(out_dir: Path, run: AutoconfigRun | None) -> list[Figure]:
    """The walk's figure into ``plots/`` ([]: not a walk, or nothing read); the section embeds it."""
    data = _walk(run)
    if data is None:
        return []
    plots = ResultsFolder(Path(out_dir)).plots
    plots.mkdir(exist_ok=True)
    title = "Throughput at each point of the walk"
    return save_figures(plots, [(PATH_FIGURE, title, plot_walk_path(data))])


def plot_walk_path(data: AutoconfigFile, ax=None) -> tuple[Any, str] | None:
    """Throughput at each point the walk stood at, with its interval, and each point's ceiling where one was measured;
    (axes, caption), or None when no point has a reading."""
    points = [p for p in _points(data) if p.median is not None]
    if not points:
        return None
    throughput = data.objective == "throughput"
    ax = ax or new_axes(7.2, 4.2)
    x = [p.step for p in points]
    med = [float(p.median) for p in points if p.median is not None]
    low = [m if p.ci_low is None else float(p.ci_low) for p, m in zip(points, med, strict=True)]
    high = [m if p.ci_high is None else float(p.ci_high) for p, m in zip(points, med, strict=True)]
    errors = [
        [max(0.0, m - lo) for m, lo in zip(med, low, strict=True)],
        [max(0.0, h - m) for m, h in zip(med, high, strict=True)],
    ]
    ax.errorbar(x, med, yerr=errors, fmt="o-", capsize=4, label="the walk")
    ceilings = [(p.step, float(p.ceiling_env_steps_per_s)) for p in points if p.ceiling_env_steps_per_s is not None]
    if ceilings and throughput:
        ax.plot([c[0] for c in ceilings], [c[1] for c in ceilings], "x--", color="#8C8C8C", label="ceiling")
    moves = {p.step: p for p in data.path}
    labels = ["start"] + [f"{moves[s].axis}={moves[s].to_value}" if s in moves else str(s) for s in x[1:]]
    ax.set_xticks(x)
    ax.set_xticklabels([str(t)[:40] for t in labels], rotation=15, fontsize=8)
    ax.set_xlabel("point of the walk (the move that reached it)")
    ax.set_ylabel("env steps / s (median)" if throughput else "seconds to the target (median)")
    ax.set_ylim(bottom=0)
    ax.set_title(f"The walk's path (bars: {CONFIDENCE:.0%} CI)", fontsize=10)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    return ax, _figure_caption(data)
