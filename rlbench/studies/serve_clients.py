"""The closed-loop clients of ``rlbench servebench``: one Ray actor each (``ray::ServebenchClient``).

The paper's clients were simulators in the same Ray application as the policy server; here every path is
driven by the same client actors, so what differs between paths is the server side and the way there:

- ``inprocess``, ``connectors``: the client loads the model itself and calls it (the ceiling);
- ``actor``, ``actor_inflight``: a Ray actor method call with the states as its argument (the object store
  for large ones), 1 or k requests outstanding;
- ``serve_handle``: a Ray Serve ``DeploymentHandle`` call, no HTTP;
- ``serve_json``, ``serve_bytes``, ``serve_batched``: HTTP to Serve's proxy on 127.0.0.1 (keep-alive);
- ``rest_json``, ``rest_bytes``: HTTP to the REST control (no Ray).

Every request carries the same states (drawn once per cell from its seed, so every path sees the same
ones), encoded anew for each request as a client would; the first answer's actions are kept as a digest,
so a run can show that every path computed the same actions.
"""

from __future__ import annotations

import hashlib
import http.client
import json
import os
import pickle
import time
from collections.abc import Callable
from typing import Any

import numpy as np

from rlbench.studies.serve_loop import closed_loop


def pickled_bytes(*objects: Any) -> int:
    """Bytes of ``objects`` in pickle protocol 5, out-of-band buffers included: what Ray's serializer
    moves for them, less its own framing."""
    buffers: list[int] = []
    inband = len(pickle.dumps(objects, protocol=5, buffer_callback=lambda b: buffers.append(b.raw().nbytes)))
    return inband + sum(buffers)


class ServebenchClient:
    """One closed-loop client; :meth:`prepare` a cell's path, then :meth:`run` it."""

    def __init__(self, checkpoints: dict[str, str], threads: int = 1):
        self.checkpoints = checkpoints
        self.threads = threads
        self._books: dict[bool, Any] = {}
        self._handle: Any = None  # a Serve deployment handle, made at the first request
        self._conn: http.client.HTTPConnection | None = None
        self._call: tuple[Callable[[], Any], Callable[[Any], Any]] | None = None
        self._batch = 1
        self._digest: str | None = None

    def pid(self) -> int:
        return os.getpid()

    def _book(self, connectors: bool):
        if connectors not in self._books:
            from rlbench.studies.serve_policies import PolicyBook

            self._books[connectors] = PolicyBook(self.checkpoints, connectors=connectors, threads=self.threads)
        return self._books[connectors]

    def _http(self, port: int) -> http.client.HTTPConnection:
        if self._conn is not None:
            self._conn.close()
        self._conn = http.client.HTTPConnection("127.0.0.1", port, timeout=600)
        return self._conn

    def prepare(
        self, path: str, model: str, batch: int, input_floats: int, seed: int, servers: dict[str, Any]
    ) -> dict[str, Any]:
        """Get ready to send ``path``'s requests of ``batch`` states; returns ``bytes_per_request``."""
        states = np.random.default_rng(seed).uniform(-1.0, 1.0, (batch, input_floats)).astype(np.float32)
        self._batch, self._digest = batch, None
        size: int | None = 0
        if path in ("inprocess", "connectors"):
            book = self._book(path == "connectors")
            call = lambda: book.act(model, states)  # noqa: E731
            issue, collect = call, (lambda answer: answer)
        elif path in ("actor", "actor_inflight"):
            import ray

            actor = servers["actor"]
            issue, collect = (lambda: actor.infer.remote(model, states)), ray.get
            size = None  # known after the first answer (:meth:`run`)
        elif path == "serve_handle":
            from ray import serve

            from rlbench.studies.serve_deploy import APP_NAME, DEPLOYMENT

            if self._handle is None:
                self._handle = serve.get_deployment_handle(DEPLOYMENT, app_name=APP_NAME)
            handle = self._handle
            issue, collect = (lambda: handle.infer.remote(model, states)), (lambda response: response.result())
            size = None
        else:
            issue, collect, size = self._http_call(path, model, states, servers)
        self._call = (issue, collect)
        self._size = size
        self._states = states
        return {"bytes_per_request": size}

    def _http_call(self, path: str, model: str, states: np.ndarray, servers: dict[str, Any]):
        from rlbench.studies.serve_deploy import ROUTE_PREFIX

        server, fmt = path.split("_", 1)
        port = servers["serve_port" if server == "serve" else "rest_port"]
        prefix = ROUTE_PREFIX if server == "serve" else ""
        conn = self._http(port)
        url = f"{prefix}/{fmt}/{model}"
        json_body = fmt == "json"
        headers = {"Content-Type": "application/json" if json_body else "application/octet-stream"}

        def issue():
            body = json.dumps({"observation": states.tolist()}).encode() if json_body else states.tobytes()
            conn.request("POST", url, body, headers)
            response = conn.getresponse()
            data = response.read()
            if response.status != 200:
                raise RuntimeError(f"HTTP {response.status} from {path}: {data[:200]!r}")
            self._size = len(body) + len(data)
            return (
                np.asarray(json.loads(data)["action"], dtype=np.int64) if json_body else np.frombuffer(data, np.int64)
            )

        return issue, (lambda answer: answer), None

    def _check(self, answer: Any) -> None:
        actions = np.asarray(answer)
        if actions.shape != (self._batch,):
            raise RuntimeError(f"expected {self._batch} actions, got an answer of shape {actions.shape}")
        if self._digest is None:
            self._digest = hashlib.sha256(actions.astype(np.int64).tobytes()).hexdigest()[:16]
            if self._size is None:
                self._size = pickled_bytes(self._states) + pickled_bytes(actions)

    def run(
        self, start_at: float, seconds: float, min_requests: int, max_run_s: float, in_flight: int = 1
    ) -> dict[str, Any]:
        """The closed loop, counting from ``start_at`` (``time.time()``) for ``seconds``; the result as a dict
        (latencies in ``latencies_ms``) with ``bytes_per_request``, ``actions_digest`` and ``pid`` added."""
        assert self._call is not None, "prepare() comes first"
        issue, collect = self._call
        offset = time.time() - time.perf_counter()  # wall time -> this process's perf_counter
        start = start_at - offset
        result = closed_loop(
            issue,
            collect,
            batch=self._batch,
            clock=time.perf_counter,
            start=start,
            stop=start + seconds,
            give_up=start + max_run_s,
            min_requests=min_requests,
            in_flight=in_flight,
            check=self._check,
        )
        out = result.as_dict()
        out["latencies_ms"] = [1000.0 * x for x in out.pop("latencies_s")]
        out.update(bytes_per_request=self._size, actions_digest=self._digest, pid=os.getpid())
        return out
