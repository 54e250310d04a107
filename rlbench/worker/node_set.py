"""A ``--parallel`` trial's runtime, in the trial process: its connection, its placement group, its trial actor.

The sweep gives the trial a node set (``plan.placement``: nodes of one type that no other trial of
the sweep holds meanwhile, :mod:`rlbench.run.schedule`). The trial process connects to the cluster as
its own Ray job, holds one placement group whose bundles are pinned to those nodes by
``bundle_label_selector`` on ``ray.io/node-id`` (bundle 0 the driver's), and creates the
:class:`~rlbench.worker.trial_actor.TrialActor` in bundle 0, capturing its children: the trainer is
built and trained there (:class:`RemoteTrainer`, the trial's :class:`~rlbench.adapters.base.Trainer`).
Node samplers run on the trial's nodes only (:class:`~rlbench.worker.cluster_trial.ClusterTrial`);
after the driver left, the release check waits until none of the trial's processes is alive on
any node. A node of the set that dies makes the trial fail with ``node lost`` (:class:`NodeLost`).
Module level: standard library and rlbench.worker/results only; Ray is imported when the trial runs.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from rlbench.results.events import Event
from rlbench.results.layout import TrialFolder

if TYPE_CHECKING:
    from rlbench.adapters.timings import IterationTimings
    from rlbench.planning.plan import Placement, TrialPlan
    from rlbench.worker.events import EventLog

#: How long the trial waits for its placement group to be placed on its nodes: the nodes were free
#: when the sweep chose them, so a longer wait means something else holds their resources (another
#: job) and the trial is skipped with that reason rather than left to hang.
PLACE_TIMEOUT_S = 60.0
#: How long, after a call to the trial's actors failed, the trial waits for the cluster to mark one of
#: its nodes dead (Ray's health check takes several seconds to notice a node that died).
NODE_DEATH_WAIT_S = 30.0
#: How long stopping the trainer may take inside the actor before the actor is killed.
STOP_WAIT_S = 15.0


class NodeLost(RuntimeError):
    """One of the trial's nodes died while it ran: the trial failed, through no fault of its configuration."""


class NodeSetRuntime:
    """The runtime of a trial placed on a node set (``plan.placement``)."""

    def __init__(
        self, plan: TrialPlan, events: EventLog, folder: TrialFolder, adapter: Any, also: tuple[Any, ...] = ()
    ):
        """``also``: the adapters of the frameworks that run on Ray, whose process names the node samplers read
        beside the trial's own (a plain trial runs on Ray here too)."""
        self.plan, self.events, self.folder, self.adapter, self.also = plan, events, folder, adapter, also
        self.cluster: Any = None
        self.group: Any = None
        self.unplaced: str | None = None
        """Why the placement group was not placed, or None."""

    @property
    def placement(self) -> Placement:
        """The plan's node set: a node-set runtime is made for a placed plan only (:func:`runtime_for`)."""
        assert self.plan.placement is not None, "a node-set runtime needs a placed plan"
        return self.plan.placement

    def start(self) -> None:
        """Connect (the ``ray_init`` event), then place the trial's group on its nodes (the ``placement`` event)."""
        import ray

        from rlbench.worker.cluster_trial import ClusterTrial, connect_kwargs

        t = time.perf_counter()
        ray.init(**connect_kwargs(self.plan.ray_address, self.plan.config.environment.env))
        ray_init_s = time.perf_counter() - t
        self.cluster = ClusterTrial(
            self.plan, self.events, self.folder, self.adapter, node_ids=list(self.placement.node_ids), also=self.also
        )
        self.events.write(Event.RAY_INIT, ray_init_s=ray_init_s, session_dir=None, **self.cluster.after_connect())
        self._place()

    def lost_nodes(self, wait_s: float = 0.0) -> list[str]:
        """The trial's nodes the cluster no longer lists alive (polled for up to ``wait_s``)."""
        import ray

        held = set(self.placement.node_ids)
        deadline = time.monotonic() + wait_s
        while True:
            nodes = ray.nodes()
            alive = {n["NodeID"] for n in nodes if n.get("Alive")}
            lost = sorted(held - alive)
            if lost or time.monotonic() >= deadline:
                # what the GCS says of each (its death reason), for the node_lost event
                self.lost_states = {
                    n["NodeID"]: {k: n.get(k) for k in ("Alive", "DeathReason", "DeathReasonMessage")}
                    for n in nodes
                    if n["NodeID"] in lost
                }
                return lost
            time.sleep(0.5)

    def node_lost(self, lost: list[str], error: BaseException | None = None) -> NodeLost:
        """Record the ``node_lost`` event; the error to raise."""
        why = f"{type(error).__name__}: {error}"[:300] if error is not None else None
        self.events.write(Event.NODE_LOST, node_ids=lost, error=why, states=getattr(self, "lost_states", {}))
        return NodeLost(
            f"node lost: {', '.join(n[:12] for n in lost)} of the trial's nodes died while it ran"
            + (f" ({why})" if why else "")
        )

    def _place(self) -> None:
        from ray.util.placement_group import placement_group

        lost = self.lost_nodes()
        if lost:
            raise self.node_lost(lost)
        bundles = self.placement.bundles
        t = time.perf_counter()
        self.group = placement_group(
            [{k: v for k, v in (("CPU", b.cpus), ("GPU", b.gpus)) if v > 0} for b in bundles],
            strategy="PACK",
            bundle_label_selector=[{"ray.io/node-id": b.node_id} for b in bundles],
        )
        placed = self.group.wait(PLACE_TIMEOUT_S)
        self.events.write(
            Event.PLACEMENT,
            placed=placed,
            placement_s=time.perf_counter() - t,
            node_ids=list(self.placement.node_ids),
            bundles=[b.node_id for b in bundles],
        )
        if not placed:
            lost = self.lost_nodes()
            if lost:
                raise self.node_lost(lost)
            self.unplaced = (
                f"its placement group ({len(bundles)} bundles on {len(self.placement.node_ids)} "
                f"node(s) of type {self.placement.node_type}) was not placed within "
                f"{PLACE_TIMEOUT_S:g} s: something outside the sweep holds those nodes' resources"
            )

    def trainer(self, plan: TrialPlan, off: frozenset[str]) -> RemoteTrainer:
        """The trial's trainer, inside its actor in bundle 0 (none is created when the group was not placed)."""
        return RemoteTrainer(self, plan, off)

    def shutdown(self) -> None:
        """Remove the placement group and disconnect (Ray ends the job's actors as its driver leaves)."""
        import ray

        if ray.is_initialized():
            if self.group is not None:
                try:
                    from ray.util.placement_group import remove_placement_group

                    remove_placement_group(self.group)
                except Exception:  # noqa: BLE001 - the driver leaving removes it too
                    pass
            ray.shutdown()


