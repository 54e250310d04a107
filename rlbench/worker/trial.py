"""Inside the trial: the process that owns one trial's runtime (a private Ray for RLlib).

It reads ``plan.json``, pins itself, starts the runtime its adapter names
(:mod:`rlbench.worker.runtime`: a local Ray, a connection to a cluster, or none), asks the adapter
for a trainer, trains, shuts the runtime down whatever happens, and leaves at once
(:func:`exit_now`). Every step is appended to
``events.jsonl`` (:mod:`rlbench.worker.events`), so a trial that is killed still leaves what it
measured. Module-level imports are the standard library and rlbench.worker/results.layout only
(the fork server preloads this module); the plan model, the adapter and Ray are imported when the
trial runs (tests/test_architecture.py holds this).
"""

from __future__ import annotations

import dataclasses
import os
import signal
import sys
import time
import traceback
from contextlib import suppress
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from rlbench.results.events import Event
from rlbench.results.files import open_append
from rlbench.results.layout import LAUNCH_GATE, TrialFolder
from rlbench.worker.dirwatch import FolderWatch
from rlbench.worker.events import EventLog, describe_error
from rlbench.worker.priority import nice_levels
from rlbench.worker.procfs import all_stats, read_stat
from rlbench.worker.threads import limit_thread_pools as _limit_thread_pools
from rlbench.worker.threads import thread_pools as _thread_pools
from rlbench.worker.versions import imported_versions, mismatches

if TYPE_CHECKING:
    from rlbench.adapters.base import Trainer
    from rlbench.adapters.timings import IterationTimings
    from rlbench.planning.plan import TrialPlan
    from rlbench.worker.node_set import RemoteTrainer


def _redirect_output(path: Path) -> None:
    """Send this process's stdout/stderr (and so Ray's start-up chatter) to the trial's log file."""
    fd = open_append(path)
    sys.stdout.flush()
    sys.stderr.flush()
    os.dup2(fd, 1)
    os.dup2(fd, 2)
    os.close(fd)


def _die_with_parent() -> None:
    """Ask Linux to SIGKILL this process when its parent dies (so a killed rlbench leaves no trial)."""
    with suppress(OSError):
        import ctypes

        libc = ctypes.CDLL("libc.so.6", use_errno=True)
        PR_SET_PDEATHSIG = 1
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL)


def _release_fork_server() -> None:
    """Close this process's copy of the fork server's keep-alive pipe.

    multiprocessing hands every forkserver child the write end of the pipe whose EOF tells the
    server that its client (the sweep) is gone. Holding it, a trial kept the server, and so
    itself (its death signal waits for the server's exit), alive after a ``kill -9`` of the sweep
    until it finished on its own (measured: 19 s with a trial running). Without it, the server
    exits with the sweep and PDEATHSIG takes the trial and its Ray runtime down.
    """
    with suppress(AttributeError, OSError):
        from multiprocessing import forkserver

        server: Any = forkserver._forkserver  # private API: losing it only slows clean-up after kill -9
        if server._forkserver_alive_fd is not None:
            os.close(server._forkserver_alive_fd)
            server._forkserver_alive_fd = None


def _start_reaper() -> None:
    """Start :mod:`rlbench.worker.reaper`: it kills this trial's session if the sweep process dies."""
    import multiprocessing
    import subprocess

    parent = multiprocessing.parent_process()  # the sweep that asked the fork server for us
    sweep_pid = parent.pid if parent is not None else os.getppid()
    reaper = Path(__file__).with_name("reaper.py")
    # -I -S: standard library only, no site packages: starts in ~20 ms with a few MB.
    subprocess.Popen(
        [sys.executable, "-I", "-S", str(reaper), str(sweep_pid), str(os.getsid(0))],
        stdin=subprocess.DEVNULL,
        close_fds=True,
    )


