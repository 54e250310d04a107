"""The runtime a trial's framework needs, started and shut down inside the trial process.

An adapter names its runtime (``Adapter.runtime``): ``"ray"`` for RLlib, a private local Ray (or a
connection to a cluster), or None for a framework that needs none (the plain adapter). The trial
entry (:mod:`rlbench.worker.trial`) calls :meth:`start` before the trainer is built and
:meth:`shutdown` after it stopped, whatever happened in between. Standard library at module level;
Ray is imported when a Ray runtime starts.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from rlbench.ray_facts import private
from rlbench.results.events import Event
from rlbench.results.layout import TrialFolder
from rlbench.worker.priority import nice_as_ray_worker

if TYPE_CHECKING:
    from rlbench.planning.plan import TrialPlan
    from rlbench.worker.events import EventLog


class NoRuntime:
    """A framework that runs in the trial process alone: nothing to start, nothing to shut down."""

    cluster = None

    def __init__(self, adapter: Any):
        self.adapter = adapter

    def start(self) -> None:
        """Nothing: the trial writes no ``ray_init`` event."""

    def shutdown(self) -> None:
        """Nothing."""

    def trainer(self, plan: TrialPlan, off: frozenset[str]) -> Any:
        """The adapter's trainer, in this process."""
        return self.adapter.trainer(plan.config, seed=plan.seed, without=off)


class RayRuntime:
    """A trial's private local Ray runtime on 127.0.0.1, or its connection to a cluster (``ray_address``)."""

    def __init__(self, plan: TrialPlan, events: EventLog, folder: TrialFolder, adapter: Any):
        self.plan, self.events, self.folder, self.adapter = plan, events, folder, adapter
        self.cluster: Any = None

    def start(self) -> None:
        """``ray.init`` (the ``ray_init`` event), then the driver niced as Ray nices Tune's trial actor."""
        import ray

        plan = self.plan
        if not plan.ray_address:
            from rlbench.worker.ray_auth import bind_local_runtime_to_loopback

            bind_local_runtime_to_loopback()
        minimal = not plan.ray_address and not plan.include_dashboard and "agents" not in plan.switched_off
        set_worker_env(plan)
        t = time.perf_counter()
        with minimal_agents(minimal) as agents, without_monitors(minimal) as monitors:
            ray.init(**ray_init_kwargs(plan))
        ray_init_s = time.perf_counter() - t
        if "niceness" not in plan.switched_off and plan.config.execution == "tune":  # a script runs at normal priority
            nice_as_ray_worker()
        if plan.ray_address:  # a cluster's session is not the trial's: never name it for the leftover kill
            from rlbench.worker.cluster_trial import ClusterTrial

            self.cluster = ClusterTrial(plan, self.events, self.folder, self.adapter)
            self.events.write(Event.RAY_INIT, ray_init_s=ray_init_s, session_dir=None, **self.cluster.after_connect())
        else:  # its name is in every Ray system process's command line; private API: None only weakens leftover checks
            session_dir = private.session_dir()
            self.events.write(
                Event.RAY_INIT, ray_init_s=ray_init_s, session_dir=session_dir, ray_agents=agents, ray_monitors=monitors
            )

    def shutdown(self) -> None:
        """``ray.shutdown()`` if Ray is (still) up; a private runtime's autoscaler monitor killed first where one was
        started (:func:`stop_autoscaler_monitor`: ``switch_off: [agents]``, or a Ray whose node class
        :func:`without_monitors` could not reach; none otherwise)."""
        import ray

        if ray.is_initialized():
            if not self.plan.ray_address:
                stop_autoscaler_monitor(_ray_node())
            ray.shutdown()

    def trainer(self, plan: TrialPlan, off: frozenset[str]) -> Any:
        """The adapter's trainer, in this process (the driver)."""
        return self.adapter.trainer(plan.config, seed=plan.seed, without=off)


