"""What every server of ``rlbench servebench`` runs, the same in each: the models, the bodies, the answers.

A server holds every model of the run (:class:`PolicyBook`, loaded through the adapter's
:class:`~rlbench.adapters.base.Serving`, one torch thread) and answers one request with one forward pass
of its whole batch. Over HTTP a request names its body's format and model in its path
(``.../<format>/<model>``):

- ``json``: ``{"observation": [[...], ...]}`` in, ``{"action": [...]}`` out: RLlib's own Serve example's
  format (``rllib/examples/ray_serve/``), with a batch of states instead of one;
- ``bytes``: the states' float32 bytes in (row-major, the model's state size per row), the actions' int64
  bytes out;
- ``batched``: ``bytes``, through Ray Serve's ``@serve.batch`` (Serve only).

Text from a request is data: a bad body or an unknown model is answered 400 with a short reason, never
evaluated. No Ray here (the REST control imports this module and no Ray runtime).
"""

from __future__ import annotations

import json
import os
from typing import Any

import numpy as np

from rlbench.adapters import get_adapter

#: Body formats a server answers, by the path segment that names them.
FORMATS = ("json", "bytes", "batched")


class BadRequest(ValueError):
    """A request a server refuses (answered 400 with this message)."""


class PolicyBook:
    """Every model of the run, loaded once in this process: model name -> policy."""

    def __init__(self, checkpoints: dict[str, str], *, connectors: bool = False, threads: int = 1):
        missing = [path for path in checkpoints.values() if not os.path.isdir(path)]
        if missing:  # said before the framework is imported (seconds): a server that cannot start stops at once
            raise FileNotFoundError(f"no checkpoint folder at {missing[0]}")
        serving = get_adapter().serving()
        assert serving is not None, "servebench serves the default framework's policy, which has one"
        self.policies = {
            name: serving.load_policy(path, connectors=connectors, threads=threads)
            for name, path in checkpoints.items()
        }

    def policy(self, model: str):
        try:
            return self.policies[model]
        except KeyError:
            raise BadRequest(f"unknown model {model[:40]!r}") from None

    def act(self, model: str, states: np.ndarray) -> np.ndarray:
        """One forward pass over the batch: int64 actions, one per state."""
        return np.asarray(self.policy(model).act(states), dtype=np.int64)

    def states_from_bytes(self, model: str, body: bytes) -> np.ndarray:
        n = self.policy(model).input_floats
        if not body or len(body) % (4 * n):
            raise BadRequest(f"body of {len(body)} bytes is not whole states of {n} float32")
        return np.frombuffer(body, dtype=np.float32).reshape(-1, n)

    def states_from_json(self, model: str, body: bytes) -> np.ndarray:
        n = self.policy(model).input_floats
        try:
            states = np.asarray(json.loads(body)["observation"], dtype=np.float32)
        except (ValueError, KeyError, TypeError) as e:
            raise BadRequest(f"not a JSON body with an observation list ({type(e).__name__})") from None
        if states.ndim != 2 or states.shape[1] != n or len(states) == 0:
            raise BadRequest(f"observation is not a list of states of {n} floats")
        return states

    def answer_http(self, fmt: str, model: str, body: bytes) -> tuple[bytes, str]:
        """(body, content type) of the answer to an unbatched request."""
        if fmt == "json":
            actions = self.act(model, self.states_from_json(model, body))
            return json.dumps({"action": actions.tolist()}).encode(), "application/json"
        if fmt == "bytes":
            return self.act(model, self.states_from_bytes(model, body)).tobytes(), "application/octet-stream"
        raise BadRequest(f"unknown format {fmt[:20]!r}")


def route(path: str) -> tuple[str, str]:
    """``/prefix/<format>/<model>`` -> (format, model)."""
    parts = [p for p in path.split("/") if p]
    if len(parts) < 2 or parts[-2] not in FORMATS:
        raise BadRequest("path must end in /<format>/<model>, format one of " + ", ".join(FORMATS))
    return parts[-2], parts[-1]


def act_in_groups(book: PolicyBook, items: list[tuple[str, np.ndarray]]) -> list[np.ndarray]:
    """Several requests' batches in one forward pass per model (``@serve.batch``'s handler): the answers
    in the requests' order."""
    out: list[Any] = [None] * len(items)
    for model in dict.fromkeys(m for m, _ in items):
        idx = [i for i, (m, _) in enumerate(items) if m == model]
        actions = book.act(model, np.concatenate([items[i][1] for i in idx]))
        at = 0
        for i in idx:
            n = len(items[i][1])
            out[i] = actions[at : at + n]
            at += n
    return out
