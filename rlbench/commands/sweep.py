"""``rlbench sweep CONFIG``: run a YAML grid of isolated RLlib trials; tables, plots and report at the end.

Exit codes (rlbench.commands.exit_codes): 0 all trials ok or skipped; 1 a trial failed or timed
out; 2 bad input (nothing run or written); 130 interrupted by Ctrl-C, SIGTERM or SIGHUP (the
summary prints the command that resumes).
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass
from pathlib import Path

from rich.console import Console
from rich.text import Text

from rlbench import __version__
from rlbench.analysis.findings import CONFIDENCE
from rlbench.commands._common import bad_input, options_from, own_path, say
from rlbench.commands.exit_codes import EXIT_FAILED, EXIT_INTERRUPTED, EXIT_OK
from rlbench.measure.machine import probe_machine
from rlbench.planning.plan import plan_cluster_trials, plan_trials
from rlbench.planning.skip_summary import skip_summary
from rlbench.results.lock import OutDirError
from rlbench.results.text import plain
from rlbench.run.cluster import ClusterError, prepare_cluster
from rlbench.run.forkserver import release_fork_server
from rlbench.run.raytoken import secure_ray, warn_if_auth_disabled
from rlbench.run.sweep import default_out_dir, resume_command, run_sweep
from rlbench.spec.load import load_spec
from rlbench.spec.model import SpecError
from rlbench.worker.interrupts import install, received, restore

NAME = "sweep"
HELP = "run a YAML grid of isolated RLlib trials"
EPILOG = f"""\
examples:
  rlbench sweep configs/smoke.yaml                   # 4 tiny trials, about a minute on 2 cores
  rlbench sweep configs/ppo_cpu.yaml --dry-run       # which trials would run here, which are skipped and why
  rlbench sweep configs/ppo_cpu.yaml --out /tmp/r    # results into /tmp/r
  rlbench sweep configs/ppo_cpu.yaml --out /tmp/r --resume   # finish an interrupted sweep
  rlbench sweep configs/ppo_cpu.yaml --quick         # does every configuration run? one short iteration each

