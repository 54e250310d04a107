"""TrialLauncher.warm starts the fork server ahead of the first trial; wait_ready returns once it has
imported everything (so nothing imports while the env ceilings measure)."""

from __future__ import annotations

from pathlib import Path

import psutil

from rlbench.run.trial import TrialLauncher


def _fork_servers() -> list[psutil.Process]:
    return [p for p in psutil.Process().children()
            if "multiprocessing.forkserver" in " ".join(p.cmdline())]


def test_a_ready_fork_server_has_torch_loaded_already():
    launcher = TrialLauncher()
    launcher.warm()
    launcher.wait_ready()
    servers = _fork_servers()
    assert len(servers) == 1
    maps = Path(f"/proc/{servers[0].pid}/maps").read_text()
    assert "libtorch" in maps  # the adapter's preload (Ray, RLlib, torch) ran before the ready child forked


def test_fresh_processes_start_no_fork_server():
    before = {p.pid for p in _fork_servers()}
    launcher = TrialLauncher(fresh_process=True)
    launcher.warm()
    launcher.wait_ready()
    assert {p.pid for p in _fork_servers()} == before
