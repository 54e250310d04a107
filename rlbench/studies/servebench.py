"""Serving a trained policy (Ray OSDI'18, section 5.2.2, Table 3): in-process vs Ray actor vs Ray Serve vs REST.

The paper served a policy to clients on the same machine, batches of 64 states, from a Ray actor and from
Clipper over REST: 6,200 against 4,400 states/s with a residual network at 10 ms on 4 KB states, 6,900
against 290 with a small fully connected network at 5 ms on 100 KB states. servebench asks the same of
today's stack, on a trained RLlib policy (:mod:`rlbench.studies.servebench_run` runs it):

- the models, by state size (:data:`MODELS`): 16 B, the CartPole policy a short PPO run trains and saves;
  4 KiB and 100 KiB, untrained models whose forward pass over 64 states is calibrated on this CPU to the
  paper's 10 ms and 5 ms (:mod:`rlbench.studies.serve_calibrate`). Every path loads them from their
  checkpoints (the adapter's ``load_policy``: RLlib's ``RLModule.from_checkpoint``, ``forward_inference``);
- the paths (:data:`PATHS`), each driven by the same closed-loop client actors
  (:mod:`rlbench.studies.serve_clients`, :mod:`rlbench.studies.serve_loop`);
- the grid: batch x state size x clients, every cell once per repeat, the paths' order rotating by repeat
  (:func:`schedule`), so no path always runs first or last in a cell.

This module holds the study's definitions, pure: the paths, models and the paper's table, the config, the
order, the process roles. Nothing here starts anything.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any, Protocol

from rlbench.adapters.roles import Role, RoleRules, classify
from rlbench.spec.seeds import derive_seed

#: Every path, in the order tables and figures list them; what each is (docs/STUDIES.md).
PATHS: dict[str, str] = {
    "inprocess": "forward pass in the client's own process (the ceiling)",
    "connectors": "the same, with RLlib's env-to-module and module-to-env connector pipelines around it",
    "actor": "a Ray actor holding the model, one request in flight",
    "actor_inflight": "the same Ray actor, k requests in flight",
    "serve_handle": "a Ray Serve deployment through its handle, no HTTP",
    "serve_json": "Ray Serve over HTTP, JSON body (RLlib's Serve example's format)",
    "serve_bytes": "Ray Serve over HTTP, raw float32 bytes",
    "serve_batched": "Ray Serve over HTTP, raw bytes, through @serve.batch",
    "rest_json": "a plain ASGI server (Starlette on uvicorn, no Ray), JSON body: the paper's Clipper stand-in",
    "rest_bytes": "the same ASGI server, raw float32 bytes",
}
#: Which server a path needs (None: the client computes itself).
PATH_SERVER: dict[str, str | None] = {
    "inprocess": None,
    "connectors": None,
    "actor": "actor",
    "actor_inflight": "actor",
    "serve_handle": "serve",
    "serve_json": "serve",
    "serve_bytes": "serve",
    "serve_batched": "serve",
    "rest_json": "rest",
    "rest_bytes": "rest",
}


@dataclass(frozen=True)
class Model:
    """The model served for one state size."""

    name: str
    """servebench's name for it (``cartpole``, ``residual``, ``fc``)."""
    input_bytes: int
    """Bytes of one state (float32)."""
    target_ms: float | None
    """The paper's forward time per batch of 64 it is calibrated to; None: the trained policy, as it is."""
    residual: bool = False
    """Residual blocks (the paper's residual network's stand-in)."""
    depth: int = 2
    """Hidden layers (residual blocks)."""
    start_width: int = 64
    """The calibration's first width."""
    exponent: float = 1.0
    """How forward time grows with the width, the calibration's first guess (1: the input layer dominates)."""
    width_step: int = 8
    """Widths the calibration tries are multiples of this."""

    @property
    def input_floats(self) -> int:
        return self.input_bytes // 4


