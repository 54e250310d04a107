"""Running ``rlbench servebench``: one private Ray runtime, the models, the servers, the clients, the schedule.

:class:`ServebenchRun` starts everything once (a private local Ray runtime on 127.0.0.1 with token
authentication on, as the command prepares it), then runs the schedule
(:func:`~rlbench.studies.servebench.schedule`) and keeps every run's record in ``records`` as it goes, so
an interrupted run still has what it measured. :meth:`ServebenchRun.close` stops every process it started
(the clients, the Ray actor, Serve's replicas, proxy and controller, the REST server, Ray itself), each step
on its own, so one that fails does not keep the next from running; the command calls it in a ``finally``
(Ctrl-C included). A server that does not start fails its paths' runs with its reason and the others run; a
run that fails or outlives its time records why, and its clients are replaced.
"""

from __future__ import annotations

import os
import re
import time
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rlbench.adapters import get_adapter
from rlbench.ray_facts import private
from rlbench.studies.serve_calibrate import CALIBRATION_BATCH, Calibration, forward_ms, search_width
from rlbench.studies.serve_loop import percentile
from rlbench.studies.servebench import MODELS, PATH_SERVER, CpuProbe, ServebenchConfig, Slot, cell_seed, schedule

if TYPE_CHECKING:
    from rlbench.studies.serve_rest import RestServer

#: Seconds between the clients' start and the start of counting: they send warm-up requests meanwhile.
LEAD_S = 0.2
#: Seconds a client may take to get ready for a cell (its first in-process call loads the models).
PREPARE_TIMEOUT_S = 300.0


def short_error(e: BaseException) -> str:
    """One line for a record: the exception's type and the start of its message (Ray wraps the remote one and
    colours it: the colour codes are dropped)."""
    text = " ".join(re.sub(r"\x1b\[[0-9;]*m", "", str(e)).split())
    return f"{type(e).__name__}: {text[:300]}" if text else type(e).__name__


