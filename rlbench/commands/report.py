"""``rlbench report DIR``: write report.html and report.md of a result set, print its recommendations."""

from __future__ import annotations

import argparse
from pathlib import Path

from rich.console import Console

from rlbench.analysis.tables import build_tables, read_tables
from rlbench.commands._common import bad_input
from rlbench.commands.exit_codes import EXIT_OK
from rlbench.report.document import rec_lines, write_report
from rlbench.results.layout import ResultsFolder

NAME = "report"
HELP = "write report.html and report.md of a result set"


def setup_arguments(report: argparse.ArgumentParser) -> None:
    report.add_argument("dir", type=Path, help="result folder of a sweep")
    report.add_argument("--rebuild", action="store_true",
                        help="rebuild the tables from the per-trial files first (default: read the parquet tables)")


def write_and_summarize(out_dir: Path, tables, console: Console) -> None:
    """Write the report of a result set and print its recommendations (used by sweep and report)."""
    html_path, md_path, analysis = write_report(out_dir, tables)
    for line in rec_lines(analysis):
        console.print(f"[bold]recommendation:[/] {line}", highlight=False, soft_wrap=True)
    console.print(f"Report: {html_path}  (and {md_path.name})", highlight=False)


def run(args: argparse.Namespace, console: Console) -> int:
    """(Re)write the report of a result set and print its recommendations."""
    if not ResultsFolder(args.dir).is_result_set():
        return bad_input(console, f"{args.dir} is not an rlbench result folder (no trials.parquet or trials/)")
    if args.rebuild:
        tables = build_tables(args.dir)
    else:
        tables = read_tables(args.dir)
    write_and_summarize(args.dir, tables, console)
    return EXIT_OK
