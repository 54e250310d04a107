"""The skipped trials said once per kind of reason, from the plans alone: before the sweep, and in its final
table (a resumed sweep's kept trials group the same way). Why each one is skipped: :mod:`rlbench.planning.skips`.
"""

from __future__ import annotations

from rlbench.planning.plan import TrialPlan
from rlbench.planning.skips import DUPLICATE, demand_of


def skip_group(plan: TrialPlan) -> str | None:
    """The kind of reason ``plan`` is skipped for, in words every trial skipped for it shares
    (``need more CPUs than this machine's 2``); None when it runs. From the plan alone, so a resumed
    sweep's kept trials group the same way."""
    if plan.skip_reason is None:
        return None
    if plan.skip_reason.startswith(DUPLICATE):
        if plan.skip_reason.endswith("(its batch cut alike)"):  # rlbench.planning.plan's words for a --quick duplicate
            return "are the same configuration as an earlier grid point once --quick cuts the train batch"
        return "resolve to the same configuration as an earlier grid point on this machine"
    need = demand_of(plan.config)
    where = "the cluster's" if plan.ray_address else "this machine's"
    if plan.ray_address is None and len(plan.cores) < plan.cpus:
        return f"ask for more cpus than this machine's {len(plan.cores)} usable cores"
    cpus_needed = need.actor_cpus + (0 if plan.ray_address else need.driver_cpus)
    if cpus_needed > plan.cpus + 1e-9:
        gpus = f" and more GPUs than its {plan.gpus}" if need.gpus > plan.gpus + 1e-9 else ""
        if plan.config.cpus is None:
            return f"need more CPUs than {where} {plan.cpus}{gpus}"
        return f"need more CPUs than their cpus={plan.cpus}{gpus}"
    if need.gpus > plan.gpus + 1e-9:
        return f"need more GPUs than {where} {plan.gpus}"
    return plan.skip_reason


def describe(plan: TrialPlan) -> str:
    """``axis=value, ..., variant=name`` of a trial (its id without axes or variant)."""
    return (
        ", ".join([f"{a}={v}" for a, v in plan.axes.items()] + [f"variant={plan.variant}"] * bool(plan.variant))
        or plan.trial_id
    )


def skip_summary(plans: list[TrialPlan]) -> list[str]:
    """One line per skip group (:func:`skip_group`): ``14 of 16 trials need more CPUs than ... (largest feasible:
    ...)``."""
    groups: dict[str, list[TrialPlan]] = {}
    for plan in plans:
        group = skip_group(plan)
        if group is not None:
            groups.setdefault(group, []).append(plan)
    feasible = [p for p in plans if p.skip_reason is None]
    lines = []
    for group, members in groups.items():
        line = f"{len(members)} of {len(plans)} trials {group}: {'it' if len(members) == 1 else 'they'} will be skipped"
        resource = "GPUs" if "GPUs" in group else "CPUs" if "CPU" in group or "cpus" in group else None
        if resource:

            def demand(p: TrialPlan, resource: str = resource) -> float:
                need = demand_of(p.config)
                return need.gpus if resource == "GPUs" else need.actor_cpus + (0 if p.ray_address else need.driver_cpus)

            if feasible:
                best = max(feasible, key=demand)
                unit = resource[:-1] if demand(best) == 1 else resource
                line += f" (largest feasible: {describe(best)}, {demand(best):g} {unit})"
            else:
                line += " (none of the trials fits)"
        lines.append(line)
    return lines