class ServebenchRun:
    """One servebench run: started by :meth:`setup`, measured by :meth:`run`, stopped by :meth:`close`."""

    def __init__(
        self,
        config: ServebenchConfig,
        workdir: Path,
        probe: CpuProbe,
        progress: Callable[[int, int, dict[str, Any]], None] | None = None,
        say: Callable[[str], None] = lambda _line: None,
        after_start: Callable[[], Any] = lambda: None,
    ):
        self.config = config
        self.workdir = Path(workdir)
        self.probe = probe
        self.progress = progress or (lambda _i, _n, _r: None)
        self.say = say
        self.after_start = after_start
        """Called once Ray is up (Ray's driver puts its own SIGTERM handler in: the command puts its back)."""
        self.records: list[dict[str, Any]] = []
        self.setup_s: dict[str, float] = {}
        self.policy: dict[str, Any] | None = None
        self.calibration: list[Calibration] = []
        self.checkpoints: dict[str, str] = {}
        self.servers: dict[str, Any] = {}
        self.server_errors: dict[str, str] = {}
        self.pids: dict[str, Any] = {}
        self.session_dir: str | None = None
        self._ray = False
        self._serve = False
        self._rest: RestServer | None = None
        self._clients: list[Any] = []

    # -- start -----------------------------------------------------------------------------------

    def _timed(self, name: str, step: Callable[..., Any]) -> Any:  # `...`: a lambda binding its loop variable fits
        started = time.perf_counter()
        try:
            return step()
        finally:
            self.setup_s[name] = round(time.perf_counter() - started, 3)

    def setup(self) -> None:
        """Ray, the models (trained, calibrated), the servers its paths need, the clients."""
        import ray

        adapter = get_adapter()
        adapter.quiet_logging()
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.say("starting a private Ray runtime (127.0.0.1, token authentication on)")
        self._timed(
            "ray_init_s",
            lambda: ray.init(
                address="local",
                num_cpus=max(1, len(os.sched_getaffinity(0))),
                include_dashboard=False,
                log_to_driver=False,
                logging_level="ERROR",
                namespace="servebench",
                object_store_memory=1 << 30,
            ),
        )
        self._ray = True
        self.after_start()
        self.session_dir = private.session_dir()  # only to find leftovers: None loses that check, nothing more
        serving = adapter.serving()
        assert serving is not None, "servebench serves the default framework's policy, which has one"
        models = [MODELS[size] for size in self.config.inputs]
        for model in models:
            folder = str(self.workdir / "checkpoints" / model.name)
            if model.target_ms is None:
                self.say(f"training the {model.name} policy ({self.config.train_iterations} PPO iterations)")
                self.policy = self._timed(
                    "train_s",
                    lambda folder=folder: serving.train_policy(
                        folder, seed=self.config.seed, iterations=self.config.train_iterations
                    ),
                )
                self.checkpoints[model.name] = self.policy["checkpoint"]
            else:
                self.say(f"calibrating the {model.name} model to {model.target_ms:g} ms per batch of 64")
                cal = self._timed(
                    f"calibrate_{model.name}_s",
                    lambda model=model, folder=folder: self._calibrate(serving, model, folder),
                )
                self.calibration.append(cal)
                self.checkpoints[model.name] = cal.checkpoint
        for server in self.config.servers():
            self.say(f"starting the {server} server")
            try:
                self._timed(f"{server}_s", lambda server=server: self._start(server))
            except Exception as e:  # noqa: BLE001 - its paths' rows say why; the others run
                self.server_errors[server] = short_error(e)
                self.say(f"the {server} server did not start: {self.server_errors[server]}")
        self._timed("clients_s", self._start_clients)

    def _calibrate(self, serving, model, folder: str) -> Calibration:
        import numpy as np

        started = time.perf_counter()
        states = (
            np.random.default_rng(self.config.seed)
            .uniform(-1, 1, (CALIBRATION_BATCH, model.input_floats))
            .astype(np.float32)
        )
        cal = Calibration(model.name, model.input_bytes, model.target_ms, model.depth, model.residual)

        def save(width: int) -> dict[str, Any]:
            return serving.save_model(
                folder,
                input_floats=model.input_floats,
                width=width,
                depth=model.depth,
                residual=model.residual,
                seed=self.config.seed,
            )

        def probe(width: int) -> float:
            return forward_ms(serving.load_policy(save(width)["checkpoint"], threads=1).act, states)

        cal.width, cal.probes = search_width(
            probe, target_ms=model.target_ms, start=model.start_width, exponent=model.exponent, step=model.width_step
        )
        saved = save(cal.width)
        cal.checkpoint, cal.parameters = saved["checkpoint"], saved["parameters"]
        cal.forward_ms = next(p.forward_ms for p in cal.probes if p.width == cal.width)
        cal.seconds = time.perf_counter() - started
        return cal

    def _start(self, server: str) -> None:
        if server == "actor":
            from rlbench.studies.serve_deploy import start_actor

            self.servers["actor"], self.pids["actor"] = start_actor(self.checkpoints)
        elif server == "serve":
            from rlbench.studies.serve_deploy import start_serve

            self._serve = True
            facts = start_serve(self.checkpoints, max_batch=max(self.config.clients))
            self.servers["serve_port"] = facts["port"]
            self.pids["serve_replica"] = facts["pid"]
            self.pids["serve_grpc_on_loopback"] = facts["grpc_on_loopback"]
        else:
            from rlbench.studies.serve_rest import RestServer

            (self.workdir / "logs").mkdir(exist_ok=True)
            self._rest = RestServer(self.checkpoints, self.workdir / "logs" / "rest_server.log")
            self.pids["rest"] = self._rest.start()
            self.servers["rest_port"] = self._rest.port

    def _start_clients(self) -> None:
        import ray

        from rlbench.studies.serve_clients import ServebenchClient

        cls = ray.remote(num_cpus=0)(ServebenchClient)
        self._clients = [cls.remote(self.checkpoints) for _ in range(max(self.config.clients))]
        self.pids["clients"] = ray.get([c.pid.remote() for c in self._clients], timeout=PREPARE_TIMEOUT_S)

    def _replace_clients(self) -> None:
        import ray

        for client in self._clients:
            try:
                ray.kill(client)
            except Exception:  # noqa: BLE001 - already dead
                pass
        self._start_clients()

    # -- measure ---------------------------------------------------------------------------------

    def run(self) -> list[dict[str, Any]]:
        """Every run of the schedule; each record appended to ``records`` as soon as it is measured."""
        slots = schedule(self.config)
        for i, slot in enumerate(slots):
            record = self._run_slot(slot)
            self.records.append(record)
            self.progress(i + 1, len(slots), record)
        return self.records

    def _run_slot(self, slot: Slot) -> dict[str, Any]:
        import ray

        model = MODELS[slot.input_bytes]
        record: dict[str, Any] = {
            "path": slot.path,
            "batch": slot.batch,
            "input_bytes": slot.input_bytes,
            "clients": slot.clients,
            "repeat": slot.repeat,
            "position": slot.position,
            "model": model.name,
            "error": None,
        }
        server = PATH_SERVER[slot.path]
        if server in self.server_errors:
            record["error"] = f"the {server} server did not start: {self.server_errors[server]}"
            return record
        clients = self._clients[: slot.clients]
        cfg = self.config
        in_flight = cfg.in_flight if slot.path == "actor_inflight" else 1
        began = time.perf_counter()
        try:
            ray.get(
                [
                    c.prepare.remote(
                        slot.path,
                        model.name,
                        slot.batch,
                        model.input_floats,
                        cell_seed(cfg, slot.batch, slot.input_bytes),
                        self.servers,
                    )
                    for c in clients
                ],
                timeout=PREPARE_TIMEOUT_S,
            )
            start_at = time.time() + LEAD_S
            refs = [c.run.remote(start_at, cfg.seconds, cfg.min_requests, cfg.max_run_s, in_flight) for c in clients]
            time.sleep(max(0.0, start_at - time.time()))
            self.probe.start()
            window = time.perf_counter()
            results = ray.get(refs, timeout=cfg.max_run_s + LEAD_S + 120)
            window = time.perf_counter() - window
            cpu_s = self.probe.stop()
        except ray.exceptions.GetTimeoutError as e:
            record["error"] = f"no answer within its time limit ({short_error(e)})"
            self._replace_clients()
            return record
        except (ray.exceptions.RayError, RuntimeError, ValueError) as e:
            record["error"] = short_error(e)
            if isinstance(e, ray.exceptions.RayActorError):
                self._replace_clients()
            return record
        record.update(summarize(results, cpu_s, window))
        record["run_s"] = time.perf_counter() - began
        return record

    # -- stop ------------------------------------------------------------------------------------

    def close(self) -> list[str]:
        """Stop everything started, each step on its own; returns what failed to stop (empty: all stopped)."""
        problems = []
        steps: list[tuple[str, Callable[[], object]]] = []
        import ray

        if self._ray:
            steps.append(("clients", lambda: [ray.kill(c) for c in self._clients]))
            if "actor" in self.servers:
                steps.append(("actor", lambda: ray.kill(self.servers["actor"])))
        if self._serve:
            from rlbench.studies.serve_deploy import stop_serve

            steps.append(("serve", stop_serve))
        if self._rest is not None:
            steps.append(("rest", self._rest.stop))
        if self._ray:
            steps.append(("ray", ray.shutdown))
        for name, step in steps:
            try:
                step()
            except Exception as e:  # noqa: BLE001 - keep stopping the rest
                problems.append(f"{name}: {short_error(e)}")
                traceback.print_exc()
        self._clients, self._serve, self._rest, self._ray = [], False, None, False
        return problems


def summarize(results: list[dict[str, Any]], cpu_s: dict[str, float], window_s: float) -> dict[str, Any]:
    """One run's figures from its clients' results: states/s summed over clients, latency percentiles over
    every counted request, CPU-seconds per 1,000 states per role."""
    rates = [r["states_per_s"] for r in results]
    latencies = [x for r in results for x in r["latencies_ms"]]
    states = sum(r["states"] for r in results)
    return {
        "states_per_s": sum(rates) if None not in rates else None,
        "requests": sum(r["requests"] for r in results),
        "states": states,
        "short": any(r["short"] for r in results),
        "p50_ms": percentile(latencies, 50),
        "p99_ms": percentile(latencies, 99),
        "mean_ms": sum(latencies) / len(latencies) if latencies else None,
        "bytes_per_request": results[0]["bytes_per_request"],
        "actions_digest": results[0]["actions_digest"],
        "window_s": window_s,
        "cpu_s": cpu_s,
        "cpu_s_per_1000_states": {role: 1000.0 * s / states for role, s in cpu_s.items()} if states else {},
    }
