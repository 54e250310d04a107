"""What ``rlbench history`` does after a run: confirm each newly flagged step by a run of its two releases alone,
then read the whole history folder and write its files (``history.json``, the page, the figures) and the
terminal's table. :func:`history_trends_of` reads the trends from a history folder alone (the page is rebuilt from
the folder, never from the run's memory)."""

from __future__ import annotations

import argparse
import sys
from dataclasses import asdict
from pathlib import Path

from rich.console import Console

from rlbench.commands._common import say


def history_trends_of(out_dir: Path, threshold: float):
    """(the folder's :class:`~rlbench.analysis.history_runs.HistoryData`, its trends with their confirmations)."""
    import numpy as np

    from rlbench.analysis.change import paired
    from rlbench.analysis.history import confirm_steps, history_trends
    from rlbench.analysis.history_runs import read_history
    from rlbench.analysis.variants import grid_points
    from rlbench.spec.versions import variant_name

    data = read_history(out_dir)
    if data.trials.empty:
        return data, []
    package = data.package or ""
    versions = [(v, variant_name(package, v)) for v in data.versions()]
    trends = history_trends(
        data.trials,
        data.axes,
        versions,
        threshold=threshold,
        facts=data.facts,
        package=data.package,
        curves=data.curves,
    )
    confirmations = {}
    for info, trials in data.confirmations:
        if len(info.versions) != 2 or trials.empty:
            continue
        a, b = info.versions
        ok = trials[trials["status"] == "ok"]
        for point in grid_points(trials, [c for c in data.axes if c in trials]):
            mine = ok.loc[ok.index.isin(point.rows)]
            sides = [
                {
                    int(r): float(v)
                    for r, v in zip(
                        mine.loc[mine["version"] == side, "round"], mine.loc[mine["version"] == side, "env_steps_per_s"]
                    )
                    if np.isfinite(v)
                }
                for side in (a, b)
            ]
            confirmations[(point.label, a, b)] = (info.name, paired(*sides))
    return data, confirm_steps(trends, confirmations, threshold)


def with_bisect(trends: list, package: str, bisect: tuple[Path, str | None, list[str] | None] | None) -> list:
    """The trends with each throughput change point's ``between`` (releases the index lists between its two sides;
    None: not read) and its ``rlbench bisect`` command where such releases lie between (or the index was not read).
    ``bisect``: (the spec, ``--index``, the index's listing), None where the history is rebuilt without them."""
    import shlex
    from dataclasses import replace

    from packaging.version import InvalidVersion, Version

    if bisect is None:
        return trends
    config, index, listed = bisect
    out = []
    for trend in trends:
        points = []
        for point in trend.change_points:
            if point.metric == "throughput" and point.reported:
                between = None
                if listed is not None:
                    try:
                        low, high = Version(point.before), Version(point.after)
                        between = sum(1 for v in listed if low < Version(v) < high)
                    except InvalidVersion:
                        between = None
                command = ["rlbench", "bisect", str(config), "--package", package]
                command += ["--good", point.before, "--bad", point.after] if point.verdict == "regressed" else []
                command += ["--good", point.after, "--bad", point.before] if point.verdict == "improved" else []
                command += ["--index", index] if index else []
                line = shlex.join(command) if between is None or between > 0 else None
                point = replace(point, between=between, bisect=line)
            points.append(point)
        out.append(replace(trend, change_points=points))
    return out


