"""``rlbench history SPEC --package ray --versions 2.58.0,2.59.0,2.60.0``: the spec's configurations across
releases of one package, interleaved round by round; a trend per configuration and a verdict per step
(docs/VERSIONS.md).

Exit codes (rlbench.commands.exit_codes): 0 done, no step slower beyond the threshold with evidence;
1 a trial failed, or a step is slower beyond the threshold with evidence; 2 bad input (nothing run or
written); 130 interrupted.
"""

from __future__ import annotations

import argparse
import shlex
from pathlib import Path

from rich.console import Console

from rlbench.analysis.findings import CONFIDENCE
from rlbench.commands._common import bad_input, own_path, say, threshold_of
from rlbench.commands._versions import add_package_arguments, listed_versions, rounds_of, unknown_message
from rlbench.commands.exit_codes import EXIT_BAD_INPUT, EXIT_FAILED, EXIT_INTERRUPTED, EXIT_OK

NAME = "history"
HELP = "run a spec across releases of one package (e.g. ray), interleaved; a trend and a verdict per step"
EPILOG = f"""\
examples:
  rlbench history configs/time_to_target.yaml --package ray --versions 2.58.0,2.59.0,2.60.0
  rlbench history configs/smoke.yaml --package ray --versions 2.59.0,2.60.0 --rounds 1 --dry-run
  rlbench history SPEC --package mysim --versions 1.0.0,1.1.0 --index ./wheels   # a local folder of wheels

each version is a variant (ray-2.59.0: packages: {{ray: 2.59.0}}) in a Python environment of its own, made once
and cached (RLBENCH_ENV_CACHE); every configuration runs once per version per round, the order rotating.

results (DIR: --out, default results/<name>_history/<timestamp>/): the usual sweep folder (report.html, trials.parquet
with variant, round and versions), and
  DIR/history.json        per configuration and version: throughput (and time to target) with {CONFIDENCE:.0%} CIs;
                          per step between adjacent versions: paired ratio, intervals, Wilcoxon p, verdict
  DIR/plots/history.png   the trend per configuration

exit codes: 0 done; 1 a trial failed, or a step is slower beyond --threshold with evidence; 2 bad input;
130 interrupted."""


def setup_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("config", type=Path, help="sweep spec (YAML) without variants:, e.g. configs/smoke.yaml")
    p.add_argument("--versions", required=True, help="the versions, oldest first, comma-separated: 2.58.0,2.59.0")
    add_package_arguments(p)
    p.add_argument(
        "--out", type=Path, default=None, help="result folder (default: results/<name>_history/<timestamp>/)"
    )
    p.add_argument("--address", default=None, help="run every trial as a driver of this Ray cluster (docs/CLUSTER.md)")
    p.add_argument(
        "--resume",
        action="store_true",
        help="continue the history in --out DIR: run only its trials that are missing or were interrupted",
    )


def run(args: argparse.Namespace, console: Console) -> int:
    """Run the history; Ctrl-C, SIGTERM and SIGHUP stop it with the line that resumes it (``--resume``):
    rlbench.worker.interrupts' handlers, installed before the command, turn each into a KeyboardInterrupt."""
    try:
        return _history(args, console)
    except KeyboardInterrupt:  # before its folder was chosen: nothing to resume
        console.print("[yellow]Interrupted.[/]")
        return EXIT_INTERRUPTED


def resume_line(args: argparse.Namespace, out_dir: Path) -> str:
    """The command that resumes this history in ``out_dir``: its own flags, ``--out`` and ``--resume``."""
    flags = [
        ("--package", args.package),
        ("--versions", args.versions),
        ("--rounds", args.rounds),
        ("--index", args.index),
        ("--threshold", args.threshold),
        ("--address", args.address),
    ]
    return shlex.join(
        [
            "rlbench",
            NAME,
            str(args.config),
            *(x for flag, value in flags if value is not None for x in (flag, str(value))),
            "--out",
            str(out_dir),
            "--resume",
        ]
    )