def descendants(pid: int) -> list[int]:
    """Every process below ``pid`` (children, their children, ...), read from /proc."""
    children: dict[int, list[int]] = {}
    for child, stat in all_stats().items():
        children.setdefault(stat.ppid, []).append(child)
    out, todo = [], [pid]
    while todo:
        kids = children.get(todo.pop(), [])
        out += kids
        todo += kids
    return out


def _pin_tree(driver_cores: list[int], other_cores: list[int]) -> None:
    """Pin this process to the driver's cores and every descendant (Ray's processes) to the rest."""
    for child in descendants(os.getpid()):
        with suppress(OSError):
            os.sched_setaffinity(child, other_cores)
    os.sched_setaffinity(0, driver_cores)


def _affinities() -> dict[str, list]:
    """The cores the driver may run on, and each distinct core set of the rest of the trial's
    processes, as the kernel holds them after pinning (what ``pin_driver`` and ``cpus`` did)."""
    others: set[tuple[int, ...]] = set()
    for child in descendants(os.getpid()):
        with suppress(OSError):  # gone meanwhile
            others.add(tuple(sorted(os.sched_getaffinity(child))))
    return {"driver": sorted(os.sched_getaffinity(0)), "others": [list(s) for s in sorted(others)]}


def _start(trial_dir: str, t0_epoch: float) -> tuple[EventLog, TrialFolder]:
    """This process set up to record: its parent's death its own, its output to its log, its start event written."""
    _die_with_parent()
    _release_fork_server()
    folder = TrialFolder(Path(trial_dir))
    _redirect_output(folder.log)
    _start_reaper()
    events = EventLog(folder.events_file, t0_epoch)
    me = read_stat(os.getpid())
    import multiprocessing

    events.write(
        Event.START,
        pid=os.getpid(),
        start_ticks=me.start_ticks if me else None,
        forked_by_server=multiprocessing.parent_process() is not None,
    )
    return events, folder


def main(trial_dir: str, t0_epoch: float, gated: bool = False) -> int:
    """Run the trial planned in ``trial_dir``; returns the process exit code (0 ok/skipped, 1 failed).
    ``gated``: launched while the previous trial shuts down; build nothing before the sweep's gate."""
    os.setsid()  # own process group: the sweep kills the whole tree with one killpg
    # SIGINT is how the sweep asks for a clean stop: honour it even when this process inherited it
    # ignored (a sweep started in the background with `&` or nohup ignores the terminal's Ctrl-C).
    signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        events, folder = _start(trial_dir, t0_epoch)
    except KeyboardInterrupt:  # the sweep's Ctrl-C before this trial's first event (CI, 2026-11-30: a traceback from
        return 1  # _die_with_parent's ctypes on the sweep's stderr): nothing of it to keep; its folder is the sweep's
    try:
        # inside the try: a plan this process cannot read fails this trial with its one-line reason (PlanError),
        # recorded as every error is; before, it died with a traceback in its log and the sweep saw "exit code 1"
        from rlbench.planning.plan import read_plan

        plan = read_plan(folder)
        status = _run(plan, events, folder, gated)
    except KeyboardInterrupt:  # the sweep's Ctrl-C: _run has shut its runtime down; the iterations are kept
        events.write(Event.INTERRUPTED)
        status = "interrupted"
    except BaseException as e:  # noqa: BLE001 - record everything, then leave
        events.write(Event.ERROR, error=describe_error(e), traceback=traceback.format_exc())
        status = "failed"
    events.write(Event.END, status=status)
    events.close()
    return 0 if status in ("ok", "skipped") else 1


def _wait_for_gate(folder: TrialFolder, events: EventLog) -> None:
    """Wait until the sweep opens this trial's gate: the previous trial's processes are gone.

    The sweep launches a trial while the previous one shuts down (``algo.stop()`` and
    ``ray.shutdown()``: 1.4-1.9 s a trial, measured; about 0.4 s since the autoscaler monitor is killed
    first), so the two overlap in this trial's process
    start and ``ray.init`` only; its actors, and so every measured iteration, start after the gate.
    """
    t = time.perf_counter()
    while not folder.gate.exists():
        time.sleep(0.01)
    events.write(Event.GATE, waited_s=time.perf_counter() - t)


