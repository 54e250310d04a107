"""Run stage: run a planned sweep, one isolated trial process at a time, sampling each from outside.

Each trial runs in a fresh process (forked from a server that has already imported Ray, RLlib and
torch, so a trial does not pay ~3 s of imports) in its own process group, with its own local Ray
runtime. The sweep watches it, samples it, enforces its timeout by killing its whole process
group, and records what became of it. Nothing a trial leaves behind outlives it.
"""

from __future__ import annotations

import datetime as dt
import json
import multiprocessing
import os
import shlex
import signal
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import psutil
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

from rlbench import trial as trial_process
from rlbench.machine import MachineInfo, git_commit, machine_dict, probe_machine, software_versions
from rlbench.nvml import Gpus, open_gpus
from rlbench.plan import TrialPlan, plan_trials
from rlbench.resume import (OutDirError, ResumePlan, SweepLock, check_writable, holds_sweep, next_attempt_dir,
                            plan_resume)
from rlbench.sample import Sampler
from rlbench.spec import LoadedSpec
from rlbench.store import (MANIFEST_FILE, EventTail, TrialRecord, build_tables, fsync_dir, read_events, read_record,
                           trial_dir, write_json, write_plan, write_trial_result)

#: Modules the trial fork server imports once, so that each trial starts warm.
PRELOAD_MODULES = ["rlbench.trial", "rlbench.adapters.rllib", "ray", "ray.rllib.algorithms.ppo", "torch",
                   "gymnasium"]
_POLL_S = 0.2


@dataclass
class SweepOutcome:
    """What a sweep produced."""

    out_dir: Path
    """The result folder."""
    records: list[TrialRecord] = field(default_factory=list)
    """One per trial with a verdict, in plan order (trials kept from an earlier run included)."""
    trial_ids: list[str] = field(default_factory=list)
    """Every planned trial."""
    kept: int = 0
    """Trials kept as they were from an earlier run of the folder (resume)."""
    interrupted: bool = False
    """The sweep was stopped by Ctrl-C or SIGTERM before every trial ran."""

    def count(self, status: str) -> int:
        """Trials with this status."""
        return sum(r.status == status for r in self.records)

    @property
    def failed(self) -> list[TrialRecord]:
        """Trials that failed or timed out."""
        return [r for r in self.records if r.status in ("failed", "timeout")]

    @property
    def unfinished(self) -> int:
        """Planned trials without a final verdict (not run yet, or interrupted)."""
        done = {r.trial_id for r in self.records if r.status != "interrupted"}
        return sum(t not in done for t in self.trial_ids)


def default_out_dir(name: str, now: dt.datetime | None = None) -> Path:
    """``results/<name>/<YYYYmmdd-HHMMSS>``."""
    now = now or dt.datetime.now()
    return Path("results") / name / now.strftime("%Y%m%d-%H%M%S")


class TrialLauncher:
    """Starts trial processes from a fork server that has Ray, RLlib and torch imported already."""

    def __init__(self) -> None:
        # Ray's workers inherit the environment: make the caller's folder importable for them.
        cwd = os.getcwd()
        paths = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
        if cwd not in paths:
            os.environ["PYTHONPATH"] = os.pathsep.join([cwd, *paths])
        if cwd not in sys.path:
            sys.path.insert(0, cwd)
        self.context = multiprocessing.get_context("forkserver")
        self.context.set_forkserver_preload(PRELOAD_MODULES)

    def start(self, directory: Path, t0_epoch: float) -> multiprocessing.Process:
        """Launch the trial whose plan is in ``directory``."""
        proc = self.context.Process(target=trial_process.process_entry, args=(str(directory), t0_epoch),
                                    name=f"rlbench-trial-{directory.name}", daemon=False)
        proc.start()
        return proc


