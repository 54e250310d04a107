"""``rlbench autoconfig SPEC --budget 20m``: the configuration of a grid that trains soonest on this
machine, found within a time budget (issue 26, docs/AUTOCONFIG.md).

Exit codes (rlbench.commands.exit_codes): 0 an answer was written; 1 no configuration gave a
reading (every trial failed, or the budget ran out before the race); 2 bad input (nothing run or
written); 130 interrupted (``--resume`` continues without re-running finished trials).
"""

from __future__ import annotations

import argparse
import shlex
import sys
import time
from dataclasses import dataclass
from functools import partial
from pathlib import Path

from rich.console import Console
from rich.text import Text

from rlbench.analysis.findings import CONFIDENCE
from rlbench.commands._common import bad_input, options_from, own_path, say
from rlbench.commands.exit_codes import EXIT_FAILED, EXIT_INTERRUPTED, EXIT_OK
from rlbench.results.text import plain
from rlbench.worker.interrupts import install, received, restore

NAME = "autoconfig"
HELP = "find the configuration that trains soonest here within a budget: search a grid, or walk the verdicts from one"
EPILOG = f"""\
examples:
  rlbench autoconfig configs/autoconfig_cpu.yaml --budget 20m                # CartPole PPO, the space scaled to here
  rlbench autoconfig configs/autoconfig_cpu.yaml --budget 20m --out /tmp/a   # results into /tmp/a
  rlbench autoconfig configs/autoconfig_cpu.yaml --budget 20m --out /tmp/a --resume   # continue after Ctrl-C or a crash
  rlbench autoconfig configs/walk_cpu.yaml --budget 20m                      # no grid: walk the verdicts from it

the spec is a sweep spec: its grid is the search space; an optional autoconfig: section sets the objective,
the baseline and the search's knobs (docs/AUTOCONFIG.md). It probes the baseline, drops what the cost model says
cannot win, runs successive halving on confidence intervals, then races the finalists against the baseline.
A spec with no grid axis of two values (or --walk) is walked instead: its configuration measured, the first verdict
that names a knob followed, that knob's values that fit raced against it, a move kept only on a gain by the one
change rule, until a stop reason (autoconfig.json: path, stop_reason).

results (DIR: --out, default results/<name>_autoconfig/<timestamp>/):
  DIR/autoconfig.json   the answer: best configuration, speed-up over the baseline with its {CONFIDENCE:.0%} CI, the
                        indistinguishable set, the elimination log, predicted vs measured
  DIR/rllib_config.py   the answer as the framework's code (RLlib; sb3_config.py for SB3; none for plain)
  DIR/best.yaml         a sweep that re-measures it against the baseline
  DIR/report.html       the usual report with an Autoconfig section; every trial in trials.parquet (phase, rung, round)

exit codes: 0 an answer; 1 no configuration gave a reading; 2 bad input (nothing run); 130 interrupted (--resume)."""


@dataclass(frozen=True)
class AutoconfigOptions:
    """``rlbench autoconfig``'s options, its flags typed."""

    config: Path
    """The sweep spec (YAML) whose grid is the search space."""
    budget: str | None = None
    """Wall time for the whole run, as typed (``20m``, ``90s``, seconds); None: the spec's ``autoconfig.budget_s``."""
    objective: str | None = None
    """``throughput`` or ``time_to_target``; None: the spec's ``autoconfig.objective``, else throughput."""
    out: Path | None = None
    """The result folder; None: ``results/<name>_autoconfig/<timestamp>/``."""
    resume: bool = False
    """Continue the run in ``out``: finished trials are read back, not run again."""
    walk: bool = False
    """Walk the verdicts from the baseline instead of searching the grid."""
    address: str | None = None
    """The Ray cluster every trial drives; None: a private local Ray a trial."""
    parallel: str | None = None
    """With ``address``: up to ``N`` of a stage's trials at once (``auto``: as many as fit)."""


def setup_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "config", type=Path, help="sweep spec (YAML) whose grid is the search space, e.g. configs/autoconfig_cpu.yaml"
    )
    p.add_argument(
        "--budget",
        default=None,
        help="wall time for the whole run, probes included: 20m, 90s, 1h30m or seconds "
        "(default: autoconfig.budget_s in the spec); it ends within the budget + 10%%",
    )
    p.add_argument(
        "--objective",
        choices=("throughput", "time_to_target"),
        default=None,
        help="throughput: env steps/s; time_to_target: seconds to the spec's stop target "
        "(default: autoconfig.objective, else throughput)",
    )
    p.add_argument(
        "--out", type=Path, default=None, help="result folder (default: results/<name>_autoconfig/<timestamp>/)"
    )
    p.add_argument(
        "--resume",
        action="store_true",
        help="continue the run in --out DIR: finished trials are read back, not run again",
    )
    p.add_argument(
        "--walk",
        action="store_true",
        help="walk the verdicts from the spec's baseline along the grid's axes instead of searching the grid (a spec "
        "with no grid axis of two values is always walked, from its own configuration; docs/AUTOCONFIG.md, The walk)",
    )
    p.add_argument(
        "--address",
        default=None,
        help="run every trial as a driver of this Ray cluster (host:port of its GCS, or 'auto'), as "
        "rlbench sweep does (docs/CLUSTER.md)",
    )
    p.add_argument(
        "--parallel",
        default=None,
        metavar="N|auto",
        help="with --address: run up to N of a stage's trials at once (auto: as many as fit), each on "
        "whole nodes of its own, as rlbench sweep --parallel does (docs/CLUSTER.md)",
    )


