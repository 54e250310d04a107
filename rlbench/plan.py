"""Plan stage: turn a loaded spec into the ordered list of trials, each with its cores and fate.

A trial the machine cannot run (more CPUs or GPUs than it, or than its ``cpus``, allows) is
planned as ``skipped`` with the reason, so it never reaches Ray (which would wait forever).
"""

from __future__ import annotations

from typing import Any, Union

from pydantic import BaseModel, ConfigDict

from rlbench.adapters.rllib import resource_demand, torch_threads
from rlbench.machine import MachineInfo
from rlbench.spec import LoadedSpec, TrialConfig


class TrialPlan(BaseModel):
    """Everything one trial process needs; written to ``trials/<trial_id>/plan.json``."""

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)

    trial_id: str
    """``t<grid index>r<repeat>``, e.g. ``t003r1``: stable for the same spec."""
    index: int
    """Position of the grid point (0-based)."""
    repeat: int
    """Repeat number (0-based)."""
    axes: dict[str, Any]
    """Grid axis column -> value."""
    config: TrialConfig
    """Resolved config."""
    cpus: int
    """Cores the trial gets (its ``cpus`` or all usable cores)."""
    cores: list[int]
    """The core ids its process tree is pinned to."""
    driver_cores: list[int]
    """The cores reserved for the driver (a prefix of ``cores``)."""
    ray_cpus: int
    """Logical CPUs given to the trial's Ray runtime: cpus minus the driver's."""
    gpus: int
    """GPUs given to the trial's Ray runtime (all the machine has)."""
    torch_threads: dict[str, int]
    """torch threads rlbench sets per role (driver, learner, env_runner)."""
    stop_iterations: Union[int, None]
    """Iteration limit."""
    stop_seconds: Union[float, None]
    """Training-time limit."""
    warmup_iterations: int
    """Leading iterations flagged warm-up."""
    timeout_s: float
    """Kill the trial after this long."""
    sample_hz: float
    """Utilization sampling rate."""
    memory_limit_bytes: Union[int, None] = None
    """Kill the trial when its processes' summed resident memory passes this; None: no limit."""
    include_dashboard: bool = False
    """Start Ray's dashboard (bound to 127.0.0.1)."""
    seed: Union[int, None]
    """RLlib seed."""
    skip_reason: Union[str, None] = None
    """Why the trial will not run; None when it will."""
    ray_address: Union[str, None] = None
    """GCS address of the Ray cluster the trial's driver connects to (``--address``); None: a private
    local runtime. On a cluster ``cores``/``driver_cores`` are empty (no pinning) and ``cpus``,
    ``ray_cpus``, ``gpus`` are the cluster's totals at probe time."""


def trial_id(index: int, repeat: int) -> str:
    """The id of grid point ``index``, repeat ``repeat``."""
    return f"t{index:03d}r{repeat}"


def skip_reason(config: TrialConfig, cpus: int, machine: MachineInfo) -> str | None:
    """Why ``config`` cannot run on ``cpus`` cores of ``machine``, or None."""
    usable = len(machine.usable_cores)
    if cpus > usable:
        return f"cpus={cpus} but this machine has {usable} usable cores"
    need = resource_demand(config)
    if need.driver_cpus > cpus:
        return f"num_cpus_for_main_process={need.driver_cpus} is more than the trial's cpus={cpus}"
    ray_cpus = cpus - need.driver_cpus
    if need.actor_cpus > ray_cpus + 1e-9:
        r, l = config.env_runners, config.learners
        parts = [f"{r.num_env_runners} env runners x {r.num_cpus_per_env_runner:g} CPU"]
        if l.num_learners:
            parts.append(f"{l.num_learners} learners x {float(l.num_cpus_per_learner):g} CPU")
        return (
            f"needs {need.actor_cpus:g} CPUs for actors ({' + '.join(parts)}) but only {ray_cpus} are left "
            f"after the driver's {need.driver_cpus} of cpus={cpus}"
        )
    if need.gpus > machine.gpu_count + 1e-9:
        return f"needs {need.gpus:g} GPUs (learners and env runners) but this machine has {machine.gpu_count}"
    return None


def plan_trials(loaded: LoadedSpec, machine: MachineInfo) -> list[TrialPlan]:
    """All trials in run order: grid order, repeats of a point one after another."""
    spec = loaded.spec
    plans = []
    for index, point in enumerate(loaded.points):
        config = point.config
        cpus = config.cpus or len(machine.usable_cores)
        reason = skip_reason(config, cpus, machine)
        cores = machine.usable_cores[:cpus]
        driver_n = min(config.resources.num_cpus_for_main_process, len(cores))
        for repeat in range(spec.repeats):
            plans.append(TrialPlan(
                trial_id=trial_id(index, repeat),
                index=index,
                repeat=repeat,
                axes=point.axes,
                config=config,
                cpus=cpus,
                cores=cores,
                driver_cores=cores[:driver_n],
                ray_cpus=max(0, cpus - config.resources.num_cpus_for_main_process),
                gpus=machine.gpu_count,
                torch_threads=torch_threads(config),
                stop_iterations=spec.stop.iterations,
                stop_seconds=spec.stop.seconds,
                warmup_iterations=spec.warmup_iterations,
                timeout_s=spec.trial_timeout_s,
                sample_hz=spec.sample_hz,
                memory_limit_bytes=spec.trial_memory_limit_bytes,
                include_dashboard=spec.ray.include_dashboard,
                seed=spec.seed,
                skip_reason=reason,
            ))
    return plans
