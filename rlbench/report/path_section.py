"""The report's Autoconfig section for a walk (``autoconfig.json`` with ``mode: walk``): the endpoint against the
start, and "The path": one row a step (the verdict that named the knob, from and to, the speed-up with its
interval, the readings and seconds, whether the knob changes learning and what the move did to it), why the walk
stopped, and a figure of throughput at each point with its interval and the ceiling where one was measured.

autoconfig.json is read by the analysis (``Analysis.autoconfig``); it is a file from a results folder, so every value
is taken defensively (a damaged or hostile file gives dashes, never an error) and every text goes into blocks, which
escape it where they are drawn; the figure's words are plain text too (the report parses no mathtext).
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
from rlbench.results.layout import ResultsFolder

#: The figure's file in ``plots/`` (``report_``: the report's own, not listed again under Figures).
PATH_FIGURE = "report_walk_path.png"


def _num(value: Any, digits: int = 0) -> str:
    return fmt(value, digits) if isinstance(value, (int, float)) and not isinstance(value, bool) else "-"


def _ratio(p: dict[str, Any]) -> str:
    r, lo, hi = p.get("speedup"), p.get("ci_low"), p.get("ci_high")
    if not isinstance(r, (int, float)):
        return "-"
    return f"{r:.2f}x" + (
        f" ({lo:.2f}-{hi:.2f})" if isinstance(lo, (int, float)) and isinstance(hi, (int, float)) else ""
    )


def _list(value: Any) -> list:
    return value if isinstance(value, list) else []


def answer_text(data: dict[str, Any]) -> str:
    """Where the walk ended, against where it started, with the evidence's shape and the seconds."""
    best, base, sp = data.get("best") or {}, data.get("baseline") or {}, data.get("speedup") or {}
    moves = [p for p in _list(data.get("path")) if isinstance(p, dict) and p.get("outcome") != "stay"]
    if not isinstance(best, dict) or not best:
        return f"The start gave no reading ({_num(data.get('wall_s'))} s of a {_num(data.get('budget_s'))} s budget)."
    ratio = _ratio({"speedup": sp.get("ratio"), "ci_low": sp.get("ci_low"), "ci_high": sp.get("ci_high")})
    where = (
        f"Endpoint: {best.get('key')}, {len(moves)} move{'s' * (len(moves) != 1)} from the start "
        f"({base.get('key') if isinstance(base, dict) else '-'}), {ratio} its throughput"
        if moves
        else f"No move: the endpoint is the start ({best.get('key')})"
    )
    unit = "env steps/s" if data.get("objective") == "throughput" else "s to the target"
    return (
        f"{where}{f' ({CONFIDENCE:.0%} interval in brackets)' if moves else ''}; median "
        f"{_num(best.get('median'), 1)} {unit}. {_num(data.get('trials_run'))} race trials after the start's "
        f"{_num(data.get('probe_trials'))} readings, {_num(data.get('wall_s'))} s of a {_num(data.get('budget_s'))} s "
        "budget."
    )


def path_rows(data: dict[str, Any]) -> list[list[str]]:
    """One row a step: step, verdict, the move, the values raced, outcome, speed-up, readings, rounds, seconds,
    learning."""
    rows = []
    for p in _list(data.get("path")):
        if not isinstance(p, dict):
            continue
        learns = p.get("changes_learning")
        learning = (
            "speed only" if not learns else f"yes ({learns})" + (f"; {p.get('learning')}" if p.get("learning") else "")
        )
        rows.append(
            [
                _num(p.get("step")),
                str(p.get("verdict_label") or "-"),
                f"{p.get('axis')}: {p.get('from_value')} -> {p.get('to_value')}"
                + (
                    f"; {p.get('partner_axis')}: {p.get('partner_from')} -> {p.get('partner_to')}"
                    if p.get("partner_axis")
                    else ""
                ),
                ", ".join(map(str, _list(p.get("values")))) or "-",
                str(p.get("outcome")) + (" (cost learning)" if p.get("learning_cost") else ""),
                _ratio(p),
                f"{_num(p.get('readings_from'))} + {_num(p.get('readings_to'))}",
                _num(p.get("rounds")),
                _num(p.get("wall_s")),
                learning,
            ]
        )
    return rows


