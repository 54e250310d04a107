"""The command line: one module per verb (asv's ``commands/`` shape), exit codes in one place.

Each verb module has ``NAME``, ``HELP``, ``setup_arguments(parser)`` and ``run(args, console) -> int``.
A new verb is a new module here, added to :data:`VERBS`.
"""

from __future__ import annotations

import argparse
import sys

from rich.console import Console

from rlbench import __version__
from rlbench.commands import compare, envbench, report, reproduce, simbench, sweep
from rlbench.commands.exit_codes import EXIT_BAD_INPUT

#: The verbs, in the order ``--help`` lists them.
VERBS = (sweep, envbench, simbench, report, compare, reproduce)


def parser() -> argparse.ArgumentParser:
    """``rlbench``'s argument parser, every verb included."""
    top = argparse.ArgumentParser(
        prog="rlbench",
        description="Benchmarking harness for distributed RL training (Ray RLlib): sweeps, exact timing "
                    "breakdowns, per-role utilization.")
    top.add_argument("--version", action="version", version=f"rlbench {__version__}")
    sub = top.add_subparsers(dest="command", required=True)
    for verb in VERBS:
        verb.setup_arguments(sub.add_parser(verb.NAME, help=verb.HELP))
    return top


def main(argv: list[str] | None = None) -> int:
    """Run one command; returns its exit code (rlbench.commands.exit_codes)."""
    args = parser().parse_args(argv)
    console = Console()
    verb = next((v for v in VERBS if v.NAME == args.command), None)
    if verb is None:
        return EXIT_BAD_INPUT
    return verb.run(args, console)


if __name__ == "__main__":
    sys.exit(main())
