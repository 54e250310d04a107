"""Utilization on a cluster: one sampler actor per node, reading the trial's processes on that node.

In cluster mode (``rlbench sweep --address``) the trial's env runners and learners run on the
cluster's nodes, out of reach of the sweep's own
:class:`~rlbench.measure.utilization.UtilizationSampler` (which still samples the driver, this
machine's cores and its GPUs). After the algorithm is built, the
trial's driver starts a :class:`NodeSampler` actor on every alive node (``num_cpus=0``, pinned
with ``NodeAffinitySchedulingStrategy(node_id, soft=False)``). Each one, at ``sample_hz``:

- finds the trial's actor processes on its node from the GCS actor table (this job's ALIVE
  actors whose node is this node; pid and class name -> role), refreshed every
  :data:`REFRESH_S` (the dashboard-backed ``ray.util.state`` API needs ``ray[default]``; the GCS
  table does not);
- finds its node's Ray system processes (:func:`node_system_pids`): the raylet and every process
  naming this node's id (``--node_id=``/``--node-id=``), their ``ray::DashboardAgent`` /
  ``ray::RuntimeEnvAgent`` children, and the session's processes that name no node (gcs_server
  extras, monitor, dashboard, log_monitor) on the one node of that machine chosen to own them
  (the head when it is there), so that nodes sharing a machine never count a process twice;
- reads each process's CPU time and RSS from ``/proc/<pid>/stat`` and the node's per-core busy
  time from ``/proc/stat`` (Linux only);
- reads every other process of its machine, and adds up the CPU time of those that are neither the
  trial's nor Ray's own: ``foreign_cpu_s`` (:mod:`rlbench.worker.foreign`: another job's actor on
  the node, a stray process on its machine).

Rows carry ``node_id`` and ``node_ip``. The actor's own process is not sampled; its CPU time is
reported next to the rows. Time: each node's clock offset to the driver is measured once (half a
round trip of error) and removed, so ``t_s`` counts from the trial's launch on the driver's clock.

Imported inside Ray workers: module-level imports are the standard library and rlbench.worker
(itself standard library only). The row shape, CPU %, core busy % and the tick loop are the ones
the sweep's own sampler uses (:mod:`rlbench.worker.sampling`).
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

from rlbench.ray_facts import private
from rlbench.ray_facts.processes import NODE_ID, RAY_TITLE_PREFIX
from rlbench.worker.foreign import ForeignCpu, foreign_pids
from rlbench.worker.procfs import all_stats, read_cmdline, read_stat
from rlbench.worker.sampling import CoreBusy, GpuEnergy, ProcessCpu, Rows, TickLoop

if TYPE_CHECKING:
    from rlbench.worker.nvml import Gpus

#: Seconds between two refreshes of the trial's actor list and the node's system processes.
REFRESH_S = 1.0


# ---------------------------------------------------------------------------------------------
# Pure parts (unit-tested without Ray)


def actor_roles(
    actors: Iterable[dict[str, Any]], node_id: str, class_roles: dict[str, str], exclude_pids: Iterable[int] = ()
) -> dict[int, str]:
    """pid -> role of the ALIVE actors on ``node_id``, from GCS actor-table records.

    A record has ``ActorClassName``, ``Pid``, ``State`` and ``Address.NodeID`` (the shape of
    ``ray._private.state.actors()``); an unknown class is ``other``.
    """
    skip = set(exclude_pids)
    out: dict[int, str] = {}
    for a in actors:
        pid = int(a.get("Pid") or 0)
        if a.get("State") != "ALIVE" or pid <= 0 or pid in skip:
            continue
        if (a.get("Address") or {}).get("NodeID") != node_id:
            continue
        # Ray names a class made inside a function by its qualified name: RLlib's remote learner is
        # "create_executable_class.<locals>._WrappedExecutable" in the GCS table (Ray 2.60, measured)
        name = a.get("ActorClassName", "")
        out[pid] = class_roles.get(name, class_roles.get(name.rsplit(".", 1)[-1], "other"))
    return out


def node_system_pids(
    procs: Iterable[tuple[int, int, list[str]]],
    *,
    node_id: str,
    session_name: str,
    owns_unnamed: bool,
    system_titles: Iterable[str],
) -> set[int]:
    """Pids of ``node_id``'s Ray system processes among ``procs`` ((pid, ppid, cmdline) of the machine).

    A process naming a node id belongs to that node; a process of the session naming none belongs
    to the node that ``owns_unnamed``; a child of a claimed process whose title starts with one of
    ``system_titles`` (the raylet's agents, whose titles hide their arguments) follows its parent.
    Workers (``ray::IDLE``, actors) are never system processes.
    """
    procs = list(procs)
    titles = tuple(system_titles)
    claimed: set[int] = set()
    for pid, _ppid, cmdline in procs:
        joined = " ".join(cmdline)
        if cmdline and cmdline[0].startswith(RAY_TITLE_PREFIX):
            continue
        named = NODE_ID.search(joined)
        if named:
            if named.group(1) == node_id:
                claimed.add(pid)
        elif session_name and session_name in joined and owns_unnamed:
            claimed.add(pid)
    for pid, ppid, cmdline in procs:
        if ppid in claimed and cmdline and cmdline[0].strip().startswith(titles):
            claimed.add(pid)
    return claimed


def unnamed_owners(nodes: list[dict[str, Any]]) -> set[str]:
    """The node ids that sample the session's processes naming no node: one per machine (by IP), the head first."""
    owners: dict[str, tuple[bool, str]] = {}
    for n in nodes:
        key = (not n["is_head"], n["node_id"])
        ip = n["node_ip"]
        if ip not in owners or key < owners[ip]:
            owners[ip] = key
    return {node for _, node in owners.values()}


def process_start_ticks(pid: int) -> int | None:
    """A process's start time in clock ticks since boot (tells a reused pid apart); None if gone."""
    stat = read_stat(pid)
    return stat.start_ticks if stat is not None else None


def _machine_procs() -> list[tuple[int, int, list[str]]]:
    out = []
    for pid, stat in all_stats().items():
        try:
            out.append((pid, stat.ppid, read_cmdline(pid)))
        except OSError:
            continue
    return out


# ---------------------------------------------------------------------------------------------
# The actor


class NodeSampler:
    """Samples the trial's processes and the Ray system processes of one node (a Ray actor)."""

    def __init__(
        self,
        node_id: str,
        node_ip: str,
        job_id: str,
        session_name: str,
        owns_unnamed: bool,
        class_roles: dict[str, str],
        system_titles: list[str],
        hz: float,
        per_core: bool = True,
        read_gpus: bool = False,
        nvml: Any = None,
        cluster_nodes: Sequence[str] = (),
        exclude_trees: Sequence[int] = (),
    ):
        self.node_id, self.node_ip, self.job_id = node_id, node_ip, job_id
        self.session_name, self.owns_unnamed = session_name, owns_unnamed
        self.class_roles, self.system_titles = class_roles, system_titles
        self.per_core = per_core
        self.read_gpus, self._nvml = read_gpus, nvml
        """Read this machine's GPUs (one node per machine does, and not the driver's machine, whose
        GPUs the sweep's own sampler reads); ``nvml``: the NVML module (None: pynvml)."""
        self._gpus: Gpus | None = None
        self.cluster_nodes, self.exclude_trees = list(cluster_nodes) or [node_id], list(exclude_trees)
        """Every node id of the cluster; the processes (with all below them) that are the trial's own on
        this machine although no actor: its process on the submitting machine (foreign accounting)."""
        self.foreign: dict[int, str] = {}
        self._foreign = ForeignCpu()
        self._first_t_s: float | None = None
        self._last_t_s = 0.0  # read only once a first sample set both
        self.t0_epoch = 0.0
        self.rows = Rows(node_id, node_ip)
        self.roles: dict[int, str] = {}
        self.actors_seen: dict[int, str] = {}
        self.actor_start_ticks: dict[int, int] = {}
        """Start time (clock ticks since boot) of each actor process seen: with the pid, it names the
        process for the trial's clean-up check, which a reused pid cannot fool."""
        self.samples = 0
        self.error: str | None = None
        self._cpu = ProcessCpu()
        self._cores = CoreBusy()
        self._gpu = GpuEnergy()
        self._next_refresh = 0.0
        self._loop = TickLoop(1.0 / hz, self._tick, "rlbench-node-sampler", before=self._before)

    @property
    def cpu_s(self) -> float:
        """CPU time the sampling thread used."""
        return self._loop.cpu_s

    def now(self) -> float:
        """This node's clock (the driver measures the offset to its own)."""
        return time.time()

    def start(self, t0_epoch: float) -> tuple[int, int | None]:
        """Start sampling; ``t0_epoch`` is the trial's launch time on this node's clock. Returns this
        process's (pid, start ticks)."""
        self.t0_epoch = t0_epoch
        self._loop.start()
        return os.getpid(), process_start_ticks(os.getpid())

    def stop(self) -> dict[str, Any]:
        """Stop and return the rows (column-wise) and this sampler's own figures."""
        self._loop.stop(10)
        if self._gpus is not None:
            self._gpus.close()
        return {
            "node_id": self.node_id,
            "node_ip": self.node_ip,
            "columns": self.rows.columns(),
            "samples": self.samples,
            "sampler_cpu_s": self.cpu_s,
            "foreign_cpu_s": self._foreign.cpu_s,
            "foreign": self._foreign.processes(),
            "sampled_s": (self._last_t_s - self._first_t_s) if self._first_t_s is not None else 0.0,
            "actors": {str(k): v for k, v in self.actors_seen.items()},
            "actor_start_ticks": {str(k): v for k, v in self.actor_start_ticks.items()},
            "error": self.error,
        }

    def _refresh(self) -> None:
        table = private.job_actors(self.job_id)
        roles = actor_roles(table.values(), self.node_id, self.class_roles, exclude_pids=[os.getpid()])
        self.actors_seen.update(roles)
        procs = _machine_procs()
        system = node_system_pids(
            procs,
            node_id=self.node_id,
            session_name=self.session_name,
            owns_unnamed=self.owns_unnamed,
            system_titles=self.system_titles,
        )
        self.roles = {**{pid: "ray_system" for pid in system}, **roles}
        for pid in roles:
            self._foreign.drop(pid)
        self.foreign = foreign_pids(
            procs,
            node_id=self.node_id,
            cluster_nodes=self.cluster_nodes,
            session_name=self.session_name,
            owns_unnamed=self.owns_unnamed,
            ours=[*roles, *system, os.getpid()],
            exclude_trees=self.exclude_trees,
            system_titles=self.system_titles,
        )

    def _before(self) -> None:
        self.open_gpus()
        self._cores.update(self._proc_stat())  # the baseline of the first per-core reading

    def _tick(self) -> None:
        if time.monotonic() >= self._next_refresh:
            try:
                self._refresh()
            except Exception as e:  # noqa: BLE001 - keep the last known set; say why in the result
                self.error = f"{type(e).__name__}: {e}"[:300]
            self._next_refresh = time.monotonic() + REFRESH_S
        self._sample()

    def open_gpus(self) -> None:
        """Open NVML when this sampler reads GPUs (none found: no GPU rows)."""
        if self.read_gpus and self._gpus is None:
            from rlbench.worker.nvml import open_gpus

            self._gpus = open_gpus(self._nvml)

    def _proc_stat(self) -> bytes:
        if not self.per_core:
            return b""
        try:
            with open("/proc/stat", "rb") as f:
                return f.read()
        except OSError:
            return b""

    def _sample(self) -> None:
        t_s = time.time() - self.t0_epoch
        mono = time.monotonic()
        for pid, role in list(self.roles.items()):
            if (stat := read_stat(pid)) is None:
                self._cpu.forget(pid)
                continue
            if pid in self.actors_seen:
                self.actor_start_ticks.setdefault(pid, stat.start_ticks)
            cpu_pct = self._cpu.update(pid, mono, stat)
            if cpu_pct is not None:
                self.rows.process(t_s, role, pid, cpu_pct, stat.rss_bytes)
        for pid, title in list(self.foreign.items()):
            if (stat := read_stat(pid)) is not None:
                self._foreign.read(pid, stat.start_ticks, stat.cpu_s, title)
        if self._first_t_s is None:
            self._first_t_s = t_s
        self._last_t_s = t_s
        proc_stat = self._proc_stat()
        if proc_stat:
            for core, pct in self._cores.update(proc_stat):
                self.rows.core(t_s, core, pct)
        if self._gpus is not None:
            self._gpu.add(self.rows, time.time() - self.t0_epoch, self._gpus.read())
        self.samples += 1


# ---------------------------------------------------------------------------------------------
# Driver side


class NodeSampling:
    """The trial driver's handle on its node samplers: start after build, :meth:`finish` at the end."""

    def __init__(
        self, t0_epoch: float, hz: float, adapter: Any, node_ids: list[str] | None = None, also: tuple[Any, ...] = ()
    ):
        """``node_ids``: sample these nodes only (a ``--parallel`` trial's own; its driver is the trial actor
        on one of them, and this machine's GPUs are then read by a node sampler too, never by the sweep's).
        ``also``: adapters whose actor classes and agent titles are read too (a ``--parallel`` trial of a
        framework without a runtime of its own runs on Ray all the same: Ray's agents are Ray's, not foreign)."""
        import ray
        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

        from rlbench.worker.trial_actor import TRIAL_ACTOR_CLASS

        # which actor classes and process titles are whose: the adapter knows its framework's names
        class_roles = {k: v for a in (*also, adapter) for k, v in a.actor_class_roles.items()}
        class_roles[TRIAL_ACTOR_CLASS] = "driver"
        system_titles = list(dict.fromkeys(t for a in (adapter, *also) for t in a.system_titles))
        job_id = ray.get_runtime_context().get_job_id()
        session = os.path.basename(private.session_dir() or "")
        alive = [
            {
                "node_id": n["NodeID"],
                "node_ip": n["NodeManagerAddress"],
                "is_head": "node:__internal_head__" in n.get("Resources", {}),
            }
            for n in ray.nodes()
            if n.get("Alive")
        ]
        owners = unnamed_owners(alive)  # over every node: a machine's unnamed processes have one owner
        nodes = [n for n in alive if node_ids is None or n["node_id"] in node_ids]
        driver_ip = ray.util.get_node_ip_address()
        actor_cls = ray.remote(num_cpus=0, max_restarts=0)(NodeSampler)
        self.job_id = job_id
        self.nodes = nodes
        everyone = [n["node_id"] for n in alive]
        self.actors = [
            actor_cls.options(
                scheduling_strategy=NodeAffinitySchedulingStrategy(n["node_id"], soft=False), name=None
            ).remote(
                node_id=n["node_id"],
                node_ip=n["node_ip"],
                job_id=job_id,
                session_name=session,
                owns_unnamed=n["node_id"] in owners,
                class_roles=class_roles,
                system_titles=system_titles,
                hz=hz,
                read_gpus=n["node_id"] in owners and (n["node_ip"] != driver_ip or node_ids is not None),
                cluster_nodes=everyone,
                exclude_trees=[os.getpid()] if n["node_ip"] == driver_ip else [],
            )
            for n in nodes
        ]
        t_start = time.perf_counter()
        ray.get([a.now.remote() for a in self.actors], timeout=60)  # every actor up before timing round trips
        self.clock_offsets_s: list[float] = []
        starts = []
        for actor in self.actors:
            trips = []
            for _ in range(3):  # the shortest round trip bounds the offset's error best
                before = time.time()
                remote_now = ray.get(actor.now.remote(), timeout=60)
                after = time.time()
                trips.append((after - before, remote_now - (before + after) / 2))
            offset = min(trips)[1]
            self.clock_offsets_s.append(offset)
            starts.append(actor.start.remote(t0_epoch + offset))
        started = ray.get(starts, timeout=60)
        self.sampler_pids = [pid for pid, _ in started]
        self.sampler_start_ticks = [ticks for _, ticks in started]
        self.start_s = time.perf_counter() - t_start
        """Seconds from creating the samplers to all of them sampling (outside the timed iterations)."""

    def finish(self, timeout_s: float = 60.0) -> tuple[list[dict[str, Any]], dict[str, Any]]:
        """Stop every sampler, fetch its rows, kill the actors; returns (per-node results, event fields)."""
        import ray

        t = time.perf_counter()
        refs = [a.stop.remote() for a in self.actors]
        results, lost = [], []
        for ref, actor, node in zip(refs, self.actors, self.nodes):
            try:  # one at a time: a node that died mid-trial loses its own rows only
                results.append(ray.get(ref, timeout=max(1.0, timeout_s - (time.perf_counter() - t))))
            except ray.exceptions.RayError as e:
                results.append(None)
                lost.append({"node_id": node["node_id"], "error": f"{type(e).__name__}: {e}"[:300]})
            ray.kill(actor)
        kept = [
            (r, pid, off, ticks)
            for r, pid, off, ticks in zip(results, self.sampler_pids, self.clock_offsets_s, self.sampler_start_ticks)
            if r is not None
        ]
        results = [r for r, *_ in kept]
        summary = {
            "job_id": self.job_id,
            "start_s": self.start_s,
            "collect_s": time.perf_counter() - t,
            "nodes": [
                {
                    "node_id": r["node_id"],
                    "node_ip": r["node_ip"],
                    "samples": r["samples"],
                    "sampler_cpu_s": r["sampler_cpu_s"],
                    "sampler_pid": pid,
                    "clock_offset_s": off,
                    "error": r["error"],
                    "sampled_s": r["sampled_s"],
                    "foreign_cpu_s": r["foreign_cpu_s"],
                    "foreign": r["foreign"],
                    "actors": [{"pid": int(p), "role": role} for p, role in r["actors"].items()],
                }
                for r, pid, off, _ in kept
            ],
            "lost": lost,
            # every process of the trial on each node, as (pid, start ticks): the trial waits for them
            # all to be gone after its driver leaves (rlbench.worker.cluster_trial.release_job)
            "processes": {
                r["node_id"]: [[int(p), r["actor_start_ticks"].get(p)] for p in r["actors"]] + [[pid, ticks]]
                for r, pid, _, ticks in kept
            },
        }
        return results, summary


def write_node_rows(directory, trial_id: str, results: list[dict[str, Any]]) -> int:
    """Write every node's rows to the trial folder's node utilization file; returns the row count."""
    from rlbench.results.layout import TrialFolder
    from rlbench.results.tables import write_utilization

    columns: dict[str, list[Any]] = {}
    for r in results:
        for name, values in r["columns"].items():
            columns.setdefault(name, []).extend(values)
    return write_utilization(TrialFolder(directory).node_utilization, trial_id, columns)
