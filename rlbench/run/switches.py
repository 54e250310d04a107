"""rlbench's own choices, switched off to find which one changes a workload.

A trial under rlbench differs from the same configuration under Ray Tune in a few deliberate
ways (docs/MEASUREMENT.md, "Fidelity"; the names in :data:`rlbench.spec.switch_off.SWITCHES`). A spec
switches them off with ``switch_off: [affinity, ...]``, a key a variant may set, so that one sweep
compares them with nothing off (``configs/bench_switches.yaml``); the environment variable
``RLBENCH_SWITCH_OFF`` (comma-separated names) switches them off in every trial of a sweep on top.
It is a diagnosis, not a feature: the names are recorded in every plan (``switched_off``) and in
the manifest, and a trial without the timing callback has no ``env_step_s``/``inference_s``.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

from rlbench.planning.plan import TrialPlan
from rlbench.spec.errors import SpecError
from rlbench.spec.fidelity import without_switched
from rlbench.spec.switch_off import SWITCHES, known_switches

__all__ = ["ENV_VAR", "SWITCHES", "switched_off", "with_switches"]

#: The environment variable that names the switches.
ENV_VAR = "RLBENCH_SWITCH_OFF"


def switched_off(environ: Mapping[str, str] | None = None) -> list[str]:
    """The switched-off choices named in ``RLBENCH_SWITCH_OFF``, in :data:`SWITCHES` order;
    SpecError naming the unknown ones."""
    text = (os.environ if environ is None else environ).get(ENV_VAR, "")
    try:
        return known_switches([n.strip() for n in text.split(",") if n.strip()])
    except ValueError as e:
        raise SpecError(f"{ENV_VAR}: {e}") from None


def with_switches(
    plans: list[TrialPlan], environ: Mapping[str, str] | None = None
) -> tuple[list[TrialPlan], list[str]]:
    """``plans`` with ``RLBENCH_SWITCH_OFF``'s names added to each one's own (its spec's ``switch_off``),
    and every name any plan switches off (the manifest's ``switched_off``; empty normally). What the planning
    said of a choice now off is taken back: its line in ``differs_from_tune``, the workers' modules (``preload``),
    the idle workers' count (``on_demand_workers``)."""
    off = switched_off(environ)
    if off:
        plans = [_switched(p, off) for p in plans]
    return plans, known_switches([n for p in plans for n in p.switched_off])


def _switched(plan: TrialPlan, off: list[str]) -> TrialPlan:
    update: dict[str, object] = {
        "switched_off": known_switches([*plan.switched_off, *off]),
        "differs_from_tune": without_switched(plan.differs_from_tune, off),
    }
    if "preload" in off:
        update["worker_preload_modules"] = []
    if "on_demand_workers" in off:
        update["idle_prestart_workers"] = 0
    return plan.model_copy(update=update)