#: State size (bytes) -> the model served for it.
MODELS: dict[int, Model] = {
    16: Model("cartpole", 16, None),
    4096: Model("residual", 4096, 10.0, residual=True, depth=4, start_width=384, exponent=2.0),
    102400: Model("fc", 102400, 5.0, residual=False, depth=2, start_width=64, exponent=1.0, width_step=2),
}

#: Ray OSDI'18, Table 3: states/s (mean +- the paper's spread) for clients sending batches of 64 states on
#: one p3.8xlarge; the models took 10 ms and 5 ms per batch there.
PAPER_TABLE3: dict[str, Any] = {
    "source": "Moritz et al., Ray: A Distributed Framework for Emerging AI Applications, OSDI 2018, Table 3",
    "batch": 64,
    "rows": [
        {
            "workload": "residual network, 10 ms, 4 KB states",
            "input_bytes": 4096,
            "forward_ms": 10.0,
            "clipper_states_per_s": 4400,
            "clipper_pm": 15,
            "ray_states_per_s": 6200,
            "ray_pm": 21,
        },
        {
            "workload": "small fully connected network, 5 ms, 100 KB states",
            "input_bytes": 102400,
            "forward_ms": 5.0,
            "clipper_states_per_s": 290,
            "clipper_pm": 1.3,
            "ray_states_per_s": 6900,
            "ray_pm": 150,
        },
    ],
    #: What differs between the paper's setup and this study's, in words.
    "differences": [
        "hardware: a p3.8xlarge (32 vCPUs, 4 V100 GPUs) then; here the cores this machine has, no GPU, shared by "
        "clients and servers alike",
        "models: a residual (convolutional) network and a small fully connected network, TensorFlow, on their "
        "hardware; here untrained PyTorch RLModules (residual fully connected blocks; RLlib's default MLP) whose "
        "width is calibrated so that 64 states take 10 ms and 5 ms on this CPU with one thread",
        "Ray side: a Ray 0.x actor called by simulator tasks in the same application; here Ray 2.60 actor calls "
        "from client actors, and Ray Serve (handle and HTTP) besides",
        "REST side: Clipper 0.2 (its Redis, its query frontend and a model container); here one Starlette app on "
        "uvicorn with the model in its own process, JSON as Clipper took it and raw bytes",
        "clients: the paper's count is not stated; here 1 and 2 closed-loop client actors, one request in flight "
        "each (k for actor_inflight)",
    ],
}

REST_MARKER = "rlbench.studies.serve_rest"
#: How a servebench run's processes are named (the one classifier, :mod:`rlbench.adapters.roles`): its actors'
#: titles, the REST server by its module, beside a Ray runtime (Ray's own processes and its workers that are no actor
#: yet: ``ray_system``, read again until they settle).
ROLE_RULES = RoleRules(
    titles=(
        ("ray::ServebenchClient", "client"),
        ("ray::ServebenchPolicyActor", "server"),
        ("ray::ServeReplica", "server"),
        ("ray::ProxyActor", "proxy"),
        ("ray::ServeController", "controller"),
    ),
    markers=((REST_MARKER, "server"),),
    ray=True,
)
#: The roles CPU time is reported by (CPU-seconds per 1,000 states per role).
ROLES = ROLE_RULES.roles


class ServeRoles:
    """A servebench process's role, for the utilization sampler (the shape of the adapters' ``classify_process``)."""

    roles = ROLES

    def classify_process(self, cmdline: list[str], *, is_driver: bool) -> Role:
        return classify(cmdline, is_driver=is_driver, rules=ROLE_RULES)


class CpuProbe(Protocol):
    """CPU-seconds per role over a window (the command gives one built on the utilization sampler)."""

    def start(self) -> None:
        """Open a window now."""

    def stop(self) -> dict[str, float]:
        """Close it: role -> CPU-seconds its processes used in the window."""


