"""``rlbench report DIR``: write report.html and report.md of a result set, print its answer (the first screen)."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from pathlib import Path

from rich.console import Console
from rich.text import Text

from rlbench.analysis.findings import CONFIDENCE
from rlbench.commands._common import bad_input, own_path, read_folder, say
from rlbench.commands.exit_codes import EXIT_OK
from rlbench.results.text import plain

NAME = "report"
HELP = "write report.html and report.md of a result set"
EPILOG = f"""\
examples:
  rlbench report results/smoke/20261123-010355             # (re)write its report.html and report.md
  rlbench report results/smoke/20261123-010355 --rebuild   # rebuild the tables from the per-trial files first

reading the report: it leads with the answer in a few lines (the fastest configuration and whether the
evidence shows it, why, the one change to make next, the ceiling; docs/REPORT.md), then the recommendations and
one row per configuration
(the median over its repeats of steady-state env steps/s with a {CONFIDENCE:.0%} CI, the share of each iteration
spent sampling, learning and syncing weights, cores used against cores given, the bottleneck in
words), scaling per grid axis, and the figures. How every number is computed: docs/ANALYSIS.md."""


def setup_arguments(report: argparse.ArgumentParser) -> None:
    report.add_argument("dir", type=Path, help="result folder of a sweep")
    report.add_argument(
        "--rebuild",
        action="store_true",
        help="rebuild the tables from the per-trial files first (default: read the parquet tables)",
    )


def write_and_summarize(
    out_dir: Path,
    tables,
    console: Console,
    others_written: Callable[[], None] = lambda: None,
    recommendations: bool = True,
) -> None:
    """Write the report of a result set and print its answer, the report's first screen (used by sweep and report),
    then the report's path; ``others_written``: see :func:`~rlbench.report.document.write_report`;
    ``recommendations``: False where the command prints its own answer (autoconfig: the sweep's recommendations pool
    its probe, search and race trials, and one read once could be named beside the raced answer)."""
    from rlbench.report.document import write_report  # heavy: see commands/compare.py's run
    from rlbench.report.first_screen import first_screen_lines
    from rlbench.results.layout import ResultsFolder

    html_path, md_path, analysis = write_report(out_dir, tables, others_written)
    next_spec = ResultsFolder(out_dir).next_spec
    command = f"rlbench sweep {next_spec}" if analysis.next is not None and next_spec.exists() else None
    for line in first_screen_lines(analysis, command) if recommendations else []:  # the folder's values: plain text
        head, _, rest = line.partition(": ")
        console.print(Text.assemble((f"{head}:", "bold"), " ", plain(rest)), soft_wrap=True)
    # autoconfig: its answer printed; the sweep a verdict asks for (``command`` is None without one)
    if not recommendations and command and analysis.next is not None:
        console.print(
            Text.assemble(("next:", "bold"), " ", plain(f"{analysis.next.verdict.short}: {command}")), soft_wrap=True
        )
    say(console, f"Report: {html_path}  (and {md_path.name})")


def run(args: argparse.Namespace, console: Console) -> int:
    """(Re)write the report of a result set and print its recommendations."""
    from rlbench.analysis.tables import build_tables, read_tables  # heavy: see commands/compare.py's run
    from rlbench.results.lock import OutDirError

    args.dir = own_path(args.dir)
    try:
        read_folder(args.dir, console)
    except OutDirError as e:
        return bad_input(console, str(e))
    try:
        tables = build_tables(args.dir) if args.rebuild else read_tables(args.dir)
    except (OSError, ValueError, RecursionError) as e:  # a damaged table or per-trial file (pyarrow's too)
        return bad_input(
            console,
            f"cannot read the tables of {args.dir} ({str(e)[:300]}): the folder is damaged; "
            "--rebuild rebuilds them from trials/",
        )
    write_and_summarize(args.dir, tables, console)
    return EXIT_OK
