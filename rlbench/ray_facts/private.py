"""The one seam to Ray's private API, as :mod:`rlbench.adapters.cuda_clock` is to a GPU's clock (standard library
only at module level; Ray is imported inside each call).

rlbench reaches a few names Ray does not promise to keep: the local node (a session's folder, the autoscaler
monitor's process), the GCS actor table without the dashboard, the dashboard dependency probe, the head node's start
(without its monitors), the cluster switch and the token config re-read, and Serve's replica gRPC bind. Each is
named once in :data:`PRIVATE_NAMES` with the Ray release it was read in and checked against, and reached only here
(tests/test_architecture.py holds it); tests/ray_facts/test_private.py resolves every one on the installed Ray, so a
release that moves one fails there, by name, before a trial loses it. Every caller survives a name that is gone
(:func:`resolve` answers None): what each loses is said at its use.
"""

from __future__ import annotations

import importlib
from typing import Any

#: Every private name rlbench reaches -> the Ray release it was read in and is checked against.
PRIVATE_NAMES: dict[str, str] = {
    "ray._private.worker._global_node": "2.60.0",  # the local node: its session folder, its monitor process
    "ray._private.state.actors": "2.60.0",  # the GCS actor table (ray.util.state needs ray[default]'s dashboard)
    "ray._private.utils.get_dashboard_dependency_error": "2.60.0",  # whether the agents start full or minimal
    "ray._private.node.Node": "2.60.0",  # a private head node: started without its two monitors
    "ray._private.ray_constants.ENABLE_RAY_CLUSTER": "2.60.0",  # a runtime on loopback, in a process that has Ray
    "ray._raylet.Config": "2.60.0",  # Ray's config, read again once RAY_AUTH_MODE is set after the import
    "ray.serve._private.replica.add_port_to_grpc_server": "2.60.0",  # a Serve replica's inter-deployment gRPC bind
}


def owner(name: str) -> tuple[Any, str] | None:
    """(the module or object that holds ``name``'s last part, that part), to read or to set it; None when Ray (or
    the part before) is gone. ``name`` must be one of :data:`PRIVATE_NAMES`."""
    if name not in PRIVATE_NAMES:
        raise KeyError(f"{name}: not a private Ray name rlbench has checked (rlbench.ray_facts.private.PRIVATE_NAMES)")
    parts = name.split(".")
    for cut in range(len(parts) - 1, 0, -1):  # the longest module prefix, then attributes
        try:
            held: Any = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        for part in parts[cut:-1]:
            held = getattr(held, part, None)
            if held is None:
                return None
        return held, parts[-1]
    return None


def resolve(name: str) -> Any | None:
    """The object ``name`` (one of :data:`PRIVATE_NAMES`) is in this process's Ray, or None when it is gone (or
    unset: the local node before ``ray.init``)."""
    found = owner(name)
    return None if found is None else getattr(found[0], found[1], None)


def local_node() -> Any | None:
    """This process's local Ray node (``_global_node``), or None (no Ray, not connected, or the name is gone)."""
    return resolve("ray._private.worker._global_node")


def session_dir() -> str | None:
    """The local Ray session's folder (its name is in every Ray system process's command line), or None."""
    node = local_node()
    try:
        return None if node is None else str(node.get_session_dir_path())
    except Exception:  # noqa: BLE001 - no node (None has no such method), or a Ray that renamed it
        return None


def job_actors(job_id_hex: str) -> dict[str, dict[str, Any]]:
    """The GCS actor table of one job (actor id -> record: ``ActorClassName``, ``Pid``, ``State``, ``Address``
    with ``NodeID``), read without the dashboard; raises when the name is gone (the caller records the error)."""
    import ray

    actors = resolve("ray._private.state.actors")
    if actors is None:
        raise RuntimeError(f"ray {ray.__version__} has no ray._private.state.actors (checked against 2.60.0)")
    return actors(job_id=ray.JobID.from_hex(job_id_hex))