def wait_dead(procs: list[psutil.Process], timeout: float = 5.0) -> None:
    """Wait until every process is gone or a zombie (dead, only not yet reaped by its parent).

    psutil.wait_procs waits for the reaping too: an orphan killed here is reaped by PID 1, which
    in some containers polls, and that wait (measured: 1.2 s for 6 Ray workers) would be charged to
    the harness, not to the trial.
    """
    deadline = time.monotonic() + timeout
    pending = list(procs)
    while pending and time.monotonic() < deadline:
        still = []
        for proc in pending:
            try:
                if proc.status() != psutil.STATUS_ZOMBIE:
                    still.append(proc)
            except psutil.Error:
                pass
        pending = still
        if pending:
            time.sleep(0.01)


def kill_tree(pid: int) -> None:
    """SIGKILL a trial process, its process group and every descendant still alive."""
    try:
        descendants = psutil.Process(pid).children(recursive=True)
    except psutil.Error:
        descendants = []
    for target in (lambda: os.killpg(pid, signal.SIGKILL), lambda: os.kill(pid, signal.SIGKILL)):
        try:
            target()
        except (ProcessLookupError, PermissionError):
            pass
    for proc in descendants:
        try:
            proc.kill()
        except psutil.Error:
            pass
    wait_dead(descendants, timeout=5)


def survivors(pids: set[int], session_dir: str | None) -> list[psutil.Process]:
    """Processes of a finished trial still alive: a pid it had, or anything naming its Ray session."""
    alive = []
    session = os.path.basename(session_dir) if session_dir else None
    for proc in psutil.process_iter(["pid", "cmdline", "status"]):
        if proc.pid == os.getpid() or proc.info["status"] == psutil.STATUS_ZOMBIE:
            continue  # a zombie is dead already, only not yet reaped by its parent
        cmdline = " ".join(proc.info["cmdline"] or [])
        if proc.pid in pids or (session and session in cmdline):
            alive.append(proc)
    return alive


def _session_dir(directory: Path) -> str | None:
    return next((e.get("session_dir") for e in read_events(directory) if e.get("event") == "ray_init"), None)


def _log_tail(directory: Path, lines: int = 5) -> str:
    path = directory / trial_process.LOG_FILE
    if not path.exists():
        return ""
    text = [line for line in path.read_text(errors="replace").splitlines() if line.strip()]
    return " | ".join(text[-lines:])


def _verdict(plan: TrialPlan, directory: Path, exit_code: int | None, timed_out: bool,
             stop: "TrialStop | None" = None) -> tuple[str, str | None]:
    """(status, reason) of a finished trial process, from its events, its exit code and why the
    sweep stopped it (timeout, memory limit, Ctrl-C)."""
    events = read_events(directory)
    end = next((e for e in reversed(events) if e.get("event") == "end"), None)
    error = next((e for e in reversed(events) if e.get("event") == "error"), None)
    skipped = next((e for e in events if e.get("event") == "skipped"), None)
    iterations = sum(e.get("event") == "iteration" for e in events)
    if timed_out:
        return "timeout", (f"killed after trial_timeout_s={plan.timeout_s:g} s with its process tree, "
                           f"after {iterations} iterations")
    if stop is not None and stop.memory_bytes is not None:
        return "failed", (f"out of memory: its processes used {stop.memory_bytes / 2**20:.0f} MiB, over "
                          f"trial_memory_limit_bytes={plan.memory_limit_bytes} ({plan.memory_limit_bytes / 2**20:.0f} "
                          f"MiB); killed with its process tree after {iterations} iterations")
    if end is not None and end.get("status") == "skipped" and skipped:
        return "skipped", skipped.get("reason")
    if end is not None and end.get("status") == "ok":
        return "ok", None
    if stop is not None and stop.interrupted:
        how = "stopped cleanly, Ray shut down" if end is not None else "killed after the grace period"
        return "interrupted", f"interrupted (Ctrl-C or SIGTERM) after {iterations} iterations; {how}"
    if error is not None:
        return "failed", error.get("error")
    how = f"signal {-exit_code}" if exit_code is not None and exit_code < 0 else f"exit code {exit_code}"
    if exit_code == -signal.SIGKILL:
        how += ", SIGKILL: the kernel's out-of-memory killer does this (see dmesg)"
    tail = _log_tail(directory)
    return "failed", f"trial process died ({how}) after {iterations} iterations" + (f"; log: {tail}" if tail else "")


