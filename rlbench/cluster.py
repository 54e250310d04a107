"""Cluster mode: run every trial as a driver of an existing Ray cluster (``rlbench sweep --address``).

Without ``--address`` (or ``RAY_ADDRESS``) each trial starts a private local Ray runtime. With it,
each trial process connects its own driver to the cluster (``ray.init(address=...)``, its own Ray
job), so the trial's actors are placed by the cluster's scheduler on any node, and disconnecting
the driver releases them. Before planning, a short-lived child process connects once
(:func:`probe_cluster`) to read the cluster's nodes, resources and each node's hardware (a
zero-CPU task pinned to each node); the sweep process itself never holds a Ray connection.

Token authentication stays on: a cluster started by ``ray start --head`` on Ray 2.60 requires
the token once one exists (``~/.ray/auth_token``), and Ray turns token mode on for clients only
when the address is ``auto``; :func:`enable_token_auth` does the same for an explicit address
when a token is at hand. rlbench never sets ``RAY_AUTH_MODE=disabled``.

Code reaches remote workers through the job's ``runtime_env`` (:func:`runtime_env_for`): the
``rlbench`` package (its sampler actor and RLlib callback run in workers) and the env's top-level
package when it lives outside site-packages (``envs/`` next to the spec), as ``py_modules``.

This module is imported inside Ray workers (the hardware probe task): module-level imports are
the standard library only.
"""

from __future__ import annotations

import json
import os
import platform
import subprocess
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

#: Environment variable Ray (and rlbench) read the cluster address from.
ADDRESS_ENV = "RAY_ADDRESS"
#: How long the probe child process may take (connect, list nodes, one task per node).
PROBE_TIMEOUT_S = 120.0


class ClusterError(Exception):
    """The cluster cannot be used (unreachable, refused the token, probe failed): bad input."""


@dataclass
class NodeInfo:
    """One alive node of the cluster, with its hardware as seen by a task pinned to it."""

    node_id: str
    """Ray node id (hex)."""
    node_ip: str
    """The node's IP address (``NodeManagerAddress``)."""
    is_head: bool
    """True for the head node."""
    resources: dict[str, float]
    """The node's total Ray resources (``CPU``, ``GPU``, ``memory``, custom ones)."""
    hostname: str | None = None
    """The machine's network name."""
    cpu_model: str | None = None
    """CPU model string from /proc/cpuinfo."""
    logical_cores: int | None = None
    """Hardware threads of the machine (the node may be given fewer CPUs)."""
    physical_cores: int | None = None
    """Physical cores of the machine."""
    memory_bytes: int | None = None
    """Total RAM of the machine."""
    gpus: list[dict[str, Any]] = field(default_factory=list)
    """One entry per GPU NVML sees on the machine (name, memory_bytes, ...); empty without."""
    probe_error: str | None = None
    """Why the hardware probe of this node failed; None when it worked."""


@dataclass
class ClusterInfo:
    """What the probe found: the address it resolved, the nodes and the resource totals."""

    address: str
    """The address as given (``auto``, ``host:port``)."""
    gcs_address: str
    """The cluster's GCS address the trials connect to (``auto`` resolved)."""
    nodes: list[NodeInfo]
    """Alive nodes, head first."""
    total_resources: dict[str, float]
    """``ray.cluster_resources()`` at probe time."""
    available_resources: dict[str, float]
    """``ray.available_resources()`` at probe time (less when other jobs hold some)."""
    ray_version: str | None = None
    """Ray version the cluster's head runs (as the probe's driver sees it)."""

    @property
    def total_cpus(self) -> float:
        """Logical CPUs over all nodes."""
        return float(self.total_resources.get("CPU", 0.0))

    @property
    def total_gpus(self) -> float:
        """GPUs over all nodes."""
        return float(self.total_resources.get("GPU", 0.0))

    @property
    def max_node_cpus(self) -> float:
        """The most CPUs any one node has (an actor cannot span nodes)."""
        return max((n.resources.get("CPU", 0.0) for n in self.nodes), default=0.0)


