"""The command line: one module per verb (asv's ``commands/`` shape), exit codes in one place.

Each verb module has ``NAME``, ``HELP``, ``EPILOG`` (examples, and what to read afterwards),
``setup_arguments(parser)`` and ``run(args, console) -> int``. A new verb is a new module here,
added to :data:`VERBS`.
"""

from __future__ import annotations

import argparse
import sys
import textwrap

from rich.console import Console

from rlbench import __version__
from rlbench.analysis.findings import CONFIDENCE
from rlbench.commands import (
    autoconfig,
    bisect,
    compare,
    envbench,
    history,
    report,
    reproduce,
    servebench,
    simbench,
    sweep,
)
from rlbench.commands._common import make_console
from rlbench.commands.exit_codes import EXIT_BAD_INPUT, EXIT_INTERRUPTED, EXIT_OK
from rlbench.measure.machine import software_versions
from rlbench.run.forkserver import release_fork_server
from rlbench.worker.interrupts import install, leaving

#: The verbs, in the order ``--help`` lists them.
VERBS = (sweep, autoconfig, history, bisect, envbench, simbench, servebench, report, compare, reproduce)

DESCRIPTION = textwrap.fill(
    "Benchmarks distributed RL training (Ray RLlib): runs a YAML grid of isolated trials and shows where each "
    "iteration's time and every core go.",
    100,
)

#: What ``rlbench`` alone and ``rlbench --help`` end with: the first command, where its results go, how to read them.
START_HERE = f"""\
start here (from the rlbench checkout; 4 tiny trials, about a minute on 2 cores):
  rlbench sweep configs/smoke.yaml
  rlbench sweep configs/ppo_cpu.yaml --dry-run   # a realistic CPU sweep: what it would run on this machine

results go to results/<sweep name>/<timestamp>/ (or --out DIR):
  report.html    open it first: the answer on its first screen, configurations ranked with {CONFIDENCE:.0%} CIs, figures
  summary.csv    one row per trial; trials/iterations/utilization.parquet hold every measurement (docs/SCHEMA.md)
  trials/<id>/   one trial's plan, events, log and verdict

`rlbench COMMAND --help` gives a command's options and examples; the spec format is in docs/SPEC.md."""


def version_text() -> str:
    """``rlbench X (python ..., ray ..., torch ..., gymnasium ...)``: what a bug report needs."""
    sw = software_versions()
    return (
        f"rlbench {__version__} (schema {sw['schema_version']}; python {sw['python']}, ray {sw['ray']}, "
        f"torch {sw['torch']}, gymnasium {sw['gymnasium']})"
    )


def parser() -> argparse.ArgumentParser:
    """``rlbench``'s argument parser, every verb included."""
    top = argparse.ArgumentParser(
        prog="rlbench", description=DESCRIPTION, epilog=START_HERE, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    top.add_argument("--version", action="version", version=version_text())
    sub = top.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for verb in VERBS:
        verb.setup_arguments(
            sub.add_parser(
                verb.NAME,
                help=verb.HELP,
                description=verb.HELP[:1].upper() + verb.HELP[1:],
                epilog=verb.EPILOG,
                formatter_class=argparse.RawDescriptionHelpFormatter,
            )
        )
    return top


def overview() -> str:
    """What ``rlbench`` with no arguments prints: what it is, the verbs, and where to start."""
    width = max(len(v.NAME) for v in VERBS)
    verbs = "\n".join(f"  {v.NAME:<{width}}  {v.HELP}" for v in VERBS)
    return f"rlbench {__version__}\n{DESCRIPTION}\n\ncommands:\n{verbs}\n\n{START_HERE}"


def main(argv: list[str] | None = None) -> int:
    """Run one command; returns its exit code (rlbench.commands.exit_codes). Ctrl-C, SIGTERM and SIGHUP
    stop it with EXIT_INTERRUPTED at any moment (rlbench.worker.interrupts): the handlers stay until the
    process exits, so none can kill it outright while it finishes; once the command has its exit code, a
    signal is counted and nothing more (the process's own command line: ``argv`` None)."""
    install()  # the console script's first chance (``python -m rlbench`` installed them already)
    try:
        return _main(argv)
    except KeyboardInterrupt:  # outside a verb's own handling: parsing, or after it returned
        print("Interrupted.", file=sys.stderr)
        return EXIT_INTERRUPTED
    finally:
        if argv is None:  # the process's own command line (console script, python -m rlbench): it exits next
            leaving()
        release_fork_server()  # once: nothing when the command released it already, or started none


def _main(argv: list[str] | None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if not argv:  # a newcomer's first try: say what to run, not an argparse error
        print(overview())
        return EXIT_OK
    args = parser().parse_args(argv)
    console: Console = make_console()
    verb = next((v for v in VERBS if v.NAME == args.command), None)
    if verb is None:
        return EXIT_BAD_INPUT
    return verb.run(args, console)


if __name__ == "__main__":
    sys.exit(main())
