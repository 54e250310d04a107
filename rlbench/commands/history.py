"""``rlbench history SPEC --package ray --versions 2.58.0,2.59.0,2.60.0`` (or ``--from 2.40.0 --to 2.60.0``): the
spec's configurations across releases of one package, interleaved round by round, into a history folder that
each run adds to; a trend per configuration, a verdict per step, flagged steps confirmed by a run of their two
releases alone, and one static page (docs/VERSIONS.md).

Exit codes (rlbench.commands.exit_codes): 0 done, no step slower beyond the threshold with evidence (or only
steps a confirmation disproved, or API changes); 1 a trial failed, or such a step; 2 bad input (nothing run or
written); 130 interrupted.
"""

from __future__ import annotations

import argparse
import shlex
import sys
from dataclasses import asdict, dataclass
from pathlib import Path

from rich.console import Console

from rlbench.analysis.findings import CONFIDENCE
from rlbench.commands._common import bad_input, options_from, own_path, say, threshold_of
from rlbench.commands._package import PackageOptions, add_package_arguments, listed_versions, rounds_of, unknown_message
from rlbench.commands.exit_codes import EXIT_BAD_INPUT, EXIT_FAILED, EXIT_INTERRUPTED, EXIT_OK

NAME = "history"
HELP = "run a spec across releases of one package (e.g. ray), interleaved; a history page with a verdict per step"
EPILOG = f"""\
examples:
  rlbench history configs/ray_history.yaml --package ray --from 2.40.0 --to 2.60.0 --every minor --out H
  rlbench history configs/ray_history.yaml --package ray --versions 2.44.0,2.44.1 --out H   # adds to H
  rlbench history configs/smoke.yaml --package ray --versions 2.59.0,2.60.0 --rounds 1 --dry-run
  rlbench history SPEC --package mysim --versions 1.0.0,1.1.0 --index ./wheels   # a local folder of wheels

each version is a variant (ray-2.59.0: packages: {{ray: 2.59.0}}) in a Python environment of its own, made once
and cached (RLBENCH_ENV_CACHE); every configuration runs once per version per round, the order rotating.
A run into a folder that holds a history adds to it: more releases (their neighbours in the history run again
beside them, so every step is paired) or more rounds of the same ones.

results (DIR: --out, default results/<name>_history/<timestamp>/):
  DIR/history.html        the page: per configuration, throughput and the iteration split per release with
                          {CONFIDENCE:.0%} CIs, each step's verdict, flagged steps and their confirmation, API changes
  DIR/history.json        the same as data (docs/SCHEMA.md, "Comparison files")
  DIR/plots/              the page's figures; history.png, the trend per configuration
  DIR/runs/NN-history/    each run's sweep folder (trials.parquet with variant, round, versions)
  DIR/runs/NN-confirm-*/  each flagged step's confirmation: its two releases alone, interleaved

exit codes: 0 done; 1 a trial failed, or a step is slower beyond --threshold with evidence (and not disproved by
its confirmation, nor an API change), or the whole series is: a throughput change point slower (not a trade), or the
last release slower than an earlier one by --threshold with evidence; 2 bad input; 130 interrupted."""


@dataclass(frozen=True, kw_only=True)
class HistoryOptions(PackageOptions):
    """``rlbench history``'s options, its flags typed."""

    versions: str | None = None
    """The versions, oldest first, comma-separated, as typed; or the range ``first``..``last``."""
    first: str | None = None
    """``--from``: with ``last``, every release the index lists from this one ..."""
    last: str | None = None
    """``--to``: ... to this one (both included)."""
    every: str = "release"
    """With the range: each ``release``, or each ``minor``'s last patch (the ends kept)."""
    address: str | None = None
    """The Ray cluster every trial drives (docs/CLUSTER.md); None: a local Ray a trial."""
    resume: bool = False
    """Continue the history's last run in ``out``: only its trials that are missing or interrupted."""
    no_confirm: bool = False
    """Leave a flagged step unconfirmed: its two releases are not run again alone."""
    rounds_per_process: int | None = None
    """Rounds each release's trial process reads as its measured windows (issue 56); None: the spec's
    ``rounds_per_process`` (configs/ray_history.yaml: 3), 1: a process a round."""


