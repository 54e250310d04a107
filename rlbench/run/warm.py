"""Warm readings (issue 56): trials kept built between their measured windows, one window read at a time.

A cold trial pays its start each reading: ``ray.init`` 5-9 s, building 1, 2 and 3 env runners 8, 15 and 23 s at
load (the walk's e2e in CI, 2026-11-29), against 1-2 s of steady iterations. A warm trial (``windows`` in its plan,
:func:`rlbench.worker.trial._train_windows`) is launched once, pays its start inside its first window's gate, and
then reads a window each time its gate opens, its trainer built and idle between windows. The pool opens one gate
at a time and waits for that window's ``window_end``; trials it launches together (:meth:`WarmPool.launch`: a walk
step's new entrants, a round's releases) start, build and warm up beside each other, never beside a window. So at
most one process here measures at any moment and nothing starts beside it: a paused trial's idle runtime is all it
adds to another's window (measured by ``scripts/bench_warm.py``). A trial's process is its unit of repeats: its
windows are not independent readings of the configuration, so the caller starts another process after ``windows`` of
them.

Each trial is watched as every trial is (:class:`~rlbench.run.trial.TrialRun`: its sampler, timeout, memory limit,
record); the timeout counts afresh from each gate. Nothing outlives the pool: :meth:`WarmPool.close` ends every
trial it holds (a stop gate, then the kill after the grace period), also on Ctrl-C.
"""

from __future__ import annotations

import shutil
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import psutil

from rlbench.planning.plan import TrialPlan
from rlbench.results.events_file import BuildEvent, IterationEvent, TrialEvent, WindowEndEvent
from rlbench.results.files import write_atomic
from rlbench.results.layout import EVENTS_FILE, LAUNCH_GATE, PLAN_FILE, ResultsFolder, TrialFolder
from rlbench.results.records import TrialRecord
from rlbench.run.trial import INTERRUPT_GRACE_S, TrialLauncher, TrialRun
from rlbench.worker.nvml import Gpus
from rlbench.worker.rapl import Rapl

#: Warm trials kept at once: a walk step's entrants (the current point and up to four values), whose windows are read in
#: turns. With 3 a step of 4 entrants ended, every round, the trial to be read next (the least recently read): the
#: shared_cores_limit walk's first step launched 7 processes where 4 would do, at 14-18 s a launch against 2-3 s a
#: window (2026-11-30). Each paused trial costs 0.03-0.07 of a core (docs/MEASUREMENT.md 11) and its memory.
LIVE_LIMIT = 5
#: Memory left free when another trial is kept: the pool ends its least recently read trial first where the machine's
#: available memory, less the largest kept trial's (its processes' resident memory at its sampler's last tick, the
#: figure its memory limit is checked against; 0 where its sampling is off), would fall below it.
FREE_RESERVE_BYTES = 2 * 2**30


@dataclass
class WindowRead:
    """One measured window of a warm trial, as the pool saw it."""

    trial_id: str
    """The trial (its process) the window was read from."""
    window: int
    """The window's index in its trial (0: the one that also paid the start)."""
    read: bool
    """True when the trial wrote the window's ``window_end``; False when it ended (failed, timed out) first."""
    charged_s: float
    """Seconds from its gate's opening (window 0: the trial's launch) to its end: what the reading cost."""
    record: TrialRecord | None = None
    """The trial's record once it has ended (after its last window, or a failure); None while it is kept."""


@dataclass
class _Live:
    run: TrialRun
    plan: TrialPlan
    trial: TrialFolder
    ends: int = 0
    """Windows ended so far (``window_end`` events seen)."""
    used_s: float = field(default_factory=time.monotonic)
    """When it was last read (the least recently read one is ended first when the pool is full)."""
    warmed: bool = False
    """Built and warmed up (its ``build`` and every warm-up iteration seen): launched ahead, it waits for window 0."""
    launch_share_s: float | None = None
    """Launched ahead with others (:meth:`WarmPool.launch`): its share of their launch's wall, charged to window 0."""
    window_s: float | None = None
    """Seconds from its last window's gate to that window's end seen (none after a launch read in it): when its next
    window is due (:func:`due_poll_s`)."""

    def seen(self, events: list[TrialEvent]) -> None:
        """``events``: every event of the trial so far (the tail's poll)."""
        self.ends = sum(1 for e in events if isinstance(e, WindowEndEvent))
        if not self.warmed:  # once warmed it stays so: no more scans for it
            warmups = sum(1 for e in events if isinstance(e, IterationEvent) and e.warmup)
            built = any(isinstance(e, BuildEvent) for e in events)
            self.warmed = built and warmups >= self.plan.warmup_iterations


