"""The sweep's progress: which trial runs, how far it is, and when the sweep will end.

Only trials that will run count: a trial the plan skips takes no time, and the sweep says once,
before the first trial, how many are skipped and why (:func:`rlbench.planning.skip_summary.skip_summary`).

The ETA is learnt from the trials finished so far (:class:`EtaEstimator`): a trial costs a cold
start (fork, Ray, building the algorithm: about 8 of the 11 s of a 4-iteration smoke trial on the
2-core dev VM), its iterations, and a shutdown. Until a trial has run its first iteration there is
nothing to learn from, and the display says so instead of guessing.

In a terminal the progress is a live bar; anywhere else (CI, ``| tee``, a file) it is one plain
line per finished trial, never a redrawn bar.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from statistics import fmean

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from rlbench.planning.plan import TrialPlan
from rlbench.planning.skip_summary import describe
from rlbench.results.events import Event
from rlbench.results.events_file import IterationEvent, TrialEvent
from rlbench.results.records import TrialRecord
from rlbench.results.text import plain

#: Seconds from a trial's last iteration to its verdict assumed until a trial has finished: the
#: trial's ``algo.stop()`` + ``ray.shutdown()`` took 2.0 s in the Ctrl-C measurement
#: (docs/MEASUREMENT.md, section 8).
FIRST_GUESS_END_S = 2.0


@dataclass(frozen=True)
class TrialWork:
    """What a trial will do, as far as its duration goes (its stop rule)."""

    iterations: int | None
    """``stop.iterations`` (None: stop by seconds only)."""
    seconds: float | None
    """``stop.seconds``: training time after which the trial stops at the end of an iteration."""

    @classmethod
    def of(cls, plan: TrialPlan) -> TrialWork:
        return cls(plan.stop_iterations, plan.stop_seconds)

    def training_s(self, iteration_s: float) -> float:
        """Seconds of iterations at ``iteration_s`` each; a seconds limit is passed by up to one iteration."""
        by_count = self.iterations * iteration_s if self.iterations else float("inf")
        by_time = self.seconds + iteration_s if self.seconds else float("inf")
        return min(by_count, by_time)


@dataclass(frozen=True)
class TrialTiming:
    """What a trial took, from the sweep's clock and its iteration events: the ETA's evidence."""

    start_s: float
    """From the trial's turn to the start of its first iteration (fork, Ray, build: the cold start)."""
    iteration_s: tuple[float, ...]
    """Wall seconds of each iteration."""
    end_s: float
    """From the end of its last iteration to its verdict (stop, Ray shutdown, writing its files)."""


class EtaEstimator:
    """Seconds left in a sweep, learnt from its finished trials.

    A queued trial is expected to take the mean cold start + its iterations at the mean
    per-iteration time (each finished trial's mean counts once) + the mean shutdown. The running
    trial's own iterations, once it has some, predict its remaining ones. Before any trial has
    finished, the running trial's cold start and iterations are the first guess, with
    :data:`FIRST_GUESS_END_S` for the shutdown; before its first iteration there is no estimate
    (None).
    """

    def __init__(self) -> None:
        self.finished: list[TrialTiming] = []

    def add(self, timing: TrialTiming) -> None:
        """A trial finished (with at least one iteration: one that failed early says nothing of the others)."""
        if timing.iteration_s:
            self.finished.append(timing)

    def remaining_s(
        self,
        queued: list[TrialWork],
        running: TrialWork | None = None,
        elapsed_s: float = 0.0,
        running_iteration_s: tuple[float, ...] = (),
        running_start_s: float | None = None,
    ) -> float | None:
        """Seconds until the running trial (``elapsed_s`` into its turn, its iterations so far and,
        once known, its cold start) and every queued trial are done; None without evidence yet."""
        if self.finished:
            start = fmean(t.start_s for t in self.finished)
            per_iteration = fmean(fmean(t.iteration_s) for t in self.finished)
            end = fmean(t.end_s for t in self.finished)
        elif running_iteration_s and running_start_s is not None:
            start, per_iteration, end = running_start_s, fmean(running_iteration_s), FIRST_GUESS_END_S
        else:
            return None if (queued or running) else 0.0
        total = sum(start + work.training_s(per_iteration) + end for work in queued)
        if running is not None:
            if running_iteration_s:
                own = fmean(running_iteration_s)
                total += max(0.0, running.training_s(own) - sum(running_iteration_s)) + end
            else:
                total += max(0.0, start - elapsed_s) + running.training_s(per_iteration) + end
        return total


def clock(seconds: float | None) -> str:
    """``H:MM:SS``; ``?`` for None."""
    if seconds is None:
        return "?"
    seconds = int(round(seconds))
    return f"{seconds // 3600}:{seconds // 60 % 60:02d}:{seconds % 60:02d}"


