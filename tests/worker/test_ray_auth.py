"""Ray's token stays private and a trial's private Ray listens on 127.0.0.1 only."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys

import pytest
from conftest import REPO

from rlbench.worker.ray_auth import (
    LOOPBACK_ENV,
    auth_disabled_warning,
    bind_local_runtime_to_loopback,
    secure_token,
    token_path,
)


@pytest.fixture
def home(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path))
    for var in ("RAY_AUTH_TOKEN", "RAY_AUTH_TOKEN_PATH", "RAY_AUTH_MODE"):
        monkeypatch.delenv(var, raising=False)
    return tmp_path


def _mode(path) -> int:
    return stat.S_IMODE(os.stat(path).st_mode)


def test_a_missing_token_is_created_private(home):
    assert secure_token() is None
    path = home / ".ray" / "auth_token"
    assert token_path() == path and _mode(path) == 0o600 and _mode(home / ".ray") & 0o077 == 0
    token = path.read_text()
    assert len(token) == 64 and int(token, 16) >= 0  # 256 random bits in hex, as Ray makes them
    assert secure_token() is None and path.read_text() == token  # never replaced


def test_a_readable_token_is_tightened_and_said_once(home):
    path = home / ".ray" / "auth_token"
    path.parent.mkdir()
    path.write_text("ab" * 32)
    os.chmod(path, 0o644)  # what Ray 2.60 leaves with umask 022
    note = secure_token()
    assert note is not None and "was mode 0644" in note and "made it 0600" in note and "ab" * 32 not in note
    assert _mode(path) == 0o600 and path.read_text() == "ab" * 32
    assert secure_token() is None  # said once


def test_a_token_path_is_tightened_not_created(home, monkeypatch):
    chosen = home / "mytoken"
    monkeypatch.setenv("RAY_AUTH_TOKEN_PATH", str(chosen))
    assert secure_token() is None and not chosen.exists() and not (home / ".ray").exists()
    chosen.write_text("cd" * 32)
    os.chmod(chosen, 0o666)
    assert "made it 0600" in secure_token() and _mode(chosen) == 0o600


def test_dry_run_creates_nothing(home):
    assert secure_token(create=False) is None and not (home / ".ray").exists()


def test_disabled_auth_is_warned_about():
    assert auth_disabled_warning({}) is None and auth_disabled_warning({"RAY_AUTH_MODE": "token"}) is None
    assert "RAY_AUTH_MODE=disabled" in auth_disabled_warning({"RAY_AUTH_MODE": "Disabled"})


def test_loopback_switch_is_set_for_ray_and_its_children():
    env: dict[str, str] = {}
    bind_local_runtime_to_loopback(env)
    assert env == {LOOPBACK_ENV: "0"}


#: Run as a trial does: Ray imported first (the fork server preloads it), then the switch, then
#: ray.init with the trial's own arguments; prints every TCP socket its process tree listens on.
PROBE = r"""
import json, os, socket, struct, sys, time
import ray, psutil
from rlbench.measure.machine import MachineInfo
from rlbench.spec.load import spec_from_dict
from rlbench.planning.plan import plan_trials
from rlbench.worker.ray_auth import bind_local_runtime_to_loopback
from rlbench.worker.runtime import ray_init_kwargs

bind, dashboard = sys.argv[1] == "bind", sys.argv[2] == "dashboard"
machine = MachineInfo(hostname="h", cpu_model="c", logical_cores=2, physical_cores=2, usable_cores=[0, 1],
                      memory_bytes=2**30, gpus=[])
spec = {"name": "t", "environment": {"env": "CartPole-v1"}, "stop": {"iterations": 2},
        "ray": {"include_dashboard": dashboard}}
plan = plan_trials(spec_from_dict(spec, check_envs=False), machine)[0]
if bind:
    bind_local_runtime_to_loopback()
ray.init(**ray_init_kwargs(plan))

@ray.remote
def task():
    return os.getpid()

ray.get(task.remote())
time.sleep(3 if dashboard else 1)  # the dashboard and its agent open their ports late
inodes = {}
for table in ("/proc/net/tcp", "/proc/net/tcp6"):
    for line in open(table).read().splitlines()[1:]:
        f = line.split()
        if f[3] != "0A":  # LISTEN
            continue
        addr = f[1].split(":")[0]
        raw = b"".join(struct.pack("<I", int(addr[i:i + 8], 16)) for i in range(0, len(addr), 8))
        inodes[f[9]] = socket.inet_ntop(socket.AF_INET if len(raw) == 4 else socket.AF_INET6, raw)
found = []
for proc in [psutil.Process()] + psutil.Process().children(recursive=True):
    try:
        for fd in os.listdir(f"/proc/{proc.pid}/fd"):
            link = os.readlink(f"/proc/{proc.pid}/fd/{fd}")
            if link.startswith("socket:[") and link[8:-1] in inodes:
                found.append([(proc.cmdline() or ["?"])[0].split("/")[-1][:40], inodes[link[8:-1]]])
    except (OSError, psutil.Error):
        pass
ray.shutdown()
print("LISTEN " + json.dumps(found))
"""


def _listeners(bind: bool, dashboard: bool) -> list[tuple[str, str]]:
    env = {k: v for k, v in os.environ.items() if k != LOOPBACK_ENV}
    done = subprocess.run(
        [sys.executable, "-c", PROBE, "bind" if bind else "no", "dashboard" if dashboard else "no"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
    )
    line = next((x for x in done.stdout.splitlines() if x.startswith("LISTEN ")), None)
    assert line is not None, done.stdout + done.stderr
    return [tuple(x) for x in json.loads(line[7:])]


def _loopback(address: str) -> bool:
    import ipaddress

    ip = ipaddress.ip_address(address)
    return ip.is_loopback or (ip.version == 6 and ip.ipv4_mapped is not None and ip.ipv4_mapped.is_loopback)


@pytest.mark.slow
def test_without_the_switch_a_local_runtime_listens_everywhere():
    """The control: Ray 2.60's default (why the switch exists; if this fails, Ray changed)."""
    found = _listeners(bind=False, dashboard=False)
    assert any(name.startswith(("gcs_server", "raylet")) and not _loopback(ip) for name, ip in found), found


@pytest.mark.slow
def test_a_trials_runtime_listens_on_loopback_only():
    """gcs_server, raylet, the driver's and workers' gRPC servers, the runtime-env and dashboard
    agents. (``include_dashboard: true`` needs ``ray[default]``, not installed here: its web UI is
    bound to 127.0.0.1 by ``dashboard_host`` either way.)"""
    found = _listeners(bind=True, dashboard=False)
    names = {name for name, _ in found}
    assert {"gcs_server", "raylet"} <= names, found  # the servers were seen, so the check means something
    assert [(n, ip) for n, ip in found if not _loopback(ip)] == []