def _walk(run: AutoconfigRun | None) -> dict[str, Any] | None:
    return run.data if run is not None and run.data.get("mode") == "walk" else None


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
    if data.get("evidence"):
        out.append(Paragraph(str(data["evidence"]), lead="Evidence"))
    if data.get("design_note"):
        out.append(Paragraph(str(data["design_note"]), muted=True))
    out += [
        Heading("The path", 3),
        Paragraph(
            "Each step follows the first verdict of the point it stands at that names a knob with a value that fits "
            "(a verdict blocked, or whose race showed no gain, is passed for the next; a knob that fits alone "
            "nowhere is traded against its partner, two knobs in one move; a knob that just paid is pushed its "
            "next value first), races those values against the point in interleaved rounds, and moves only when "
            "the one change rule "
            f"shows a gain of at least the run's tolerance ({_num(data.get('tolerance_pct'))}%); the speed-up is the "
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
        points = [p for p in _list(data.get("walk_points")) if isinstance(p, dict)]
        verdict = points[-1].get("verdict") if points else None
        out.append(Paragraph("No step was raced." + (f" Its point's verdict: {verdict}" if verdict else "")))
    said = [
        f"step {p.get('step')}: {p.get('verdict')}"
        + (f" Passed first: {'; '.join(map(str, _list(p.get('passed'))))}." if p.get("passed") else "")
        + (f" Not run (cannot fit): {'; '.join(map(str, _list(p.get('skipped'))))}." if p.get("skipped") else "")
        for p in _list(data.get("path"))
        if isinstance(p, dict)
    ]
    if said:
        out.append(Bullets(said))
    out.append(Paragraph(str(data.get("stop_text") or data.get("stop_reason") or "-"), lead="Stopped"))
    figure = ResultsFolder(Path(out_dir)).plots / PATH_FIGURE
    if figure.is_file():
        out.append(Figure(figure, "Throughput at each point of the walk", _figure_caption(data)))
    if "phase" in trials:
        out.append(search_path(trials, axes))
    return out


def _points(data: dict[str, Any]) -> list[dict[str, Any]]:
    return [p for p in _list(data.get("walk_points")) if isinstance(p, dict) and isinstance(p.get("step"), int)]


def _figure_caption(data: dict[str, Any]) -> str:
    measured = any(isinstance(p.get("ceiling_env_steps_per_s"), (int, float)) for p in _points(data))
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


def plot_walk_path(data: dict[str, Any], ax=None) -> tuple[Any, str] | None:
    """Throughput at each point the walk stood at, with its interval, and each point's ceiling where one was measured;
    (axes, caption), or None when no point has a reading."""
    points = [p for p in _points(data) if isinstance(p.get("median"), (int, float))]
    if not points:
        return None
    throughput = data.get("objective") == "throughput"
    ax = ax or new_axes(7.2, 4.2)
    x = [p["step"] for p in points]
    med = [float(p["median"]) for p in points]
    low = [float(p["ci_low"]) if isinstance(p.get("ci_low"), (int, float)) else m for p, m in zip(points, med)]
    high = [float(p["ci_high"]) if isinstance(p.get("ci_high"), (int, float)) else m for p, m in zip(points, med)]
    errors = [[max(0.0, m - lo) for m, lo in zip(med, low)], [max(0.0, h - m) for m, h in zip(med, high)]]
    ax.errorbar(x, med, yerr=errors, fmt="o-", capsize=4, label="the walk")
    ceilings = [
        (p["step"], float(p["ceiling_env_steps_per_s"]))
        for p in points
        if isinstance(p.get("ceiling_env_steps_per_s"), (int, float))
    ]
    if ceilings and throughput:
        ax.plot([c[0] for c in ceilings], [c[1] for c in ceilings], "x--", color="#8C8C8C", label="ceiling")
    moves = {p.get("step"): p for p in _list(data.get("path")) if isinstance(p, dict)}
    labels = ["start"] + [f"{moves[s].get('axis')}={moves[s].get('to_value')}" if s in moves else str(s) for s in x[1:]]
    ax.set_xticks(x)
    ax.set_xticklabels([str(t)[:40] for t in labels], rotation=15, fontsize=8)
    ax.set_xlabel("point of the walk (the move that reached it)")
    ax.set_ylabel("env steps / s (median)" if throughput else "seconds to the target (median)")
    ax.set_ylim(bottom=0)
    ax.set_title(f"The walk's path (bars: {CONFIDENCE:.0%} CI)", fontsize=10)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    return ax, _figure_caption(data)
