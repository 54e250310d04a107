"""One trial's lifecycle, seen from the sweep: launch, watch, sample, stop, judge, record.

Each trial runs in a fresh process (forked from a server that has already imported Ray, RLlib and
torch, so a trial does not pay ~3 s of imports) in its own process group, with its own local Ray
runtime. The sweep watches it, samples it from outside, enforces its timeout and memory limit by
killing its whole process group, and records what became of it. Nothing a trial leaves behind
outlives it.
"""

from __future__ import annotations

import multiprocessing
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass

from rlbench.adapters import get_adapter
from rlbench.measure.profiler import TrialProfiler
from rlbench.measure.utilization import UtilizationSampler
from rlbench.results.events import Event
from rlbench.results.files import open_append, remove_if_empty, write_atomic
from rlbench.results.layout import TrialFolder
from rlbench.results.records import TEARDOWN_CRASH, TrialRecord, write_record
from rlbench.run.forkserver import stop_fork_server_unless
from rlbench.run.processes import ProcessRef, kill_survivors, kill_tree
from rlbench.spec.plan import TrialPlan
from rlbench.worker import trial as trial_process
from rlbench.worker.nvml import Gpus
from rlbench.worker.procfs import read_steal, steal_pct
from rlbench.worker.rapl import Rapl

_POLL_S = 0.2
#: Poll interval while the trial is profiled or about to be: how late, at most, a profile starts after
#: the warm-up and stops as the trial's last iteration begins.
_PROFILE_POLL_S = 0.05


class FreshProcess:
    """A trial started as a fresh ``python -m rlbench.worker.trial`` (the ``forkserver`` switch of
    :mod:`rlbench.run.switches`), with the calls of multiprocessing.Process that :func:`run_trial` uses."""

    def __init__(self, popen: subprocess.Popen):
        self._popen = popen
        self.pid = popen.pid

    @property
    def exitcode(self) -> int | None:
        return self._popen.poll()

    def join(self, timeout: float | None = None) -> None:
        try:
            self._popen.wait(timeout)
        except subprocess.TimeoutExpired:
            pass


class TrialLauncher:
    """Starts trial processes from a fork server that has Ray, RLlib and torch imported already
    (the :attr:`~rlbench.adapters.base.Adapter.preload_modules` of the sweep's ``frameworks``), or, with
    ``fresh_process``, each as a new Python process (a fidelity diagnosis)."""

    def __init__(self, *, fresh_process: bool = False, frameworks: tuple[str, ...] = ("rllib",)) -> None:
        self.fresh_process = fresh_process
        # Ray's workers inherit the environment: make the caller's folder importable for them.
        cwd = os.getcwd()
        paths = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
        if cwd not in paths:
            os.environ["PYTHONPATH"] = os.pathsep.join([cwd, *paths])
        if cwd not in sys.path:
            sys.path.insert(0, cwd)
        self.context = multiprocessing.get_context("forkserver")
        # only the frameworks the sweep runs: a plain sweep's server imports neither Ray nor torch
        preload = [m for f in frameworks for m in get_adapter(f).preload_modules]
        wanted = [trial_process.__name__, *dict.fromkeys(preload)]
        if not fresh_process:
            stop_fork_server_unless(wanted)
        self.context.set_forkserver_preload(wanted)

    def warm(self) -> None:
        """Start the fork server now: it imports Ray, RLlib and torch (2.4-2.8 s of one core, measured)
        while the sweep does its own work on the other cores, instead of in the first trial's start."""
        if not self.fresh_process:
            from multiprocessing import forkserver

            forkserver.ensure_running()

    def wait_ready(self) -> None:
        """Return once the fork server has imported everything: a do-nothing child forked from it has
        exited. Called before the env ceilings, so no import runs while they measure."""
        if not self.fresh_process:
            ready = self.context.Process(target=trial_process.ready, name="rlbench-forkserver-ready")
            ready.start()
            ready.join()

    def start(self, trial: TrialFolder, t0_epoch: float, gated: bool = False,
              python: str | None = None) -> "multiprocessing.Process | FreshProcess":
        """Launch the trial whose plan is in ``trial`` (``gated``: it builds nothing before its gate opens;
        ``python``: a fresh process of that interpreter, the environment of its variant's packages)."""
        if self.fresh_process or python:  # argv holds rlbench's own paths and a number only: no shell, nothing foreign
            # its output goes to its log from the start: a Ctrl-C during its imports (before it redirects its
            # own output) printed the trial's KeyboardInterrupt traceback on the command's terminal
            log = open_append(trial.log)
            try:
                return FreshProcess(subprocess.Popen(
                    [python or sys.executable, "-m", trial_process.__name__, str(trial.path), repr(t0_epoch),
                     *(["gated"] if gated else [])], stdin=subprocess.DEVNULL, stdout=log, stderr=log))
            finally:
                os.close(log)
        proc = self.context.Process(target=trial_process.process_entry, args=(str(trial.path), t0_epoch, gated),
                                    name=f"rlbench-trial-{trial.trial_id}", daemon=False)
        proc.start()
        return proc