def run(args: argparse.Namespace, console: Console) -> int:
    """Run autoconfig; SIGTERM and SIGHUP stop it like Ctrl-C (the state is kept for --resume)."""
    started = time.monotonic()  # the budget counts from here: reading the spec and planning are the user's wait too
    previous = install()
    try:
        return _autoconfig(options_from(AutoconfigOptions, args), console, started)
    except KeyboardInterrupt:
        console.print("[yellow]Interrupted.[/]")
        return EXIT_INTERRUPTED
    finally:
        restore(previous)


def resume_command(out_dir: Path, opts: AutoconfigOptions) -> str:
    """The command that resumes this run."""
    extra = [
        *(["--budget", opts.budget] if opts.budget else []),
        *(["--objective", opts.objective] if opts.objective else []),
        *(["--walk"] if opts.walk else []),
        *(["--address", opts.address] if opts.address else []),
        *(["--parallel", opts.parallel] if opts.parallel else []),
    ]
    return shlex.join(["rlbench", "autoconfig", str(opts.config), *extra, "--out", str(out_dir), "--resume"])


def _autoconfig(opts: AutoconfigOptions, console: Console, started: float) -> int:
    from rlbench.autoconfig.model import describe
    from rlbench.measure.machine import probe_machine
    from rlbench.results.lock import OutDirError
    from rlbench.run.autoconfig_driver import prepare, run_autoconfig
    from rlbench.run.batches import RunContext
    from rlbench.run.cluster import ClusterError, prepare_cluster
    from rlbench.run.raytoken import secure_ray, warn_if_auth_disabled
    from rlbench.run.sweep import default_out_dir
    from rlbench.spec.model import SpecError

    if opts.resume and opts.out is None:
        return bad_input(console, "--resume needs --out DIR (the folder of the run to resume)")
    machine = probe_machine()
    try:
        planned = partial(prepare, opts.config, budget=opts.budget, objective=opts.objective, machine=machine)
        setup = planned(walk=opts.walk)
        warn_if_auth_disabled(console)
        secure_ray(console, create=False)  # before the cluster probe's Ray; a local run creates it later
        cluster = prepare_cluster(opts.address, setup.loaded, console, opts.parallel)  # None: local
        if cluster is not None:  # the search space planned against the cluster's resources (its node sets)
            setup = planned(cluster=cluster, parallel=opts.parallel is not None, walk=opts.walk)
    except (SpecError, ClusterError) as e:
        return bad_input(console, str(e))
    for note in setup.notes:
        say(console, f"search space: {note}", "dim")
    out_dir = own_path(opts.out) or default_out_dir(f"{setup.loaded.spec.name}_autoconfig")
    s = setup.section
    what = (
        "walking the verdicts"
        + (f" along the grid's axes ({', '.join(a for a, _ in setup.grid_axes.values())})" if setup.grid_axes else "")
        + " from"
        if setup.walk
        else f"{len(setup.searched)} configurations; baseline"
    )
    say(
        console,
        f"autoconfig '{setup.loaded.spec.name}': objective {s.objective}, budget {setup.budget_s:.0f} s; "
        f"{setup.shape.describe()}; {what} {describe(setup.candidates[setup.baseline_key])} -> {out_dir}",
    )
    from rlbench.results.layout import ResultsFolder
    from rlbench.run.forkserver import release_fork_server

    outcome, seen = None, received()
    try:
        resume_with = resume_command(out_dir, opts)
        context = RunContext(console, machine, sys.argv, cluster, opts.resume, resume_with, opts.parallel)
        outcome = run_autoconfig(setup, out_dir, context=context, started_s=started)
        if not outcome.interrupted:
            release_fork_server()
            code = _finish(out_dir, outcome, setup, console, time.monotonic())
            if received() == seen:
                return code
            # a signal came, and something caught its KeyboardInterrupt: stop as interrupted all the same
    except (OutDirError, SpecError) as e:
        return bad_input(console, str(e))
    except KeyboardInterrupt:  # outside the stages: taking the folder, the outputs, the tables, the report
        pass
    release_fork_server()
    if not ResultsFolder(out_dir).holds_sweep():  # stopped before anything was written: nothing to resume
        console.print("[yellow]Interrupted.[/]")
        return EXIT_INTERRUPTED
    after = f" after {outcome.elapsed_s:.0f} s" if outcome is not None else ""
    console.print(
        Text.assemble(
            ("Interrupted", "yellow"),
            plain(f"{after}; finished trials are kept. Resume with:"),
            "\n  ",
            plain(resume_command(out_dir, opts)),
        ),
        soft_wrap=True,
    )
    return EXIT_INTERRUPTED