def cluster_dict(info: ClusterInfo) -> dict[str, Any]:
    """ClusterInfo as plain JSON-able data (the manifest's ``cluster`` entry)."""
    out = asdict(info)
    out["total_cpus"], out["total_gpus"] = info.total_cpus, info.total_gpus
    return out


def cluster_from_dict(data: dict[str, Any]) -> ClusterInfo:
    """Inverse of :func:`cluster_dict`."""
    nodes = [NodeInfo(**n) for n in data["nodes"]]
    keep = {k: v for k, v in data.items() if k in ClusterInfo.__dataclass_fields__ and k != "nodes"}
    return ClusterInfo(nodes=nodes, **keep)


# ---------------------------------------------------------------------------------------------
# Address, authentication, code shipping


def resolve_address(cli_address: str | None, environ: dict[str, str] | None = None) -> str | None:
    """The cluster address: ``--address``, else ``RAY_ADDRESS``, else None (local mode)."""
    environ = os.environ if environ is None else environ
    address = cli_address or environ.get(ADDRESS_ENV) or None
    if address is not None and address.startswith("ray://"):
        raise ClusterError(f"--address {address}: Ray Client (ray://) addresses are not supported; give the "
                           "cluster's GCS address (host:6379) or 'auto' and run rlbench on a cluster node")
    return address


def token_available(environ: dict[str, str] | None = None) -> bool:
    """True when a Ray auth token is at hand (``RAY_AUTH_TOKEN``, ``RAY_AUTH_TOKEN_PATH`` or ~/.ray/auth_token)."""
    environ = os.environ if environ is None else environ
    if environ.get("RAY_AUTH_TOKEN"):
        return True
    path = environ.get("RAY_AUTH_TOKEN_PATH")
    return Path(path).is_file() if path else (Path.home() / ".ray" / "auth_token").is_file()


def enable_token_auth(environ: dict[str, str] | None = None) -> str | None:
    """Turn Ray's token mode on for this process when it is unset and a token exists; returns the mode.

    Ray 2.60 does this itself only for ``address="auto"``; a cluster started with ``ray start`` on a
    machine holding a token requires it, so an explicit address needs the same. A mode the user set
    (even ``disabled``) is left as it is.
    """
    live = environ is None
    environ = os.environ if environ is None else environ
    if environ.get("RAY_AUTH_MODE") is None and token_available(environ):
        environ["RAY_AUTH_MODE"] = "token"
        if live and "ray" in sys.modules:  # Ray read its config at import (the trial's fork server): re-read it
            from ray._raylet import Config

            Config.initialize("")
    return environ.get("RAY_AUTH_MODE")


def _package_dir(name: str) -> Path | None:
    import importlib.util

    try:
        found = importlib.util.find_spec(name)
    except (ImportError, ValueError):
        return None
    if found is None or not found.submodule_search_locations:
        return None
    return Path(list(found.submodule_search_locations)[0]).resolve()


def runtime_env_for(env: str) -> dict[str, Any]:
    """The job's runtime_env: ship rlbench and the env's package to every worker as ``py_modules``.

    An env given as ``package.module:Class`` whose top-level package is not installed in
    site-packages (e.g. ``envs/`` next to the spec) is shipped; a gymnasium id ships nothing more.
    The nodes still need the same Python packages rlbench's workers import (ray[rllib], torch,
    gymnasium): use one image for the whole cluster.
    """
    modules: list[str] = []
    rlbench_dir = Path(__file__).resolve().parent
    modules.append(str(rlbench_dir))
    if ":" in env:
        top = env.partition(":")[0].split(".")[0]
        directory = _package_dir(top)
        if directory is not None and "site-packages" not in directory.parts and directory != rlbench_dir:
            modules.append(str(directory))
    return {"py_modules": modules}


# ---------------------------------------------------------------------------------------------
# Probe (runs in a child process; the hardware part runs as a task on every node)