def _verdict(plan: TrialPlan, trial: TrialFolder, exit_code: int | None, timed_out: bool,
             stop: "TrialStop | None" = None) -> tuple[str, str | None]:
    """(status, reason) of a finished trial process, from its events, its exit code and why the
    sweep stopped it (timeout, memory limit, Ctrl-C)."""
    events = trial.events()
    end = next((e for e in reversed(events) if e.get("event") == Event.END), None)
    error = next((e for e in reversed(events) if e.get("event") == Event.ERROR), None)
    skipped = next((e for e in events if e.get("event") == Event.SKIPPED), None)
    iterations = sum(e.get("event") == Event.ITERATION for e in events)
    if stop is not None and stop.memory_bytes is not None:
        return "failed", (f"out of memory: its processes used {stop.memory_bytes / 2**20:.0f} MiB, over "
                          f"trial_memory_limit_bytes={plan.memory_limit_bytes} ({plan.memory_limit_bytes / 2**20:.0f} "
                          f"MiB); killed with its process tree after {iterations} iterations")
    if end is not None and end.get("status") == "skipped" and skipped:
        return "skipped", skipped.get("reason")
    if end is not None and end.get("status") == "ok":
        return "ok", None
    if (end is None or end.get("status") in ("interrupted", "failed")) and _teardown_started(plan, events):
        # it trained (and fetched its node rows): every figure is written; how its process ended while its
        # framework and runtime shut down changes none of them (an error then is raised after trained)
        if error is not None:
            how = f"it raised {error.get('error')}"
        elif timed_out:
            how = f"it was killed after trial_timeout_s={plan.timeout_s:g} s"
        elif end is not None:
            how = "it was interrupted (Ctrl-C or SIGTERM)"
        elif stop is not None and stop.interrupted:
            how = "it was interrupted (Ctrl-C or SIGTERM) and killed after the grace period"
        else:
            how = f"its process {'died' if exit_signal(exit_code) else 'exited'} ({_exit_text(exit_code)})"
        return "ok", _teardown_note(events, how, iterations)
    if timed_out:
        return "timeout", (f"killed after trial_timeout_s={plan.timeout_s:g} s with its process tree, "
                           f"after {iterations} iterations")
    if stop is not None and stop.interrupted:
        how = "stopped cleanly, Ray shut down" if end is not None else "killed after the grace period"
        return "interrupted", f"interrupted (Ctrl-C or SIGTERM) after {iterations} iterations; {how}"
    if error is not None:
        return "failed", error.get("error")
    how = _exit_text(exit_code)
    if exit_code == -signal.SIGKILL:
        how += ": the kernel's out-of-memory killer does this (see dmesg)"
    tail = trial.log_tail()
    return "failed", f"trial process died ({how}) after {iterations} iterations" + (f"; log: {tail}" if tail else "")


def _teardown_started(plan: TrialPlan | None, events: list[dict]) -> bool:
    """Whether the trial had finished measuring when it began to shut down: it wrote ``trained`` and, on a
    cluster, its node samplers' rows (``node_sampling``) or why there are none (``node_sampling_error``)."""
    names = {e.get("event") for e in events}
    if Event.TRAINED not in names:
        return False
    on_cluster = plan is not None and bool(plan.ray_address)
    return not on_cluster or bool(names & {Event.NODE_SAMPLING, Event.NODE_SAMPLING_ERROR})


def _teardown_note(events: list[dict], how: str, iterations: int) -> str:
    """The ``reason`` of an ok trial that ended in its teardown (:data:`TEARDOWN_CRASH` first): how, and when."""
    when = ("after its runtime had shut down (shutdown_s recorded)" if any(e.get("event") == Event.SHUTDOWN for e in events)
            else "while its framework and runtime shut down (shutdown_s unknown)")
    return f"{TEARDOWN_CRASH}: {how} after it had trained, {when}; all {iterations} iterations were recorded"