def confirm_flagged(out_dir: Path, args: argparse.Namespace, threshold: float, rounds: int, console: Console) -> None:
    """Run each flagged throughput step that has no confirmation yet (and is no API change) again: its two releases
    alone, on its configuration alone, interleaved over ``rounds`` rounds (at least the fewest that give evidence),
    into the history's next ``confirm`` run."""
    from rlbench.analysis.findings import ROUNDS_FOR_EVIDENCE
    from rlbench.analysis.tables import build_tables
    from rlbench.results.layout import HistoryFolder
    from rlbench.run.forkserver import release_fork_server
    from rlbench.run.sweep import run_sweep
    from rlbench.spec.load import axis_column
    from rlbench.spec.versions import load_versions

    data, trends = history_trends_of(out_dir, threshold)
    todo = [
        (i, t, s)
        for i, t in enumerate(trends)
        for s in t.steps
        if s.metric == "throughput" and s.flagged and s.outcome == "unconfirmed"
    ]
    for i, trend, step in todo:
        base = load_versions(args.config, args.package, [step.before, step.after], 1, args.index)
        grid = {key: [trend.axes[axis_column(key)]] for key in base.spec.grid if axis_column(key) in trend.axes}
        loaded = load_versions(
            args.config,
            args.package,
            [step.before, step.after],
            max(rounds, ROUNDS_FOR_EVIDENCE),
            args.index,
            grid=grid,
        )
        run_dir = HistoryFolder(out_dir).new_run("confirm", f"{step.before}-{step.after}-c{i + 1}")
        say(
            console,
            f"confirming {trend.label}, {step.before} -> {step.after} ({step.verdict}): the two releases alone "
            f"-> {run_dir}",
            "bold",
        )
        if run_sweep(loaded, run_dir, console=console, argv=sys.argv).interrupted:
            raise KeyboardInterrupt
        build_tables(run_dir)
    if todo:
        release_fork_server()


def write_history(
    out_dir: Path,
    threshold: float,
    console: Console,
    bisect: tuple[Path, str | None, list[str] | None] | None = None,
) -> int:
    """``history.json``, ``history.html``, ``plots/`` and the terminal's table, from every run in the folder; returns
    how many steps are slower beyond the threshold with evidence and not disproved (nor an API change). ``bisect``:
    (the spec, ``--index``, the index's listing) for each change point's bisect command (:func:`with_bisect`)."""
    from rlbench.analysis.history import flagged_steps, history_json
    from rlbench.report.history_page import change_point_line, headline_points, write_page
    from rlbench.report.versions import history_table, write_trend_figure
    from rlbench.results.files import write_json
    from rlbench.results.layout import HISTORY_HTML, HISTORY_JSON, HISTORY_PNG, HistoryFolder

    folder = HistoryFolder(out_dir)
    data, trends = history_trends_of(out_dir, threshold)
    trends = with_bisect(trends, data.package or "", bisect)
    rounds = max((r.rounds for r in data.runs if r.kind == "history"), default=0)
    body = history_json(
        trends,
        package=data.package or "",
        versions=data.versions(),
        threshold=threshold,
        rounds=rounds,
        results=str(out_dir),
    )
    body["runs"] = [asdict(r) for r in data.runs]
    write_json(folder.path / HISTORY_JSON, body)
    folder.plots.mkdir(parents=True, exist_ok=True)
    figure = write_trend_figure(trends, folder.plots / HISTORY_PNG)
    versions = data.versions()
    title = (
        f"{data.package or 'package'} {versions[0]} to {versions[-1]}: performance history" if versions else "history"
    )
    intro = (
        f"{len(versions)} releases, {len(trends)} configurations, {sum(r.trials for r in data.runs)} trials in "
        f"{len(data.runs)} runs; threshold {threshold:.0%}."
    )
    page = write_page(folder.path / HISTORY_HTML, data, trends, title=title, threshold=threshold, intro=intro)
    console.print(history_table(trends, data.package or "package"))
    flagged = flagged_steps(trends)
    for trend, step in flagged:
        if step.metric == "throughput":
            say(console, f"{trend.label}: {step.called}: {step.sentence}", "red" if step.slower else "green")
    whole = any(headline_points(t) for t in trends) or any(s.flagged for t in trends for s in t.cumulative)
    if not flagged:
        said = f"no step changed by {threshold:.0%} or more with evidence"
        say(
            console,
            said + ("; the whole series did (its change points and cumulative comparisons below)" if whole else ""),
        )
    for trend in trends:
        for point in headline_points(trend):
            say(console, f"{trend.label}: change point: {change_point_line(point)}", "bold")
    for trend in trends:
        for step in (s for s in trend.cumulative if s.flagged and s.metric == "throughput"):
            say(console, f"{trend.label}: cumulative, {step.before} -> {step.after}: {step.verdict}: {step.sentence}")
    say(console, f"history: {page}, {folder.path / HISTORY_JSON}" + (f", figure: {figure[0]}" if figure else ""))
    return sum(s.slower for _, s in flagged)