@dataclass
class TrialStop:
    """Why the sweep stopped a trial before it ended by itself (at most one is set)."""

    interrupted: bool = False
    """The user pressed Ctrl-C (or the sweep got SIGTERM)."""
    memory_bytes: int | None = None
    """The trial's summed resident memory when it crossed its memory limit."""


def tree_rss_bytes(pid: int) -> int:
    """Summed resident memory of a process and its descendants (shared pages counted per process)."""
    try:
        procs = [psutil.Process(pid)]
        procs += procs[0].children(recursive=True)
    except psutil.Error:
        return 0
    total = 0
    for proc in procs:
        try:
            total += proc.memory_info().rss
        except psutil.Error:
            pass
    return total


class SweepProgress:
    """A rich progress display: the sweep's bar (in iterations, for the ETA) and the current trial."""

    def __init__(self, console: Console, plans: list[TrialPlan]):
        self.per_trial = {p.trial_id: (p.stop_iterations or 1) for p in plans}
        self.progress = Progress(
            TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(),
            TextColumn("{task.fields[detail]}"), TimeElapsedColumn(), TextColumn("ETA"), TimeRemainingColumn(),
            console=console, transient=False,
        )
        self.task = self.progress.add_task("sweep", total=sum(self.per_trial.values()), detail="")
        self.done = 0

    def __enter__(self) -> "SweepProgress":
        self.progress.__enter__()
        return self

    def __exit__(self, *exc) -> None:
        self.progress.__exit__(*exc)

    def trial(self, plan: TrialPlan, position: int, total: int, iteration: int, phase: str) -> None:
        """Show the current trial's position, iteration and phase."""
        limit = plan.stop_iterations or "?"
        axes = " ".join(f"{k}={v}" for k, v in plan.axes.items())
        self.progress.update(
            self.task, completed=self.done + min(iteration, self.per_trial[plan.trial_id]),
            detail=f"trial {position}/{total} {plan.trial_id} [{axes}] {phase} it {iteration}/{limit}",
        )

    def finish_trial(self, plan: TrialPlan) -> None:
        """Count the trial as done."""
        self.done += self.per_trial[plan.trial_id]
        self.progress.update(self.task, completed=self.done)


def _phase(events: list[dict]) -> tuple[int, str]:
    iterations = sum(e.get("event") == "iteration" for e in events)
    names = {e.get("event") for e in events}
    if "shutdown" in names:
        return iterations, "shutting down"
    if "build" in names:
        return iterations, "training"
    if "ray_init" in names:
        return iterations, "building"
    return iterations, "starting Ray"


def _interrupt(proc, grace_s: float) -> None:
    """Ask a trial to stop cleanly (SIGINT: it stops training, shuts Ray down, records what it
    measured); kill its tree if it has not exited after ``grace_s`` or on a second Ctrl-C."""
    try:
        os.kill(proc.pid, signal.SIGINT)
        proc.join(grace_s)
    except KeyboardInterrupt:
        pass
    if proc.exitcode is None:
        kill_tree(proc.pid)
        proc.join(10)


#: Seconds a Ctrl-C'ed trial gets to stop training and shut Ray down before it is killed.
INTERRUPT_GRACE_S = 20.0