@dataclass(frozen=True)
class ServebenchConfig:
    """One servebench run's grid and measurement (the command's flags)."""

    paths: tuple[str, ...] = tuple(PATHS)
    """Paths to measure (:data:`PATHS`)."""
    batches: tuple[int, ...] = (1, 8, 64, 256)
    """States per request."""
    inputs: tuple[int, ...] = tuple(MODELS)
    """State sizes in bytes (:data:`MODELS`): each picks its model."""
    clients: tuple[int, ...] = (1, 2)
    """Closed-loop clients at once."""
    seconds: float = 0.5
    """Seconds each client counts answers for, per run."""
    repeats: int = 3
    """Runs of every cell, the paths' order rotating."""
    in_flight: int = 4
    """Requests outstanding per client on ``actor_inflight``."""
    min_requests: int = 3
    """Answers a client waits for past ``seconds`` before it stops (a slow path runs longer, up to
    ``max_run_s``)."""
    max_run_s: float = 20.0
    """A run stops sending after this many seconds whatever it has (its row says it ran short)."""
    seed: int = 0
    """Seeds the training, the untrained models and the states."""
    train_iterations: int = 3
    """PPO iterations (1,000 env steps each) of the trained policy."""

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    def problems(self) -> list[str]:
        """What is wrong with it, in words (empty: fine)."""
        out = []
        unknown = [p for p in self.paths if p not in PATHS]
        if unknown or not self.paths:
            out.append(f"--paths: unknown {', '.join(unknown) or '(none given)'}; choose from {', '.join(PATHS)}")
        if [i for i in self.inputs if i not in MODELS] or not self.inputs:
            out.append(
                f"--inputs: each must be one of {', '.join(map(str, MODELS))} (bytes per state; each has its model)"
            )
        if not self.batches or min(self.batches) < 1 or max(self.batches) > 4096:
            out.append("--batches: whole numbers from 1 to 4096")
        if not self.clients or min(self.clients) < 1 or max(self.clients) > 16:
            out.append("--clients: whole numbers from 1 to 16")
        if not 0.05 <= self.seconds <= 600:
            out.append("--seconds: from 0.05 to 600")
        if not 1 <= self.repeats <= 100:
            out.append("--repeats: from 1 to 100")
        if not 1 <= self.in_flight <= 64:
            out.append("--in-flight: from 1 to 64")
        if self.max_run_s < self.seconds:
            out.append("--max-run-s must be at least --seconds")
        if not 1 <= self.train_iterations <= 1000:
            out.append("--train-iterations: from 1 to 1000")
        return out

    def servers(self) -> list[str]:
        """The servers its paths need, in start order."""
        return [s for s in ("actor", "serve", "rest") if any(PATH_SERVER[p] == s for p in self.paths)]


@dataclass(frozen=True)
class Slot:
    """One run of the schedule."""

    repeat: int
    position: int
    """Its place among the paths of its cell in this repeat (0: first)."""
    path: str
    batch: int
    input_bytes: int
    clients: int


def schedule(config: ServebenchConfig) -> list[Slot]:
    """Every run in order: repeat by repeat, cell by cell (state size, batch, clients); within a cell the paths
    rotate, repeat r starting at path r mod P, so each path runs first, in the middle and last alike."""
    paths = list(config.paths)
    out = []
    for r in range(config.repeats):
        order = paths[r % len(paths) :] + paths[: r % len(paths)]
        for size in config.inputs:
            for batch in config.batches:
                for clients in config.clients:
                    out += [Slot(r, i, p, batch, size, clients) for i, p in enumerate(order)]
    return out


def cell_seed(config: ServebenchConfig, batch: int, input_bytes: int) -> int:
    """The seed of a cell's states: the same for every path, repeat and client count, so their actions agree (the
    one derivation's ``cell`` sequence, :func:`rlbench.spec.seeds.derive_seed`, spelled as servebench first wrote
    it)."""
    return derive_seed(config.seed, batch, input_bytes, sequence="cell")