def _finish(out_dir: Path, outcome, setup, console: Console, driver_end: float) -> int:
    """Tables, report, and the terminal's last lines: the winner, its speed-up, the command to re-check it."""
    from rlbench.analysis.evidence import enough_readings_text
    from rlbench.analysis.tables import build_tables
    from rlbench.autoconfig.model import describe
    from rlbench.autoconfig.outputs import evidence
    from rlbench.commands.report import write_and_summarize

    write_and_summarize(out_dir, build_tables(out_dir), console, recommendations=False)
    a, r = outcome.answer, outcome.result
    if r.walk is not None:
        return _finish_walk(out_dir, outcome, console, driver_end)
    say(
        console,
        f"{r.trials_run} search and race trials after {r.probe_trials} probe{'s' * (r.probe_trials != 1)} "
        f"({outcome.trials_run_now} run now); search: {r.search_stop_reason}; race: {a.rounds} rounds, "
        f"{a.stop_reason}",
    )
    if a.chosen_key is None:
        say(console, f"no configuration gave a reading: see {out_dir / 'autoconfig.json'} and the trials' logs", "red")
        return EXIT_FAILED
    unit = "env steps/s" if r.objective == "throughput" else "s to target"
    best = next(st for st in a.standings if st.key == a.chosen_key)
    shown = best.median if r.objective == "throughput" else (1 / best.median if best.median else None)
    base = next((st for st in a.standings if st.key == a.baseline_key), None)
    why = "the baseline gave no reading" if base is None or base.n == 0 else "the baseline's median missed the target"
    speed = (
        f"speed-up over the baseline: not measurable ({why})"
        if a.speedup is None
        else f"speed-up over the baseline ({describe(r.candidates[a.baseline_key])}): {a.speedup:.2f}x" + _interval(a)
    )
    others = [k for k in a.indistinguishable if k != a.chosen_key]
    console.print(
        Text.assemble(
            ("winner:", "bold green"),
            " ",
            plain(a.chosen_key),
            plain(f"  ({shown:.4g} {unit} median)" if shown else ""),
        ),
        soft_wrap=True,
    )
    say(console, speed)
    if others:
        say(
            console,
            f"indistinguishable from the best ({enough_readings_text()}, the change rule finding no difference): "
            f"{', '.join(others)}",
            "dim",
        )
    say(console, evidence(r), "dim")
    for c in a.steps_comparisons:  # time to target: steps to it, raced too
        say(console, f"env steps to the target: {c.text}", "" if c.differ else "dim")
    return _recheck(out_dir, outcome, console, driver_end)


def _finish_walk(out_dir: Path, outcome, console: Console, driver_end: float) -> int:
    """The walk's last lines: where it ended and why, the endpoint's speed-up over the start, the re-check."""
    a, r = outcome.answer, outcome.result
    moves = [p for p in r.walk["path"] if p["outcome"] != "stay"]
    say(
        console,
        f"walk: {len(r.walk['path'])} step(s), {len(moves)} move(s), {r.trials_run} race readings after the start's "
        f"{r.probe_trials} reading{'s' * (r.probe_trials != 1)} ({outcome.trials_run_now} run now); stopped: "
        f"{r.walk['stop_text']}",
    )
    if a.chosen_key is None or not any(st.n for st in a.standings):
        say(console, f"the start gave no reading: see {out_dir / 'autoconfig.json'} and the trials' logs", "red")
        return EXIT_FAILED
    speed = (
        "no move: the endpoint is the start"
        if not moves
        else f"{a.speedup:.2f}x over the start" + _interval(a)
        if a.speedup is not None
        else "speed-up not measurable (a side has no reading)"
    )
    console.print(Text.assemble(("endpoint:", "bold green"), " ", plain(f"{a.chosen_key}: {speed}")), soft_wrap=True)
    if a.design_note:
        say(console, a.design_note, "dim")
    for p in moves:
        if p.get("learning_cost"):
            say(
                console,
                f"step {p['step']} ({p['axis']} {p['from_value']} -> {p['to_value']}): {p['learning']}",
                "yellow",
            )
    return _recheck(out_dir, outcome, console, driver_end)


def _interval(a) -> str:
    """The speed-up's interval in words."""
    if a.speedup_ci_low is None:
        return " (no interval: too few readings)"
    return f" ({CONFIDENCE:.0%} CI {a.speedup_ci_low:.2f}-{a.speedup_ci_high:.2f})"


def _recheck(out_dir: Path, outcome, console: Console, driver_end: float) -> int:
    """The last line: the time spent of the budget (the tables and the report included), the sweep that re-checks it."""
    spent = outcome.elapsed_s + time.monotonic() - driver_end
    recheck = shlex.join(["rlbench", "sweep", str(out_dir / "best.yaml")])
    say(console, f"{spent:.0f} s of a {outcome.result.budget_s:.0f} s budget. Re-check it: {recheck}")
    return EXIT_OK