def _history(args: argparse.Namespace, console: Console) -> int:
    from rlbench.analysis.findings import ROUNDS_FOR_EVIDENCE
    from rlbench.commands.sweep import say_interrupted, sweep_loaded
    from rlbench.run.index import unknown_versions
    from rlbench.run.sweep import default_out_dir
    from rlbench.spec.model import SpecError
    from rlbench.spec.versions import load_versions, parse_versions, variant_name
    from rlbench.worker.interrupts import received

    try:
        versions = parse_versions(args.versions)
        if len(versions) < 2:
            raise SpecError(f"--versions {args.versions}: give at least two versions to compare")
        threshold, rounds = threshold_of(args.threshold), rounds_of(args)
        loaded = load_versions(args.config, args.package, versions, rounds, args.index)
    except (SpecError, ValueError) as e:
        return bad_input(console, str(e))
    index = loaded.spec.variants[0].index
    listed = listed_versions(args.package, index, console)
    if listed is not None and unknown_versions(versions, listed):
        return bad_input(
            console, "--versions " + unknown_message(args.package, index, unknown_versions(versions, listed), listed)
        )
    if args.resume and args.out is None:
        return bad_input(console, "--resume needs --out DIR (the folder of the history to resume)")
    out_dir = own_path(args.out) or default_out_dir(f"{loaded.spec.name}_history")
    resume_with = resume_line(args, out_dir)
    if rounds < ROUNDS_FOR_EVIDENCE:
        say(
            console,
            f"note: {rounds} round{'s' if rounds != 1 else ''}: no step can get a verdict with fewer than "
            f"{ROUNDS_FOR_EVIDENCE} (the trend is still measured)",
            "yellow",
        )
    seen = received()
    try:
        code = sweep_loaded(
            loaded,
            argparse.Namespace(
                config=args.config,
                out=out_dir,
                dry_run=args.dry_run,
                address=args.address,
                resume=args.resume,
                retry_failed=False,
                resume_with=resume_with,
            ),
            console,
        )
        if args.dry_run or code in (EXIT_BAD_INPUT, EXIT_INTERRUPTED):
            return code  # an interrupted sweep printed the resume line
        slower = write_history(
            out_dir,
            loaded,
            args.package,
            [(v, variant_name(args.package, v)) for v in versions],
            threshold,
            rounds,
            console,
        )
        if received() == seen:
            return EXIT_FAILED if code == EXIT_FAILED or slower else EXIT_OK
    except KeyboardInterrupt:  # between the sweep's own handling and the history's end: a resume writes the rest
        pass
    return say_interrupted(console, out_dir, resume_with)


def write_history(
    out_dir: Path,
    loaded,
    package: str,
    versions: list[tuple[str, str]],
    threshold: float,
    rounds: int,
    console: Console,
) -> int:
    """``history.json``, ``plots/history.png`` and the terminal's table; returns how many steps are slower
    beyond the threshold with evidence."""
    import pandas as pd

    from rlbench.analysis.history import flagged_steps, history_json, history_trends
    from rlbench.report.versions import history_table, write_trend_figure
    from rlbench.results.files import write_json
    from rlbench.results.layout import HISTORY_JSON, HISTORY_PNG, ResultsFolder

    folder = ResultsFolder(out_dir)
    trials = pd.read_parquet(folder.path / "trials.parquet")
    axes = list(loaded.points[0].axes) if loaded.points else []
    trends = history_trends(trials, axes, versions, threshold=threshold)
    write_json(
        folder.path / HISTORY_JSON,
        history_json(
            trends,
            package=package,
            versions=[v for v, _ in versions],
            threshold=threshold,
            rounds=rounds,
            results=str(out_dir),
        ),
    )
    folder.plots.mkdir(parents=True, exist_ok=True)
    figure = write_trend_figure(trends, folder.plots / HISTORY_PNG)
    console.print(history_table(trends, package))
    flagged = flagged_steps(trends)
    for trend, step in flagged:
        say(
            console,
            f"{trend.label}: {step.metric.replace('_', ' ')}: {step.sentence}",
            "red" if step.slower else "green",
        )
    if not flagged:
        say(console, f"no step changed by {threshold:.0%} or more with evidence")
    say(console, f"history: {folder.path / HISTORY_JSON}" + (f", figure: {figure[0]}" if figure else ""))
    return sum(s.slower for _, s in flagged)
