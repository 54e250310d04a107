"""``rlbench servebench``: a trained policy served in-process, by a Ray actor, by Ray Serve and by a plain ASGI
server (Ray OSDI'18, Table 3, asked today; docs/STUDIES.md).

Exit codes (rlbench.commands.exit_codes): 0 every run measured; 1 a run failed (its row says why; the others
ran); 2 bad input, or the ``serve`` extra is not installed (nothing run or written); 130 interrupted (what was
measured is written, every process started is stopped).
"""

from __future__ import annotations

import argparse
import datetime
import importlib
import os
import shlex
import signal
import sys
import time
from pathlib import Path
from typing import Any

from rich.console import Console

from rlbench.commands._common import bad_input, int_list, own_path, say
from rlbench.commands.exit_codes import EXIT_FAILED, EXIT_INTERRUPTED, EXIT_OK

NAME = "servebench"
HELP = "serve a trained policy: in-process vs Ray actor vs Ray Serve vs REST (Ray OSDI'18 Table 3)"
EPILOG = """\
examples:
  rlbench servebench                                          # the whole grid (about 15 minutes on 2 cores)
  rlbench servebench --batches 64 --inputs 4096,102400        # the paper's two workloads only
  rlbench servebench --paths inprocess,actor,rest_json --batches 1,64 --clients 1 --repeats 3 --out /tmp/sb

paths: inprocess, connectors, actor, actor_inflight, serve_handle, serve_json, serve_bytes, serve_batched,
rest_json, rest_bytes (docs/STUDIES.md says what each is). --inputs picks the models: 16 (the CartPole policy a
short PPO run trains), 4096 and 102400 (calibrated here to the paper's 10 ms and 5 ms per batch of 64).

needs the serve extra: pip install -e ".[serve]" (Ray Serve, Starlette, uvicorn). Every server listens on
127.0.0.1 only; Ray's token authentication stays on; every process started is stopped, Ctrl-C included.

results (DIR: --out, default results/servebench/<timestamp>/):
  servebench.json        every run, every row, the calibration, the paper's Table 3 and the setup
  servebench.html / .md  the paper beside this machine, the verdicts, the figures (plots/), every row

exit codes: 0 done; 1 a run failed (its row says why); 2 bad input or the serve extra missing; 130 interrupted."""

#: What the ``serve`` extra installs and servebench imports.
SERVE_EXTRA_MODULES = ("starlette", "uvicorn", "ray.serve")


def setup_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--paths", default=None, help="comma-separated paths (default: all ten)")
    p.add_argument("--batches", default="1,8,64,256", help="states per request (default 1,8,64,256)")
    p.add_argument("--inputs", default="16,4096,102400", help="bytes per state: 16, 4096, 102400 (default all)")
    p.add_argument("--clients", default="1,2", help="closed-loop clients at once (default 1,2)")
    p.add_argument("--seconds", type=float, default=0.5, help="seconds each client counts per run (default 0.5)")
    p.add_argument("--repeats", type=int, default=3, help="runs per cell, the paths' order rotating (default 3)")
    p.add_argument("--in-flight", type=int, default=4, help="requests outstanding on actor_inflight (default 4)")
    p.add_argument(
        "--max-run-s",
        type=float,
        default=20.0,
        help="a run stops sending after this many seconds (default 20; its row then says it ran short)",
    )
    p.add_argument(
        "--train-iterations",
        type=int,
        default=3,
        help="PPO iterations (1,000 env steps each) of the CartPole policy served for 16-byte states (default 3)",
    )
    p.add_argument("--seed", type=int, default=0, help="seeds the training, the models and the states (default 0)")
    p.add_argument("--out", type=Path, default=None, help="result folder (default results/servebench/<timestamp>/)")


def missing_extra() -> str | None:
    """Why the ``serve`` extra is not usable here (the first module that does not import), or None."""
    for name in SERVE_EXTRA_MODULES:
        try:
            importlib.import_module(name)
        except ImportError as e:
            return f"{name} does not import ({e})"
    return None