def setup_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("config", type=Path, help="sweep spec (YAML) without variants:, e.g. configs/ray_history.yaml")
    p.add_argument("--versions", default=None, help="the versions, oldest first, comma-separated: 2.58.0,2.59.0")
    p.add_argument("--from", dest="first", default=None, help="with --to: every release the index lists from this one")
    p.add_argument("--to", dest="last", default=None, help="with --from: ... to this one (both included)")
    p.add_argument(
        "--every",
        choices=("release", "minor"),
        default="release",
        help="with --from/--to: each release, or each minor's last patch (the ends kept); default release",
    )
    add_package_arguments(p)
    p.add_argument(
        "--out", type=Path, default=None, help="history folder (default: results/<name>_history/<timestamp>/)"
    )
    p.add_argument("--address", default=None, help="run every trial as a driver of this Ray cluster (docs/CLUSTER.md)")
    p.add_argument(
        "--resume",
        action="store_true",
        help="continue the last run of the history in --out DIR: run only its trials that are missing or interrupted",
    )
    p.add_argument(
        "--rounds-per-process",
        type=int,
        default=None,
        help="rounds each release's trial reads as measured windows of one built trainer, so a start is paid every "
        "this many rounds (default: the spec's rounds_per_process, else 1: a fresh trial a round)",
    )
    p.add_argument(
        "--no-confirm",
        action="store_true",
        help="do not run a flagged step's two releases again alone (its verdict then stays unconfirmed)",
    )


def run(args: argparse.Namespace, console: Console) -> int:
    """Run the history; Ctrl-C, SIGTERM and SIGHUP stop it with the line that resumes it (``--resume``):
    rlbench.worker.interrupts' handlers, installed before the command, turn each into a KeyboardInterrupt."""
    try:
        return _history(options_from(HistoryOptions, args), console)
    except KeyboardInterrupt:  # before its folder was chosen: nothing to resume
        console.print("[yellow]Interrupted.[/]")
        return EXIT_INTERRUPTED


def resume_line(opts: HistoryOptions, out_dir: Path, versions: list[str]) -> str:
    """The command that resumes this history's run in ``out_dir``: its own flags, ``--out`` and ``--resume``."""
    flags = [
        ("--package", opts.package),
        ("--versions", ",".join(versions)),
        ("--rounds", opts.rounds),
        ("--rounds-per-process", opts.rounds_per_process),
        ("--index", opts.index),
        ("--threshold", opts.threshold),
        ("--address", opts.address),
    ]
    return shlex.join(
        [
            "rlbench",
            NAME,
            str(opts.config),
            *(x for flag, value in flags if value is not None for x in (flag, str(value))),
            "--out",
            str(out_dir),
            "--resume",
        ]
    )


def wanted_versions(opts: HistoryOptions, listed: list[str] | None) -> list[str]:
    """``--versions`` as given, or the range ``--from``..``--to`` of the listing; ValueError otherwise."""
    from rlbench.run.index import range_versions
    from rlbench.spec.versions import parse_versions

    if (opts.first is None) != (opts.last is None):
        raise ValueError("--from and --to go together: give both ends of the range")
    if opts.first is not None and opts.last is not None:
        if opts.versions is not None:
            raise ValueError("give --versions or --from/--to, not both")
        if listed is None:
            raise ValueError("--from/--to needs the index's listing, which could not be read: give --versions")
        return range_versions(listed, opts.first, opts.last, opts.every)
    if opts.versions is None:
        raise ValueError("give the versions: --versions 2.58.0,2.59.0 or a range, --from 2.40.0 --to 2.60.0")
    return parse_versions(opts.versions)