results (DIR: --out, default results/<sweep name>/<timestamp>/):
  DIR/report.html   open it first: the answer on its first screen, configurations with {CONFIDENCE:.0%} CIs, figures
  DIR/summary.csv   one row per trial; DIR/*.parquet: every iteration and utilization sample (docs/SCHEMA.md)
  DIR/trials/<id>/  one trial's plan, events, log (trial.log) and verdict

exit codes: 0 every trial ok or skipped; 1 a trial failed or timed out; 2 bad input (nothing run or written);
130 interrupted (the summary prints the command that resumes). The spec format: docs/SPEC.md, configs/."""


@dataclass(frozen=True)
class SweepOptions:
    """``rlbench sweep``'s options, its flags typed (``rlbench history`` and ``bisect`` run their sweeps with them)."""

    config: Path
    """The sweep spec (YAML)."""
    out: Path | None = None
    """The result folder; None: ``results/<name>/<timestamp>/``."""
    dry_run: bool = False
    """Print the planned trials and run nothing."""
    address: str | None = None
    """The Ray cluster every trial drives (host:port or ``auto``); None: ``$RAY_ADDRESS``, else a local Ray a trial."""
    parallel: str | None = None
    """With ``address``: up to ``N`` trials at once (``auto``: as many as fit), each on whole nodes of its own."""
    resume: bool = False
    """Continue the sweep in ``out``: only its trials that are missing or were interrupted."""
    retry_failed: bool = False
    """With ``resume``: rerun the trials that failed or timed out too."""
    quick: bool = False
    """One repeat, one short iteration of every configuration; the folder marked quick."""


def setup_arguments(sweep: argparse.ArgumentParser) -> None:
    sweep.add_argument("config", type=Path, help="sweep spec (YAML), e.g. configs/smoke.yaml")
    sweep.add_argument("--out", type=Path, default=None, help="result folder (default: results/<name>/<timestamp>/)")
    sweep.add_argument("--dry-run", action="store_true", help="print the planned trials and run nothing")
    sweep.add_argument(
        "--address",
        default=None,
        help="run every trial as a driver of this Ray cluster (host:port of its GCS, or 'auto'); "
        "default: $RAY_ADDRESS, else a private local Ray per trial (docs/CLUSTER.md)",
    )
    sweep.add_argument(
        "--parallel",
        default=None,
        metavar="N|auto",
        help="with --address: run up to N trials at once (auto: as many as fit), each on whole nodes of "
        "one type that no other trial holds meanwhile, its driver an actor there (docs/CLUSTER.md)",
    )
    sweep.add_argument(
        "--resume",
        action="store_true",
        help="continue the sweep in --out DIR: run only its trials that are missing or were "
        "interrupted (refused if the spec, machine or software changed incomparably)",
    )
    sweep.add_argument(
        "--retry-failed", action="store_true", help="with --resume, also rerun trials that failed or timed out"
    )
    sweep.add_argument(
        "--quick",
        action="store_true",
        help="check that every configuration runs: one repeat, no warm-up, one iteration on a small "
        "train batch (docs/SPEC.md, '--quick'); an autoconfig spec: its search space planned, its "
        "baseline run. The folder is marked quick: compare refuses it, its report recommends nothing",
    )


def run(args: argparse.Namespace, console: Console) -> int:
    """Run the sweep; SIGTERM (kill, a batch scheduler) and SIGHUP (terminal closed) stop it like
    Ctrl-C: the running trial is stopped cleanly and what it measured is kept."""
    previous = install()
    try:
        return _sweep(options_from(SweepOptions, args), console)
    except KeyboardInterrupt:  # outside a trial (loading, tables): nothing half-written matters
        console.print("[yellow]Interrupted.[/]")
        return EXIT_INTERRUPTED
    finally:
        restore(previous)


def import_results_modules() -> None:
    """Import what the tables, plots and report need (pandas, matplotlib: 1.7-2.1 s of one core here,
    2.8-3.0 s while scipy came with them; scipy is imported by the statistic that needs it, so a sweep of
    one repeat a point never pays for it, 2026-11-30). The sweep calls this while its fork server imports
    Ray, RLlib and torch (2.4-2.8 s) on another core; at the top of this module it cost every sweep both in a row."""
    import rlbench.analysis.tables
    import rlbench.report.document
    import rlbench.report.terminal
    import rlbench.report.trial_plots  # noqa: F401 - imported for its import time (above), never named here


def _sweep(opts: SweepOptions, console: Console) -> int:
    try:
        loaded = _quick_autoconfig(opts.config, console) if opts.quick else None
        loaded = loaded or load_spec(opts.config, quick=opts.quick)
    except SpecError as e:
        return bad_input(console, str(e))
    return sweep_loaded(loaded, opts, console)


def _quick_autoconfig(path: Path, console: Console):
    """``--quick`` of a spec with an ``autoconfig:`` section: its search space planned as ``rlbench autoconfig``
    plans it (every refusal of it said, exit 2), then its baseline alone, as a quick sweep; None for a sweep spec."""
    from rlbench.run.autoconfig_driver.space import has_autoconfig, quick_baseline

    if not has_autoconfig(path):
        return None
    loaded, setup = quick_baseline(path, probe_machine())
    say(
        console,
        f"autoconfig spec: its search space plans {len(setup.searched)} configurations here; --quick runs "
        "its baseline only",
        "dim",
    )
    return loaded


def sweep_loaded(loaded, opts: SweepOptions, console: Console, resume_with: str | None = None) -> int:
    """Plan (``opts.dry_run``) or run a loaded spec and write its results; the exit code. ``rlbench history``
    and ``bisect`` run their versions through here; ``resume_with``: the command that resumes, printed when
    interrupted (default: this sweep's own)."""
    for note in loaded.alias_notes:
        say(console, f"alias: {note}", "dim")
    for note in loaded.matched_notes:
        say(console, f"matched: {note}", "dim")
    parallel = opts.parallel
    warn_if_auth_disabled(console)
    if not opts.dry_run:  # before the probe's Ray (a dry run touches nothing); a local sweep creates it later
        secure_ray(console, create=False)
    try:
        cluster = prepare_cluster(opts.address, loaded, console, parallel)
    except ClusterError as e:
        return bad_input(console, str(e))
    if cluster is not None and loaded.spec.rounds_per_process > 1:
        return bad_input(
            console,
            f"{opts.config}: rounds_per_process={loaded.spec.rounds_per_process} reads rounds as windows of trials "
            "kept on this machine; on a cluster (--address) each round is a trial: remove rounds_per_process",
        )
    if opts.dry_run:
        try:
            plans = (
                plan_cluster_trials(loaded, cluster, parallel=parallel is not None)
                if cluster
                else plan_trials(loaded, probe_machine())
            )
        except SpecError as e:
            return bad_input(console, str(e))
        from rlbench.report.plan_table import plan_table

        console.print(plan_table(plans))
        for line in skip_summary(plans):  # names grid values: text, controls visible
            console.print(plain(line), highlight=False, markup=False, soft_wrap=True)
        console.print(
            f"{len(plans)} trials planned, {sum(p.skip_reason is None for p in plans)} to run; "
            "dry run: nothing was run or written."
            + (" (seed: null: the sweep draws its own seeds when it runs.)" if loaded.spec.seed is None else "")
        )
        return EXIT_OK

    if opts.retry_failed and not opts.resume:
        return bad_input(console, "--retry-failed only makes sense with --resume")
    if opts.resume and opts.out is None:
        return bad_input(console, "--resume needs --out DIR (the folder of the sweep to resume)")
    out_dir = own_path(opts.out) or default_out_dir(loaded.spec.name)
    v = len(loaded.spec.variants)
    size = (
        f"{len(loaded.points) // v} grid points x {v} variants x {loaded.spec.repeats} rounds"
        if v
        else f"{len(loaded.points)} grid points x {loaded.spec.repeats} repeats"
    ) + (f" ({k} a process, as its windows)" if (k := loaded.spec.rounds_per_process) > 1 else "")
    say(console, f"rlbench {__version__}: sweep '{loaded.spec.name}', {size} -> {out_dir}")
    line = resume_with or resume_command(  # the caller's own line (rlbench history's), else this sweep's
        opts.config, out_dir, loaded.quick, opts.address if parallel else None, parallel
    )
    outcome, seen = None, received()
    try:
        outcome = run_sweep(
            loaded,
            out_dir,
            console=console,
            argv=sys.argv,
            resume=opts.resume,
            retry_failed=opts.retry_failed,
            cluster=cluster,
            parallel=parallel,
            while_forkserver_starts=import_results_modules,
            resume_with=resume_with,
        )
        release_fork_server()  # it exits while the tables and report are written
        # no record: interrupted before its first trial had a verdict, nothing to tabulate
        code = _results(loaded, out_dir, outcome, console) if outcome.records else EXIT_OK
        if not outcome.interrupted and received() == seen:
            return code
        # interrupted during a trial, or a signal whose KeyboardInterrupt something caught: stop as interrupted
    except (OutDirError, SpecError) as e:
        return bad_input(console, str(e))
    except KeyboardInterrupt:  # outside a trial: planning, the environments, the tables, the report
        pass
    return say_interrupted(console, out_dir, line, outcome)


def _results(loaded, out_dir: Path, outcome, console: Console) -> int:
    """The tables, plots and report of a sweep that ran, and the terminal's last lines; the exit code."""
    from rlbench.analysis.tables import build_tables  # imported already, while the fork server started
    from rlbench.commands.report import write_and_summarize
    from rlbench.report.terminal import results_table
    from rlbench.report.trial_plots import write_plots_beside

    tables = build_tables(out_dir)
    axes = (list(loaded.points[0].axes) if loaded.points else []) + ["variant"] * bool(loaded.spec.variants)
    plots_written = write_plots_beside(out_dir, tables, axes)  # drawn while the report's own figures are
    console.print(results_table(tables["trials"], axes, outcome.skip_groups))
    say(
        console,
        f"{outcome.count('ok')} ok, {outcome.count('skipped')} skipped, {outcome.count('failed')} failed, "
        f"{outcome.count('timeout')} timed out, {outcome.count('interrupted')} interrupted"
        f"{f' ({outcome.kept} kept from the earlier run)' if outcome.kept else ''}. Results: {out_dir}",
    )
    write_and_summarize(out_dir, tables, console, plots_written)  # report.html / report.md
    for r in outcome.failed:  # the reason is the env's own text: plain, never markup
        console.print(
            Text.assemble(
                (f"{r.trial_id} {r.status}:", "red"),
                " ",
                plain(r.reason),
                plain(f"  (log: {out_dir / 'trials' / r.trial_id / 'trial.log'})"),
            ),
            soft_wrap=True,
        )
    for r in outcome.ended_in_teardown:
        console.print(Text.assemble((f"{r.trial_id} ok, with a note:", "yellow"), " ", plain(r.reason)), soft_wrap=True)
    return EXIT_FAILED if outcome.failed else EXIT_OK


def say_interrupted(console: Console, out_dir: Path, resume_with: str, outcome=None) -> int:
    """The last line of an interrupted sweep (or history): what is kept and the command that resumes; exit 130.
    Nothing to resume when the folder was never written."""
    from rlbench.results.layout import ResultsFolder

    release_fork_server()  # once: nothing when the sweep had released it
    if not ResultsFolder(out_dir).holds_sweep():
        console.print("[yellow]Interrupted[/] before anything was written.")
        return EXIT_INTERRUPTED
    if outcome is None:  # stopped outside the trials: planning, or after them
        left = "; finished trials are kept"
    elif outcome.unfinished:
        left = (
            f": {outcome.unfinished} of {len(outcome.trial_ids)} trials still to run (what the interrupted trial "
            "measured is kept)"
        )
    else:
        left = f": all {len(outcome.trial_ids)} trials have their verdict; the tables and report are left to write"
    console.print(
        Text.assemble(("Interrupted", "yellow"), plain(f"{left}. Resume with:"), "\n  ", plain(resume_with)),
        soft_wrap=True,
    )
    return EXIT_INTERRUPTED