def _config(args: argparse.Namespace):
    from rlbench.studies.servebench import PATHS, ServebenchConfig

    paths = tuple(p.strip() for p in args.paths.split(",") if p.strip()) if args.paths else tuple(PATHS)
    return ServebenchConfig(
        paths=paths,
        batches=tuple(int_list(args.batches, "--batches")),
        inputs=tuple(int_list(args.inputs, "--inputs")),
        clients=tuple(int_list(args.clients, "--clients")),
        seconds=args.seconds,
        repeats=args.repeats,
        in_flight=args.in_flight,
        max_run_s=args.max_run_s,
        seed=args.seed,
        train_iterations=args.train_iterations,
    )


def _out_dir(args: argparse.Namespace) -> Path:
    """``--out``, or a new folder named by the time; checked and locked by the results session, as every folder."""
    if args.out is not None:
        return own_path(args.out)
    return Path("results") / "servebench" / datetime.datetime.now().strftime("%Y%m%d-%H%M%S")


def run(args: argparse.Namespace, console: Console) -> int:
    """Measure the grid, write servebench.json and the report, print the paper beside this machine."""
    from rlbench.results.lock import OutDirError
    from rlbench.results.session import open_for_write

    try:
        config = _config(args)
        problems = config.problems()
        if problems:
            raise ValueError("; ".join(problems))
        session = open_for_write(_out_dir(args), "new")  # checked now (foreign files, links, results), nothing written
    except (ValueError, OutDirError) as e:
        return bad_input(console, str(e))
    why = missing_extra()
    if why is not None:
        return bad_input(
            console,
            f"rlbench servebench needs the serve extra (Ray Serve, Starlette, uvicorn), and {why}: "
            'install it with  pip install -e ".[serve]"  in the rlbench checkout (or '
            'pip install "rlbench[serve]")',
        )
    try:
        session.lock()  # making the folder; the checks again under the lock
    except OutDirError as e:
        return bad_input(console, str(e))
    except OSError as e:
        return bad_input(console, f"--out {session.path}: cannot make the folder ({e.strerror})")
    try:
        manifest = _manifest()
        session.save(manifest)  # the folder's results format, as every folder says it
        code = _measure(config, session.path, console)
        manifest.ended_at = datetime.datetime.now(datetime.timezone.utc).isoformat()
        session.save(manifest)
        return code
    finally:
        session.close()


def _manifest():
    """servebench's ``manifest.json``: its command, software (``schema_version``: the folder's results format, as every
    folder's) and machine; what it measured is servebench.json."""
    from rlbench.measure.machine import machine_dict, probe_machine, software_versions
    from rlbench.results.manifest import Manifest

    return Manifest(
        command=["rlbench", *sys.argv[1:]],
        software=software_versions(),
        machine=machine_dict(probe_machine()),
        started_at=datetime.datetime.now(datetime.timezone.utc).isoformat(),
        ended_at=None,
    )