def timing(events: list[TrialEvent], slot_s: float) -> TrialTiming | None:
    """A trial's timing from its events (``t_*_s`` count from its launch, a few ms into its turn)
    and its turn's length ``slot_s``; None before its first iteration."""
    its = [
        (e.t_start_s, e.t_end_s)
        for e in events
        if isinstance(e, IterationEvent) and e.t_start_s is not None and e.t_end_s is not None
    ]
    if not its:
        return None
    return TrialTiming(
        start_s=its[0][0], iteration_s=tuple(end - start for start, end in its), end_s=max(0.0, slot_s - its[-1][1])
    )


class SweepProgress:
    """The sweep's progress over the trials that will run (skipped ones left out).

    ``start`` -> ``poll`` (with the trial's events so far, five times a second) -> ``finish`` per
    trial. In a terminal: a live bar in iterations with the current trial and the ETA; elsewhere
    one line per finished trial.
    """

    def __init__(self, console: Console, plans: list[TrialPlan], clock_s: Callable[[], float] = time.monotonic):
        self.console = console
        self.plans = [p for p in plans if p.skip_reason is None]
        self.position = {p.trial_id: i for i, p in enumerate(self.plans, start=1)}
        self.per_trial = {p.trial_id: (p.stop_iterations or 1) for p in self.plans}
        self.estimator = EtaEstimator()
        self.clock_s = clock_s
        self.t0 = clock_s()
        self.done = 0
        self.finished_ids: set[str] = set()
        self.current: TrialPlan | None = None
        self.current_start = 0.0
        self.started: dict[str, float] = {}  # trial id -> its first start: a warm trial's windows start it again
        self.current_events: list[TrialEvent] = []
        self.live = console.is_interactive
        self.progress = None
        if self.live:
            self.progress = Progress(
                TextColumn("[bold]sweep"),
                BarColumn(),
                MofNCompleteColumn(),
                TextColumn("it"),
                TextColumn("{task.fields[detail]}", markup=False),
                TimeElapsedColumn(),
                TextColumn("ETA {task.fields[eta]}", markup=False),
                console=console,
                transient=False,
            )
            self.task = self.progress.add_task(
                "sweep", total=sum(self.per_trial.values()), detail="", eta="after the first iteration"
            )

    def __enter__(self) -> SweepProgress:
        if self.progress is not None:
            self.progress.__enter__()
        elif self.plans:
            self.console.print(
                f"running {len(self.plans)} trial{'s' if len(self.plans) != 1 else ''}; one line each as it finishes",
                highlight=False,
                markup=False,
            )
        return self

    def __exit__(self, *exc) -> None:
        if self.progress is not None:
            self.progress.__exit__(*exc)

    def _queued(self) -> list[TrialWork]:
        return [
            TrialWork.of(p)
            for p in self.plans
            if p.trial_id not in self.finished_ids and (self.current is None or p.trial_id != self.current.trial_id)
        ]

    def eta_s(self) -> float | None:
        """Seconds left, or None before the first iteration."""
        if self.current is None:
            return self.estimator.remaining_s(self._queued())
        its = timing(self.current_events, 0.0)
        return self.estimator.remaining_s(
            self._queued(),
            TrialWork.of(self.current),
            self.clock_s() - self.current_start,
            its.iteration_s if its else (),
            its.start_s if its else None,
        )

    def _eta_text(self) -> str:
        eta = self.eta_s()
        if eta is None:
            return "after the first iteration"
        return clock(eta) + ("" if self.estimator.finished else " (first guess)")

    def start(self, plan: TrialPlan) -> None:
        """The trial's turn has come (a warm trial's: each window's, ``rounds_per_process``)."""
        self.current, self.current_start, self.current_events = plan, self.clock_s(), []
        self.started.setdefault(plan.trial_id, self.current_start)
        self._update(0, "starting")

    def poll(self, plan: TrialPlan, events: list[TrialEvent]) -> None:
        """The trial's events so far (read as they are appended)."""
        self.current_events = events
        self._update(*_phase(events))

    def _update(self, iteration: int, phase: str) -> None:
        if self.progress is None or self.current is None:
            return
        plan = self.current
        self.progress.update(
            self.task,
            completed=self.done + min(iteration, self.per_trial[plan.trial_id]),
            eta=self._eta_text(),
            detail=f"trial {self.position[plan.trial_id]}/{len(self.plans)} {plan.trial_id} [{plain(describe(plan))}] "
            f"{phase} it {iteration}/{plan.stop_iterations or '?'}",
        )  # the spec's values: text, never markup

    def finish(self, plan: TrialPlan, record: TrialRecord) -> None:
        """The trial has its verdict: count it, learn from its timing, and (without a terminal) log it; its time from
        its first start (a warm trial's spans its windows and the pauses between them)."""
        slot_s = self.clock_s() - self.started.pop(plan.trial_id, self.current_start)
        took = timing(self.current_events, slot_s)
        if took is not None and record.status == "ok":
            self.estimator.add(took)
        self.done += self.per_trial[plan.trial_id]
        self.finished_ids.add(plan.trial_id)
        self.current = None
        if self.progress is not None:
            self.progress.update(self.task, completed=self.done, eta=self._eta_text())
            return
        iterations = len(took.iteration_s) if took else 0
        self.console.print(
            plain(
                f"[{self.position[plan.trial_id]}/{len(self.plans)}] {plan.trial_id} {describe(plan)}: "
                f"{record.status}, {iterations} iteration{'s' if iterations != 1 else ''} in {slot_s:.1f} s; "
                f"sweep {clock(self.clock_s() - self.t0)} elapsed, ETA {self._eta_text()}"
            ),
            highlight=False,
            markup=False,
            soft_wrap=True,
        )