def runtime_for(
    adapter: Any, plan: TrialPlan, events: EventLog, folder: TrialFolder, ray_adapters: tuple[Any, ...] = ()
) -> Any:
    """The runtime the adapter names; a trial placed on a node set (``--parallel``) runs its trainer in a Ray
    actor on its nodes whatever its framework (:class:`~rlbench.worker.node_set.NodeSetRuntime`; ``ray_adapters``:
    the frameworks' adapters that run on Ray, for the names of Ray's processes)."""
    if plan.placement is not None:
        from rlbench.worker.node_set import NodeSetRuntime

        return NodeSetRuntime(plan, events, folder, adapter, ray_adapters)
    if adapter.runtime == "ray":
        return RayRuntime(plan, events, folder, adapter)
    if adapter.runtime is None:
        return NoRuntime(adapter)
    raise ValueError(f"adapter {adapter.name!r} names an unknown runtime {adapter.runtime!r}")


#: Ray's setting (ray_config_def.h, since Ray 2.4) for modules a worker imports as it starts, read by the raylet
#: ``ray.init`` starts from this process's environment.
PRELOAD_ENV = "RAY_preload_python_modules"


#: Ray's setting (ray_config_def.h) for the workers its raylet starts, one per CPU, as the first driver connects;
#: with ``0`` it starts each as a task or actor asks for it.
PRESTART_ENV = "RAY_prestart_worker_first_driver"


def set_worker_env(plan: TrialPlan) -> None:
    """Set :data:`PRELOAD_ENV` to the plan's worker modules (none on a cluster, nor with ``RLBENCH_SWITCH_OFF``'s
    ``preload``), and :data:`PRESTART_ENV` to ``0`` where the plan counts workers Ray would start that no actor
    takes (``idle_prestart_workers``; not with ``on_demand_workers`` switched off): this process is the trial's
    own, so its environment is the private runtime's. A value the user set is kept."""
    if plan.ray_address:
        return
    if plan.worker_preload_modules and "preload" not in plan.switched_off:
        os.environ.setdefault(PRELOAD_ENV, ",".join(plan.worker_preload_modules))
    if plan.idle_prestart_workers and "on_demand_workers" not in plan.switched_off:
        os.environ.setdefault(PRESTART_ENV, "0")


def ray_init_kwargs(plan: TrialPlan) -> dict[str, Any]:
    """``ray.init`` arguments of a trial: a private local runtime on 127.0.0.1, quiet; the dashboard
    off unless the spec turns it on, and then reachable from this machine only. With ``ray_address``: connect to
    that cluster instead (see :mod:`rlbench.worker.cluster_trial`)."""
    if plan.ray_address:
        from rlbench.worker.cluster_trial import connect_kwargs

        return connect_kwargs(plan.ray_address, plan.config.environment.env)
    return dict(
        address="local",
        _node_ip_address="127.0.0.1",  # kept by Ray only with bind_local_runtime_to_loopback (see start)
        num_cpus=plan.ray_cpus,
        num_gpus=plan.gpus,
        include_dashboard=plan.include_dashboard,
        dashboard_host="127.0.0.1",
        log_to_driver=False,
        logging_level="ERROR",
        configure_logging=True,
    )


@contextmanager
def minimal_agents(minimal: bool) -> Iterator[str]:
    """Inside, a local ``ray.init`` starts its dashboard head and agent minimal; yields ``"minimal"`` or ``"full"``.

    Ray 2.60 starts them full whenever ``ray.dashboard.optional_deps`` imports (ray[default]'s aiohttp, grpc,
    opencensus, prometheus: the ``serve`` extra brings them), even with ``include_dashboard=False``, and
    ``ray.init`` waits for the head's URL: 7.0 s a ``ray.init`` full against 3.8 s minimal (3 each, load 2, 2 cores,
    2026-11-27; 3.6 s without those packages), about 1 s more CPU from the agents at the trial's start, and the
    full agent's reporter about 0.5% of a core beside the trial after. Tune pays that once a sweep; every rlbench
    trial starts its own runtime, so its sweep took 1.07-1.12x Tune's wall. Ray has no switch for it: its one test,
    ``ray._private.utils.get_dashboard_dependency_error``, answers "missing" here, and only while ``ray.init``
    runs. A Ray without that function keeps its own choice (yields what it chose)."""
    held = private.owner("ray._private.utils.get_dashboard_dependency_error")
    probe = None if held is None else getattr(held[0], held[1], None)
    if held is None or probe is None:
        yield "unknown"
        return
    if not minimal:
        yield "full" if probe() is None else "minimal"
        return
    ray_utils, name = held
    setattr(ray_utils, name, lambda: ImportError("rlbench starts a trial's Ray agents minimal"))
    try:
        yield "minimal"
    finally:
        setattr(ray_utils, name, probe)


