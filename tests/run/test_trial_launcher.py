"""TrialLauncher.warm starts the fork server ahead of the first trial; wait_ready returns once it has
imported everything (so nothing imports while the env ceilings measure)."""

from __future__ import annotations

import time
from pathlib import Path

import psutil

from rlbench.run.forkserver import release_fork_server
from rlbench.run.trial import TrialLauncher


def _fork_servers() -> list[psutil.Process]:
    """This process's live fork servers (one that has exited, reaped or not, is none)."""
    servers = []
    for p in psutil.Process().children():
        try:
            if "multiprocessing.forkserver" in " ".join(p.cmdline()):
                servers.append(p)
        except psutil.Error:  # exited (a zombie until reaped) or gone
            pass
    return servers


def test_a_ready_fork_server_has_torch_loaded_already():
    launcher = TrialLauncher()
    launcher.warm()
    launcher.wait_ready()
    servers = _fork_servers()
    assert len(servers) == 1
    maps = Path(f"/proc/{servers[0].pid}/maps").read_text()
    assert "libtorch" in maps  # the adapter's preload (Ray, RLlib, torch) ran before the ready child forked


def _in_a_trial(probe, out: Path):
    """``probe(out)`` run in a child of RLlib's ready fork server, as a trial runs; what it wrote to ``out`` (JSON)."""
    import json

    launcher = TrialLauncher()
    launcher.warm()
    launcher.wait_ready()
    child = launcher.context.Process(target=probe, args=(str(out),))
    child.start()
    child.join(60)
    assert child.exitcode == 0
    return json.loads(out.read_text())


def _dashboard_probe(out: str) -> None:
    """In a trial forked from the server: what Ray's dashboard-dependency probe, run by every ``ray.init`` of a
    local runtime, imports (module names) and whether it found ray[default]'s packages."""
    import json
    import sys

    from ray._private.utils import get_dashboard_dependency_error

    before = set(sys.modules)
    found = get_dashboard_dependency_error() is None
    Path(out).write_text(json.dumps({"found": found, "imported": sorted(set(sys.modules) - before)}))


def test_a_trial_imports_nothing_for_rays_dashboard_probe(tmp_path):
    """With ray[default]'s packages installed (the serve extra, in the test extra), that probe imports 249 modules
    (aiohttp, grpc, opencensus, OpenTelemetry) and took 0.19 s of every trial's CPU inside its ray.init, where a
    Tune run pays it once (issue 42, docs/MEASUREMENT.md 7): the fork server imports them once for every trial.
    Without the packages the probe fails at its first import, and imports nothing either."""
    got = _in_a_trial(_dashboard_probe, tmp_path / "probe.json")
    assert got["imported"] == [], got
    assert got["found"]  # the test extra installs ray[serve], so CI runs the case that costs


def _first_build_probe(out: str) -> None:
    """In a trial forked from the server: the modules a learner's first optimizer and the trial's plan import."""
    import json
    import sys

    import torch

    before = set(sys.modules)
    torch.optim.Adam(torch.nn.Linear(2, 1).parameters())
    import rlbench.planning.plan  # noqa: F401

    Path(out).write_text(json.dumps(sorted(set(sys.modules) - before)))


def test_a_trial_imports_nothing_for_its_first_optimizer_or_its_plan(tmp_path):
    """torch's optimizers import torch._dynamo (978 modules with sympy and torch.distributed: 1.06 s of every RLlib
    and SB3 trial's build, 2026-11-30) and every trial reads its plan (0.16 s): the fork server imports both once.
    Every adapter whose server imports torch imports torch._dynamo with it (SB3's policy builds an optimizer too; its
    own server is not started here: 4 s of the suite for the same import)."""
    from rlbench.adapters import FRAMEWORKS, get_adapter

    torch_adapters = [n for n in FRAMEWORKS if "torch" in get_adapter(n).preload_modules]
    assert {"rllib", "sb3"} <= set(torch_adapters)
    assert all("torch._dynamo" in get_adapter(n).preload_modules for n in torch_adapters)
    assert _in_a_trial(_first_build_probe, tmp_path / "build.json") == []


def test_a_server_started_for_another_framework_is_replaced():
    """A plain sweep's fork server (no torch) left running in this process is not reused by an rllib one:
    seen when a plain in-process sweep ran before the test above on the same xdist worker."""
    plain = TrialLauncher(frameworks=("plain",))
    plain.warm()
    plain.wait_ready()
    (old,) = _fork_servers()
    assert "libtorch" not in Path(f"/proc/{old.pid}/maps").read_text()
    launcher = TrialLauncher()
    launcher.warm()
    launcher.wait_ready()
    (server,) = _fork_servers()
    assert server.pid != old.pid and "libtorch" in Path(f"/proc/{server.pid}/maps").read_text()


def test_fresh_processes_start_no_fork_server():
    before = {p.pid for p in _fork_servers()}
    launcher = TrialLauncher(fresh_process=True)
    launcher.warm()
    launcher.wait_ready()
    assert {p.pid for p in _fork_servers()} == before


def test_a_released_fork_server_exits_and_a_later_trial_starts_a_new_one():
    launcher = TrialLauncher()
    launcher.warm()
    launcher.wait_ready()
    old = _fork_servers()[0].pid
    release_fork_server()
    deadline = time.monotonic() + 60
    while old in {p.pid for p in _fork_servers()} and time.monotonic() < deadline:  # reaped by the stop thread
        time.sleep(0.05)
    assert old not in {p.pid for p in _fork_servers()}
    launcher.warm()
    launcher.wait_ready()
    assert len(_fork_servers()) == 1


def test_interrupting_a_trial_that_has_just_exited_is_no_error():
    """A Ctrl-C that lands as the trial exits: its pid may be reaped already (a fork-server child is the
    server's to reap), and os.kill then raised ProcessLookupError out of the sweep as a traceback."""
    import subprocess
    import sys

    from rlbench.run.processes import ProcessRef
    from rlbench.run.trial import FreshProcess, _interrupt

    popen = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(0.3)"])
    me = ProcessRef.of(popen.pid)
    popen.wait()  # exited and reaped: the pid names no process now
    t = time.monotonic()
    _interrupt(FreshProcess(popen), me, grace_s=20)
    assert time.monotonic() - t < 5  # no grace period waited for a process that is gone


def test_a_fresh_trial_process_writes_to_its_log_from_its_first_byte(tmp_path, capfd):
    """Before its own redirect (its imports), a fresh trial process printed on the command's terminal: a
    Ctrl-C there put the trial's KeyboardInterrupt traceback after the command's resume line (issue 39).
    A stand-in interpreter that only prints shows where those bytes go."""
    import os

    from rlbench.results.layout import TrialFolder

    python = tmp_path / "python"
    python.write_text("#!/bin/sh\necho early output >&2\n")
    python.chmod(0o755)
    trial = TrialFolder(tmp_path / "t000r0")
    trial.path.mkdir()
    proc = TrialLauncher(fresh_process=True).start(trial, time.time(), python=str(python))
    proc.join(30)
    assert proc.exitcode == 0
    assert trial.log.read_text() == "early output\n"
    assert "early output" not in capfd.readouterr().err
    assert os.listdir(trial.path) == ["trial.log"]
