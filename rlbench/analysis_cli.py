"""Command line of the analysis commands: ``rlbench report``, ``rlbench compare``, ``rlbench reproduce``.

Exit codes: 0 done (compare: no significant regression); 1 compare found a configuration that
regressed beyond ``--threshold`` with significance (reproduce --run: the rerun's own exit code);
2 bad input (a folder that is not a result set, an unknown trial id).
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

from rich.console import Console

EXIT_OK, EXIT_REGRESSED, EXIT_BAD_INPUT = 0, 1, 2


def add_analysis_commands(sub) -> None:
    """Register ``report``, ``compare`` and ``reproduce`` on the ``rlbench`` subparsers."""
    from rlbench.compare import DEFAULT_THRESHOLD

    report = sub.add_parser("report", help="write report.html and report.md of a result set")
    report.add_argument("dir", type=Path, help="result folder of a sweep")
    report.add_argument("--rebuild", action="store_true",
                        help="rebuild the tables from the per-trial files first (default: read the parquet tables)")
    report.set_defaults(func=cmd_report)
    compare = sub.add_parser("compare", help="B/A steady-state throughput per configuration, with CIs")
    compare.add_argument("a", type=Path, help="baseline result folder")
    compare.add_argument("b", type=Path, help="candidate result folder")
    compare.add_argument("--threshold", type=float, default=DEFAULT_THRESHOLD,
                         help=f"relative drop that fails when significant (default {DEFAULT_THRESHOLD})")
    compare.add_argument("--out", type=Path, default=None,
                         help="folder for compare.csv and compare.json (default: B)")
    compare.set_defaults(func=cmd_compare)
    reproduce = sub.add_parser("reproduce", help="the exact command that reruns one trial alone")
    reproduce.add_argument("dir", type=Path, help="result folder of a sweep")
    reproduce.add_argument("trial_id", help="e.g. t002r0 (see trials.parquet)")
    reproduce.add_argument("--out", type=Path, default=None,
                           help="where the rerun writes (default: DIR-reproduce-TRIAL_ID next to DIR)")
    reproduce.add_argument("--run", action="store_true", help="run the command now")
    reproduce.set_defaults(func=cmd_reproduce)


def _is_result_set(path: Path) -> bool:
    return (path / "trials.parquet").exists() or (path / "trials").is_dir()


def _bad(console: Console, message: str) -> int:
    console.print(f"[red]error:[/] {message}", highlight=False, soft_wrap=True)
    return EXIT_BAD_INPUT


def write_and_summarize(out_dir: Path, tables, console: Console) -> None:
    """Write the report of a result set and print its recommendations (used by sweep and report)."""
    from rlbench.report_doc import rec_lines, write_report

    html_path, md_path, analysis = write_report(out_dir, tables)
    for line in rec_lines(analysis):
        console.print(f"[bold]recommendation:[/] {line}", highlight=False, soft_wrap=True)
    console.print(f"Report: {html_path}  (and {md_path.name})", highlight=False)


def cmd_report(args: argparse.Namespace, console: Console) -> int:
    from rlbench.report_doc import read_tables

    if not _is_result_set(args.dir):
        return _bad(console, f"{args.dir} is not an rlbench result folder (no trials.parquet or trials/)")
    if args.rebuild:
        from rlbench.store import build_tables

        tables = build_tables(args.dir)
    else:
        tables = read_tables(args.dir)
    write_and_summarize(args.dir, tables, console)
    return EXIT_OK


def cmd_compare(args: argparse.Namespace, console: Console) -> int:
    from rlbench.compare import compare, rich_table, write_outputs

    for path in (args.a, args.b):
        if not _is_result_set(path):
            return _bad(console, f"{path} is not an rlbench result folder (no trials.parquet or trials/)")
    if not 0 <= args.threshold < 1:
        return _bad(console, f"--threshold {args.threshold}: give a fraction in [0, 1), e.g. 0.05 for 5%")
    result = compare(args.a, args.b, args.threshold)
    console.print(rich_table(result))
    csv_path, json_path = write_outputs(result, args.out or args.b)
    console.print(f"Written: {csv_path}, {json_path}", highlight=False)
    if result.regressed:
        console.print(f"[red]{len(result.regressed)} configuration(s) regressed by more than {args.threshold:.0%} "
                      "with significance.[/]")
        return EXIT_REGRESSED
    console.print("No significant regression beyond the threshold.")
    return EXIT_OK


def cmd_reproduce(args: argparse.Namespace, console: Console) -> int:
    import shlex

    from rlbench.reproduce import write_reproduction
    from rlbench.store import trial_dir

    if not (trial_dir(args.dir, args.trial_id) / "plan.json").exists():
        return _bad(console, f"no trial {args.trial_id} in {args.dir} (expected {trial_dir(args.dir, args.trial_id)}"
                             "/plan.json); trial ids are in trials.parquet")
    rep = write_reproduction(args.dir, args.trial_id, args.out)
    console.print(f"# one-point spec: {rep.spec_path}", highlight=False)
    for d in rep.differences:
        console.print(f"# [yellow]differs from the original run:[/] {d}", highlight=False)
    if rep.cwd_note:
        console.print(f"# note: {rep.cwd_note}", highlight=False, soft_wrap=True)
    print(shlex.join(rep.command), flush=True)
    if args.run:
        return subprocess.call([sys.executable, "-m", "rlbench", *rep.command[1:]])
    return EXIT_OK
