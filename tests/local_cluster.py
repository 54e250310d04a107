"""A private multi-node Ray cluster on this machine, for tests/e2e/test_cluster_e2e.py, test_parallel_e2e.py and
scripts/autoconfig_on_cluster.py, bench_parallel.py: ``ray start --head`` and more nodes, one temp folder of its own
and token auth with a token of its own; stopped by killing exactly the processes that name that temp
folder (``ray stop`` would kill every Ray on the machine)."""

from __future__ import annotations

import contextlib
import os
import secrets
import shutil
import socket
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import psutil

RAY = str(Path(sys.executable).with_name("ray"))


@dataclass(frozen=True)
class LocalCluster:
    """What a caller needs of the running cluster."""

    address: str
    """host:port of its GCS."""
    temp: str
    """Its temp folder: every process of the cluster names it."""
    token: Path
    """Its auth token file (give callers ``RAY_AUTH_TOKEN_PATH`` only: rlbench turns token mode on)."""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def cluster_processes(temp: str) -> list[psutil.Process]:
    """Live processes whose command line names the cluster's temp folder."""
    found = []
    for proc in psutil.process_iter(["cmdline", "status"]):
        if proc.info["status"] != psutil.STATUS_ZOMBIE and temp in " ".join(proc.info["cmdline"] or []):
            found.append(proc)
    return found


def stop_cluster(temp: str) -> None:
    procs = cluster_processes(temp)
    for proc in procs:
        try:
            proc.kill()
        except psutil.Error:
            pass
    psutil.wait_procs(procs, timeout=10)


@contextlib.contextmanager
def local_cluster(
    head_args: tuple[str, ...] = ("--num-cpus=1",),
    node_args: tuple[str, ...] = ("--num-cpus=2",),
    nodes: int = 1,
    env: dict[str, str] | None = None,
) -> Iterator[LocalCluster]:
    """Start the head (``head_args``) and ``nodes`` more nodes (``node_args`` each); stop them all and remove the
    temp folder on exit, whatever happened. ``env``: more environment for the cluster's processes (Ray's
    ``RAY_<setting>`` variables)."""
    temp = tempfile.mkdtemp(prefix="rlbc", dir="/tmp")  # short: Ray's socket paths live under it
    token = Path(temp) / "token"
    token.write_text(secrets.token_hex(32))
    token.chmod(0o600)  # private, as rlbench keeps Ray's token
    node_env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "RAY_ADDRESS")}
    node_env.update(RAY_AUTH_MODE="token", RAY_AUTH_TOKEN_PATH=str(token), **(env or {}))
    port = free_port()
    address = f"127.0.0.1:{port}"
    common = ["--temp-dir", temp, "--disable-usage-stats"]
    try:
        # cwd = the temp folder: the nodes cannot import envs/ from the repo, rlbench must ship it
        subprocess.run(
            [RAY, "start", "--head", f"--port={port}", *head_args, "--include-dashboard=false", *common],
            cwd=temp,
            env=node_env,
            check=True,
            capture_output=True,
            timeout=120,
        )
        for _ in range(nodes):
            subprocess.run(
                [RAY, "start", f"--address={address}", *node_args, *common],
                cwd=temp,
                env=node_env,
                check=True,
                capture_output=True,
                timeout=120,
            )
        yield LocalCluster(address, temp, token)
    finally:
        stop_cluster(temp)
        print("KEEP", temp) if os.environ.get("KEEP_CLUSTER") else shutil.rmtree(temp, ignore_errors=True)