#: A window's end is polled for every :data:`DUE_POLL_S` from :data:`DUE_LEAD_S` before it is due (its trial's last
#: window's length after its gate) to as long after, at the trial's own interval (0.2 s) otherwise. The handover from
#: one trial's window to the next one's took 0.05-0.29 s (median 0.165 s) in shared_cores_limit's walk, 25 of them in
#: its 83 s (2 cores, 2026-11-30): mostly that interval and the paused trial's gate poll (0.1 s). It costs the harness
#: about 15 polls more a window, a poll 0.3 ms of its CPU or less (cProfile of that walk: 271 polls, 0.08 s outside
#: their waits), beside a window of seconds.
DUE_POLL_S = 0.02
DUE_LEAD_S = 0.3


def due_poll_s(now_s: float, due_s: float | None) -> float | None:
    """The wait of the next poll for a window's end at ``now_s`` (monotonic seconds): :data:`DUE_POLL_S` within
    :data:`DUE_LEAD_S` of ``due_s``, else None (the trial's own interval; also where nothing says when it is due)."""
    if due_s is None or abs(now_s - due_s) > DUE_LEAD_S:
        return None
    return DUE_POLL_S


class WarmPool:
    """Warm trials by trial id: :meth:`read` the next window of one (launching it first when new), :meth:`close`
    at the end. ``prepare`` writes a plan's trial folder (the sweep's, an earlier attempt moved aside);
    ``on_record`` gets each trial's record once it has ended; ``live_limit``: trials kept at once (each holds a
    private Ray runtime and its workers: about 1 GB resident with 2 runners), the least recently read ended
    first, as it is where another would leave less than :data:`FREE_RESERVE_BYTES` free (``available_bytes``: the
    machine's available memory, a seam for tests)."""

    def __init__(
        self,
        folder: ResultsFolder,
        launcher: TrialLauncher,
        *,
        prepare: Callable[[TrialPlan], TrialFolder],
        on_record: Callable[[TrialRecord], None],
        gpus: Gpus | None = None,
        rapl: Rapl | None = None,
        live_limit: int = LIVE_LIMIT,
        on_events: Callable[[TrialPlan, list[TrialEvent]], None] | None = None,
        available_bytes: Callable[[], int] = lambda: psutil.virtual_memory().available,
    ):
        self.folder, self.launcher, self.prepare, self.on_record = folder, launcher, prepare, on_record
        self.gpus, self.rapl, self.live_limit, self.on_events = gpus, rapl, live_limit, on_events
        self.available_bytes = available_bytes
        self.live: dict[str, _Live] = {}
        self._launching: list[_Live] = []
        self._launched_at = 0.0

    def holds(self, trial_id: str) -> bool:
        """Whether the trial is kept (built, or launched ahead and building), with a window left to read."""
        live = self.live.get(trial_id)
        return live is not None and live.ends < (live.plan.windows or 0) and live.run.proc.exitcode is None

    def read(self, plan: TrialPlan) -> WindowRead:
        """Read the next window of ``plan``'s trial: its window 0 when the pool does not hold it (launched now),
        else the window after the last one read. The trial ends on its own after its last window (its record
        comes back then). Ctrl-C ends every trial the pool holds and raises KeyboardInterrupt again."""
        if plan.windows is None or plan.window_iterations is None:
            raise ValueError(f"{plan.trial_id}: a warm read needs a plan with windows (planning/plan.py)")
        try:
            self.settle()  # no window is read beside a launch
            t = time.monotonic()
            live = self.live.get(plan.trial_id)
            share_s = 0.0
            launched_now = live is None
            if live is None:
                self._make_room()
                live = self._launch(plan)
            elif live.launch_share_s is not None and live.ends == 0:  # launched ahead: its start is done, or failed
                share_s, live.launch_share_s = live.launch_share_s, None
            elif not self.holds(plan.trial_id):
                raise ValueError(f"{plan.trial_id} has no window left to read (it read {live.ends})")
            window = live.ends
            write_atomic(live.trial.window_gate(window), b"")
            gate_s = time.monotonic()
            due_s = None if live.window_s is None else gate_s + live.window_s
            live.run.deadline = gate_s + plan.timeout_s  # a paused trial's wait is not its run
            ended = False
            while live.ends <= window and not ended:
                ended = live.run.poll(due_poll_s(time.monotonic(), due_s))
            live.used_s = time.monotonic()
            read = live.ends > window
            if read and not launched_now:
                live.window_s = live.used_s - gate_s
            record = self._finish(plan.trial_id) if ended or live.ends >= plan.windows else None
            return WindowRead(plan.trial_id, window, read, share_s + time.monotonic() - t, record)
        except KeyboardInterrupt:
            self.close(interrupted=True)
            raise

    def launch(self, plans: list[TrialPlan]) -> list[str]:
        """Launch the trials of ``plans`` the pool does not hold, together, each up to its first window (its runtime,
        build and warm-up: the launch gate), as many as the pool has room for without ending a trial it holds; the
        ids launched. No window is read until each has warmed up or ended (:meth:`read` waits), so the launches run
        beside each other only: three 1-runner PPO trials (inference_wide's points) to their first window read took
        20.2 s together against 27.9 s one after another (medians of 3, ABAB, 2 cores, 2026-11-30; their first windows
        read 1,079 and 1,062 env steps/s, no difference by the one change rule). Each one's window 0 is charged its
        share of their launch's wall; n launched together each get n times its ``timeout_s`` to warm up (they share
        the cores: on 2 cores three 1-runner launches each took 2-3x as long as alone)."""
        if plans and any(p.windows is None for p in plans):
            raise ValueError("a warm launch needs plans with windows (planning/plan.py)")
        try:
            self.settle()
            fresh = [p for p in dict((p.trial_id, p) for p in plans).values() if p.trial_id not in self.live]
            launched: list[_Live] = []
            self._launched_at = time.monotonic()
            for plan in fresh:
                if self._full():
                    break
                live = self._launch(plan)
                write_atomic(live.trial.window_gate(LAUNCH_GATE), b"")
                launched.append(live)
            for live in launched:  # n launches share the cores: each may take up to n times its timeout to warm up
                live.run.deadline = self._launched_at + live.plan.timeout_s * len(launched)
            self._launching = launched
            return [live.plan.trial_id for live in launched]
        except KeyboardInterrupt:
            self.close(interrupted=True)
            raise

    def settle(self) -> None:
        """Wait until every trial launched ahead has warmed up or ended, polling each (its sampler, timeout and
        memory limit watched as in a window); then charge each its share of the launch's wall."""
        waiting = self._launching
        if not waiting:
            return
        tick_s = 0.05
        while any(not live.warmed and live.run.proc.exitcode is None for live in waiting):
            for live in waiting:
                if not live.warmed and live.run.proc.exitcode is None:
                    live.run.poll(tick_s)
        share_s = (time.monotonic() - self._launched_at) / len(waiting)
        for live in waiting:
            live.launch_share_s = share_s
            live.used_s = time.monotonic()
        self._launching = []

    def _full(self) -> bool:
        """Whether another trial would pass the pool's limit or leave too little memory (:data:`LIVE_LIMIT`,
        :data:`FREE_RESERVE_BYTES`); an empty pool always has room."""
        return bool(self.live) and (len(self.live) >= self.live_limit or not self._room_for_another())

    def _make_room(self) -> None:
        """End the least recently read trials until another fits (:meth:`_full`)."""
        while self._full():
            self.retire(min(self.live.values(), key=lambda x: x.used_s).plan.trial_id)

    def snapshot(self, trial_id: str, into: TrialFolder) -> None:
        """Write a kept trial as if it had ended now into ``into`` (a copy of its folder elsewhere): its events so far,
        its utilization rows so far and a record that says it is still running
        (:data:`~rlbench.run.trial.KEPT_REASON`), so a configuration's row can be read over its windows while it stays
        built for more (its own folder untouched)."""
        live = self.live[trial_id]
        into.path.mkdir(parents=True, exist_ok=True)
        for name in (PLAN_FILE, EVENTS_FILE):
            shutil.copyfile(live.trial.path / name, into.path / name)
        live.run.store_kept(into)

    def _room_for_another(self) -> bool:
        """Whether another trial as large as the largest kept one leaves :data:`FREE_RESERVE_BYTES` free."""
        largest = max(live.run.sampler.trial_rss_bytes for live in self.live.values())
        return self.available_bytes() - largest >= FREE_RESERVE_BYTES

    def _launch(self, plan: TrialPlan) -> _Live:
        trial = self.prepare(plan)
        live: _Live | None = None

        def seen(events: list[TrialEvent]) -> None:
            if live is not None:
                live.seen(events)
            if self.on_events is not None:
                self.on_events(plan, events)

        run = TrialRun(plan, trial, self.launcher, self.gpus, seen, self.rapl)
        live = self.live[plan.trial_id] = _Live(run, plan, trial)
        return live

    def retire(self, trial_id: str) -> TrialRecord | None:
        """End a kept trial before its last window (its stop gate: it stops its trainer and runtime, as after its
        last window) and record it; None when the pool does not hold it."""
        records = self.retire_all([trial_id])
        return records[0] if records else None

    def retire_all(self, trial_ids: list[str]) -> list[TrialRecord]:
        """:meth:`retire` these kept trials together: every stop gate is written first, so they stop their trainers
        and runtimes beside each other (never beside a window: this returns once all have exited); their records,
        for the ones the pool held. One after another, the shared_cores_limit walk's three retired points took 2.3 s
        between its steps (0.8 s each, 2 cores, 2026-11-30)."""
        held = [t for t in dict.fromkeys(trial_ids) if t in self.live]
        if any(launching.plan.trial_id in held for launching in self._launching):
            self.settle()  # it reads its stop gate once built and warmed up: its deadline below counts from there
        for trial_id in held:
            live = self.live[trial_id]
            write_atomic(live.trial.window_gate("stop"), b"")
            live.run.deadline = time.monotonic() + INTERRUPT_GRACE_S + 10.0
        return [self._finish(trial_id) for trial_id in held]  # each stops its trainer and runtime, then exits

    def _finish(self, trial_id: str) -> TrialRecord:
        live = self.live.pop(trial_id)
        try:
            while not live.run.poll():  # after its last window it stops its trainer and runtime, then exits
                pass
        finally:
            live.run.end()
        record = live.run.record()
        self.on_record(record)
        return record

    def close(self, *, interrupted: bool = False) -> list[TrialRecord]:
        """End every trial the pool holds and record each (together: :meth:`retire_all`); ``interrupted`` (Ctrl-C):
        every trial asked to stop at once (SIGINT) before the pool waits for any, so they stop beside each other
        within one grace period, not one after another (four kept 1-runner PPO trials: 1.0-1.35 s against 2.0-3.25 s,
        3 and 2 runs, 2 cores, 2026-11-30); killed after it, or all at once on a second Ctrl-C; recorded
        ``interrupted``."""
        if not interrupted:
            return self.retire_all(list(self.live))
        held = list(self.live)
        deadline = time.monotonic() + INTERRUPT_GRACE_S
        for trial_id in held:
            live = self.live[trial_id]
            live.run.ask_to_stop()
            live.run.deadline = deadline
        records, killing = [], False
        for trial_id in held:
            live = self.live.pop(trial_id)
            try:
                while not killing and not live.run.poll():
                    pass
            except KeyboardInterrupt:  # a second Ctrl-C: kill this one and every one after it now
                killing = True
            if killing:
                live.run.kill()
            live.run.end()
            record = live.run.record()
            self.on_record(record)
            records.append(record)
        return records