#: What ``execution: script`` leaves out, as a plain ``algo.train()`` loop would: no thread counts
#: (torch's default, BLAS pools unlimited) and no niceness (the runtime's ``start``); the
#: ``cpus`` pinning stays, as ``taskset`` would give it.
SCRIPT_OFF = frozenset({"threads", "niceness"})


def _run(plan: TrialPlan, events: EventLog, folder: TrialFolder, gated: bool = False) -> str:
    from rlbench.adapters import get_adapter, unsupported
    from rlbench.worker.runtime import _worker_pythonpath, runtime_for

    adapter = get_adapter(plan.config.framework)
    off = frozenset(plan.switched_off)  # a fidelity diagnosis (rlbench.run.switches); empty normally
    off |= SCRIPT_OFF if plan.config.execution == "script" else frozenset()
    pins = plan.packages.pins if plan.packages else {}
    versions = imported_versions({**dict.fromkeys(adapter.requires, ""), **pins})  # its framework's own too
    events.write(Event.VERSIONS, versions=versions, pins=pins)
    wrong = mismatches(pins, versions)
    if wrong:  # its environment is not what the variant pinned: fail, never a silent mix
        raise RuntimeError(f"this trial's process imports {'; '.join(wrong)} (variant {plan.variant})")
    too_old = unsupported(adapter.requires, versions, adapter.name)
    if too_old:  # a release older than the adapter's range: refused, not driven into a confusing error
        raise RuntimeError(f"this trial's process imports {'; '.join(too_old)} (docs/VERSIONS.md)")
    if plan.cores and "affinity" not in off:  # empty on a cluster: no pinning
        os.sched_setaffinity(0, plan.cores)
    os.environ["PYTHONPATH"] = _worker_pythonpath()
    adapter.quiet_logging()
    if "threads" not in off and plan.placement is None:  # a --parallel trial's driver is its actor: it sets its own
        adapter.set_driver_threads(plan.torch_threads["driver"])
        _limit_thread_pools(plan.torch_threads["driver"])
    from rlbench.adapters import FRAMEWORKS

    on_ray = tuple(get_adapter(f) for f in FRAMEWORKS if get_adapter(f).runtime == "ray")
    runtime = runtime_for(adapter, plan, events, folder, on_ray)
    trainer = None
    if plan.windows is not None:  # a warm trial: nothing starts before its launch gate or its first window's
        if not wait_for_window(folder, 0, launch=True)[0]:
            return "ok"
    try:  # a Ctrl-C during the runtime's start still shuts down what started
        runtime.start()
        cluster = runtime.cluster
        if gated:
            _wait_for_gate(folder, events)
        trainer = runtime.trainer(plan, off)
        remote = plan.placement is not None  # its driver is a trial actor on its nodes (worker/node_set.py)
        reason = trainer.infeasible_reason()
        if reason:
            events.write(Event.SKIPPED, reason=reason)
            return "skipped"
        t = time.perf_counter()
        trainer.build()
        build_s = trainer.build_s if remote else time.perf_counter() - t
        other_cores = [c for c in plan.cores if c not in plan.driver_cores]
        if plan.config.resources.pin_driver and plan.driver_cores and other_cores and "affinity" not in off:
            _pin_tree(plan.driver_cores, other_cores)
        threads = trainer.set_threads({} if "threads" in off else plan.torch_threads)
        facts = trainer.facts()
        driver = (
            trainer.driver_state
            if remote
            else dict(
                thread_pools=_thread_pools(),
                affinity=_affinities(),
                niceness=nice_levels({} if plan.ray_address else facts.get("env_runner_pids")),
            )
        )
        events.write(Event.BUILD, build_s=build_s, torch_threads=threads, **driver, **facts)
        if cluster is not None:
            cluster.after_build()
        if plan.windows is not None:
            if not _train_windows(plan, trainer, events, folder):
                events.write(Event.SKIPPED, reason=UNREAD_REASON)
                return "skipped"
        else:
            _train(plan, trainer, events)
        events.write(Event.TRAINED)  # the sweep may launch the next trial while this one shuts down
        return "ok"
    finally:
        if runtime.cluster is not None:
            runtime.cluster.before_stop()
        t = time.perf_counter()
        try:
            if trainer is not None:
                trainer.stop()
        finally:
            runtime.shutdown()
            events.write(Event.SHUTDOWN, shutdown_s=time.perf_counter() - t)
            if runtime.cluster is not None:
                runtime.cluster.after_shutdown()