def run_trial(plan: TrialPlan, directory: Path, launcher: TrialLauncher, gpus: Gpus | None,
              on_poll=None) -> TrialRecord:
    """Run one trial to its end (or timeout) while sampling it; returns its record (already stored).

    On Ctrl-C the trial is stopped cleanly and recorded ``interrupted``, then KeyboardInterrupt
    is raised again for the sweep to stop.
    """
    t0 = time.time()
    proc = launcher.start(directory, t0)
    sampler = Sampler(proc.pid, t0_epoch=t0, hz=plan.sample_hz, gpus=gpus).start()
    deadline = time.monotonic() + plan.timeout_s
    timed_out = False
    stop = TrialStop()
    tail = EventTail(directory)
    try:
        while proc.exitcode is None:
            proc.join(_POLL_S)
            if on_poll is not None:
                on_poll(tail.poll())
            if proc.exitcode is None and time.monotonic() > deadline:
                timed_out = True
                kill_tree(proc.pid)
                proc.join(10)
            elif proc.exitcode is None and plan.memory_limit_bytes is not None:
                rss = tree_rss_bytes(proc.pid)
                if rss > plan.memory_limit_bytes:
                    stop.memory_bytes = rss
                    kill_tree(proc.pid)
                    proc.join(10)
    except KeyboardInterrupt:
        stop.interrupted = True
        _interrupt(proc, INTERRUPT_GRACE_S)
    finally:
        sampler.stop()
        kill_tree(proc.pid)  # leftovers of a crashed trial, and the trial itself on Ctrl-C
        left = survivors(sampler.seen_pids - {os.getpid()}, _session_dir(directory))
        for p in left:
            p.kill()
        wait_dead(left, timeout=5)
    status, reason = _verdict(plan, directory, proc.exitcode, timed_out, stop)
    # on a cluster, the trial itself killed any of its node processes that outlived its driver
    release = next((e for e in read_events(directory) if e.get("event") == "cluster_release"), {})
    record = TrialRecord(
        trial_id=plan.trial_id, status=status, reason=reason, exit_code=proc.exitcode, started_epoch=t0,
        trial_wall_s=time.time() - t0, sampler_cpu_s=sampler.cpu_s, sampler_samples=sampler.samples,
        leftover_processes_killed=len(left) + len(release.get("processes_killed") or []),
    )
    write_trial_result(directory, record, sampler.columns)
    if stop.interrupted:
        raise KeyboardInterrupt
    return record


def manifest(loaded: LoadedSpec, machine: MachineInfo, plans: list[TrialPlan], argv: list[str]) -> dict:
    """The manifest's fixed part: spec, software, machine."""
    return {
        "spec_file": str(loaded.source),
        "spec": loaded.spec.model_dump(mode="json", by_alias=True),
        "alias_notes": loaded.alias_notes,
        "command": argv,
        "trial_ids": [p.trial_id for p in plans],
        "software": software_versions(),
        "git_commit": git_commit(Path(__file__).resolve().parent),
        "spec_git_commit": git_commit(loaded.source.resolve().parent),
        "machine": machine_dict(machine),
        "started_at": dt.datetime.now(dt.timezone.utc).isoformat(),
        "ended_at": None,
    }


def _move_aside(out_dir: Path, trial_id: str, why: str) -> Path:
    """Move a trial's earlier attempt to ``attempts/<trial_id>/<n>/`` (one rename: atomic), first
    recording a verdict in it if the sweep died before writing one; kill any process of it still alive."""
    directory = trial_dir(out_dir, trial_id)
    if read_record(directory) is None:
        left = survivors(set(), _session_dir(directory))
        for p in left:
            p.kill()
        wait_dead(left, timeout=5)
        iterations = sum(e.get("event") == "iteration" for e in read_events(directory))
        write_trial_result(directory, TrialRecord(
            trial_id=trial_id, status="interrupted", leftover_processes_killed=len(left),
            reason=f"the sweep stopped during this trial (killed?) after {iterations} iterations; no verdict was "
                   "recorded; moved aside by a resume"), None)
    target = next_attempt_dir(out_dir, trial_id)
    target.parent.mkdir(parents=True, exist_ok=True)
    os.rename(directory, target)
    fsync_dir(directory.parent)
    fsync_dir(target.parent)
    return target