def _history(opts: HistoryOptions, console: Console) -> int:
    from rlbench.analysis.findings import ROUNDS_FOR_EVIDENCE
    from rlbench.analysis.history.runs import neighbours, ordered_versions, read_history
    from rlbench.commands.sweep import SweepOptions, say_interrupted, sweep_loaded
    from rlbench.measure.machine import probe_machine, software_versions
    from rlbench.results.lock import OutDirError
    from rlbench.results.session import open_history
    from rlbench.run.index import unknown_versions
    from rlbench.run.manifest import run_facts
    from rlbench.run.sweep import default_out_dir
    from rlbench.spec.model import SpecError
    from rlbench.spec.versions import index_value, load_versions
    from rlbench.worker.interrupts import received

    try:
        threshold, rounds = threshold_of(opts.threshold), rounds_of(opts)
        index = index_value(opts.index)
        listed = listed_versions(opts.package, index, console) if not opts.dry_run or opts.first else None
        versions = wanted_versions(opts, listed)
        if opts.resume and opts.out is None:
            raise ValueError("--resume needs --out DIR (the folder of the history to resume)")
        out_dir = own_path(opts.out) or default_out_dir("history")
        session = open_history(out_dir)
        before = read_history(out_dir).versions() if session.folder.holds_history() else []
        if before and not opts.resume:  # a new release's neighbours run beside it, so its steps pair round by round
            added = [v for v in versions if v not in before]
            near = neighbours(before, added)
            versions = ordered_versions({*versions, *near})
            if near - set(added) - set(opts.versions.split(",") if opts.versions else ()):
                say(console, f"with their neighbours in the history: {', '.join(versions)}")
        if len(versions) < 2:
            flag = f"--versions {opts.versions}" if opts.versions else f"--from {opts.first} --to {opts.last}"
            more = " (a history adds rounds of the versions named, and a new one with its neighbours)" if before else ""
            raise ValueError(f"{flag}: give at least two versions to compare{more}")
        if opts.rounds_per_process is not None and opts.rounds_per_process < 1:
            raise ValueError(f"--rounds-per-process {opts.rounds_per_process}: give a whole number >= 1")
        loaded = load_versions(
            opts.config, opts.package, versions, rounds, opts.index, rounds_per_process=per_process(opts)
        )
        if listed is not None and unknown_versions(versions, listed):
            raise ValueError(
                "--versions " + unknown_message(opts.package, index, unknown_versions(versions, listed), listed)
            )
        if not opts.dry_run:
            facts = run_facts(loaded, probe_machine(), software_versions(), ("variants", "rounds"))
            session.check_run(facts)
    except (SpecError, ValueError, OutDirError) as e:
        return bad_input(console, str(e))
    if opts.dry_run:
        return sweep_loaded(loaded, SweepOptions(opts.config, dry_run=True, address=opts.address), console)
    resume_with = resume_line(opts, out_dir, versions)
    if rounds < ROUNDS_FOR_EVIDENCE:
        say(
            console,
            f"note: {rounds} round{'s' if rounds != 1 else ''}: no step can get a verdict with fewer than "
            f"{ROUNDS_FOR_EVIDENCE} rounds together (the trend is still measured; a later run adds rounds)",
            "yellow",
        )
    seen = received()
    try:
        with session:
            runs = session.folder.runs("history")
            if opts.resume and not runs:
                return bad_input(console, f"--resume: {out_dir} holds no run to resume")
            run_dir = runs[-1] if opts.resume else session.folder.new_run("history")
            say(console, f"{opts.package} {', '.join(versions)}: {rounds} rounds -> {run_dir}", "bold")
            code = sweep_loaded(
                loaded,
                SweepOptions(opts.config, out=run_dir, address=opts.address, resume=opts.resume),
                console,
                resume_with,
            )
            if code in (EXIT_BAD_INPUT, EXIT_INTERRUPTED):
                return code  # an interrupted sweep printed the resume line
            if not opts.no_confirm:
                confirm_flagged(out_dir, opts, threshold, rounds, console)
            slower = write_history(out_dir, threshold, console, (opts.config, opts.index, listed))
        if received() == seen:
            return EXIT_FAILED if code == EXIT_FAILED or slower else EXIT_OK
    except KeyboardInterrupt:  # between the sweep's own handling and the history's end: a resume writes the rest
        pass
    return say_interrupted(console, out_dir, resume_with)