def _train(plan: TrialPlan, trainer: Trainer, events: EventLog) -> None:
    """Train until a stop rule holds: the iteration limit, the time limit (never before the first
    steady-state iteration), or the first iteration whose target metric reaches its threshold
    (warm-up iterations included: learning starts at the first iteration)."""
    target = plan.stop_target
    trained_s = 0.0
    iteration = 0
    while True:
        iteration += 1
        wall_s, target_value = _iteration(plan, trainer, events, iteration)
        trained_s += wall_s
        if target is not None and target.reached(target_value):
            events.write(
                Event.TARGET_REACHED,
                iteration=iteration,
                metric=target.metric,
                value=target_value,
                threshold=target.threshold,
                mode=target.mode,
            )
            return
        if plan.stop_iterations is not None and iteration >= plan.stop_iterations:
            return
        # A time limit never cuts a trial before its first steady-state iteration.
        if plan.stop_seconds is not None and trained_s >= plan.stop_seconds and iteration > plan.warmup_iterations:
            return


def _iteration(plan: TrialPlan, trainer: Trainer, events: EventLog, iteration: int, window: int | None = None):
    """Run one training iteration and write its event; returns (its wall seconds, the target metric's value)."""
    target = plan.stop_target
    t_start_s = events.now_s()
    t = time.perf_counter()
    trainer.train()
    wall_s = time.perf_counter() - t
    t_end_s = events.now_s()
    if plan.placement is not None:  # timed where it ran, in its trial actor on a node: no round trip
        wall_s = cast("RemoteTrainer", trainer).wall_s
        t_start_s = t_end_s - wall_s
    timings = trainer.iteration()
    parts_s = timings.sample_s + timings.learn_s + timings.sync_s
    target_value = trainer.metric(target.metric) if target is not None else None
    events.write(
        Event.ITERATION,
        iteration=iteration,
        warmup=iteration <= plan.warmup_iterations,
        **({"window": window} if window is not None else {}),
        t_start_s=t_start_s,
        t_end_s=t_end_s,
        wall_s=wall_s,
        other_s=wall_s - parts_s,
        env_steps_per_s=timings.env_steps_sampled / wall_s if wall_s > 0 else None,
        target_value=target_value,
        **overlap(timings, wall_s),
        **{k: v for k, v in dataclasses.asdict(timings).items() if v is not None},
    )
    return wall_s, target_value


#: How often a warm trial looks for its next gate while paused, at the latest: a stat() a tick. A paused trial of the
#: walk's plant used 0.05-0.07 of a core at 0.02 s (its Ray system processes 0.03, its runners 0.01-0.03, its driver
#: 0.01: 2 cores, 2026-11-29). The folder's watch (:class:`~rlbench.worker.dirwatch.FolderWatch`) wakes it when the
#: gate is made; this interval is the fallback where inotify is missing.
WINDOW_POLL_S = 0.1