def run_sweep(loaded: LoadedSpec, out_dir: Path, *, console: Console, argv: list[str] | None = None,
              nvml=None, resume: bool = False, retry_failed: bool = False, cluster=None) -> SweepOutcome:
    """Plan, run and store a whole sweep into ``out_dir`` (tables are built by the caller).

    Raises :class:`~rlbench.resume.OutDirError` before writing anything when ``out_dir`` cannot be
    written, is locked by another sweep, already holds a sweep and ``resume`` is false, or holds
    trials a resume could not be compared with. With ``resume``, runs only the trials that have no
    verdict or were interrupted (and failed/timed-out ones with ``retry_failed``). Ctrl-C stops the
    running trial cleanly and returns with ``outcome.interrupted`` set.
    """
    argv = list(argv or sys.argv)
    machine = probe_machine(nvml)
    if cluster is not None:  # --address: every trial a driver of that cluster (rlbench/cluster.py)
        from rlbench.cluster import plan_cluster_trials

        plans = plan_cluster_trials(loaded, cluster)
    else:
        plans = plan_trials(loaded, machine)
    software = software_versions()
    check_writable(out_dir)
    existing = holds_sweep(out_dir)
    if existing and not resume:
        raise OutDirError(f"{out_dir} already holds a sweep; to run only its missing and interrupted trials: "
                          f"{resume_command(loaded.source, out_dir)}  (add --retry-failed to rerun failed ones too), "
                          "or choose another --out")
    def decide() -> ResumePlan:
        return (plan_resume(out_dir, loaded, plans, machine, software, retry_failed=retry_failed)
                if existing else ResumePlan())

    decide()  # refuse an incomparable folder before writing anything, even the lock file
    lock = SweepLock(out_dir).acquire()
    try:
        decision = decide()  # again under the lock: another sweep may have finished trials meanwhile
        info = manifest(loaded, machine, plans, argv)
        if cluster is not None:
            from rlbench.cluster import cluster_dict

            info["cluster"] = cluster_dict(cluster)
        if existing:
            old = json.loads((out_dir / MANIFEST_FILE).read_text())
            info = {**old, "spec": info["spec"], "trial_ids": info["trial_ids"]}
            info.setdefault("resumes", []).append({"command": argv, "started_at": _now(), "ended_at": None,
                                                   "rerun": decision.rerun, "kept": len(decision.keep)})
        write_json(out_dir / MANIFEST_FILE, info)
        return _run_plans(loaded, out_dir, plans, decision, info, console=console, nvml=nvml)
    finally:
        lock.release()


def measure_env_ceilings(out_dir: Path, plans: list[TrialPlan], seconds: float, console: Console,
                         max_rss_bytes: int | None = None) -> None:
    """Measure each distinct env ceiling the plans need (not yet in ``env_ceilings.json``), on the
    trial's own cores, before any trial runs; a ceiling that cannot be measured (the env raises,
    hangs past ``seconds`` + 15 s, or holds more than ``max_rss_bytes``) is stored with its error
    and its processes are killed: the trial itself then meets the fault and is judged as usual."""
    from rlbench.studies.envbench import CEILINGS_FILE, ceiling_key, ceiling_procs, measure_ceiling, result_dict

    path = out_dir / CEILINGS_FILE
    ceilings = json.loads(path.read_text()) if path.exists() else {}
    wanted: dict[str, TrialPlan] = {}
    for plan in plans:
        if plan.skip_reason or getattr(plan, "ray_address", None):  # a cluster's cores are not this machine's
            continue
        env = plan.config.environment
        key = ceiling_key(env.env, env.env_config, ceiling_procs(plan.config.env_runners.num_env_runners), plan.cpus)
        if key not in ceilings:
            wanted.setdefault(key, plan)
    if seconds <= 0 or not wanted:
        return
    with console.status(f"measuring {len(wanted)} env ceiling(s), {seconds:g} s each") as status:
        for key, plan in wanted.items():
            status.update(f"env ceiling: {key}")
            env = plan.config.environment
            try:
                result = measure_ceiling(env.env, env.env_config, seconds=seconds, cores=plan.cores,
                                         procs=ceiling_procs(plan.config.env_runners.num_env_runners),
                                         max_rss_bytes=max_rss_bytes)
                ceilings[key] = result_dict(result)
            except Exception as e:  # the trial will fail on the same env and say why; keep going
                ceilings[key] = {"error": f"{type(e).__name__}: {e}"}
            write_json(path, ceilings)


