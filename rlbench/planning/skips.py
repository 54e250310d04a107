"""Why a planned trial cannot run.

A trial the machine cannot run (more CPUs or GPUs than it, or than its ``cpus``, allows) is planned as
``skipped`` with the reason (:func:`skip_reason`; on a cluster, :func:`cluster_skip_reason`), so it never
reaches Ray, which would wait forever; a grid point that resolves to an earlier one on this machine is
skipped as :data:`DUPLICATE`. The reasons are the adapter's resource arithmetic (``ResourceDemand``) against
the machine's or the cluster's. The skipped trials said once per kind of reason, from the plans:
:mod:`rlbench.planning.skip_summary`.
"""

from __future__ import annotations

from rlbench.adapters import ResourceDemand, get_adapter
from rlbench.measure.machine import ClusterInfo, MachineInfo
from rlbench.spec.model import TrialConfig

#: How a skip reason for a grid point that resolves like an earlier one begins.
DUPLICATE = "same configuration as grid point"


def skip_reason(config: TrialConfig, cpus: int, machine: MachineInfo) -> str | None:
    """Why ``config`` cannot run on ``cpus`` cores of ``machine``, or None."""
    usable = len(machine.usable_cores)
    if cpus > usable:
        return f"cpus={cpus} but this machine has {usable} usable cores"
    need = demand_of(config)
    if need.driver_cpus > cpus:
        return f"num_cpus_for_main_process={need.driver_cpus} is more than the trial's cpus={cpus}"
    ray_cpus = cpus - need.driver_cpus
    gpus = (
        f"needs {need.gpus:g} GPUs (learners and env runners) but this machine has {machine.gpu_count}"
        if need.gpus > machine.gpu_count + 1e-9
        else None
    )
    if need.actor_cpus > ray_cpus + 1e-9:  # a GPU it lacks too is said beside: a GPU point says why on any machine
        return (
            f"needs {need.actor_cpus:g} CPUs for actors ({need.describe_actors()}) but only {ray_cpus} are left "
            f"after the driver's {need.driver_cpus} of cpus={cpus}" + (f"; it also {gpus}" if gpus else "")
        )
    return gpus


def cluster_skip_reason(config: TrialConfig, cluster: ClusterInfo) -> str | None:
    """Why ``config`` cannot run on ``cluster``, or None (the placement-group check in the trial is the second guard).

    The driver runs in the trial process on this machine, outside the cluster's resources, so
    ``num_cpus_for_main_process`` takes no cluster CPU; the actors' CPUs and GPUs must fit the
    cluster's totals, and each actor must fit one node.
    """
    need = demand_of(config)
    if need.actor_cpus > cluster.total_cpus + 1e-9:
        return f"needs {need.actor_cpus:g} CPUs for actors but the cluster has {cluster.total_cpus:g}"
    if need.gpus > cluster.total_gpus + 1e-9:
        return f"needs {need.gpus:g} GPUs (learners and env runners) but the cluster has {cluster.total_gpus:g}"
    if need.largest_actor_cpus > cluster.max_node_cpus + 1e-9:
        return f"one actor needs {need.largest_actor_cpus:g} CPUs but the largest node has {cluster.max_node_cpus:g}"
    return None


def demand_of(config: TrialConfig) -> ResourceDemand:
    """What the trial config asks of the machine, by its framework's rules."""
    return get_adapter(config.framework).resource_demand(config)
