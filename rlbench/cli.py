"""Command line: ``rlbench sweep CONFIG [--out DIR] [--dry-run]``.

Exit codes: 0 all trials ok or skipped; 1 a trial failed or timed out; 2 bad input (nothing run or
written); 130 interrupted by Ctrl-C or SIGTERM (the summary prints the command that resumes).
"""

from __future__ import annotations

import argparse
import signal
import sys
from pathlib import Path

from rich.console import Console
from rich.table import Table

from rlbench import __version__

EXIT_OK, EXIT_TRIAL_FAILED, EXIT_BAD_INPUT = 0, 1, 2
#: Ctrl-C or SIGTERM stopped the sweep (128 + SIGINT, as shells report it).
EXIT_INTERRUPTED = 130


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="rlbench", description=__doc__.splitlines()[0])
    parser.add_argument("--version", action="version", version=f"rlbench {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)
    sweep = sub.add_parser("sweep", help="run a YAML grid of isolated RLlib trials")
    sweep.add_argument("config", type=Path, help="sweep spec (YAML), e.g. configs/smoke.yaml")
    sweep.add_argument("--out", type=Path, default=None,
                       help="result folder (default: results/<name>/<timestamp>/)")
    sweep.add_argument("--dry-run", action="store_true", help="print the planned trials and run nothing")
    sweep.add_argument("--address", default=None,
                       help="run every trial as a driver of this Ray cluster (host:port of its GCS, or 'auto'); "
                            "default: $RAY_ADDRESS, else a private local Ray per trial (docs/CLUSTER.md)")
    sweep.add_argument("--resume", action="store_true",
                       help="continue the sweep in --out DIR: run only its trials that are missing or were "
                            "interrupted (refused if the spec, machine or software changed incomparably)")
    sweep.add_argument("--retry-failed", action="store_true",
                       help="with --resume, also rerun trials that failed or timed out")
    _add_study_parsers(sub)
    from rlbench.analysis_cli import add_analysis_commands

    add_analysis_commands(sub)  # report, compare, reproduce
    return parser


def _add_study_parsers(sub) -> None:
    envbench = sub.add_parser("envbench", help="raw env step rate alone, in 1..N parallel processes")
    envbench.add_argument("env", help="gymnasium id (CartPole-v1) or package.module:Class, as in a sweep spec")
    envbench.add_argument("--env-config", action="append", default=[], metavar="KEY=VALUE",
                          help="an env_config entry (value parsed as YAML); repeat for several")
    envbench.add_argument("--procs", default=None,
                          help="comma-separated process counts (default 1,2,4,...,all cores)")
    envbench.add_argument("--seconds", type=float, default=3.0, help="measured seconds per count (default 3)")
    envbench.add_argument("--out", type=Path, default=None, help="also write the results as JSON here")
    envbench.set_defaults(func=cmd_envbench)
    simbench = sub.add_parser("simbench", help="async tasks vs bulk-synchronous rounds (Ray OSDI'18 Table 4)")
    simbench.add_argument("--cpus", default=None, help="comma-separated CPU counts (default 1..all cores)")
    simbench.add_argument("--mean-steps", type=int, default=20_000,
                          help="mean rollout length in timesteps (default 20000)")
    simbench.add_argument("--repeats", type=int, default=3, help="alternating repeats per mode (default 3)")
    simbench.add_argument("--out", type=Path, default=None, help="also write the results as JSON here")
    simbench.set_defaults(func=cmd_simbench)


def _int_list(text: str | None, flag: str) -> list[int] | None:
    if text is None:
        return None
    try:
        values = [int(v) for v in text.split(",") if v.strip()]
    except ValueError:
        raise ValueError(f"{flag} takes comma-separated whole numbers, e.g. 1,2,4 (got {text!r})") from None
    if not values or min(values) < 1:
        raise ValueError(f"{flag} takes whole numbers >= 1 (got {text!r})")
    return values


def cmd_envbench(args: argparse.Namespace, console: Console) -> int:
    import json

    import yaml

    from rlbench.machine import usable_cores
    from rlbench.spec import check_env
    from rlbench.studies.envbench import default_proc_counts, measure_ceiling, result_dict

    try:
        check_env(args.env)
        config = {}
        for item in args.env_config:
            key, sep, value = item.partition("=")
            if not sep or not key:
                raise ValueError(f"--env-config takes KEY=VALUE (got {item!r})")
            config[key] = yaml.safe_load(value)
        cores = usable_cores()
        counts = _int_list(args.procs, "--procs") or default_proc_counts(len(cores))
        if max(counts) > len(cores):
            raise ValueError(f"--procs {max(counts)}: this machine has {len(cores)} usable cores")
    except ValueError as e:
        console.print(f"[red]error:[/] {e}", highlight=False)
        return EXIT_BAD_INPUT
    table = Table(title=f"env ceiling: {args.env} {json.dumps(config) if config else ''}")
    for column in ("processes", "env steps/s", "per process", "scaling vs 1"):
        table.add_column(column, justify="right")
    results = []
    for n in counts:
        r = measure_ceiling(args.env, config, procs=n, seconds=args.seconds, cores=cores)
        results.append(r)
        base = results[0].steps_per_s_per_proc * results[0].procs if results[0].procs == 1 else None
        table.add_row(str(n), f"{r.steps_per_s:,.0f}", f"{r.steps_per_s_per_proc:,.0f}",
                      f"{r.steps_per_s / base:.2f}x" if base else "-")
    console.print(table)
    if args.out:
        from rlbench.store import write_json

        write_json(args.out, [result_dict(r) for r in results])
        console.print(f"written: {args.out}")
    return EXIT_OK


def cmd_simbench(args: argparse.Namespace, console: Console) -> int:
    from rlbench.machine import usable_cores
    from rlbench.studies.simbench import PAPER_TABLE4, result_dict, run_simbench

    try:
        cores = len(usable_cores())
        counts = _int_list(args.cpus, "--cpus") or list(range(1, cores + 1))
        if max(counts) > cores:
            raise ValueError(f"--cpus {max(counts)}: this machine has {cores} usable cores")
        if args.mean_steps < 10 or args.repeats < 1:
            raise ValueError("--mean-steps must be >= 10 and --repeats >= 1")
    except ValueError as e:
        console.print(f"[red]error:[/] {e}", highlight=False)
        return EXIT_BAD_INPUT
    console.print(f"simbench: 3n Pendulum-v1 rollouts (mean {args.mean_steps} steps) on n CPUs, "
                  f"n in {counts}, {args.repeats} repeats per mode")
    results = run_simbench(counts, mean_steps=args.mean_steps, repeats=args.repeats)
    table = Table(title="timesteps per second: bulk-synchronous rounds vs async tasks")
    for column in ("CPUs", "BSP", "async", "async/BSP", "paper BSP (MPI)", "paper async (Ray)", "paper ratio"):
        table.add_column(column, justify="right")
    for r in results:
        paper = PAPER_TABLE4.get(r.cpus)
        table.add_row(str(r.cpus), f"{r.bsp_steps_per_s:,.0f}", f"{r.async_steps_per_s:,.0f}",
                      f"{r.async_over_bsp:.2f}x", *(
                          (f"{paper[0]:,.0f}", f"{paper[1]:,.0f}", f"{paper[1] / paper[0]:.2f}x") if paper
                          else ("-", "-", "-")))
    console.print(table)
    console.print("paper (Pendulum-v0, 2018): 1 CPU 22.6K / 22.3K, 16 CPUs 208K / 290K, 256 CPUs 2.16M / 4.03M "
                  "(BSP / async); see docs/STUDIES.md for why this machine differs")
    if args.out:
        from rlbench.store import write_json

        write_json(args.out, [result_dict(r) for r in results])
        console.print(f"written: {args.out}")
    return EXIT_OK


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
    from rlbench.cluster import ClusterError, plan_cluster_trials, prepare_cluster

    try:
        cluster = prepare_cluster(args.address, loaded, console)
    except ClusterError as e:
        console.print(f"[red]error:[/] {e}", highlight=False, soft_wrap=True)
        return EXIT_BAD_INPUT
    if args.dry_run:
        from rlbench.machine import probe_machine
        from rlbench.plan import plan_trials

        plans = plan_cluster_trials(loaded, cluster) if cluster else plan_trials(loaded, probe_machine())
        console.print(_plan_table(plans))
        console.print(f"{len(plans)} trials planned, {sum(p.skip_reason is None for p in plans)} to run; "
                      "dry run: nothing was run or written.")
        return EXIT_OK

    from rlbench.report import results_table, write_plots
    from rlbench.run import default_out_dir, run_sweep
    from rlbench.store import build_tables

    from rlbench.resume import OutDirError

    if args.retry_failed and not args.resume:
        console.print("[red]error:[/] --retry-failed only makes sense with --resume", highlight=False)
        return EXIT_BAD_INPUT
    if args.resume and args.out is None:
        console.print("[red]error:[/] --resume needs --out DIR (the folder of the sweep to resume)", highlight=False)
        return EXIT_BAD_INPUT
    out_dir = args.out or default_out_dir(loaded.spec.name)
    console.print(f"rlbench {__version__}: sweep '{loaded.spec.name}', {len(loaded.points)} grid points x "
                  f"{loaded.spec.repeats} repeats -> {out_dir}")
    try:
        outcome = run_sweep(loaded, out_dir, console=console, argv=sys.argv, resume=args.resume,
                            retry_failed=args.retry_failed, cluster=cluster)
    except OutDirError as e:
        console.print(f"[red]error:[/] {e}", highlight=False, soft_wrap=True)
        return EXIT_BAD_INPUT
    tables = build_tables(out_dir)
    axes = list(loaded.points[0].axes) if loaded.points else []
    write_plots(out_dir, tables, axes)
    console.print(results_table(tables["trials"], axes))
    console.print(f"{outcome.count('ok')} ok, {outcome.count('skipped')} skipped, {outcome.count('failed')} failed, "
                  f"{outcome.count('timeout')} timed out, {outcome.count('interrupted')} interrupted"
                  f"{f' ({outcome.kept} kept from the earlier run)' if outcome.kept else ''}. Results: {out_dir}")
    from rlbench.analysis_cli import write_and_summarize

    write_and_summarize(out_dir, tables, console)  # report.html / report.md
    for r in outcome.failed:
        console.print(f"[red]{r.trial_id} {r.status}:[/] {r.reason}  (log: {out_dir / 'trials' / r.trial_id / 'trial.log'})",
                      highlight=False)
    if outcome.interrupted:
        from rlbench.run import resume_command

        console.print(f"[yellow]Interrupted[/]: {outcome.unfinished} of {len(outcome.trial_ids)} trials still to run "
                      f"(what the interrupted trial measured is kept). Resume with:\n  "
                      f"{resume_command(args.config, out_dir)}", highlight=False, soft_wrap=True)
        return EXIT_INTERRUPTED
    return EXIT_TRIAL_FAILED if outcome.failed else EXIT_OK


def _raise_keyboard_interrupt(signum, frame) -> None:
    raise KeyboardInterrupt


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    console = Console()
    if args.command == "sweep":
        # SIGTERM (kill, a batch scheduler) and SIGHUP (terminal closed) stop a sweep like Ctrl-C:
        # the running trial is stopped cleanly and what it measured is kept.
        previous = {sig: signal.signal(sig, _raise_keyboard_interrupt) for sig in (signal.SIGTERM, signal.SIGHUP)}
        try:
            return cmd_sweep(args, console)
        except KeyboardInterrupt:  # outside a trial (loading, tables): nothing half-written matters
            console.print("[yellow]Interrupted.[/]")
            return EXIT_INTERRUPTED
        finally:
            for sig, handler in previous.items():
                signal.signal(sig, handler)
    if hasattr(args, "func"):
        return args.func(args, console)
    return EXIT_BAD_INPUT


if __name__ == "__main__":
    sys.exit(main())