def _now() -> str:
    return dt.datetime.now(dt.timezone.utc).isoformat()


def resume_command(config: Path, out_dir: Path) -> str:
    """The command that resumes this sweep."""
    return shlex.join(["rlbench", "sweep", str(config), "--out", str(out_dir), "--resume"])


def _run_plans(loaded: LoadedSpec, out_dir: Path, plans: list[TrialPlan], decision: ResumePlan, info: dict, *,
               console: Console, nvml) -> SweepOutcome:
    outcome = SweepOutcome(out_dir, trial_ids=[p.trial_id for p in plans])
    for plan in plans:
        if not decision.runs(plan.trial_id):
            outcome.records.append(read_record(trial_dir(out_dir, plan.trial_id)))
            outcome.kept += 1
    to_run = [p for p in plans if decision.runs(p.trial_id)]
    if decision.keep or decision.rerun:
        console.print(f"resuming: {len(decision.keep)} finished trials kept, {len(to_run)} to run "
                      f"({len(decision.rerun)} again: {', '.join(f'{k} ({v})' for k, v in decision.rerun.items()) or '-'})",
                      highlight=False)
    gpus = open_gpus(nvml) if to_run else None
    if gpus is None and to_run:
        console.print("[dim]No GPU (NVML found none): GPU columns will be null.[/]")
    spec = loaded.spec
    measure_env_ceilings(out_dir, to_run, spec.env_ceiling_s, console,
                         max_rss_bytes=spec.trial_memory_limit_bytes or psutil.virtual_memory().total // 4)
    launcher = TrialLauncher()
    try:
        with SweepProgress(console, to_run) as progress:
            for position, plan in enumerate(to_run, start=1):
                if trial_dir(out_dir, plan.trial_id).exists():
                    moved = _move_aside(out_dir, plan.trial_id, decision.rerun.get(plan.trial_id, ""))
                    console.print(f"[dim]{plan.trial_id}: earlier attempt moved to {moved}[/]", highlight=False)
                directory = write_plan(out_dir, plan)
                if plan.skip_reason:
                    record = TrialRecord(trial_id=plan.trial_id, status="skipped", reason=plan.skip_reason)
                    write_trial_result(directory, record, None)
                else:
                    def on_poll(events, plan=plan, position=position):
                        progress.trial(plan, position, len(to_run), *_phase(events))

                    progress.trial(plan, position, len(to_run), 0, "starting")
                    try:
                        record = run_trial(plan, directory, launcher, gpus, on_poll)
                    except KeyboardInterrupt:
                        outcome.records.append(read_record(directory))
                        raise
                outcome.records.append(record)
                progress.finish_trial(plan)
                if record.status not in ("ok",):
                    console.print(f"[yellow]{plan.trial_id} {record.status}[/]: {record.reason}", highlight=False)
    except KeyboardInterrupt:
        outcome.interrupted = True
    finally:
        if gpus is not None:
            gpus.close()
        order = {p.trial_id: i for i, p in enumerate(plans)}
        outcome.records = sorted((r for r in outcome.records if r is not None), key=lambda r: order[r.trial_id])
        ended = _now()
        if info.get("resumes"):
            info["resumes"][-1]["ended_at"] = ended
        else:
            info["ended_at"] = ended
        info["interrupted"] = outcome.interrupted
        info["statuses"] = {r.trial_id: r.status for r in outcome.records}
        write_json(out_dir / MANIFEST_FILE, info)
    return outcome