def node_hardware() -> dict[str, Any]:
    """This machine's hardware (runs as a task pinned to a node; standard library and /proc only)."""
    cpu_model, cores = None, set()
    physical = None
    core_id = None
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            key, _, value = line.partition(":")
            key, value = key.strip(), value.strip()
            if key == "model name" and cpu_model is None:
                cpu_model = value
            elif key == "physical id":
                physical = value
            elif key == "core id":
                core_id = value
                cores.add((physical, core_id))
    except OSError:
        pass
    memory = None
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                memory = int(line.split()[1]) * 1024
    except OSError:
        pass
    gpus: list[dict[str, Any]] = []
    try:
        from rlbench.nvml import open_gpus

        opened = open_gpus()
        if opened is not None:
            gpus = opened.describe()
            opened.close()
    except Exception:  # no NVML on the node: no GPUs described
        gpus = []
    return {
        "hostname": platform.node(),
        "cpu_model": cpu_model or platform.processor() or platform.machine(),
        "logical_cores": os.cpu_count(),
        "physical_cores": len(cores) or None,
        "memory_bytes": memory,
        "gpus": gpus,
    }


def _probe(address: str, env: str | None) -> dict[str, Any]:
    """Connect, list alive nodes, run :func:`node_hardware` on each, disconnect."""
    enable_token_auth()
    import logging

    import ray
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    logging.getLogger("ray").setLevel(logging.ERROR)
    runtime_env = runtime_env_for(env or "")
    ray.init(address=address, log_to_driver=False, logging_level="ERROR", configure_logging=True,
             runtime_env=runtime_env)
    try:
        gcs_address = ray.get_runtime_context().gcs_address
        alive = [n for n in ray.nodes() if n.get("Alive")]
        remote = ray.remote(num_cpus=0)(node_hardware)
        refs = {n["NodeID"]: remote.options(
            scheduling_strategy=NodeAffinitySchedulingStrategy(n["NodeID"], soft=False)).remote() for n in alive}
        nodes = []
        for n in alive:
            node = NodeInfo(node_id=n["NodeID"], node_ip=n["NodeManagerAddress"],
                            is_head="node:__internal_head__" in n.get("Resources", {}),
                            resources={k: float(v) for k, v in n.get("Resources", {}).items()
                                       if not k.startswith("node:")})
            try:
                for key, value in ray.get(refs[n["NodeID"]], timeout=60).items():
                    setattr(node, key, value)
            except Exception as e:  # a node that cannot run the task is still listed, with why
                node.probe_error = f"{type(e).__name__}: {e}"[:500]
            nodes.append(node)
        nodes.sort(key=lambda n: (not n.is_head, n.node_ip, n.node_id))
        info = ClusterInfo(address=address, gcs_address=gcs_address, nodes=nodes,
                           total_resources={k: float(v) for k, v in ray.cluster_resources().items()
                                            if not k.startswith("node:")},
                           available_resources={k: float(v) for k, v in ray.available_resources().items()
                                                if not k.startswith("node:")},
                           ray_version=ray.__version__)
        return cluster_dict(info)
    finally:
        ray.shutdown()


def tcp_unreachable(address: str, timeout_s: float = 5.0) -> str | None:
    """Why a ``host:port`` address refuses a TCP connection, or None (also for ``auto``, left to Ray).

    Ray's own connect retries an unreachable GCS for minutes; this answers in seconds.
    """
    import socket

    host, sep, port = address.rpartition(":")
    if not sep or not port.isdigit():
        return None
    try:
        with socket.create_connection((host.strip("[]"), int(port)), timeout=timeout_s):
            return None
    except OSError as e:
        return e.strerror or type(e).__name__