def wait_for_window(folder: TrialFolder, window: int, *, launch: bool = False) -> tuple[bool, float]:
    """Wait, idle, for the sweep to open window ``window`` (``launch``: or the launch gate) (True) or to end the trial
    (False); and the seconds waited. The trainer stays built meanwhile: its workers sit in their own idle loops."""
    gates = [folder.window_gate(window), *([folder.window_gate(LAUNCH_GATE)] if launch else [])]
    stop = folder.window_gate("stop")
    if any(gate.exists() for gate in gates):
        return True, 0.0  # open already: no wait
    t = time.perf_counter()
    with FolderWatch(folder.path) as watch:  # made before the look below: a gate made after it still wakes the wait
        while True:
            if any(gate.exists() for gate in gates):
                return True, time.perf_counter() - t
            if stop.exists():
                return False, time.perf_counter() - t
            watch.wait(WINDOW_POLL_S)


#: A warm trial launched ahead (run/warm.py) and ended before its first window: it measured nothing, it was not a choice
#: of the user's.
UNREAD_REASON = "launched ahead with others and ended before its first measured window: the run ended first"


def _train_windows(plan: TrialPlan, trainer: Trainer, events: EventLog, folder: TrialFolder) -> bool:
    """Issue 56's warm readings: the warm-up once, then ``plan.windows`` measured windows of ``window_iterations``
    steady iterations each (a window also ends once its walls pass ``stop_seconds``, after its first iteration),
    each after its gate. The runtime's start, the build and the warm-up ran after window 0's gate or the launch gate
    (:func:`_run`); after the launch gate window 0 waits for its own, as every later window does. False: it was ended
    before window 0."""
    assert plan.windows is not None and plan.window_iterations is not None
    iteration = 0
    for window in range(plan.windows):
        if window == 0:  # the warm-up, once, inside its gate: never beside another trial's measured window
            while iteration < plan.warmup_iterations:
                iteration += 1
                _iteration(plan, trainer, events, iteration, window)
        go, waited_s = wait_for_window(folder, window)
        if not go:
            return window > 0
        trained_s, done = 0.0, 0
        while done < plan.window_iterations:
            iteration += 1
            done += 1
            wall_s, _ = _iteration(plan, trainer, events, iteration, window)
            trained_s += wall_s
            if plan.stop_seconds is not None and trained_s >= plan.stop_seconds:
                break
        events.write(Event.WINDOW_END, window=window, iterations=done, wall_s=trained_s, waited_s=waited_s)
    return True


def overlap(timings: IterationTimings, wall_s: float) -> dict[str, float]:
    """``busy_overlap_s``: the least time sampling and learning must have run at once in an iteration,
    ``sampler_busy_s + learner_busy_s - wall_s`` floored at 0 (both busy times are within the
    iteration, so any excess over its wall time was spent together); empty when the trainer does
    not measure the two (then the column is null)."""
    if timings.sampler_busy_s is None or timings.learner_busy_s is None:
        return {}
    return {"busy_overlap_s": max(0.0, timings.sampler_busy_s + timings.learner_busy_s - wall_s)}


def ready() -> None:
    """A do-nothing child of the fork server: once it has run, the server has imported everything."""


def exit_now(code: int) -> None:
    """Flush and leave at once, without the interpreter's and the runtime's exit-time destructors.

    By now the trial has written every event (``end`` last, fsynced) and shut its runtime down.
    What follows in a normal exit (garbage collection, atexit handlers, C++ static destructors while
    Ray's own C++ threads still run) measures nothing and can crash: a cluster trial that had
    written ``shutdown`` died with SIGSEGV inside Ray's boost::asio scheduler as the interpreter
    exited, under load in CI (issue 24), and was recorded failed with every figure complete.
    """
    for stream in (sys.stdout, sys.stderr):
        with suppress(OSError, ValueError):
            stream.flush()
    os._exit(code)


def process_entry(trial_dir: str, t0_epoch: float, gated: bool = False) -> None:
    """Entry point for a multiprocessing.Process: exits at once with :func:`main`'s code."""
    exit_now(main(trial_dir, t0_epoch, gated))


if __name__ == "__main__":
    exit_now(main(sys.argv[1], float(sys.argv[2]), sys.argv[3:] == ["gated"]))