#: Configurations whose warm trials a sweep's ``rounds_per_process`` keeps built at once, their windows read in
#: turns (the pool's own limit): neighbours in the run order (a history's releases of one configuration) are read
#: seconds apart, as the rounds of cold trials are, for at most two paused trials beside the one measuring (0.03-0.07
#: of a core each, docs/MEASUREMENT.md 11).
ROUND_GROUP = 3


def read_in_turns(pool: WarmPool, plans: list[TrialPlan], on_window: Callable[[TrialPlan, int], None]) -> None:
    """Read every window of each plan's warm trial (``rounds_per_process``), window k of each plan in turn before
    window k+1 of any, the turn's first plan rotating with k (none always first); a trial that ended early (failed,
    timed out) is read no further. ``on_window(plan, k)`` is called before each window is read. The pool records
    each trial as it ends (its ``on_record``). The trials start together, each up to its first window
    (:meth:`WarmPool.launch`)."""
    pool.launch(plans)
    ended: set[str] = set()
    for window in range(max(p.windows or 1 for p in plans)):
        for plan in plans[window % len(plans) :] + plans[: window % len(plans)]:
            if plan.trial_id in ended or window >= (plan.windows or 1):
                continue
            on_window(plan, window)
            read = pool.read(plan)
            if read.record is not None:
                ended.add(plan.trial_id)


def warm_group(plans: list[TrialPlan], start: int) -> list[TrialPlan]:
    """The warm trials read in turns from ``plans[start]`` on (``rounds_per_process``): the runnable windowed plans
    of its round that follow it in the run order, at most :data:`ROUND_GROUP`."""
    first = plans[start]
    group = []
    for plan in plans[start:]:
        if plan.windows is None or plan.skip_reason is not None or plan.round != first.round:
            break
        group.append(plan)
        if len(group) == ROUND_GROUP:
            break
    return group
