"""Cluster mode, the sweep's side: find the cluster, probe it, refuse what cannot run there.

Without ``--address`` (or ``RAY_ADDRESS``) each trial starts a private local Ray runtime. With it,
each trial process connects its own driver to the cluster (``ray.init(address=...)``, its own Ray
job; :mod:`rlbench.worker.cluster_trial`), so the trial's actors are placed by the cluster's
scheduler on any node, and disconnecting the driver releases them. Before planning, a short-lived
child process (``python -m rlbench.run.cluster probe ADDRESS``) connects once to read the
cluster's nodes, resources and each node's hardware (a zero-CPU task pinned to each node,
:func:`rlbench.worker.node_tasks.node_hardware`); the sweep process itself never holds a Ray
connection. Planning against the probed cluster is :func:`rlbench.planning.plan.plan_cluster_trials`.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Mapping
from typing import Any

from rich.text import Text

from rlbench.measure.machine import ClusterInfo, NodeInfo, cluster_dict, cluster_from_dict
from rlbench.planning.plan import check_spec_for_cluster
from rlbench.results.text import plain
from rlbench.worker.node_tasks import node_hardware
from rlbench.worker.ray_auth import ADDRESS_ENV, enable_token_auth, runtime_env_for

#: How long the probe child process may take (connect, list nodes, one task per node).
PROBE_TIMEOUT_S = 120.0


class ClusterError(Exception):
    """The cluster cannot be used (unreachable, refused the token, probe failed): bad input."""


def resolve_address(cli_address: str | None, environ: Mapping[str, str] | None = None) -> str | None:
    """The cluster address: ``--address``, else ``RAY_ADDRESS``, else None (local mode)."""
    environ = os.environ if environ is None else environ
    address = cli_address or environ.get(ADDRESS_ENV) or None
    if address is not None and address.startswith("ray://"):
        raise ClusterError(
            f"--address {address}: Ray Client (ray://) addresses are not supported; give the "
            "cluster's GCS address (host:6379) or 'auto' and run rlbench on a cluster node"
        )
    return address


def _probe(address: str, env: str | None) -> dict[str, Any]:
    """Connect, list alive nodes, run :func:`node_hardware` on each, disconnect."""
    enable_token_auth()
    import logging

    import ray
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    logging.getLogger("ray").setLevel(logging.ERROR)
    runtime_env = runtime_env_for(env or "")
    ray.init(
        address=address, log_to_driver=False, logging_level="ERROR", configure_logging=True, runtime_env=runtime_env
    )
    try:
        gcs_address = ray.get_runtime_context().gcs_address
        alive = [n for n in ray.nodes() if n.get("Alive")]
        remote = ray.remote(num_cpus=0)(node_hardware)
        refs = {
            n["NodeID"]: remote.options(
                scheduling_strategy=NodeAffinitySchedulingStrategy(n["NodeID"], soft=False)
            ).remote()
            for n in alive
        }
        nodes = []
        for n in alive:
            node = NodeInfo(
                node_id=n["NodeID"],
                node_ip=n["NodeManagerAddress"],
                is_head="node:__internal_head__" in n.get("Resources", {}),
                resources={k: float(v) for k, v in n.get("Resources", {}).items() if not k.startswith("node:")},
            )
            try:
                for key, value in ray.get(refs[n["NodeID"]], timeout=60).items():
                    setattr(node, key, value)
            except Exception as e:  # noqa: BLE001 - a node that cannot run the task is still listed, with why
                node.probe_error = f"{type(e).__name__}: {e}"[:500]
            nodes.append(node)
        nodes.sort(key=lambda n: (not n.is_head, n.node_ip, n.node_id))
        info = ClusterInfo(
            address=address,
            gcs_address=gcs_address,
            nodes=nodes,
            total_resources={k: float(v) for k, v in ray.cluster_resources().items() if not k.startswith("node:")},
            available_resources={
                k: float(v) for k, v in ray.available_resources().items() if not k.startswith("node:")
            },
            ray_version=ray.__version__,
        )
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
        raise ClusterError(
            f"cannot reach the Ray cluster at {address}: {unreachable}; check the address "
            "(`ray status` on the head prints it) and that this machine can reach its GCS port"
        )
    cmd = [sys.executable, "-m", "rlbench.run.cluster", "probe", address] + ([env] if env else [])
    env_vars = {**os.environ}
    cwd = os.getcwd()
    env_vars["PYTHONPATH"] = os.pathsep.join([cwd, *[p for p in env_vars.get("PYTHONPATH", "").split(os.pathsep) if p]])
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout_s, env=env_vars)
    except subprocess.TimeoutExpired:
        raise ClusterError(
            f"no answer from the Ray cluster at {address} within {timeout_s:g} s; check the "
            "address (ray status on the head prints it) and that this machine can reach it"
        ) from None
    lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
    if done.returncode != 0 or not lines:
        tail = " | ".join(line for line in done.stderr.splitlines()[-4:] if line.strip())
        hint = (
            " (the cluster wants a token: put it in ~/.ray/auth_token or RAY_AUTH_TOKEN)"
            if "Authentication" in done.stderr or "InvalidAuthToken" in done.stderr
            else ""
        )
        raise ClusterError(f"cannot use the Ray cluster at {address}{hint}: {tail or 'probe failed'}")
    info = cluster_from_dict(json.loads(lines[-1]))
    if not info.nodes:
        raise ClusterError(f"the Ray cluster at {address} has no alive node")
    return info


def parse_parallel(value: str | None) -> str | None:
    """``--parallel``'s value checked: ``auto`` or a whole number of at least 1 (as text), or None; ClusterError
    else."""
    if value is None or value == "auto" or (value.isdigit() and int(value) >= 1):
        return value
    raise ClusterError(
        f"--parallel {value}: give how many trials may run at once (1, 2, ...) or 'auto' (as many as "
        "the cluster has disjoint node sets for)"
    )


def prepare_cluster(address_arg: str | None, loaded, console, parallel: str | None = None) -> ClusterInfo | None:
    """For ``rlbench sweep``: the probed cluster when ``--address``/``RAY_ADDRESS`` is given, else None.

    Raises ClusterError (bad input, exit 2) for a ``ray://`` address, a spec that sets ``cpus``,
    a cluster the probe cannot use, and ``--parallel`` without a cluster or with a spec it cannot run.
    """
    address = resolve_address(address_arg)
    parallel = parse_parallel(parallel)
    if not address:
        if parallel is not None:
            raise ClusterError(
                f"--parallel {parallel} runs trials at once, each on nodes of its own, on a Ray cluster: "
                "give --address HOST:PORT (or RAY_ADDRESS), or drop --parallel"
            )
        return None
    problem = check_spec_for_cluster(loaded, parallel=parallel is not None)
    if problem:
        raise ClusterError(problem)
    console.print(Text(plain(f"Ray cluster at {address}: probing its nodes ...")))
    info = probe_cluster(address)
    how = (
        "every trial connects its own driver (no pinning, cpus emulation off)"
        if parallel is None
        else f"--parallel {parallel}: {describe_node_sets(info)}; each trial's driver is an actor on its nodes"
    )
    found = (
        f"Ray cluster {info.gcs_address}: {len(info.nodes)} nodes, {info.total_cpus:g} CPUs "
        f"({info.available_resources.get('CPU', 0.0):g} free now), {info.total_gpus:g} GPUs; {how}"
    )
    console.print(Text(plain(found)))
    return info


def describe_node_sets(info: ClusterInfo) -> str:
    """``2 node types: 3 x <type> (6 CPUs), ...``: what ``--parallel`` schedules on."""
    from rlbench.planning.placement import by_type, node_rooms

    kinds = by_type(node_rooms(info))
    return f"{len(kinds)} node type{'s' * (len(kinds) != 1)}: " + "; ".join(
        f"{len(ms)} x {t} ({sum(n.cpus for n in ms):g} Ray CPUs, {sum(n.gpus for n in ms):g} GPUs)"
        for t, ms in kinds.items()
    )


#: How long the sweep's release of a killed ``--parallel`` trial may take (connect, wait, check every node).
RELEASE_TIMEOUT_S = 120.0


def release_killed_trial(address: str, job_id: str, *, timeout_s: float = RELEASE_TIMEOUT_S) -> dict[str, Any] | None:
    """For a ``--parallel`` trial killed from outside (timeout, memory limit), whose own release check never ran:
    from a short-lived child process (the sweep holds no Ray connection), wait until the job's actors are dead and
    their processes gone from the nodes, so its nodes go to the next trial empty. The check's fields, or None."""
    if not job_id.isalnum():  # read back from the trial's events: a hex id, nothing else goes on a command line
        return None
    cmd = [sys.executable, "-m", "rlbench.run.cluster", "release", address, job_id]
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout_s)
    except subprocess.TimeoutExpired:
        return None
    lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
    return json.loads(lines[-1]) if done.returncode == 0 and lines else None


def _release(address: str, job_id: str) -> dict[str, Any]:
    from rlbench.worker.cluster_trial import release_job

    return release_job(address, job_id, None)


if __name__ == "__main__":
    if len(sys.argv) >= 3 and sys.argv[1] == "probe":
        print(json.dumps(_probe(sys.argv[2], sys.argv[3] if len(sys.argv) > 3 else None)), flush=True)
    elif len(sys.argv) == 4 and sys.argv[1] == "release":
        print(json.dumps(_release(sys.argv[2], sys.argv[3])), flush=True)
    else:
        sys.exit("usage: python -m rlbench.run.cluster probe ADDRESS [ENV] | release ADDRESS JOB_ID")