@contextmanager
def without_monitors(off: bool) -> Iterator[str]:
    """Inside, a local ``ray.init`` starts no log monitor and no autoscaler monitor; yields ``"off"``, ``"on"``, or
    ``"unknown"`` where Ray's node class is gone (Ray's own choice kept).

    A trial's private runtime uses neither: its workers' output is not sent to the driver (``log_to_driver=False``)
    and one fixed local node does not autoscale. Each is a Python process of about 0.3 core-s at its start (2 cores,
    quiet, 2026-11-30: a runtime's processes 2.2 core-s 6 s after ``ray.init`` with them, 1.8 without), paid by every
    trial where Tune pays it once a sweep, and by launches started together on the same cores. ``ray.init`` has no
    switch for them: the head node's ``RayParams`` are given Ray's own ``include_log_monitor=False`` and
    ``no_monitor=True`` as its ``Node`` starts (private; :data:`rlbench.ray_facts.private.PRIVATE_NAMES`)."""
    held = private.owner("ray._private.node.Node")
    node_class = None if held is None else getattr(held[0], held[1], None)
    if not off or node_class is None:
        yield "on" if node_class is not None else "unknown"
        return
    original = node_class.__init__

    def init(self: Any, ray_params: Any, *args: Any, head: bool = False, **kwargs: Any) -> None:
        if head:
            ray_params.include_log_monitor = False
            ray_params.no_monitor = True
        original(self, ray_params, *args, head=head, **kwargs)

    node_class.__init__ = init
    try:
        yield "off"
    finally:
        node_class.__init__ = original


def stop_autoscaler_monitor(node: Any) -> int:
    """Kill a private runtime's autoscaler monitor and reap it; returns how many were killed.

    ``ray.shutdown()`` stops the runtime's processes one after another, SIGTERM and up to 1 s each, and Ray 2.60's
    monitor (the autoscaler's loop, which a fixed local node does not use) sits out the whole second every time:
    ``ray.shutdown()`` took 1.36 s with it and 0.34 s with it killed first (2026-11-27, quiet), paid by every trial
    where Tune pays it once a sweep. Ray's own processes are left to ``ray.shutdown()``, raylet first, as it orders
    them. ``node``: ``ray._private.worker._global_node`` (private: without it, nothing is killed)."""
    infos = getattr(node, "all_processes", {}).get("monitor", []) if node is not None else []
    killed = 0
    for info in infos:
        process = getattr(info, "process", None)
        if process is not None and process.poll() is None:
            process.kill()
            process.wait(timeout=5)
            killed += 1
    return killed


def _ray_node() -> Any:
    """This process's local Ray node (private API: :func:`rlbench.ray_facts.private.local_node`), or None: the session
    folder and the monitor's process come from it; losing it costs the leftover check its session name and the
    shutdown its second back, nothing more."""
    return private.local_node()


def _worker_pythonpath() -> str:
    """PYTHONPATH for the runtime's workers: the caller's folder first, so ``package.module:Class`` envs import."""
    parts = [os.getcwd()] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    seen: list[str] = []
    for p in parts:
        if p not in seen:
            seen.append(p)
    return os.pathsep.join(seen)