def _exit_text(exit_code: int | None) -> str:
    """``signal 11, SIGSEGV`` or ``exit code 3``."""
    if exit_code is None or exit_code >= 0:
        return f"exit code {exit_code}"
    try:
        return f"signal {-exit_code}, {signal.Signals(-exit_code).name}"
    except ValueError:  # a real-time or unknown signal: its number alone
        return f"signal {-exit_code}"


def exit_signal(exit_code: int | None) -> int | None:
    """The signal that ended the trial process (multiprocessing's and Popen's negative exit code), or None."""
    return -exit_code if exit_code is not None and exit_code < 0 else None


@dataclass
class TrialStop:
    """Why the sweep stopped a trial before it ended by itself (at most one is set)."""

    interrupted: bool = False
    """The user pressed Ctrl-C (or the sweep got SIGTERM)."""
    memory_bytes: int | None = None
    """The trial's summed resident memory when it crossed its memory limit."""


def _interrupt(proc, me: ProcessRef, grace_s: float) -> None:
    """Ask a trial to stop cleanly (SIGINT: it stops training, shuts Ray down, records what it
    measured); kill its tree if it has not exited after ``grace_s`` or on a second Ctrl-C."""
    try:
        if me.alive():  # not after its exit: its pid may be reaped (by the fork server) and reused
            os.kill(proc.pid, signal.SIGINT)
        proc.join(grace_s)
    except ProcessLookupError:  # it exited between the check and the signal: nothing to stop
        pass
    except KeyboardInterrupt:
        pass
    if proc.exitcode is None:
        kill_tree(me)
        proc.join(10)


#: Seconds a Ctrl-C'ed trial gets to stop training and shut Ray down before it is killed.
INTERRUPT_GRACE_S = 20.0


@dataclass
class Launched:
    """A trial process the sweep has started, with its sampler (already sampling)."""

    proc: "multiprocessing.Process | FreshProcess"
    """The trial process."""
    me: ProcessRef
    """The trial process with its start time (never someone else's pid)."""
    sampler: UtilizationSampler
    """Samples the trial's process tree from launch on."""
    t0_epoch: float
    """When it was launched (Unix time); the trial's ``t_s`` count from here."""
    gated: bool
    """Launched while the previous trial shut down: it waits for its gate before building."""
    steal0: "tuple[int, int] | None" = None
    """This machine's steal and total CPU ticks at launch (:func:`rlbench.worker.procfs.read_steal`)."""

    def end(self, trial: TrialFolder) -> int:
        """Stop sampling and kill the trial's process tree and whatever of it survived; returns how
        many survivors were killed. Also how the sweep drops a launched trial that will not run (it
        stopped first): that one leaves no process and no record, so a resume runs it."""
        self.sampler.stop()
        kill_tree(self.me)  # leftovers of a crashed trial, and the trial itself on Ctrl-C
        left = kill_survivors({p for p in self.sampler.seen_processes if p[0] != os.getpid()}, trial.session_dir(),
                              self.me)
        # the training system's own log folder (~/ray_results/...), left empty, also by a killed trial
        log_dir = trial.event(Event.BUILD).get("log_dir")
        if isinstance(log_dir, str) and os.path.isabs(log_dir):
            remove_if_empty(log_dir)
        return left


def launch_trial(plan: TrialPlan, trial: TrialFolder, launcher: TrialLauncher, gpus: Gpus | None,
                 rapl: Rapl | None = None, *, gated: bool = False) -> Launched:
    """Start the trial process and its sampler. CPU package energy (``rapl``) is read for local
    trials only: on a cluster the trial's actors run on other machines, and this machine's packages
    alone would read as the trial's energy."""
    t0 = time.time()
    steal0 = None if plan.ray_address else read_steal()
    # a variant's own environment, or (the forkserver switch, per trial) a fresh process of this Python
    fresh = sys.executable if "forkserver" in plan.switched_off else None
    proc = launcher.start(trial, t0, gated, plan.packages.python if plan.packages else fresh)
    me = ProcessRef.of(proc.pid) or ProcessRef(proc.pid, -1)  # not reaped before join: still the trial
    hz = 0.0 if "sampler" in plan.switched_off else plan.sample_hz  # 0: a fidelity diagnosis, no rows
    sampler = UtilizationSampler(proc.pid, t0_epoch=t0, hz=hz, gpus=gpus, adapter=get_adapter(plan.config.framework),
                                 rapl=None if plan.ray_address else rapl).start()
    return Launched(proc, me, sampler, t0, gated, steal0)


