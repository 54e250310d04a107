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
from pathlib import Path

from rich.console import Console

from rlbench.analysis.findings import CONFIDENCE
from rlbench.commands._common import bad_input, own_path, say, threshold_of
from rlbench.commands._versions import add_package_arguments, listed_versions, rounds_of, unknown_message
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
its confirmation, nor an API change); 2 bad input; 130 interrupted."""


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
        "--no-confirm",
        action="store_true",
        help="do not run a flagged step's two releases again alone (its verdict then stays unconfirmed)",
    )


def run(args: argparse.Namespace, console: Console) -> int:
    """Run the history; Ctrl-C, SIGTERM and SIGHUP stop it with the line that resumes it (``--resume``):
    rlbench.worker.interrupts' handlers, installed before the command, turn each into a KeyboardInterrupt."""
    try:
        return _history(args, console)
    except KeyboardInterrupt:  # before its folder was chosen: nothing to resume
        console.print("[yellow]Interrupted.[/]")
        return EXIT_INTERRUPTED


def resume_line(args: argparse.Namespace, out_dir: Path, versions: list[str]) -> str:
    """The command that resumes this history's run in ``out_dir``: its own flags, ``--out`` and ``--resume``."""
    flags = [
        ("--package", args.package),
        ("--versions", ",".join(versions)),
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


def wanted_versions(args: argparse.Namespace, listed: list[str] | None) -> list[str]:
    """``--versions`` as given, or the range ``--from``..``--to`` of the listing; ValueError otherwise."""
    from rlbench.commands._versions import range_versions
    from rlbench.spec.versions import parse_versions

    if (args.first is None) != (args.last is None):
        raise ValueError("--from and --to go together: give both ends of the range")
    if args.first is not None:
        if args.versions is not None:
            raise ValueError("give --versions or --from/--to, not both")
        if listed is None:
            raise ValueError("--from/--to needs the index's listing, which could not be read: give --versions")
        return range_versions(listed, args.first, args.last, args.every)
    if args.versions is None:
        raise ValueError("give the versions: --versions 2.58.0,2.59.0 or a range, --from 2.40.0 --to 2.60.0")
    return parse_versions(args.versions)


def _history(args: argparse.Namespace, console: Console) -> int:
    from rlbench.analysis.findings import ROUNDS_FOR_EVIDENCE
    from rlbench.analysis.history_runs import ordered_versions, read_history
    from rlbench.commands.sweep import say_interrupted, sweep_loaded
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
        threshold, rounds = threshold_of(args.threshold), rounds_of(args)
        index = index_value(args.index)
        listed = listed_versions(args.package, index, console) if not args.dry_run or args.first else None
        versions = wanted_versions(args, listed)
        if args.resume and args.out is None:
            raise ValueError("--resume needs --out DIR (the folder of the history to resume)")
        out_dir = own_path(args.out) or default_out_dir("history")
        session = open_history(out_dir)
        before = read_history(out_dir).versions() if session.folder.holds_history() else []
        if before and not args.resume:  # a new release's neighbours run beside it, so its steps pair round by round
            added = [v for v in versions if v not in before]
            ordered = ordered_versions({*before, *added})
            near = {
                ordered[i + d] for v in added for i in [ordered.index(v)] for d in (-1, 1) if 0 <= i + d < len(ordered)
            }
            versions = ordered_versions({*versions, *near})
            if near - set(added) - set(args.versions.split(",") if args.versions else ()):
                say(console, f"with their neighbours in the history: {', '.join(versions)}")
        if len(versions) < 2:
            flag = f"--versions {args.versions}" if args.versions else f"--from {args.first} --to {args.last}"
            raise ValueError(
                f"{flag}: give at least two versions to compare"
                + (
                    " (a history adds rounds of the versions named, and a new one with its neighbours)"
                    if before
                    else ""
                )
            )
        loaded = load_versions(args.config, args.package, versions, rounds, args.index)
        if listed is not None and unknown_versions(versions, listed):
            raise ValueError(
                "--versions " + unknown_message(args.package, index, unknown_versions(versions, listed), listed)
            )
        if not args.dry_run:
            facts = run_facts(loaded, probe_machine(), software_versions(), ("variants", "rounds"))
            session.check_run(facts)
    except (SpecError, ValueError, OutDirError) as e:
        return bad_input(console, str(e))
    if args.dry_run:
        return sweep_loaded(
            loaded,
            argparse.Namespace(
                config=args.config, out=None, dry_run=True, address=args.address, resume=False, retry_failed=False
            ),
            console,
        )
    resume_with = resume_line(args, out_dir, versions)
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
            if args.resume and not runs:
                return bad_input(console, f"--resume: {out_dir} holds no run to resume")
            run_dir = runs[-1] if args.resume else session.folder.new_run("history")
            say(console, f"{args.package} {', '.join(versions)}: {rounds} rounds -> {run_dir}", "bold")
            code = sweep_loaded(
                loaded,
                argparse.Namespace(
                    config=args.config,
                    out=run_dir,
                    dry_run=False,
                    address=args.address,
                    resume=args.resume,
                    retry_failed=False,
                    resume_with=resume_with,
                ),
                console,
            )
            if code in (EXIT_BAD_INPUT, EXIT_INTERRUPTED):
                return code  # an interrupted sweep printed the resume line
            from rlbench.commands._history_write import confirm_flagged, write_history

            if not args.no_confirm:
                confirm_flagged(out_dir, args, threshold, rounds, console)
            slower = write_history(out_dir, threshold, console, (args.config, args.index, listed))
        if received() == seen:
            return EXIT_FAILED if code == EXIT_FAILED or slower else EXIT_OK
    except KeyboardInterrupt:  # between the sweep's own handling and the history's end: a resume writes the rest
        pass
    return say_interrupted(console, out_dir, resume_with)