def probe_cluster(address: str, env: str | None = None, *, timeout_s: float = PROBE_TIMEOUT_S) -> ClusterInfo:
    """Read the cluster's nodes, resources and hardware from a child process; ClusterError if unusable."""
    unreachable = tcp_unreachable(address)
    if unreachable:
        raise ClusterError(f"cannot reach the Ray cluster at {address}: {unreachable}; check the address "
                           "(`ray status` on the head prints it) and that this machine can reach its GCS port")
    cmd = [sys.executable, "-m", "rlbench.cluster", "probe", address] + ([env] if env else [])
    env_vars = {**os.environ}
    cwd = os.getcwd()
    env_vars["PYTHONPATH"] = os.pathsep.join([cwd, *[p for p in env_vars.get("PYTHONPATH", "").split(os.pathsep) if p]])
    t = time.monotonic()
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout_s, env=env_vars)
    except subprocess.TimeoutExpired:
        raise ClusterError(f"no answer from the Ray cluster at {address} within {timeout_s:g} s; check the "
                           "address (ray status on the head prints it) and that this machine can reach it") from None
    lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
    if done.returncode != 0 or not lines:
        tail = " | ".join(line for line in done.stderr.splitlines()[-4:] if line.strip())
        hint = (" (the cluster wants a token: put it in ~/.ray/auth_token or RAY_AUTH_TOKEN)"
                if "Authentication" in done.stderr or "InvalidAuthToken" in done.stderr else "")
        raise ClusterError(f"cannot use the Ray cluster at {address}{hint}: {tail or 'probe failed'}")
    info = cluster_from_dict(json.loads(lines[-1]))
    if not info.nodes:
        raise ClusterError(f"the Ray cluster at {address} has no alive node")
    info.probe_s = time.monotonic() - t  # type: ignore[attr-defined]  (for the console only)
    return info


# ---------------------------------------------------------------------------------------------
# Planning against the cluster


def cluster_skip_reason(config, cluster: ClusterInfo) -> str | None:
    """Why ``config`` cannot run on ``cluster``, or None (the placement-group check in the trial is the second guard).

    The driver runs in the trial process on this machine, outside the cluster's resources, so
    ``num_cpus_for_main_process`` takes no cluster CPU; the actors' CPUs and GPUs must fit the
    cluster's totals, and each actor must fit one node.
    """
    from rlbench.adapters.rllib import resource_demand

    need = resource_demand(config)
    if need.actor_cpus > cluster.total_cpus + 1e-9:
        return f"needs {need.actor_cpus:g} CPUs for actors but the cluster has {cluster.total_cpus:g}"
    if need.gpus > cluster.total_gpus + 1e-9:
        return f"needs {need.gpus:g} GPUs (learners and env runners) but the cluster has {cluster.total_gpus:g}"
    runners, learners = config.env_runners, config.learners
    per_actor = [runners.num_cpus_per_env_runner] if runners.num_env_runners else []
    if learners.num_learners:
        per_actor.append(float(learners.num_cpus_per_learner))
    if per_actor and max(per_actor) > cluster.max_node_cpus + 1e-9:
        return f"one actor needs {max(per_actor):g} CPUs but the largest node has {cluster.max_node_cpus:g}"
    return None


def plan_cluster_trials(loaded, cluster: ClusterInfo) -> list:
    """Plan every trial for the cluster: no pinning, Ray's CPUs/GPUs = the cluster's, the address set.

    ``cpus`` (machine-size emulation by pinning) has no meaning on a cluster: a spec that sets it
    is rejected before (:func:`check_spec_for_cluster`).
    """
    from rlbench.machine import MachineInfo
    from rlbench.plan import plan_trials

    total_cpus = int(cluster.total_cpus)
    machine = MachineInfo(hostname=f"ray cluster {cluster.gcs_address}", cpu_model="cluster",
                          logical_cores=total_cpus, physical_cores=None, usable_cores=list(range(max(total_cpus, 1))),
                          memory_bytes=0, gpus=[{}] * int(cluster.total_gpus))
    plans = []
    for plan in plan_trials(loaded, machine):
        plans.append(plan.model_copy(update={
            "cpus": total_cpus, "cores": [], "driver_cores": [], "ray_cpus": total_cpus,
            "gpus": int(cluster.total_gpus), "ray_address": cluster.gcs_address,
            "skip_reason": cluster_skip_reason(plan.config, cluster),
        }))
    return plans


def check_spec_for_cluster(loaded) -> str | None:
    """Why the spec cannot run on a cluster (it sets ``cpus``), or None."""
    if loaded.spec.cpus is not None or any(p.config.cpus is not None for p in loaded.points):
        return (f"{loaded.source}: 'cpus' emulates a smaller machine by pinning the trial to local cores, "
                "which has no meaning on a Ray cluster; remove 'cpus' (and any 'cpus' grid axis) to run with "
                "--address, or drop --address to emulate machine sizes locally")
    return None