def _phase(events: list[TrialEvent]) -> tuple[int, str]:
    iterations = sum(isinstance(e, IterationEvent) for e in events)
    names = {e.event for e in events}
    if Event.SHUTDOWN in names:
        return iterations, "shutting down"
    if Event.BUILD in names:
        return iterations, "training"
    if Event.RAY_INIT in names:
        return iterations, "building"
    return iterations, "starting Ray"


class ParallelProgress(SweepProgress):
    """The progress of a ``--parallel`` sweep: several trials run at once, each polled with its own events.

    The ETA counts the parallelism: each running trial's remaining seconds and each queued trial's expected
    ones (learnt as for one trial at a time, :class:`EtaEstimator`) spread over as many trials as have run at
    once so far, and never less than the longest running trial's remaining time. It assumes the queue keeps
    that many running; scripts/sim_cluster_schedule.py measures how far a real schedule falls behind that.
    """

    def __init__(self, console: Console, plans: list[TrialPlan], clock_s: Callable[[], float] = time.monotonic):
        super().__init__(console, plans, clock_s)
        self.running: dict[str, tuple[TrialPlan, float, list[TrialEvent]]] = {}
        """Trial id -> (plan, when it started, its events so far)."""
        self.peak = 0
        """The most trials that have run at once: between one trial's end and the next one's start fewer run."""

    def _queued(self) -> list[TrialWork]:
        return [
            TrialWork.of(p)
            for p in self.plans
            if p.trial_id not in self.finished_ids and p.trial_id not in self.running
        ]

    def eta_s(self) -> float | None:
        """Seconds left with as many trials at once as run now, or None before the first iteration."""
        now = self.clock_s()
        left = []
        for plan, started, events in self.running.values():
            its = timing(events, 0.0)
            one = self.estimator.remaining_s(
                [], TrialWork.of(plan), now - started, its.iteration_s if its else (), its.start_s if its else None
            )
            if one is None:
                return None
            left.append(one)
        guess = self.estimator
        if not guess.finished:  # the first guess, as one at a time: a running trial's cold start and pace so far
            first = next((t for _, _, events in self.running.values() if (t := timing(events, 0.0)) is not None), None)
            guess = EtaEstimator()
            if first is not None:
                guess.add(TrialTiming(first.start_s, first.iteration_s, FIRST_GUESS_END_S))
        queued = guess.remaining_s(self._queued())
        if queued is None:
            return None
        return max([*left, (sum(left) + queued) / max(1, len(left), self.peak)])

    def start(self, plan: TrialPlan) -> None:
        self.running[plan.trial_id] = (plan, self.clock_s(), [])
        self.peak = max(self.peak, len(self.running))
        self._update(0, "starting")

    def poll(self, plan: TrialPlan, events: list[TrialEvent]) -> None:
        _, started, _ = self.running[plan.trial_id]
        self.running[plan.trial_id] = (plan, started, events)  # every event so far
        self._update(0, "")

    def _update(self, iteration: int, phase: str) -> None:
        if self.progress is None:
            return
        done, parts = self.done, []
        for trial_id, (plan, _, events) in self.running.items():
            its, what = _phase(events)
            done += min(its, self.per_trial[trial_id])
            parts.append(f"{trial_id} {what} {its}/{plan.stop_iterations or '?'}")
        self.progress.update(
            self.task, completed=done, eta=self._eta_text(), detail=f"{len(self.running)} running: {', '.join(parts)}"
        )

    def finish(self, plan: TrialPlan, record: TrialRecord) -> None:
        _, started, events = self.running.pop(plan.trial_id)
        slot_s = self.clock_s() - started
        took = timing(events, slot_s)
        if took is not None and record.status == "ok":
            self.estimator.add(took)
        self.done += self.per_trial[plan.trial_id]
        self.finished_ids.add(plan.trial_id)
        if self.progress is not None:
            self._update(0, "")
            return
        iterations = len(took.iteration_s) if took else 0
        where = ", ".join(n[:8] for n in plan.placement.node_ids) if plan.placement else "?"
        self.console.print(
            plain(
                f"[{len(self.finished_ids)}/{len(self.plans)}] {plan.trial_id} {describe(plan)} on {where}: "
                f"{record.status}, {iterations} iteration{'s' if iterations != 1 else ''} in {slot_s:.1f} s; "
                f"{len(self.running)} running; "
                f"sweep {clock(self.clock_s() - self.t0)} elapsed, ETA {self._eta_text()}"
            ),
            highlight=False,
            markup=False,
            soft_wrap=True,
        )
