"""The trial driver's scheduling priority, set as Ray sets its workers': under Tune, RLlib's
training loop runs in a Ray actor whose main thread Ray has niced; rlbench's driver is a plain
process and would otherwise run at the sweep's niceness (docs/MEASUREMENT.md 7)."""

from __future__ import annotations

import os
from typing import Any

#: Ray's ``worker_niceness`` (its C++ config; ``RAY_worker_niceness`` sets it): 15 in Ray 2.60.
RAY_WORKER_NICENESS_DEFAULT = 15


def nice_as_ray_worker(environ: dict[str, str] | None = None) -> int:
    """Lower the driver's main thread's priority as Ray lowers every worker's, Tune's trial actor
    included: ``nice(RAY_worker_niceness)`` on the main thread once Ray's own threads run, so
    those stay at the sweep's niceness, as in the actor. Returns the increment applied.

    Under Tune, RLlib's training loop runs in that actor at nice 15; rlbench's driver ran at 0. On
    an idle machine that changes nothing (measured alone: 0.989-1.018, unresolved); on a shared
    core a nice-0 thread gets about 28 times a nice-15 one's share, within one scheduling group
    where the kernel groups by session (docs/MEASUREMENT.md 7)."""
    text = (os.environ if environ is None else environ).get("RAY_worker_niceness", "")
    increment = int(text) if text.strip().lstrip("-").isdigit() else RAY_WORKER_NICENESS_DEFAULT
    if increment > 0:  # Ray's own call; a negative one needs privileges Ray would not have either
        os.nice(increment)
    return max(increment, 0)


def nice_levels(env_runner_pids: dict) -> dict[str, Any]:
    """The niceness of the driver's main thread and of each env runner's (its pid's thread), for
    the build event: under Tune both are Ray's worker niceness. Local pids only: on a cluster a
    runner's pid names a process on another node."""
    runners: dict[str, int | None] = {}
    for index, pid in (env_runner_pids or {}).items():
        try:
            runners[str(index)] = os.getpriority(os.PRIO_PROCESS, int(pid))
        except OSError:  # gone meanwhile, or on another node
            runners[str(index)] = None
    return {"driver": os.getpriority(os.PRIO_PROCESS, 0), "env_runners": runners}
