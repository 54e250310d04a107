"""One trial's lifecycle, seen from the sweep: launch, watch, sample, stop, judge, record.

Each trial runs in a fresh process (forked from a server that has already imported Ray, RLlib and
torch, so a trial does not pay ~3 s of imports) in its own process group, with its own local Ray
runtime. The sweep watches it, samples it from outside, enforces its timeout and memory limit by
killing its whole process group, and records what became of it. Nothing a trial leaves behind
outlives it.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from multiprocessing.process import BaseProcess
from typing import Any

from rlbench.adapters import get_adapter
from rlbench.measure.profiler import TrialProfiler
from rlbench.measure.utilization import HARNESS_ROLE, UtilizationSampler
from rlbench.planning.plan import TrialPlan
from rlbench.results.events import Event
from rlbench.results.events_file import BuildEvent, ClusterReleaseEvent
from rlbench.results.files import open_append, remove_if_empty, write_atomic
from rlbench.results.layout import TrialFolder
from rlbench.results.records import TrialRecord, write_record
from rlbench.run.forkserver import stop_fork_server_unless
from rlbench.run.processes import ProcessRef, kill_survivors, kill_tree
from rlbench.run.verdict import TrialStop, exit_signal, verdict
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
        with contextlib.suppress(subprocess.TimeoutExpired):
            self._popen.wait(timeout)


class TrialLauncher:
    """Starts trial processes from a fork server that has Ray, RLlib and torch imported already
    (the :attr:`~rlbench.adapters.base.Adapter.preload_modules` of the sweep's ``frameworks``), or, with
    ``fresh_process``, each as a new Python process (a fidelity diagnosis)."""

    def __init__(
        self, *, fresh_process: bool = False, frameworks: tuple[str, ...] = ("rllib",), also: tuple[str, ...] = ()
    ) -> None:
        """``also``: modules every trial imports whatever its framework (Ray, for ``--parallel`` trials)."""
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
        preload = [m for f in frameworks for m in get_adapter(f).preload_modules] + list(also)
        # every trial reads its plan (its module with the spec's models and pydantic: 0.16 s, 2026-11-30)
        wanted = [trial_process.__name__, TrialPlan.__module__, *dict.fromkeys(preload)]
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

    def start(
        self, trial: TrialFolder, t0_epoch: float, gated: bool = False, python: str | None = None
    ) -> BaseProcess | FreshProcess:
        """Launch the trial whose plan is in ``trial`` (``gated``: it builds nothing before its gate opens;
        ``python``: a fresh process of that interpreter, the environment of its variant's packages)."""
        if self.fresh_process or python:  # argv holds rlbench's own paths and a number only: no shell, nothing foreign
            # its output goes to its log from the start: a Ctrl-C during its imports (before it redirects its
            # own output) printed the trial's KeyboardInterrupt traceback on the command's terminal
            log = open_append(trial.log)
            try:
                return FreshProcess(
                    subprocess.Popen(
                        [
                            python or sys.executable,
                            "-m",
                            trial_process.__name__,
                            str(trial.path),
                            repr(t0_epoch),
                            *(["gated"] if gated else []),
                        ],
                        stdin=subprocess.DEVNULL,
                        stdout=log,
                        stderr=log,
                    )
                )
            finally:
                os.close(log)
        proc = self.context.Process(
            target=trial_process.process_entry,
            args=(str(trial.path), t0_epoch, gated),
            name=f"rlbench-trial-{trial.trial_id}",
            daemon=False,
        )
        proc.start()
        return proc


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

    proc: BaseProcess | FreshProcess
    """The trial process."""
    me: ProcessRef
    """The trial process with its start time (never someone else's pid)."""
    sampler: UtilizationSampler
    """Samples the trial's process tree from launch on."""
    t0_epoch: float
    """When it was launched (Unix time); the trial's ``t_s`` count from here."""
    gated: bool
    """Launched while the previous trial shut down: it waits for its gate before building."""
    steal0: tuple[int, int] | None = None
    """This machine's steal and total CPU ticks at launch (:func:`rlbench.worker.procfs.read_steal`)."""

    def end(self, trial: TrialFolder) -> int:
        """Stop sampling and kill the trial's process tree and whatever of it survived; returns how
        many survivors were killed. Also how the sweep drops a launched trial that will not run (it
        stopped first): that one leaves no process and no record, so a resume runs it."""
        self.sampler.stop()
        kill_tree(self.me)  # leftovers of a crashed trial, and the trial itself on Ctrl-C
        left = kill_survivors(
            {p for p in self.sampler.seen_processes if p[0] != os.getpid()}, trial.session_dir(), self.me
        )
        # the training system's own log folder (~/ray_results/...), left empty, also by a killed trial
        log_dir = build.log_dir if (build := trial.event(BuildEvent)) is not None else None
        if log_dir is not None and os.path.isabs(log_dir):
            remove_if_empty(log_dir)
        return left


def launch_trial(
    plan: TrialPlan,
    trial: TrialFolder,
    launcher: TrialLauncher,
    gpus: Gpus | None,
    rapl: Rapl | None = None,
    *,
    gated: bool = False,
) -> Launched:
    """Start the trial process and its sampler. CPU package energy (``rapl``) is read for local
    trials only: on a cluster the trial's actors run on other machines, and this machine's packages
    alone would read as the trial's energy."""
    t0 = time.time()
    steal0 = None if plan.ray_address else read_steal()
    # a variant's own environment, or (the forkserver switch, per trial) a fresh process of this Python
    fresh = sys.executable if "forkserver" in plan.switched_off else None
    proc = launcher.start(trial, t0, gated, plan.packages.python if plan.packages else fresh)
    assert proc.pid is not None  # started: it has its pid
    me = ProcessRef.of(proc.pid) or ProcessRef(proc.pid, -1)  # not reaped before join: still the trial
    hz = 0.0 if "sampler" in plan.switched_off else plan.sample_hz  # 0: a fidelity diagnosis, no rows
    # a --parallel trial's driver runs on its nodes: its process here is a harness, and its node samplers read
    # the GPUs of its nodes (this machine's too, when it is one of them)
    placed = plan.placement is not None
    sampler = UtilizationSampler(
        proc.pid,
        t0_epoch=t0,
        hz=hz,
        gpus=None if placed else gpus,
        adapter=get_adapter(plan.config.framework),
        rapl=None if plan.ray_address else rapl,
        root_role=HARNESS_ROLE if placed else None,
    ).start()
    return Launched(proc, me, sampler, t0, gated, steal0)


def run_trial(
    plan: TrialPlan,
    trial: TrialFolder,
    launcher: TrialLauncher,
    gpus: Gpus | None,
    on_poll=None,
    rapl: Rapl | None = None,
    *,
    launched: Launched | None = None,
    on_trained=None,
    pyspy: str | None = None,
) -> TrialRecord:
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
    run = TrialRun(plan, trial, launcher, gpus, on_poll, rapl, launched=launched, on_trained=on_trained, pyspy=pyspy)
    try:
        while not run.poll():
            pass
    except KeyboardInterrupt:
        run.stop.interrupted = True
        _interrupt(run.proc, run.me, INTERRUPT_GRACE_S)
    finally:
        run.end()
    record = run.record()
    if run.stop.interrupted:
        raise KeyboardInterrupt
    return record


#: A kept warm trial's record's reason (:meth:`TrialRun.kept_record`): its row read before its end.
KEPT_REASON = "kept built: read over the windows it has read so far, its process still running"


class TrialRun:
    """One running trial, watched a poll at a time: :func:`run_trial` polls one until it ends; the ``--parallel``
    sweep (:mod:`rlbench.run.parallel`) polls several in turn. ``poll`` until True, then ``end`` (in a
    ``finally``: profiles written, leftovers killed) and ``record`` (the verdict, stored)."""

    def __init__(
        self,
        plan: TrialPlan,
        trial: TrialFolder,
        launcher: TrialLauncher,
        gpus: Gpus | None,
        on_poll=None,
        rapl: Rapl | None = None,
        *,
        launched: Launched | None = None,
        on_trained=None,
        pyspy: str | None = None,
    ):
        self.plan, self.trial, self.on_poll, self.on_trained = plan, trial, on_poll, on_trained
        self.launched = launched = launched or launch_trial(plan, trial, launcher, gpus, rapl)
        self.overlap_s = 0.0
        if launched.gated:
            self.overlap_s = time.time() - launched.t0_epoch
            write_atomic(trial.gate, b"")
        self.proc, self.me, self.sampler, self.t0 = launched.proc, launched.me, launched.sampler, launched.t0_epoch
        self.profiler = TrialProfiler(
            trial,
            self.sampler,
            hz=plan.profile_hz,
            native=plan.profile_native,
            warmup_iterations=plan.warmup_iterations,
            stop_iterations=plan.stop_iterations,
            stop_seconds=plan.stop_seconds,
            t0_epoch=self.t0,
            roles=plan.profile_roles,
            cores=plan.cores,
            pyspy=pyspy,
        )
        self.deadline = time.monotonic() + plan.timeout_s
        self.timed_out = False
        self.stop = TrialStop()
        self.left = 0
        self._tail = trial.tail()

    def poll(self, wait_s: float | None = None) -> bool:
        """Wait up to ``wait_s`` (default: the poll interval) for the trial process, read its new events,
        enforce its timeout and memory limit; True once the process has exited."""
        proc, profiler = self.proc, self.profiler
        if proc.exitcode is not None:
            return True
        if wait_s is None:
            wait_s = _PROFILE_POLL_S if profiler.enabled and profiler.t_stop_s is None else _POLL_S
        proc.join(wait_s)
        events = self._tail.poll()
        profiler.poll(events)
        if self.on_poll is not None:
            self.on_poll(events)
        if self.on_trained is not None and any(e.event == Event.TRAINED for e in events):
            self.on_trained, call = None, self.on_trained
            call()
        if proc.exitcode is None and time.monotonic() > self.deadline:
            self.timed_out = True
            kill_tree(self.me)
            proc.join(10)
        elif proc.exitcode is None and self.plan.memory_limit_bytes is not None:
            rss = self.sampler.trial_rss_bytes
            if rss > self.plan.memory_limit_bytes:
                self.stop.memory_bytes = rss
                kill_tree(self.me)
                proc.join(10)
        return proc.exitcode is not None

    def ask_to_stop(self) -> None:
        """Ctrl-C: ask the trial to stop cleanly (SIGINT; it records what it measured); :meth:`poll` until it has
        exited, or kill it (:meth:`kill`) after the grace period."""
        self.stop.interrupted = True
        with contextlib.suppress(ProcessLookupError):
            if self.me.alive():  # not after its exit: its pid may be reaped (by the fork server) and reused
                os.kill(self.me.pid, signal.SIGINT)

    def kill(self) -> None:
        """Kill the trial's process tree now (a second Ctrl-C, or the grace period is over)."""
        if self.proc.exitcode is None:
            kill_tree(self.me)
            self.proc.join(10)

    def end(self) -> None:
        """Write its profiles, stop sampling, kill what is left of it (call once, in a ``finally``)."""
        self.profiler.finish()  # py-spy writes its files before anything of the trial is killed
        self.left = self.launched.end(self.trial)

    def store_kept(self, into: TrialFolder) -> None:
        """Store the trial, still running and kept built between its windows, as if it had ended now, into ``into``
        (another folder's copy of it: :meth:`rlbench.run.warm.WarmPool.snapshot`): its utilization so far and a
        record ``ok`` over what it has read, with :data:`KEPT_REASON` and no exit."""
        self._store(into, self._record("ok", KEPT_REASON))

    def record(self) -> TrialRecord:
        """Judge the ended trial and store its utilization and its record (last: it marks the trial finished)."""
        plan, trial, proc = self.plan, self.trial, self.proc
        status, reason = verdict(plan, trial, proc.exitcode, self.timed_out, self.stop)
        # on a cluster, the trial itself killed any of its node processes that outlived its driver
        release = trial.event(ClusterReleaseEvent)
        record = self._record(
            status,
            reason,
            exit_code=proc.exitcode,
            exit_signal=exit_signal(proc.exitcode),
            leftover_processes_killed=self.left + len((release.processes_killed if release else None) or []),
        )
        self._store(trial, record)
        return record

    def _record(self, status: str, reason: str | None, **ended: Any) -> TrialRecord:
        """Its record now: ``status`` and ``reason``, its clock and its sampler's figures; ``ended``: how it ended."""
        return TrialRecord(
            trial_id=self.plan.trial_id,
            status=status,
            reason=reason,
            started_epoch=self.t0,
            trial_wall_s=time.time() - self.t0,
            sampler_cpu_s=self.sampler.cpu_s,
            sampler_samples=self.sampler.samples,
            overlap_s=self.overlap_s,
            host_steal_pct=steal_pct(self.launched.steal0, read_steal()),
            **ended,
        )

    def _store(self, into: TrialFolder, record: TrialRecord) -> None:
        """Write its utilization so far and ``record`` into ``into`` (the record last: it marks the trial finished)."""
        from rlbench.results.tables import write_utilization  # pandas: imported by the sweep before the trials

        write_utilization(into.utilization, self.plan.trial_id, self.sampler.columns)
        write_record(into, record)