class RemoteTrainer:
    """The trial's :class:`~rlbench.adapters.base.Trainer` in the trial process: each call goes to its
    :class:`~rlbench.worker.trial_actor.TrialActor`, which times what it runs itself (the call's round trip
    is left out of ``build_s`` and every iteration's ``wall_s``)."""

    def __init__(self, runtime: NodeSetRuntime, plan: TrialPlan, off: frozenset[str]):
        self.runtime, self.plan = runtime, plan
        self.metric_name = plan.stop_target.metric if plan.stop_target is not None else None
        self.actor: Any = None
        self.build_s: float | None = None
        self.wall_s = 0.0
        """The last iteration's wall seconds, measured inside the actor (0 before the first)."""
        self.driver_state: dict[str, Any] = {}
        """The actor's thread pools, affinity and niceness, for the build event."""
        self._last: dict[str, Any] = {}
        self._interrupted = False
        """A Ctrl-C came during a call: the actor may be inside a long iteration, so it is killed, not asked."""
        if runtime.unplaced is None:
            self._create(off)

    def _create(self, off: frozenset[str]) -> None:
        import ray
        from ray.util.scheduling_strategies import PlacementGroupSchedulingStrategy

        from rlbench.worker.trial_actor import TrialActor

        driver = self.runtime.placement.bundles[0]
        threads = None if "threads" in off else self.plan.torch_threads["driver"]
        cls = ray.remote(max_restarts=0, max_task_retries=0)(TrialActor)
        self.actor = cls.options(
            num_cpus=driver.cpus,
            num_gpus=driver.gpus,
            scheduling_strategy=PlacementGroupSchedulingStrategy(
                self.runtime.group, placement_group_bundle_index=0, placement_group_capture_child_tasks=True
            ),
        ).remote(
            self.runtime.adapter,
            self.plan.config,
            seed=self.plan.seed,
            without=off,
            driver_threads=threads,
            limit_pools=True,
        )
        where = self._call(self.actor.where.remote())
        self.runtime.events.write(Event.TRIAL_ACTOR, **where)

    def _call(self, ref: Any) -> Any:
        """``ray.get(ref)``; a failure with one of the trial's nodes dead raises :class:`NodeLost`."""
        import ray

        try:
            return ray.get(ref)
        except KeyboardInterrupt:
            self._interrupted = True
            raise
        except ray.exceptions.RayError as e:
            lost = self.runtime.lost_nodes(NODE_DEATH_WAIT_S if _died(e) else 0.0)
            if lost:  # the reason starts with "node lost"; what the driver saw is in its message
                raise self.runtime.node_lost(lost, e) from None
            raise

    def infeasible_reason(self) -> str | None:
        return self.runtime.unplaced or self._call(self.actor.config_reason.remote())

    def build(self) -> None:
        self.build_s = self._call(self.actor.build.remote())

    def set_threads(self, threads: dict[str, int]) -> dict[str, int | None]:
        return self._call(self.actor.set_threads.remote(threads))

    def facts(self) -> dict[str, Any]:
        got = self._call(self.actor.facts.remote())
        self.driver_state = {k: got[k] for k in ("thread_pools", "affinity", "niceness")}
        return got["facts"]

    def train(self) -> None:
        self._last = self._call(self.actor.train.remote(self.metric_name))
        self.wall_s = self._last["wall_s"]

    def iteration(self) -> IterationTimings:
        return self._last["timings"]

    def metric(self, name: str) -> float | None:
        return self._last.get("metric") if name == self.metric_name else None

    def stop(self) -> None:
        """Stop the trainer in the actor (up to :data:`STOP_WAIT_S`), then kill the actor; after a Ctrl-C, kill it at
        once: a local trial's Ctrl-C ends its iteration where it is, and an actor's call cannot be ended so (its
        env runners and learners die with it, their owner, and the release check waits for them)."""
        if self.actor is None:
            return
        import ray

        actor, self.actor = self.actor, None
        if not self._interrupted:
            try:
                ray.get(actor.stop.remote(), timeout=STOP_WAIT_S)
            except Exception:  # noqa: BLE001 - dead, or too slow: the kill below and the release check take what is left
                pass
        try:
            ray.kill(actor)
        except Exception:  # noqa: BLE001 - already gone: the release check takes what is left
            pass


def _died(error: BaseException) -> bool:
    """Whether a Ray error says an actor or a worker died (what a lost node looks like from the driver)."""
    text = f"{type(error).__name__} {error}"
    return any(
        word in text
        for word in ("ActorDied", "ActorUnavailable", "WorkerCrashed", "NodeDied", "died", "OwnerDied", "ObjectLost")
    )
