"""``rlbench compare A B``: B/A steady-state throughput per configuration, with CIs; exit 1 on a regression.
``rlbench compare DIR``: in a sweep with variants, each variant against the first, paired by round.

Exit codes: 0 no significant regression beyond ``--threshold``; 1 a configuration regressed (or a
variant was slower than the reference) beyond it with significance; 2 bad input.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from rich.console import Console

from rlbench.analysis.findings import CONFIDENCE, REPEATS_FOR_EVIDENCE, ROUNDS_FOR_EVIDENCE
from rlbench.commands._common import add_threshold_argument, bad_input, own_path, read_folder, say, threshold_of
from rlbench.commands.exit_codes import EXIT_FAILED, EXIT_OK

NAME = "compare"
HELP = "B/A steady-state throughput per configuration, with CIs (one folder: its variants)"
EPILOG = f"""\
examples:
  rlbench compare results/ppo_cpu/before results/ppo_cpu/after     # exit 1 if a configuration got slower
  rlbench compare A B --threshold 10% --out /tmp/cmp               # drops up to 10% tolerated; compare.* in /tmp/cmp
  rlbench compare results/ab/20261125-0500                          # a sweep with variants: each against the first

reading it: configurations are matched by their grid values; B/A below 1 is slower. 'regressed' means
a drop of --threshold or more whose whole {CONFIDENCE:.0%} CI is below 1 and that the rank test confirms (exit code 1,
for CI); 'small change' is within the threshold; 'no significant change' has no such evidence. Each needs
{REPEATS_FOR_EVIDENCE} repeats a side: with fewer the verdict is 'no evidence yet' and says how many would give it. With
one folder (a sweep with variants:), each variant against the first per grid point, paired by round: both the
ratio's and the paired ratio's intervals must exclude 1 and the Wilcoxon test agree ({ROUNDS_FOR_EVIDENCE} rounds or
more). compare.csv and compare.json have one schema for both (docs/SCHEMA.md, "Comparison files")."""


def setup_arguments(compare_parser: argparse.ArgumentParser) -> None:
    compare_parser.add_argument("a", type=Path, help="baseline result folder")
    compare_parser.add_argument(
        "b", type=Path, nargs="?", default=None, help="candidate result folder (left out: compare A's variants)"
    )
    add_threshold_argument(compare_parser, "relative drop that fails when significant")
    compare_parser.add_argument(
        "--out",
        type=Path,
        default=None,
        help="folder for compare.csv and compare.json (default: B, or A for its variants)",
    )


def run(args: argparse.Namespace, console: Console) -> int:
    """Compare B against A; exit 1 on a significant regression beyond the threshold."""
    # imported here, not at the top: every verb's module is imported for the parser, and a sweep
    # imports pandas, scipy and matplotlib only once its fork server is starting (rlbench/run/sweep.py)
    from rlbench.analysis.compare import compare
    from rlbench.analysis.comparison import write_outputs
    from rlbench.analysis.tables import read_tables
    from rlbench.report.terminal import compare_table
    from rlbench.results.lock import OutDirError

    args.a, args.b, args.out = own_path(args.a), own_path(args.b), own_path(args.out)
    folders = [args.a] + ([args.b] if args.b is not None else [])
    for path in folders:
        try:
            opened = read_folder(path, console)
        except OutDirError as e:
            return bad_input(console, str(e))
        if opened.manifest.quick:  # one iteration each, no warm-up: start-up, not steady state
            return bad_input(
                console,
                f"{path} holds a --quick run (one repeat, no warm-up, one iteration on a cut "
                "train batch): it checks that configurations run, its numbers measure no speed to "
                "compare; run the spec without --quick",
            )
    out = args.out or args.b or args.a  # only compare.csv and compare.json are written there (links replaced)
    try:
        args.threshold = threshold_of(args.threshold)
    except ValueError as e:
        return bad_input(console, str(e))
    for path in folders:
        try:
            read_tables(path)
        except (OSError, ValueError, RecursionError) as e:  # a damaged table (pyarrow's errors are ValueErrors)
            return bad_input(console, f"cannot read the tables of {path} ({str(e)[:300]}): the folder is damaged")
    if args.b is None:
        return _variants(args, out, console)
    result = compare(args.a, args.b, args.threshold)
    console.print(compare_table(result))
    csv_path, json_path = write_outputs(result, out)
    say(console, f"Written: {csv_path}, {json_path}")
    if result.regressed:
        console.print(
            f"[red]{len(result.regressed)} configuration(s) regressed by {args.threshold:.0%} or more "
            "with significance.[/]"
        )
        return EXIT_FAILED
    console.print("No significant regression beyond the threshold.")
    return EXIT_OK


def _variants(args: argparse.Namespace, out: Path, console: Console) -> int:
    """``rlbench compare DIR``: the variants of one sweep, each against the first."""
    from rlbench.analysis.comparison import write_outputs
    from rlbench.analysis.tables import read_tables
    from rlbench.analysis.variants import variant_comparison
    from rlbench.report.blocks import to_rich
    from rlbench.report.variants_section import variant_table

    tables = read_tables(args.a)
    result = variant_comparison(args.a, tables["trials"], args.threshold, tables.get("iterations"))
    rows = result.rows
    if not rows:
        return bad_input(
            console,
            f"{args.a} holds no sweep with two or more variants: give a second result folder "
            "to compare with, or run a spec with 'variants:' (docs/SPEC.md)",
        )
    console.print(to_rich(variant_table(rows, title=f"each variant against {rows[0].a}  ({args.a})")))
    for r in rows:
        say(console, f"{r.label}: {r.sentence}" if r.label != "all" else r.sentence)
    csv_path, json_path = write_outputs(result, out)
    say(console, f"Written: {csv_path}, {json_path}")
    if result.regressed:
        console.print(
            f"[red]{len(result.regressed)} variant(s) slower than {rows[0].a} by {args.threshold:.0%} or "
            "more with significance.[/]"
        )
        return EXIT_FAILED
    console.print("No variant significantly slower than the reference beyond the threshold.")
    return EXIT_OK