def prepare_cluster(address_arg: str | None, loaded, console) -> ClusterInfo | None:
    """For ``rlbench sweep``: the probed cluster when ``--address``/``RAY_ADDRESS`` is given, else None.

    Raises ClusterError (bad input, exit 2) for a ``ray://`` address, a spec that sets ``cpus``,
    or a cluster the probe cannot use.
    """
    address = resolve_address(address_arg)
    if not address:
        return None
    problem = check_spec_for_cluster(loaded)
    if problem:
        raise ClusterError(problem)
    console.print(f"Ray cluster at {address}: probing its nodes ...", highlight=False)
    info = probe_cluster(address)
    console.print(f"Ray cluster {info.gcs_address}: {len(info.nodes)} nodes, {info.total_cpus:g} CPUs "
                  f"({info.available_resources.get('CPU', 0.0):g} free now), {info.total_gpus:g} GPUs; "
                  "every trial connects its own driver (no pinning, cpus emulation off)", highlight=False)
    return info

# ---------------------------------------------------------------------------------------------
# Inside the trial


def connect_kwargs(address: str, env: str) -> dict[str, Any]:
    """``ray.init`` arguments for a trial's driver on a cluster: quiet, with the code-shipping runtime_env."""
    enable_token_auth()
    return dict(address=address, runtime_env=runtime_env_for(env), log_to_driver=False, logging_level="ERROR",
                configure_logging=True)


#: How long a trial waits, after its driver left, for its actors to be DEAD in the GCS and then for
#: their processes to be gone, before it kills what is left. Ray marks an actor DEAD before its
#: process has exited: on a busy 2-core machine three env runners took 1.5 s more to go.
RELEASE_WAIT_S = 30.0


def processes_gone(processes: list[list[int | None]], wait_s: float) -> dict[str, Any]:
    """On one node: wait until every ``(pid, start ticks)`` has exited, then SIGKILL the ones left.

    Runs as a zero-CPU task pinned to the node (standard library and /proc only). A zombie counts
    as exited (only its parent's reaping is missing); a pid whose start time differs is another
    process now and is left alone, as is one whose start time was never read (no kill on a pid alone).
    """
    import signal

    from rlbench.procfs import parse_stat

    def alive(pid: int, ticks: int | None) -> bool:
        try:
            with open(f"/proc/{pid}/stat", "rb") as f:
                stat = parse_stat(f.read())
        except (OSError, ValueError, IndexError):
            return False
        return (ticks is None or stat.start_ticks == ticks) and stat.state not in ("Z", "X", "x")

    t = time.monotonic()
    pending = [(int(p), t_) for p, t_ in processes if alive(int(p), t_)]
    while pending and time.monotonic() - t < wait_s:
        time.sleep(0.05)
        pending = [(p, t_) for p, t_ in pending if alive(p, t_)]
    killed, unchecked = [], []
    for pid, ticks in pending:
        if ticks is None:
            unchecked.append(pid)
            continue
        try:
            os.kill(pid, signal.SIGKILL)
            killed.append(pid)
        except OSError:
            pass
    return {"waited_s": time.monotonic() - t, "killed": killed, "unchecked": unchecked}


