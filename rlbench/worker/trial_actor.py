"""A ``--parallel`` trial's driver on its nodes: the trainer inside a Ray actor in the trial's placement group.

The trial process on the submitting machine (:mod:`rlbench.worker.trial`) connects to the cluster,
holds the trial's placement group (:mod:`rlbench.worker.node_set`) and creates one
:class:`TrialActor` in its bundle 0 with ``placement_group_capture_child_tasks=True``: the
algorithm is built inside the actor, so its env runners and learners land in the group's bundles,
pinned to the trial's nodes, and a learner inside the driver (``num_learners: 0``) runs on the
cluster's hardware, as under Tune, whose trial actor this mirrors. A separate ``ray.init`` driver
started on a node would not be captured by the group (docs/CLUSTER.md, "Several trials at once").

The actor touches no file of the results folder (the nodes need not see ``--out``): everything it
measures goes back as the return value of a call, and the trial process writes the events. Module
level: standard library only (it is imported in Ray workers on the nodes, shipped as ``py_modules``).
"""

from __future__ import annotations

import os
import platform
import time
from typing import Any

#: The actor's class name in the GCS actor table: the node samplers read it as the ``driver`` role.
TRIAL_ACTOR_CLASS = "TrialActor"


class TrialActor:
    """One trial's trainer, driven a call at a time by the trial process (a Ray actor on a trial node)."""

    def __init__(
        self,
        adapter: Any,
        config: Any,
        *,
        seed: int | None,
        without: frozenset[str],
        driver_threads: int | None,
        limit_pools: bool,
    ):
        """Make the trainer (nothing is built). ``driver_threads``: the driver's torch threads and BLAS pools,
        as the trial process sets them for a local trial (None: leave Ray's OMP_NUM_THREADS, the actor's CPUs)."""
        self.adapter = adapter
        adapter.quiet_logging()
        if driver_threads is not None:
            adapter.set_driver_threads(driver_threads)
            if limit_pools:
                from rlbench.worker.threads import limit_thread_pools

                limit_thread_pools(driver_threads)
        self.trainer = adapter.trainer(config, seed=seed, without=without)
        self.log_dir: str | None = None

    def where(self) -> dict[str, Any]:
        """Its node, pid and start time (ticks since boot), for the ``placement`` event."""
        import ray

        from rlbench.worker.procfs import read_stat

        stat = read_stat(os.getpid())
        return {
            "node_id": ray.get_runtime_context().get_node_id(),
            "pid": os.getpid(),
            "start_ticks": stat.start_ticks if stat else None,
            "hostname": platform.node(),
        }

    def config_reason(self) -> str | None:
        """Why the trainer cannot run its config, for a framework with no runtime of its own (a check of the
        config alone); None otherwise: a Ray framework's own check would ask for a second placement group,
        which the trial's nodes, all held by its own group, never give, and that group's placement already
        was the check."""
        return self.trainer.infeasible_reason() if self.adapter.runtime is None else None

    def build(self) -> float:
        """Build the algorithm (its actors start in the trial's bundles); the seconds it took here."""
        t = time.perf_counter()
        self.trainer.build()
        return time.perf_counter() - t

    def set_threads(self, threads: dict[str, int]) -> dict[str, int | None]:
        """Torch threads per role, as the trainer sets them."""
        return self.trainer.set_threads(threads)

    def facts(self) -> dict[str, Any]:
        """The trainer's facts, and the driver's own thread pools, affinity and niceness (this actor's)."""
        from rlbench.worker.priority import nice_levels
        from rlbench.worker.threads import thread_pools

        facts = self.trainer.facts()
        self.log_dir = facts.get("log_dir") if isinstance(facts.get("log_dir"), str) else None
        return {
            "facts": facts,
            "thread_pools": thread_pools(),
            "affinity": {"driver": sorted(os.sched_getaffinity(0)), "others": []},
            "niceness": nice_levels(facts.get("env_runner_pids")),
        }

    def train(self, metric: str | None) -> dict[str, Any]:
        """One iteration, timed here: its wall seconds, its timings and the value of ``metric``."""
        t = time.perf_counter()
        self.trainer.train()
        wall_s = time.perf_counter() - t
        return {
            "wall_s": wall_s,
            "timings": self.trainer.iteration(),
            "metric": self.trainer.metric(metric) if metric else None,
        }

    def stop(self) -> None:
        """Stop the trainer (its actors go with it) and remove the framework's log folder if it is empty."""
        self.trainer.stop()
        if self.log_dir and os.path.isabs(self.log_dir):
            from rlbench.results.files import remove_if_empty

            remove_if_empty(self.log_dir)
