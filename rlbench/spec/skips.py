"""Why a planned trial cannot run, and the skipped trials said once per reason.

A trial the machine cannot run (more CPUs or GPUs than it, or than its ``cpus``, allows) is planned as
``skipped`` with the reason (:func:`skip_reason`; on a cluster, :func:`cluster_skip_reason`), so it never
reaches Ray, which would wait forever; a grid point that resolves to an earlier one on this machine is
skipped as :data:`DUPLICATE`. The reasons are the adapter's resource arithmetic (``ResourceDemand``) against
the machine's or the cluster's. Before the sweep, and in its final table, the skipped trials are said once
per kind of reason (:func:`skip_group`, :func:`skip_summary`), from the plans alone.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from rlbench.adapters import ResourceDemand, get_adapter
from rlbench.measure.machine import ClusterInfo, MachineInfo
from rlbench.spec.model import TrialConfig

if TYPE_CHECKING:  # the plans the summary is of; spec/plan.py imports this module
    from rlbench.spec.plan import TrialPlan

#: How a skip reason for a grid point that resolves like an earlier one begins.
DUPLICATE = "same configuration as grid point"


def skip_reason(config: TrialConfig, cpus: int, machine: MachineInfo) -> str | None:
    """Why ``config`` cannot run on ``cpus`` cores of ``machine``, or None."""
    usable = len(machine.usable_cores)
    if cpus > usable:
        return f"cpus={cpus} but this machine has {usable} usable cores"
    need = _demand(config)
    if need.driver_cpus > cpus:
        return f"num_cpus_for_main_process={need.driver_cpus} is more than the trial's cpus={cpus}"
    ray_cpus = cpus - need.driver_cpus
    gpus = (f"needs {need.gpus:g} GPUs (learners and env runners) but this machine has {machine.gpu_count}"
            if need.gpus > machine.gpu_count + 1e-9 else None)
    if need.actor_cpus > ray_cpus + 1e-9:  # a GPU it lacks too is said beside: a GPU point says why on any machine
        return (f"needs {need.actor_cpus:g} CPUs for actors ({need.describe_actors()}) but only {ray_cpus} are left "
                f"after the driver's {need.driver_cpus} of cpus={cpus}" + (f"; it also {gpus}" if gpus else ""))
    return gpus


def cluster_skip_reason(config: TrialConfig, cluster: ClusterInfo) -> str | None:
    """Why ``config`` cannot run on ``cluster``, or None (the placement-group check in the trial is the second guard).

    The driver runs in the trial process on this machine, outside the cluster's resources, so
    ``num_cpus_for_main_process`` takes no cluster CPU; the actors' CPUs and GPUs must fit the
    cluster's totals, and each actor must fit one node.
    """
    need = _demand(config)
    if need.actor_cpus > cluster.total_cpus + 1e-9:
        return f"needs {need.actor_cpus:g} CPUs for actors but the cluster has {cluster.total_cpus:g}"
    if need.gpus > cluster.total_gpus + 1e-9:
        return f"needs {need.gpus:g} GPUs (learners and env runners) but the cluster has {cluster.total_gpus:g}"
    if need.largest_actor_cpus > cluster.max_node_cpus + 1e-9:
        return f"one actor needs {need.largest_actor_cpus:g} CPUs but the largest node has {cluster.max_node_cpus:g}"
    return None


def skip_group(plan: TrialPlan) -> str | None:
    """The kind of reason ``plan`` is skipped for, in words every trial skipped for it shares
    (``need more CPUs than this machine's 2``); None when it runs. From the plan alone, so a resumed
    sweep's kept trials group the same way."""
    if plan.skip_reason is None:
        return None
    if plan.skip_reason.startswith(DUPLICATE):
        if plan.skip_reason.endswith("(its batch cut alike)"):  # rlbench.spec.plan's words for a --quick duplicate
            return "are the same configuration as an earlier grid point once --quick cuts the train batch"
        return "resolve to the same configuration as an earlier grid point on this machine"
    need = _demand(plan.config)
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
    return ", ".join([f"{a}={v}" for a, v in plan.axes.items()] + [f"variant={plan.variant}"] * bool(plan.variant)) \
        or plan.trial_id


def skip_summary(plans: list[TrialPlan]) -> list[str]:
    """One line per skip group (:func:`skip_group`): ``14 of 16 trials need more CPUs than ... (largest feasible: ...)``."""
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
            def demand(p: TrialPlan) -> float:
                need = _demand(p.config)
                return need.gpus if resource == "GPUs" else need.actor_cpus + (0 if p.ray_address else need.driver_cpus)
            if feasible:
                best = max(feasible, key=demand)
                line += f" (largest feasible: {describe(best)}, {demand(best):g} {resource[:-1] if demand(best) == 1 else resource})"
            else:
                line += " (none of the trials fits)"
        lines.append(line)
    return lines


def _demand(config: TrialConfig) -> ResourceDemand:
    """What the trial config asks of the machine, by its framework's rules."""
    return get_adapter(config.framework).resource_demand(config)
