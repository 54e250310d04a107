"""A trial's steps on a Ray cluster (``rlbench sweep --address``), inside the trial process.

The trial's driver connects to the cluster (its own Ray job), starts one sampler actor per node
after the build (:mod:`rlbench.worker.node_sampler`), collects their rows before the algorithm
stops, and after its driver left checks from a fresh connection that nothing of the trial is
left on any node. Module-level imports are the standard library and rlbench.worker; Ray is
imported by the functions that need it.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from rlbench.ray_facts import private
from rlbench.results.events import Event
from rlbench.results.layout import TrialFolder
from rlbench.worker.ray_auth import enable_token_auth, runtime_env_for

if TYPE_CHECKING:
    from rlbench.worker.node_sampler import NodeSampling


def connect_kwargs(address: str | None, env: str) -> dict[str, Any]:
    """``ray.init`` arguments for a trial's driver on a cluster: quiet, with the code-shipping runtime_env."""
    enable_token_auth()
    return dict(
        address=address,
        runtime_env=runtime_env_for(env),
        log_to_driver=False,
        logging_level="ERROR",
        configure_logging=True,
    )


#: How long a trial waits, after its driver left, for its actors to be DEAD in the GCS and then for
#: their processes to be gone, before it kills what is left. Ray marks an actor DEAD before its
#: process has exited: on a busy 2-core machine three env runners took 1.5 s more to go.
RELEASE_WAIT_S = 30.0


def release_job(
    address: str, job_id: str, processes: dict[str, list[list[int | None]]] | None, *, wait_s: float = RELEASE_WAIT_S
) -> dict[str, Any]:
    """After the trial's driver left: wait for the job's actors to be DEAD and for the processes the
    node samplers saw (``node_id -> [(pid, start ticks)]``) to be gone; kill any left after ``wait_s``.

    Called by the trial after its driver disconnected (Ray kills a job's non-detached actors when its
    driver leaves): it connects again briefly, reads the GCS actor table, then runs
    :func:`processes_gone` on every node that held a process of the trial, so the trial (and the
    sweep) ends only once none of its processes is alive anywhere. Returns the ``cluster_release``
    event's fields. ``processes`` None (a trial killed before its samplers reported, released by the
    sweep): the job's actors' pids from the GCS table, start times unknown, so waited for, never killed.
    """
    import ray
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    enable_token_auth()
    ray.init(
        address=address,
        log_to_driver=False,
        logging_level="ERROR",
        configure_logging=True,
        runtime_env=runtime_env_for(""),
    )
    t = time.monotonic()
    try:
        while True:
            table = private.job_actors(job_id)
            left = [
                {
                    "actor_id": a["ActorID"],
                    "class_name": a["ActorClassName"],
                    "state": a["State"],
                    "pid": a["Pid"],
                    "node_id": a["Address"]["NodeID"],
                }
                for a in table.values()
                if a["State"] != "DEAD"
            ]
            if not left or time.monotonic() - t > wait_s:
                break
            time.sleep(0.2)
        if processes is None:
            processes = {}
            for a in table.values():
                if a.get("Pid"):
                    processes.setdefault(a["Address"]["NodeID"], []).append([int(a["Pid"]), None])
        alive_nodes = {n["NodeID"] for n in ray.nodes() if n.get("Alive")}
        from rlbench.worker.node_tasks import processes_gone

        remote = ray.remote(num_cpus=0, max_retries=0)(processes_gone)
        refs = {
            node: remote.options(scheduling_strategy=NodeAffinitySchedulingStrategy(node, soft=False)).remote(
                procs, max(0.0, wait_s - (time.monotonic() - t))
            )
            for node, procs in processes.items()
            if procs and node in alive_nodes
        }
        killed, unchecked = [], []
        for node, ref in refs.items():
            done = ray.get(ref, timeout=wait_s + 60)
            killed += [{"node_id": node, "pid": pid} for pid in done["killed"]]
            unchecked += [{"node_id": node, "pid": pid} for pid in done["unchecked"]]
        return {
            "actors_left": left,
            "processes_killed": killed,
            "processes_unchecked": unchecked,
            "waited_s": time.monotonic() - t,
        }
    finally:
        ray.shutdown()


class ClusterTrial:
    """The cluster-mode steps of one trial, called by :mod:`rlbench.worker.trial` around build, train and shutdown.

    Each step records what it did as an event and never fails the trial: a trial whose node
    samplers could not start still trains, and says so (``node_sampling_error``).
    """

    def __init__(
        self,
        plan: Any,
        events: Any,
        folder: TrialFolder,
        adapter: Any,
        node_ids: list[str] | None = None,
        also: tuple[Any, ...] = (),
    ):
        """``node_ids``: the trial's own nodes (``--parallel``), the only ones sampled; None: every node. ``also``:
        the adapters whose process names are read beside the trial's
        (:class:`~rlbench.worker.node_sampler.NodeSampling`)."""
        self.plan, self.events, self.folder, self.adapter = plan, events, folder, adapter
        self.node_ids, self.also = node_ids, also
        self.sampling: NodeSampling | None = None
        self.job_id: str | None = None
        self.processes: dict[str, list[list[int | None]]] = {}
        """node_id -> (pid, start ticks) of every process of the trial the node samplers saw."""

    def after_connect(self) -> dict[str, Any]:
        """Fields for the ``ray_init`` event: the address and this driver's job id."""
        import ray

        self.job_id = ray.get_runtime_context().get_job_id()
        return {"ray_address": self.plan.ray_address, "job_id": self.job_id}

    def after_build(self) -> None:
        """Start one sampler actor per alive node (per node of the trial's own, with ``node_ids``)."""
        from rlbench.worker.node_sampler import NodeSampling

        try:
            self.sampling = NodeSampling(
                self.events.t0_epoch, self.plan.sample_hz, self.adapter, self.node_ids, self.also
            )
        except Exception as e:  # noqa: BLE001 - no node sampling is an event, not a failed trial
            self.events.write(Event.NODE_SAMPLING_ERROR, error=f"{type(e).__name__}: {e}"[:500])

    def before_stop(self) -> None:
        """Stop the samplers, write their rows to the trial folder, record per-node figures."""
        if self.sampling is None:
            return
        from rlbench.worker.node_sampler import write_node_rows

        try:
            results, summary = self.sampling.finish()
            self.processes = summary["processes"]
            summary["rows"] = write_node_rows(self.folder.path, self.plan.trial_id, results)
            self.events.write(Event.NODE_SAMPLING, **summary)
        except Exception as e:  # noqa: BLE001 - no node sampling is an event, not a failed trial
            self.events.write(Event.NODE_SAMPLING_ERROR, error=f"{type(e).__name__}: {e}"[:500])
        self.sampling = None

    def after_shutdown(self) -> None:
        """From a fresh connection, wait until none of the trial's actors and processes outlives its
        driver (killing what is left after :data:`RELEASE_WAIT_S`), and record what was found."""
        if self.job_id is None:
            return
        try:
            release = release_job(self.plan.ray_address, self.job_id, self.processes)
            self.events.write(Event.CLUSTER_RELEASE, job_id=self.job_id, **release)
        except Exception as e:  # noqa: BLE001 - the release's failure is recorded; the sweep checks what is left
            self.events.write(
                Event.CLUSTER_RELEASE, job_id=self.job_id, actors_left=None, error=f"{type(e).__name__}: {e}"[:500]
            )