def release_job(address: str, job_id: str, processes: dict[str, list[list[int | None]]], *,
                wait_s: float = RELEASE_WAIT_S) -> dict[str, Any]:
    """After the trial's driver left: wait for the job's actors to be DEAD and for the processes the
    node samplers saw (``node_id -> [(pid, start ticks)]``) to be gone; kill any left after ``wait_s``.

    Called by the trial after its driver disconnected (Ray kills a job's non-detached actors when its
    driver leaves): it connects again briefly, reads the GCS actor table, then runs
    :func:`processes_gone` on every node that held a process of the trial, so the trial (and the
    sweep) ends only once none of its processes is alive anywhere. Returns the ``cluster_release``
    event's fields.
    """
    import ray
    from ray._private import state
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    enable_token_auth()
    ray.init(address=address, log_to_driver=False, logging_level="ERROR", configure_logging=True,
             runtime_env=runtime_env_for(""))
    t = time.monotonic()
    try:
        while True:
            table = state.actors(job_id=ray.JobID.from_hex(job_id))
            left = [{"actor_id": a["ActorID"], "class_name": a["ActorClassName"], "state": a["State"],
                     "pid": a["Pid"], "node_id": a["Address"]["NodeID"]}
                    for a in table.values() if a["State"] != "DEAD"]
            if not left or time.monotonic() - t > wait_s:
                break
            time.sleep(0.2)
        alive_nodes = {n["NodeID"] for n in ray.nodes() if n.get("Alive")}
        remote = ray.remote(num_cpus=0, max_retries=0)(processes_gone)
        refs = {node: remote.options(scheduling_strategy=NodeAffinitySchedulingStrategy(node, soft=False)).remote(
                    procs, max(0.0, wait_s - (time.monotonic() - t)))
                for node, procs in processes.items() if procs and node in alive_nodes}
        killed, unchecked = [], []
        for node, ref in refs.items():
            done = ray.get(ref, timeout=wait_s + 60)
            killed += [{"node_id": node, "pid": pid} for pid in done["killed"]]
            unchecked += [{"node_id": node, "pid": pid} for pid in done["unchecked"]]
        return {"actors_left": left, "processes_killed": killed, "processes_unchecked": unchecked,
                "waited_s": time.monotonic() - t}
    finally:
        ray.shutdown()


class ClusterTrial:
    """The cluster-mode steps of one trial, called by :mod:`rlbench.trial` around build, train and shutdown.

    Each step records what it did as an event and never fails the trial: a trial whose node
    samplers could not start still trains, and says so (``node_sampling_error``).
    """

    def __init__(self, plan, events, directory: Path):
        self.plan, self.events, self.directory = plan, events, directory
        self.sampling = None
        self.job_id: str | None = None
        self.processes: dict[str, list[list[int | None]]] = {}
        """node_id -> (pid, start ticks) of every process of the trial the node samplers saw."""

    def after_connect(self) -> dict[str, Any]:
        """Fields for the ``ray_init`` event: the address and this driver's job id."""
        import ray

        self.job_id = ray.get_runtime_context().get_job_id()
        return {"ray_address": self.plan.ray_address, "job_id": self.job_id}

    def after_build(self) -> None:
        """Start one sampler actor per alive node."""
        from rlbench.node_sampler import NodeSampling

        try:
            self.sampling = NodeSampling(self.events.t0_epoch, self.plan.sample_hz)
        except Exception as e:
            self.events.write("node_sampling_error", error=f"{type(e).__name__}: {e}"[:500])

    def before_stop(self) -> None:
        """Stop the samplers, write their rows to the trial folder, record per-node figures."""
        if self.sampling is None:
            return
        from rlbench.node_sampler import write_node_rows

        try:
            results, summary = self.sampling.finish()
            self.processes = summary["processes"]
            summary["rows"] = write_node_rows(self.directory, self.plan.trial_id, results)
            self.events.write("node_sampling", **summary)
        except Exception as e:
            self.events.write("node_sampling_error", error=f"{type(e).__name__}: {e}"[:500])
        self.sampling = None

    def after_shutdown(self) -> None:
        """From a fresh connection, wait until none of the trial's actors and processes outlives its
        driver (killing what is left after :data:`RELEASE_WAIT_S`), and record what was found."""
        if self.job_id is None:
            return
        try:
            release = release_job(self.plan.ray_address, self.job_id, self.processes)
            self.events.write("cluster_release", job_id=self.job_id, **release)
        except Exception as e:
            self.events.write("cluster_release", job_id=self.job_id, actors_left=None,
                              error=f"{type(e).__name__}: {e}"[:500])

if __name__ == "__main__":
    if len(sys.argv) >= 3 and sys.argv[1] == "probe":
        print(json.dumps(_probe(sys.argv[2], sys.argv[3] if len(sys.argv) > 3 else None)), flush=True)
    else:
        sys.exit("usage: python -m rlbench.cluster probe ADDRESS [ENV]")
