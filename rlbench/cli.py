"""Command line: ``rlbench sweep CONFIG [--out DIR] [--dry-run]``.

Exit codes: 0 all trials ok or skipped; 1 a trial failed or timed out; 2 bad input (nothing run).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from rich.console import Console
from rich.table import Table

from rlbench import __version__

EXIT_OK, EXIT_TRIAL_FAILED, EXIT_BAD_INPUT = 0, 1, 2


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="rlbench", description=__doc__.splitlines()[0])
    parser.add_argument("--version", action="version", version=f"rlbench {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)
    sweep = sub.add_parser("sweep", help="run a YAML grid of isolated RLlib trials")
    sweep.add_argument("config", type=Path, help="sweep spec (YAML), e.g. configs/smoke.yaml")
    sweep.add_argument("--out", type=Path, default=None,
                       help="result folder (default: results/<name>/<timestamp>/)")
    sweep.add_argument("--dry-run", action="store_true", help="print the planned trials and run nothing")
    return parser


def _plan_table(plans) -> Table:
    table = Table(title="planned trials")
    axes = list(plans[0].axes) if plans else []
    for column in ["trial", *axes, "cpus", "driver cores", "ray CPUs", "torch threads d/l/r", "fate"]:
        table.add_column(column, overflow="fold")
    for p in plans:
        t = p.torch_threads
        table.add_row(p.trial_id, *[str(p.axes[a]) for a in axes], str(p.cpus),
                      ",".join(map(str, p.driver_cores)) or "-", str(p.ray_cpus),
                      f"{t['driver']}/{t['learner']}/{t['env_runner']}",
                      f"[yellow]skip: {p.skip_reason}[/]" if p.skip_reason else "run")
    return table


def cmd_sweep(args: argparse.Namespace, console: Console) -> int:
    from rlbench.spec import SpecError, load_spec

    try:
        loaded = load_spec(args.config)
    except SpecError as e:
        console.print(f"[red]error:[/] {e}", highlight=False, soft_wrap=True)
        return EXIT_BAD_INPUT
    for note in loaded.alias_notes:
        console.print(f"[dim]alias:[/] {note}", highlight=False)
    if args.dry_run:
        from rlbench.machine import probe_machine
        from rlbench.plan import plan_trials

        plans = plan_trials(loaded, probe_machine())
        console.print(_plan_table(plans))
        console.print(f"{len(plans)} trials planned, {sum(p.skip_reason is None for p in plans)} to run; "
                      "dry run: nothing was run or written.")
        return EXIT_OK

    from rlbench.report import results_table, write_plots
    from rlbench.run import default_out_dir, run_sweep
    from rlbench.store import build_tables

    out_dir = args.out or default_out_dir(loaded.spec.name)
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
        probe = out_dir / ".rlbench-write-test"
        probe.write_text("")
        probe.unlink()
    except OSError as e:
        console.print(f"[red]error:[/] cannot write to output folder {out_dir}: {e.strerror}; choose another "
                      "with --out", highlight=False)
        return EXIT_BAD_INPUT
    console.print(f"rlbench {__version__}: sweep '{loaded.spec.name}', {len(loaded.points)} grid points x "
                  f"{loaded.spec.repeats} repeats -> {out_dir}")
    outcome = run_sweep(loaded, out_dir, console=console, argv=sys.argv)
    tables = build_tables(out_dir)
    axes = list(loaded.points[0].axes) if loaded.points else []
    write_plots(out_dir, tables, axes)
    console.print(results_table(tables["trials"], axes))
    console.print(f"{outcome.count('ok')} ok, {outcome.count('skipped')} skipped, {outcome.count('failed')} failed, "
                  f"{outcome.count('timeout')} timed out. Results: {out_dir}")
    if outcome.failed:
        for r in outcome.failed:
            console.print(f"[red]{r.trial_id} {r.status}:[/] {r.reason}  (log: {out_dir / 'trials' / r.trial_id / 'trial.log'})",
                          highlight=False)
        return EXIT_TRIAL_FAILED
    return EXIT_OK


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    console = Console()
    if args.command == "sweep":
        return cmd_sweep(args, console)
    return EXIT_BAD_INPUT


if __name__ == "__main__":
    sys.exit(main())