def confirm_flagged(out_dir: Path, opts: HistoryOptions, threshold: float, rounds: int, console: Console) -> None:
    """Run each flagged throughput step that has no confirmation yet (and is no API change) again: its two releases
    alone, on its configuration alone, interleaved over ``rounds`` rounds (at least the fewest that give evidence),
    into the history's next ``confirm`` run."""
    from rlbench.analysis.findings import ROUNDS_FOR_EVIDENCE
    from rlbench.analysis.history.runs import history_trends_of
    from rlbench.analysis.tables import build_tables
    from rlbench.results.layout import HistoryFolder
    from rlbench.run.forkserver import release_fork_server
    from rlbench.run.sweep import run_sweep
    from rlbench.spec.load import axis_column
    from rlbench.spec.versions import load_versions

    _, trends = history_trends_of(out_dir, threshold)
    todo = [
        (i, t, s)
        for i, t in enumerate(trends)
        for s in t.steps
        if s.metric == "throughput" and s.flagged and s.outcome == "unconfirmed"
    ]
    for i, trend, step in todo:
        pair = [step.before, step.after]
        base = load_versions(opts.config, opts.package, pair, 1, opts.index)
        grid = {key: [trend.axes[axis_column(key)]] for key in base.spec.grid if axis_column(key) in trend.axes}
        loaded = load_versions(
            opts.config,
            opts.package,
            pair,
            max(rounds, ROUNDS_FOR_EVIDENCE),
            opts.index,
            grid=grid,
            rounds_per_process=per_process(opts),
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
    out_dir: Path, threshold: float, console: Console, bisect: tuple[Path, str | None, list[str] | None] | None = None
) -> int:
    """``history.json``, ``history.html``, ``plots/`` and the terminal's table, from every run in the folder; returns
    how many steps are slower beyond the threshold with evidence and not disproved (nor an API change). ``bisect``:
    (the spec, ``--index``, the index's listing) for each change point's bisect command (:func:`with_bisect`)."""
    from rlbench.analysis.history.runs import history_trends_of, with_bisect
    from rlbench.analysis.history.trends import flagged_steps, history_json
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
        f"{len(versions)} releases, {len(trends)} configurations, {sum(r.trials for r in data.runs)} trials"
        + (f" ({processes} processes, their rounds read as windows)" if (processes := _processes(data)) else "")
        + f" in {len(data.runs)} runs; threshold {threshold:.0%}."
    )
    page = write_page(folder.path / HISTORY_HTML, data, trends, title=title, threshold=threshold, intro=intro)
    console.print(history_table(trends, data.package or "package"))
    flagged = flagged_steps(trends)
    for trend, step in flagged:
        if step.metric == "throughput":
            say(console, f"{trend.label}: {step.called}: {step.sentence}", "red" if step.slower else "green")
    whole = any(headline_points(t) for t in trends) or any(s.flagged for t in trends for s in t.cumulative)
    if not flagged:
        said = "; the whole series did (its change points and cumulative comparisons below)" if whole else ""
        say(console, f"no step changed by {threshold:.0%} or more with evidence{said}")
    for trend in trends:
        for point in headline_points(trend):
            say(console, f"{trend.label}: change point: {change_point_line(point)}", "bold")
    for trend in trends:
        for step in (s for s in trend.cumulative if s.flagged and s.metric == "throughput"):
            say(console, f"{trend.label}: cumulative, {step.before} -> {step.after}: {step.verdict}: {step.sentence}")
    say(console, f"history: {page}, {folder.path / HISTORY_JSON}" + (f", figure: {figure[0]}" if figure else ""))
    series = slower_series(trends)
    if series:
        say(console, f"the last release is slower over the whole series: {', '.join(series)}", "red")
    return sum(s.slower for _, s in flagged) + len(series)


def per_process(opts: HistoryOptions) -> int | None:
    """``--rounds-per-process``; on a cluster (``--address``) 1 unless given: there each round is a trial (a spec's
    ``rounds_per_process`` reads windows of trials kept on this machine), and a history spec sets 3."""
    if opts.rounds_per_process is None and opts.address is not None:
        return 1
    return opts.rounds_per_process


def _processes(data) -> int | None:
    """The trial processes of a history where some run read rounds as windows; None where none did."""
    if not any(r.processes is not None for r in data.runs):
        return None
    return sum(r.trials if r.processes is None else r.processes for r in data.runs)


def slower_series(trends) -> list[str]:
    """The slowdowns of a whole series that fail the command beside its flagged steps (issue 60: a drift passes every
    adjacent step), one label a configuration at most and none for one that a flagged step fails already: a
    throughput change point `regressed` that is not a trade (learning better, a changed default) and whose later
    segment holds the last release, else the last release slower than an earlier one by the threshold with evidence,
    where no adjacent step between the two is an API change (a changed default, said as such, fails nothing; nor does
    a slowdown recovered before the last release)."""
    out = []
    for t in trends:
        if not t.points or any(s.slower for s in t.steps if s.metric == "throughput"):
            continue
        order = {p.version: i for i, p in enumerate(t.points)}
        last = t.points[-1].version
        api = [(order[s.before], order[s.after]) for s in t.steps if s.outcome == "API change" and s.before in order]
        points = [
            f"{p.before}->{p.after}"
            for p in t.change_points
            if p.metric == "throughput" and p.verdict == "regressed" and not p.trade and last in p.later
        ]
        whole = [
            f"{s.before}->{s.after}"
            for s in t.cumulative
            if s.metric == "throughput"
            and s.slower
            and s.after == last
            and not any(order[s.before] <= b and a <= order[s.after] for b, a in api)
        ]
        if points or whole:
            out.append(f"{t.label} {(points or whole)[0]}")
    return out
