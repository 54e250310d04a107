"""The Ray servers of ``rlbench servebench``: a Ray actor holding the models, and a Ray Serve deployment.

Both hold every model of the run (:class:`~rlbench.studies.serve_policies.PolicyBook`) and run one forward
at a time (the actor's default concurrency of 1; the deployment's async methods on its one event loop), as
the REST control does, so the paths differ by how a request travels and not by how many forwards overlap.
Neither reserves a CPU (``num_cpus=0``): the clients and servers share the machine's cores as the OS
schedules them.

Ray Serve 2.60 is started with its HTTP proxy on 127.0.0.1 and a port picked here, and each replica's
inter-deployment gRPC server (``ray/serve/_private/replica.py``: ``add_port_to_grpc_server(self._server,
"[::]:0")``, every interface, token-authenticated, unused unless ``RAY_SERVE_USE_GRPC_BY_DEFAULT=1``) is
moved to 127.0.0.1 by :func:`keep_replica_grpc_on_loopback` in the replica before it starts. That patches
a private name: if a Ray release renames it, the replica listens everywhere again and
tests/studies/test_servebench_e2e.py, which checks every listener of the run, says so.
"""

from __future__ import annotations

import os
import socket
from typing import Any

import numpy as np
from ray import serve

from rlbench.ray_facts import private
from rlbench.studies.serve_policies import BadRequest, PolicyBook, act_in_groups, route
from rlbench.studies.serve_rest import KEEP_ALIVE_S

#: The Serve application, its HTTP route prefix and its deployment.
APP_NAME = "servebench"
ROUTE_PREFIX = "/servebench"
DEPLOYMENT = "ServebenchPolicy"
#: The Ray actor's name (namespace of the run's job).
ACTOR_NAME = "servebench-policy"
#: ``@serve.batch``: the longest a request waits for others (seconds). Its batch size is the most clients of
#: the run (set when deployed): in a closed loop no more requests can be waiting at once.
BATCH_WAIT_S = 0.001


def keep_replica_grpc_on_loopback() -> bool:
    """Make this process's Serve replica bind its inter-deployment gRPC server on 127.0.0.1 (see the module);
    False when Ray's private name is gone (nothing patched)."""
    held = private.owner("ray.serve._private.replica.add_port_to_grpc_server")
    original = None if held is None else getattr(held[0], held[1], None)
    if held is None or original is None:
        return False
    replica = held[0]
    if getattr(original, "loopback_only", False):
        return True

    def on_loopback(server, address: str):
        if address.startswith("[::]:"):
            address = "127.0.0.1:" + address.rsplit(":", 1)[1]
        return original(server, address)

    vars(on_loopback)["loopback_only"] = True  # a function's own attribute (PEP 232), which mypy does not model
    replica.add_port_to_grpc_server = on_loopback
    return True


class ServebenchPolicyActor:
    """The Ray actor path's server (``ray::ServebenchPolicyActor``): ``infer`` is one forward pass."""

    def __init__(self, checkpoints: dict[str, str]):
        self.book = PolicyBook(checkpoints)

    def pid(self) -> int:
        return os.getpid()

    def infer(self, model: str, states: np.ndarray) -> np.ndarray:
        return self.book.act(model, states)


@serve.deployment(name=DEPLOYMENT, num_replicas=1, ray_actor_options={"num_cpus": 0}, max_ongoing_requests=16)
class ServebenchPolicy:
    """The Serve paths' server: ``infer`` through a handle; HTTP at ``/servebench/<format>/<model>``."""

    def __init__(self, checkpoints: dict[str, str], max_batch: int):
        self.loopback = keep_replica_grpc_on_loopback()
        self.book = PolicyBook(checkpoints)
        self.batched.set_max_batch_size(max_batch)

    def pid(self) -> dict[str, Any]:
        return {"pid": os.getpid(), "grpc_on_loopback": self.loopback}

    async def infer(self, model: str, states: np.ndarray) -> np.ndarray:
        return self.book.act(model, states)

    @serve.batch(max_batch_size=2, batch_wait_timeout_s=BATCH_WAIT_S)
    async def batched(self, items: list[tuple[str, np.ndarray]]) -> list[np.ndarray]:
        return act_in_groups(self.book, items)

    async def __call__(self, request):
        from starlette.responses import PlainTextResponse, Response

        try:
            fmt, model = route(request.url.path)
            body = await request.body()
            if fmt == "batched":
                actions = await self.batched((model, self.book.states_from_bytes(model, body)))
                return Response(actions.tobytes(), media_type="application/octet-stream")
            answer, media = self.book.answer_http(fmt, model, body)
        except BadRequest as e:
            return PlainTextResponse(str(e), status_code=400)
        return Response(answer, media_type=media)


def free_loopback_port() -> int:
    """A TCP port free on 127.0.0.1 now (the kernel's pick; Serve binds it a moment later)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_actor(checkpoints: dict[str, str]):
    """The actor path's server, started and loaded; returns (handle, pid)."""
    import ray

    actor = ray.remote(num_cpus=0)(ServebenchPolicyActor).options(name=ACTOR_NAME).remote(checkpoints)
    return actor, ray.get(actor.pid.remote(), timeout=300)


def start_serve(checkpoints: dict[str, str], max_batch: int) -> dict[str, Any]:
    """Ray Serve on 127.0.0.1 and the deployment, ready; returns ``port``, ``pid``, ``grpc_on_loopback``."""
    port = free_loopback_port()
    serve.start(
        http_options={"host": "127.0.0.1", "port": port, "keep_alive_timeout_s": KEEP_ALIVE_S},
        logging_config={"log_level": "WARNING"},
    )
    handle = serve.run(
        ServebenchPolicy.bind(checkpoints, max_batch),  # type: ignore[attr-defined]  # @serve.deployment made it one
        name=APP_NAME,
        route_prefix=ROUTE_PREFIX,
        logging_config={"log_level": "WARNING"},
    )
    return {"port": port, **handle.pid.remote().result(timeout_s=300)}


def stop_serve() -> None:
    """Serve's applications, replicas, proxy and controller shut down (Ray stays up)."""
    serve.shutdown()
