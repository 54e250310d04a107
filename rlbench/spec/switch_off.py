"""What a fidelity diagnosis can switch off: the names a spec's ``switch_off`` (a grid axis and a variant key) and
``RLBENCH_SWITCH_OFF`` take (:mod:`rlbench.run.switches` applies them), checked and put in order. How a trial
still differs from the same one under Tune, in words: :mod:`rlbench.spec.fidelity`.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import AfterValidator, Field

#: rlbench's own choices that a fidelity diagnosis can switch off, and what the trial does without each:
#: a spec's ``switch_off`` (a grid axis and a variant key) or ``RLBENCH_SWITCH_OFF`` (:mod:`rlbench.run.switches`).
SWITCHES: dict[str, str] = {
    "affinity": "no CPU pinning at all (not even to the trial's cpus cores)",
    "threads": "no torch thread counts set (torch's own default in the driver, Ray's OMP_NUM_THREADS in actors)",
    "callback": "no timing callback in the env runners (env_step_s and inference_s then read 0)",
    "stats": "RLlib's own stats classes (its EMA-smoothed timers) instead of rlbench's per-iteration means",
    "forkserver": "each trial started as a fresh Python process instead of forked from the preloaded server",
    "sampler": "no utilization sampling from the sweep process (no utilization rows, no memory limit)",
    "agents": "Ray's dashboard head and agent in a trial's private runtime start as ray[default] starts them (full), "
    "not minimal as rlbench starts them, and its log monitor and autoscaler monitor start as Ray starts them",
    "preload": "the env runners' and learners' Ray worker processes import RLlib when their actor starts, not as they "
    "start (Ray's RAY_preload_python_modules)",
    "on_demand_workers": (
        "a trial's private runtime starts a Ray worker per CPU as its driver connects, as Ray does, also where fewer "
        "actors will use them (rlbench starts each as its actor asks there)"
    ),
    "niceness": (
        "the driver's main thread at the sweep's niceness instead of Ray's worker niceness (15), which Tune's trial "
        "actor has"
    ),
}


def known_switches(names: list[str]) -> list[str]:
    """``names`` in :data:`SWITCHES` order without repeats; ValueError naming the unknown ones."""
    unknown = sorted(set(names) - set(SWITCHES))
    if unknown:
        raise ValueError(
            f"unknown {', '.join(map(repr, unknown))}; known: {', '.join(SWITCHES)} "
            "(a fidelity diagnosis, docs/MEASUREMENT.md)"
        )
    return [n for n in SWITCHES if n in names]


#: The ``switch_off`` key's type: switch names, checked and put in order.
SwitchOff = Annotated[list[str], Field(max_length=len(SWITCHES) * 2), AfterValidator(known_switches)]