def _measure(config, out: Path, console: Console) -> int:
    from rlbench.measure.machine import machine_dict, probe_machine, software_versions
    from rlbench.measure.utilization import RoleCpuWindow
    from rlbench.results.files import write_json
    from rlbench.results.layout import SERVEBENCH_JSON
    from rlbench.run.processes import kill_survivors
    from rlbench.run.raytoken import secure_ray, warn_if_auth_disabled
    from rlbench.studies.servebench import PAPER_TABLE3, ServeRoles, schedule
    from rlbench.studies.servebench_run import ServebenchRun, short_error
    from rlbench.worker.interrupts import install, received
    from rlbench.worker.ray_auth import bind_local_runtime_to_loopback

    total = len(schedule(config))
    say(
        console,
        f"servebench: {len(config.paths)} paths x batches {list(config.batches)} x states "
        f"{list(config.inputs)} B x clients {list(config.clients)}, {config.repeats} repeats: {total} runs of "
        f"{config.seconds:g} s; results in {out}",
    )
    warn_if_auth_disabled(console)
    secure_ray(console, create=True)
    bind_local_runtime_to_loopback()  # gcs, raylet, workers and agents on 127.0.0.1
    started, t0 = datetime.datetime.now().astimezone(), time.perf_counter()
    probe = RoleCpuWindow(os.getpid(), ServeRoles())
    doc: dict[str, Any] = {
        "command": shlex.join(["rlbench", *sys.argv[1:]]) if sys.argv else "rlbench servebench",
        "started": started.isoformat(timespec="seconds"),
        "config": config.as_dict(),
        "machine": machine_dict(probe_machine()),
        "versions": software_versions(),
        "paper": PAPER_TABLE3,
        "interrupted": False,
    }

    def save() -> None:
        doc.update(
            runs=bench.records,
            setup_s=bench.setup_s,
            policy=bench.policy,
            calibration=[c.as_dict() for c in bench.calibration],
            servers=bench.pids,
            ports={k: v for k, v in bench.servers.items() if k.endswith("_port")},
            server_errors=bench.server_errors,
            wall_s=time.perf_counter() - t0,
            finished=datetime.datetime.now().astimezone().isoformat(timespec="seconds"),
        )
        write_json(out / SERVEBENCH_JSON, doc)

    seen = received()

    def progress(done: int, n: int, r: dict[str, Any]) -> None:
        if received() != seen:  # a signal came and something (inside ray.get) caught its KeyboardInterrupt:
            raise KeyboardInterrupt  # stop now, not after every later run failed against a stopped server
        what = (
            f"{r['states_per_s']:,.0f} states/s, p50 {r['p50_ms']:.2f} ms"
            if r.get("states_per_s") is not None
            else f"failed: {r.get('error')}"
            if r.get("error")
            else "no rate"
        )
        say(
            console,
            f"[{done}/{n}] {r['path']}, batch {r['batch']}, {r['input_bytes']} B, {r['clients']} client(s): {what}",
        )
        if done % 20 == 0:
            save()  # an interrupted or crashed run keeps what it measured

    bench = ServebenchRun(
        config, out, probe, progress=progress, say=lambda line: say(console, line), after_start=install
    )
    interrupted = False
    try:
        bench.setup()
        probe.settle()
        bench.run()
    except KeyboardInterrupt:
        interrupted = True
        console.print("[yellow]Interrupted: stopping every process servebench started.[/]")
    except Exception as e:  # noqa: BLE001 - written down, everything stopped, then said
        doc["error"] = short_error(e)
        say(console, f"error: servebench stopped: {doc['error']}", style="red")
    finally:
        # The stop takes seconds and must finish: a second Ctrl-C (or SIGTERM) meanwhile is ignored.
        held = {sig: signal.signal(sig, signal.SIG_IGN) for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)}
        try:
            probe.sampler.sample_once()  # every process alive now is one of the run's, for the leftover check
            problems = bench.close()
            killed = kill_survivors(probe.sampler.seen_processes, bench.session_dir, None)
            probe.close()
        finally:
            for sig, handler in held.items():
                signal.signal(sig, handler)
        for problem in problems:
            say(console, f"warning: could not stop {problem}", style="yellow")
        if killed:
            say(console, f"killed {killed} process(es) left running after the stop", style="yellow")
    interrupted = interrupted or received() != seen
    doc["interrupted"] = interrupted
    save()
    if doc.get("error") and not bench.records:
        return EXIT_FAILED
    return _report(out, doc, console, interrupted)


def _report(out: Path, doc: dict[str, Any], console: Console, interrupted: bool) -> int:
    from rlbench.report.servebench_report import terminal_tables, write_servebench_report

    html_path, _md, rows, comparisons = write_servebench_report(out, doc)
    for table in terminal_tables(doc.get("runs") or [], rows, comparisons):
        console.print(table)
    console.print(
        "paper (Ray OSDI'18, Table 3, batch 64): 4 KB states at 10 ms: Clipper 4,400, Ray 6,200 states/s; "
        "100 KB states at 5 ms: Clipper 290, Ray 6,900 (docs/STUDIES.md: what differs here)"
    )
    say(console, f"Report: {html_path}")
    if interrupted:
        return EXIT_INTERRUPTED
    failed = [r for r in doc.get("runs") or [] if r.get("error")]
    if doc.get("error"):
        return EXIT_FAILED
    if failed:
        say(console, f"{len(failed)} run(s) failed; their rows say why (first: {failed[0]['error']})", style="yellow")
        return EXIT_FAILED
    return EXIT_OK
