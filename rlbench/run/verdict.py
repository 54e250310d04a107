"""A finished trial's verdict: its status and reason, from its events, its exit code and why the sweep stopped it.

Pure reading of what a trial left (:mod:`rlbench.run.trial` calls it once the trial process is gone).
"""

from __future__ import annotations

import signal
from dataclasses import dataclass

from rlbench.planning.plan import TrialPlan
from rlbench.results.events import Event
from rlbench.results.events_file import (
    EndEvent,
    ErrorEvent,
    IterationEvent,
    ShutdownEvent,
    SkippedEvent,
    TrialEvent,
    first,
    last,
)
from rlbench.results.layout import TrialFolder
from rlbench.results.records import TEARDOWN_CRASH


def verdict(
    plan: TrialPlan, trial: TrialFolder, exit_code: int | None, timed_out: bool, stop: TrialStop | None = None
) -> tuple[str, str | None]:
    """(status, reason) of a finished trial process, from its events, its exit code and why the
    sweep stopped it (timeout, memory limit, Ctrl-C)."""
    events = trial.events()
    end, error, skipped = last(events, EndEvent), last(events, ErrorEvent), first(events, SkippedEvent)
    iterations = sum(isinstance(e, IterationEvent) for e in events)
    if stop is not None and stop.memory_bytes is not None and plan.memory_limit_bytes is not None:
        return "failed", (
            f"out of memory: its processes used {stop.memory_bytes / 2**20:.0f} MiB, over "
            f"trial_memory_limit_bytes={plan.memory_limit_bytes} ({plan.memory_limit_bytes / 2**20:.0f} "
            f"MiB); killed with its process tree after {iterations} iterations"
        )
    if end is not None and end.status == "skipped" and skipped is not None:
        return "skipped", skipped.reason
    if end is not None and end.status == "ok":
        return "ok", None
    if (end is None or end.status in ("interrupted", "failed")) and _teardown_started(plan, events):
        # it trained (and fetched its node rows): every figure is written; how its process ended while its
        # framework and runtime shut down changes none of them (an error then is raised after trained)
        if error is not None:
            how = f"it raised {error.error}"
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
        return "timeout", (
            f"killed after trial_timeout_s={plan.timeout_s:g} s with its process tree, after {iterations} iterations"
        )
    if stop is not None and stop.interrupted:
        how = "stopped cleanly, Ray shut down" if end is not None else "killed after the grace period"
        return "interrupted", f"interrupted (Ctrl-C or SIGTERM) after {iterations} iterations; {how}"
    if error is not None:
        return "failed", error.error
    how = _exit_text(exit_code)
    if exit_code == -signal.SIGKILL:
        how += ": the kernel's out-of-memory killer does this (see dmesg)"
    tail = trial.log_tail()
    return "failed", f"trial process died ({how}) after {iterations} iterations" + (f"; log: {tail}" if tail else "")


def _teardown_started(plan: TrialPlan | None, events: list[TrialEvent]) -> bool:
    """Whether the trial had finished measuring when it began to shut down: it wrote ``trained`` and, on a
    cluster, its node samplers' rows (``node_sampling``) or why there are none (``node_sampling_error``)."""
    names = {e.event for e in events}
    if Event.TRAINED not in names:
        return False
    on_cluster = plan is not None and bool(plan.ray_address)
    return not on_cluster or bool(names & {Event.NODE_SAMPLING, Event.NODE_SAMPLING_ERROR})


def _teardown_note(events: list[TrialEvent], how: str, iterations: int) -> str:
    """The ``reason`` of an ok trial that ended in its teardown (:data:`TEARDOWN_CRASH` first): how, and when."""
    when = (
        "after its runtime had shut down (shutdown_s recorded)"
        if any(isinstance(e, ShutdownEvent) for e in events)
        else "while its framework and runtime shut down (shutdown_s unknown)"
    )
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