def run_trial(plan: TrialPlan, trial: TrialFolder, launcher: TrialLauncher, gpus: Gpus | None,
              on_poll=None, rapl: Rapl | None = None, *, launched: Launched | None = None,
              on_trained=None, pyspy: str | None = None) -> TrialRecord:
    """Run one trial to its end (or timeout) while sampling it; returns its record (already stored).

    The memory limit is checked against the sampler's own readings at every utilization sample
    (the trial's processes, rlbench's reaper left out). On Ctrl-C the trial is stopped cleanly and
    recorded ``interrupted``, then KeyboardInterrupt is raised again for the sweep to stop.

    ``launched``: the trial was started early (:func:`launch_trial` with ``gated``) while the
    previous one shut down; the previous one's processes are gone now, so its gate opens here and
    its timeout counts from here. ``on_trained`` is called once when this trial has finished
    training (its ``trained`` event): the sweep may launch the next one then. With ``profile_hz``
    the trial's Python processes are profiled in its steady state (:mod:`rlbench.measure.profiler`;
    ``pyspy``: the py-spy binary, default the installed one).
    """
    launched = launched or launch_trial(plan, trial, launcher, gpus, rapl)
    overlap_s = 0.0
    if launched.gated:
        overlap_s = time.time() - launched.t0_epoch
        write_atomic(trial.gate, b"")
    proc, me, sampler, t0 = launched.proc, launched.me, launched.sampler, launched.t0_epoch
    profiler = TrialProfiler(trial, sampler, hz=plan.profile_hz, native=plan.profile_native,
                             warmup_iterations=plan.warmup_iterations, stop_iterations=plan.stop_iterations,
                             stop_seconds=plan.stop_seconds, t0_epoch=t0, roles=plan.profile_roles,
                             cores=plan.cores, pyspy=pyspy)
    deadline = time.monotonic() + plan.timeout_s
    timed_out = False
    stop = TrialStop()
    tail = trial.tail()
    try:
        while proc.exitcode is None:
            proc.join(_PROFILE_POLL_S if profiler.enabled and profiler.t_stop_s is None else _POLL_S)
            events = tail.poll()
            profiler.poll(events)
            if on_poll is not None:
                on_poll(events)
            if on_trained is not None and any(e.get("event") == Event.TRAINED for e in events):
                on_trained, call = None, on_trained
                call()
            if proc.exitcode is None and time.monotonic() > deadline:
                timed_out = True
                kill_tree(me)
                proc.join(10)
            elif proc.exitcode is None and plan.memory_limit_bytes is not None:
                rss = sampler.trial_rss_bytes
                if rss > plan.memory_limit_bytes:
                    stop.memory_bytes = rss
                    kill_tree(me)
                    proc.join(10)
    except KeyboardInterrupt:
        stop.interrupted = True
        _interrupt(proc, me, INTERRUPT_GRACE_S)
    finally:
        profiler.finish()  # py-spy writes its files before anything of the trial is killed
        left = launched.end(trial)
    status, reason = _verdict(plan, trial, proc.exitcode, timed_out, stop)
    # on a cluster, the trial itself killed any of its node processes that outlived its driver
    release = trial.event(Event.CLUSTER_RELEASE)
    record = TrialRecord(
        trial_id=plan.trial_id, status=status, reason=reason, exit_code=proc.exitcode,
        exit_signal=exit_signal(proc.exitcode), started_epoch=t0,
        trial_wall_s=time.time() - t0, sampler_cpu_s=sampler.cpu_s, sampler_samples=sampler.samples,
        leftover_processes_killed=left + len(release.get("processes_killed") or []), overlap_s=overlap_s,
        host_steal_pct=steal_pct(launched.steal0, read_steal()),
    )
    from rlbench.results.tables import write_utilization  # pandas: imported by the sweep before the trials

    write_utilization(trial.utilization, plan.trial_id, sampler.columns)
    write_record(trial, record)  # last: its presence marks the trial finished
    if stop.interrupted:
        raise KeyboardInterrupt
    return record
