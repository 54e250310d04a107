"""rlbench's own choices, switched off one at a time to find which one changes a workload.

A trial under rlbench differs from the same configuration under Ray Tune in a few deliberate
ways (docs/MEASUREMENT.md, "Fidelity"). ``scripts/bench_vs_tune.py --switch-off NAME`` runs the
rlbench side with one of them off, through the environment variable ``RLBENCH_SWITCH_OFF``
(comma-separated names). It is a diagnosis, not a feature: the names are recorded in every
plan (``switched_off``) and in the manifest, and a trial without the timing callback has no
``env_step_s``/``inference_s``.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

from rlbench.spec.errors import SpecError

#: The environment variable that names the switches.
ENV_VAR = "RLBENCH_SWITCH_OFF"

#: Each choice that can be switched off, and what the trial does without it.
SWITCHES: dict[str, str] = {
    "affinity": "no CPU pinning at all (not even to the trial's cpus cores)",
    "threads": "no torch thread counts set (torch's own default in the driver, Ray's OMP_NUM_THREADS in actors)",
    "callback": "no timing callback in the env runners (env_step_s and inference_s then read 0)",
    "stats": "RLlib's own stats classes (its EMA-smoothed timers) instead of rlbench's per-iteration means",
    "forkserver": "each trial started as a fresh Python process instead of forked from the preloaded server",
    "sampler": "no utilization sampling from the sweep process (no utilization rows, no memory limit)",
    "niceness": "the driver's main thread at the sweep's niceness instead of Ray's worker niceness (15), which Tune's trial actor has",
}


def switched_off(environ: Mapping[str, str] | None = None) -> list[str]:
    """The switched-off choices named in ``RLBENCH_SWITCH_OFF``, in :data:`SWITCHES` order;
    SpecError naming the unknown ones."""
    text = (os.environ if environ is None else environ).get(ENV_VAR, "")
    names = {n.strip() for n in text.split(",") if n.strip()}
    unknown = sorted(names - set(SWITCHES))
    if unknown:
        raise SpecError(f"{ENV_VAR}: unknown {', '.join(map(repr, unknown))}; known: {', '.join(SWITCHES)} "
                        "(a fidelity diagnosis, docs/MEASUREMENT.md)")
    return [n for n in SWITCHES if n in names]
