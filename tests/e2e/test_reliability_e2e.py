"""Kill -9 and Ctrl-C of a sweep of real RLlib trials, and the infeasible skip, through the real CLI:
what was kept, what was reported, nothing left running. The same lifecycle where RLlib is not the
point (env faults, a Ctrl-C during an early launch) runs on the plain adapter:
tests/e2e/test_faults_e2e.py; a crash: tests/e2e/test_exit_e2e.py."""

from __future__ import annotations

import ipaddress
import json
import os
import signal
import time

import pandas as pd
import psutil
import pytest
from conftest import run_cli, trial_processes_alive
from lifecycle import alive, record, start_sweep, wait_for_iteration, write_spec

pytestmark = pytest.mark.slow

# ---------------------------------------------------------------------------------------------
# Infeasible configurations


@pytest.mark.no_ray
def test_infeasible_trial_is_skipped_at_once(tmp_path):
    spec = write_spec(tmp_path / "big.yaml", grid="{num_env_runners: [8]}")
    out = tmp_path / "out"
    done = run_cli("sweep", str(spec), "--out", str(out))
    assert done.returncode == 0, done.stdout + done.stderr
    rec = record(out, "t000r0")
    assert rec["status"] == "skipped"
    assert rec["reason"] == (
        "needs 8 CPUs for actors (8 env runners x 1 CPU) but only 1 are left after the driver's 1 of cpus=2"
    )
    trial = out / "trials" / "t000r0"
    # decided from arithmetic alone: no trial process was started (how fast that is, is a timing figure)
    assert not (trial / "events.jsonl").exists() and not (trial / "trial.log").exists()
    assert rec["exit_code"] is None and rec["trial_wall_s"] is None


# ---------------------------------------------------------------------------------------------
# kill -9 and Ctrl-C of the sweep process


def test_kill_9_leaves_nothing_and_resume_completes(tmp_path):
    """Ray's processes and the env runner die with the sweep, and the resume runs the trial again. That a
    resume keeps the trials that finished is checked on the plain adapter (tests/e2e/test_faults_e2e.py):
    one trial here, as the suite's Ray worker is its critical path."""
    # an env runner, and slow per step, so the trial is surely mid-training when the sweep is killed
    spec = write_spec(
        tmp_path / "k.yaml",
        env="envs.synthetic:SyntheticEnv",
        iterations=4,
        runners=1,
        env_config="{step_cost_us: 3000}",
    )
    out = tmp_path / "out"
    proc = start_sweep(spec, out)
    wait_for_iteration(out, "t000r0", proc)
    tree = {p.pid for p in psutil.Process(proc.pid).children(recursive=True)}
    assert len(tree) >= 8  # fork server, trial, reaper, Ray's processes, the env runner
    os.kill(proc.pid, signal.SIGKILL)
    proc.communicate()
    # everything dies by itself (the reaper, the fork server's exit); how fast is a timing figure,
    # printed by scripts/measure_kill9.py: here only that it happens, with a generous bound
    t0 = time.monotonic()
    while alive(tree) and time.monotonic() - t0 < 60:
        time.sleep(0.05)
    assert not alive(tree), [" ".join(psutil.Process(p).cmdline())[:80] for p in alive(tree)]
    assert not (out / "trials" / "t000r0" / "record.json").exists()

    done = run_cli("sweep", str(spec), "--out", str(out), "--resume")
    assert done.returncode == 0, done.stdout + done.stderr
    text = " ".join(done.stdout.split())
    assert "resuming: 0 finished trials kept, 1 to run (1 again: t000r0 (no verdict" in text
    assert record(out, "t000r0")["status"] == "ok"
    attempt = out / "attempts" / "t000r0" / "1"
    assert json.loads((attempt / "record.json").read_text())["status"] == "interrupted"
    its = pd.read_parquet(out / "iterations.parquet")
    assert its.groupby("trial_id").size().to_dict() == {"t000r0": 4}  # the old attempt is not a row
    assert trial_processes_alive(out) == []


def is_loopback(ip: str) -> bool:
    """True for 127.x, ::1 and an IPv4-mapped loopback (::ffff:127.0.0.1, which Ray's DashboardAgent
    was seen listening on in CI: a dual-stack socket bound to loopback, not reachable from outside)."""
    addr = ipaddress.ip_address(ip.split("%")[0])
    mapped = getattr(addr, "ipv4_mapped", None)
    return addr.is_loopback or (mapped is not None and mapped.is_loopback)


def dashboard_listeners(session_sid: int) -> list[str]:
    """Listening sockets, on any address but loopback, of the trial's dashboard processes."""
    found = []
    for conn in psutil.net_connections("inet"):
        if conn.status != psutil.CONN_LISTEN or conn.pid is None:
            continue
        try:
            if os.getsid(conn.pid) != session_sid:
                continue
            cmd = " ".join(psutil.Process(conn.pid).cmdline()[:2])  # the program (raylet only mentions it)
        except (OSError, psutil.Error):
            continue
        if "dashboard" in cmd.lower() and not is_loopback(conn.laddr.ip):
            found.append(f"{conn.laddr.ip}:{conn.laddr.port} {cmd[:80]}")
    return found


def test_ctrl_c_stops_cleanly_keeps_iterations_and_says_how_to_resume(tmp_path):
    spec = write_spec(tmp_path / "c.yaml", iterations=300, grid="{env_config.episode_len: [10, 20]}")
    out = tmp_path / "out"

    # 1. Ctrl-C in a terminal: SIGINT to the whole foreground process group.
    proc = start_sweep(spec, out)
    wait_for_iteration(out, "t000r0", proc)
    trial_pid = json.loads((out / "trials" / "t000r0" / "events.jsonl").read_text().splitlines()[0])["pid"]
    assert dashboard_listeners(os.getsid(trial_pid)) == []  # dashboard off by default
    os.killpg(proc.pid, signal.SIGINT)
    stdout, _ = proc.communicate(timeout=120)
    assert proc.returncode == 130, stdout
    text = " ".join(stdout.split())
    assert f"rlbench sweep {spec} --out {out} --resume" in text
    assert "Interrupted: 2 of 2 trials still to run" in text
    rec = record(out, "t000r0")
    assert rec["status"] == "interrupted" and rec["reason"].endswith("stopped cleanly, Ray shut down")
    events = [
        json.loads(line)["event"] for line in (out / "trials" / "t000r0" / "events.jsonl").read_text().splitlines()
    ]
    assert events[-3:] == ["shutdown", "interrupted", "end"]
    its = pd.read_parquet(out / "iterations.parquet")
    assert len(its) >= 1 and set(its["trial_status"]) == {"interrupted"}
    assert len(its) == events.count("iteration")
    assert not (out / "trials" / "t001r0").exists()
    assert trial_processes_alive(out) == []

    # 2. SIGINT to the rlbench process alone, during the resumed run: the same clean stop.
    proc = start_sweep(spec, out, "--resume")
    while not (out / "attempts" / "t000r0" / "1").exists():  # the first attempt is moved aside first
        assert proc.poll() is None, proc.communicate()[0]
        time.sleep(0.05)
    wait_for_iteration(out, "t000r0", proc)
    os.kill(proc.pid, signal.SIGINT)
    stdout, _ = proc.communicate(timeout=120)
    assert proc.returncode == 130, stdout
    assert record(out, "t000r0")["status"] == "interrupted"
    assert (out / "attempts" / "t000r0" / "1" / "record.json").exists()  # the first interrupted attempt
    assert trial_processes_alive(out) == []
