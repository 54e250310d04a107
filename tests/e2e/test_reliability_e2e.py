"""Faults injected for real (a raising, a hanging and a leaking env; kill -9 and Ctrl-C of the
sweep), through the real CLI: what was kept, what was reported, nothing left running.

Where RLlib itself is not what a test checks (how the sweep judges an env that raises, hangs or
leaks; a Ctrl-C while the next trial was launched early) it runs on the plain adapter (no Ray, a
trial in about a second); Ctrl-C, kill -9 with resume, and the infeasible skip run real RLlib and
Ray, and so does a crash (tests/e2e/test_exit_e2e.py)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import psutil
import pytest
from conftest import REPO, run_cli, trial_processes_alive

from rlbench.results.layout import TrialFolder

pytestmark = pytest.mark.slow

TINY = """\
name: {name}
framework: {framework}
environment:
  env: {env}
  env_config: {env_config}
env_runners: {{num_env_runners: {runners}}}
training: {{train_batch_size_per_learner: 128, minibatch_size: 64, num_epochs: 1}}
rl_module: {{fcnet_hiddens: [8]}}
cpus: 2
grid: {grid}
stop: {{iterations: {iterations}}}
warmup_iterations: 1
trial_timeout_s: {timeout}
env_ceiling_s: {ceiling}
"""


def write_spec(path: Path, *, name="rel", env="envs.tiny:TinyEnv", env_config="{}", runners=0, grid="{}",
               iterations=3, timeout=120, extra="", framework="rllib", ceiling=0) -> Path:
    """A tiny spec; env ceilings off (``ceiling``) unless the test reads them."""
    path.write_text(TINY.format(name=name, env=env, env_config=env_config, runners=runners, grid=grid,
                                iterations=iterations, timeout=timeout, framework=framework, ceiling=ceiling) + extra)
    return path


def record(out: Path, trial_id: str) -> dict:
    return json.loads((out / "trials" / trial_id / "record.json").read_text())


# ---------------------------------------------------------------------------------------------
# One sweep, four fates: ok, env raises, env hangs, env leaks memory


#: The hanging trial's timeout: long enough for the trial's start and one iteration on a busy 2-core
#: machine (the plain adapter: well under a second quiet), so the trial surely hangs in its second iteration.
FAULT_TIMEOUT_S = 10


@pytest.fixture(scope="module")
def faults(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("faults")
    # The fault fires at env step 200: iteration 1 (128 steps) completes, iteration 2 does not. The
    # memory fault takes its 2 GiB inside that one step and hangs holding it, so the 1.6 GB limit is
    # crossed whatever the machine's speed, also while the env ceiling steps it alone for 1 s.
    spec = write_spec(tmp / "faults.yaml", env="envs.faulty:FaultyEnv", framework="plain",
                      env_config="{at_step: 200, memory_chunk_bytes: 67108864, memory_max_bytes: 2147483648}",
                      grid="{env_config.fault: [none, raise, hang, memory]}", timeout=FAULT_TIMEOUT_S, ceiling=1,
                      extra="trial_memory_limit_bytes: 1600000000\n")
    out = tmp / "out"
    done = run_cli("sweep", str(spec), "--out", str(out))
    return spec, out, done


def test_each_fault_gets_its_status_and_reason(faults):
    _, out, done = faults
    assert done.returncode == 1, done.stdout + done.stderr
    trials = pd.read_parquet(out / "trials.parquet").set_index("trial_id")
    assert list(trials["status"]) == ["ok", "failed", "timeout", "failed"]
    assert trials.loc["t001r0", "reason"] == "RuntimeError: FaultyEnv: injected failure at step 200"
    assert trials.loc["t002r0", "reason"].startswith(
        f"killed after trial_timeout_s={FAULT_TIMEOUT_S} s with its process tree, after 1 iterations")
    assert trials.loc["t003r0", "reason"].startswith("out of memory: its processes used ")
    assert "over trial_memory_limit_bytes=1600000000" in trials.loc["t003r0", "reason"]
    text = " ".join(done.stdout.split())
    assert "1 ok, 0 skipped, 2 failed, 1 timed out" in text
    for line in ("t001r0 failed: RuntimeError: FaultyEnv: injected failure", "t002r0 timeout: killed after",
                 "t003r0 failed: out of memory"):
        assert line in text, line
    # the env-ceiling measurement before the trials met the same faults, said so and went on
    ceilings = {json.loads(k.split("|")[1])["fault"]: v for k, v in
                json.loads((out / "env_ceilings.json").read_text()).items()}
    assert ceilings["none"]["steps_per_s"] > 0
    assert "injected failure" in ceilings["raise"]["error"]
    assert f"no result within {1 + 0.3 + FAULT_TIMEOUT_S:g} s" in ceilings["hang"]["error"]  # the grace: the trial timeout
    assert "over the limit" in ceilings["memory"]["error"]
    assert trials.loc["t000r0", "sampling_efficiency"] > 0 and pd.isna(trials.loc["t002r0", "sampling_efficiency"])


def test_killed_trials_die_promptly_with_their_tree(faults):
    _, out, _ = faults
    hang, leak = record(out, "t002r0"), record(out, "t003r0")
    # killed at its timeout, not before; the margin above it only bounds the kill itself, generously
    assert hang["exit_code"] == -signal.SIGKILL and FAULT_TIMEOUT_S <= hang["trial_wall_s"] < FAULT_TIMEOUT_S + 30
    assert leak["exit_code"] == -signal.SIGKILL and leak["trial_wall_s"] < FAULT_TIMEOUT_S  # the limit, not the timeout
    assert trial_processes_alive(out) == []


def test_partial_iterations_are_kept_and_marked(faults):
    _, out, _ = faults
    its = pd.read_parquet(out / "iterations.parquet")
    counts = its.groupby(["trial_id", "trial_status"]).size().to_dict()
    assert counts == {("t000r0", "ok"): 3, ("t001r0", "failed"): 1, ("t002r0", "timeout"): 1, ("t003r0", "failed"): 1}
    assert not its.duplicated(["trial_id", "iteration"]).any()


def test_resume_of_a_finished_folder_runs_nothing_and_duplicates_nothing(faults):
    spec, out, _ = faults
    before = {t: record(out, t) for t in ("t000r0", "t001r0", "t002r0", "t003r0")}
    done = run_cli("sweep", str(spec), "--out", str(out), "--resume")
    assert done.returncode == 1, done.stdout + done.stderr  # the kept failures still count
    assert "resuming: 4 finished trials kept, 0 to run" in " ".join(done.stdout.split())
    assert {t: record(out, t) for t in before} == before
    assert len(pd.read_parquet(out / "iterations.parquet")) == 6
    assert len(pd.read_parquet(out / "trials.parquet")) == 4
    assert not (out / "attempts").exists()


# ---------------------------------------------------------------------------------------------
# Infeasible configurations


def test_infeasible_trial_is_skipped_at_once(tmp_path):
    spec = write_spec(tmp_path / "big.yaml", grid="{num_env_runners: [8]}")
    out = tmp_path / "out"
    done = run_cli("sweep", str(spec), "--out", str(out))
    assert done.returncode == 0, done.stdout + done.stderr
    rec = record(out, "t000r0")
    assert rec["status"] == "skipped"
    assert rec["reason"] == ("needs 8 CPUs for actors (8 env runners x 1 CPU) but only 1 are left after the "
                             "driver's 1 of cpus=2")
    trial = out / "trials" / "t000r0"
    # decided from arithmetic alone: no trial process was started (how fast that is, is a timing figure)
    assert not (trial / "events.jsonl").exists() and not (trial / "trial.log").exists()
    assert rec["exit_code"] is None and rec["trial_wall_s"] is None


# ---------------------------------------------------------------------------------------------
# kill -9 and Ctrl-C of the sweep process


def start_sweep(spec: Path, out: Path, *extra: str) -> subprocess.Popen:
    """``python -m rlbench sweep`` in its own session, like a foreground job in a terminal.

    SIGINT is reset to its default in the child: a test run started in the background (``&``,
    nohup) passes SIGINT on ignored, and a foreground job in a terminal would not have it so.
    """
    return subprocess.Popen([sys.executable, "-m", "rlbench", "sweep", str(spec), "--out", str(out), *extra],
                            cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            start_new_session=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))


def wait_for_iteration(out: Path, trial_id: str, proc: subprocess.Popen, timeout_s: float = 120) -> None:
    events = out / "trials" / trial_id / "events.jsonl"
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if events.exists() and '"event": "iteration"' in events.read_text():
            return
        assert proc.poll() is None, proc.communicate()[0]
        time.sleep(0.05)
    raise AssertionError(f"{trial_id} wrote no iteration in {timeout_s} s")


def alive(pids: set[int]) -> set[int]:
    out = set()
    for pid in pids:
        try:
            if psutil.Process(pid).status() != psutil.STATUS_ZOMBIE:
                out.add(pid)
        except psutil.NoSuchProcess:
            pass
    return out


def test_kill_9_leaves_nothing_and_resume_completes(tmp_path):
    # t001r0 has an env runner and is slow per step, so it is surely mid-training when the sweep is
    # killed; t000r0 (no runner: no actor to start) is the finished trial the resume keeps.
    spec = write_spec(tmp_path / "k.yaml", env="envs.synthetic:SyntheticEnv", iterations=4,
                      env_config="{step_cost_us: 3000}", grid="{num_env_runners: [0, 1]}")
    out = tmp_path / "out"
    proc = start_sweep(spec, out)
    wait_for_iteration(out, "t001r0", proc)
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
    assert not (out / "trials" / "t001r0" / "record.json").exists()
    kept = record(out, "t000r0")

    done = run_cli("sweep", str(spec), "--out", str(out), "--resume")
    assert done.returncode == 0, done.stdout + done.stderr
    text = " ".join(done.stdout.split())
    assert "resuming: 1 finished trials kept, 1 to run (1 again: t001r0 (no verdict" in text
    assert record(out, "t000r0") == kept  # not run again
    assert record(out, "t001r0")["status"] == "ok"
    attempt = out / "attempts" / "t001r0" / "1"
    assert json.loads((attempt / "record.json").read_text())["status"] == "interrupted"
    its = pd.read_parquet(out / "iterations.parquet")
    assert its.groupby("trial_id").size().to_dict() == {"t000r0": 4, "t001r0": 4}  # the old attempt is not a row
    assert trial_processes_alive(out) == []


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
        if "dashboard" in cmd.lower() and conn.laddr.ip not in ("127.0.0.1", "::1"):
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
    events = [json.loads(line)["event"] for line in (out / "trials" / "t000r0" / "events.jsonl").read_text().splitlines()]
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


def test_ctrl_c_while_the_next_trial_was_launched_early_leaves_nothing(tmp_path):
    """The next trial is launched while the previous one shuts down; a Ctrl-C then kills it too and
    leaves it without a record, so a resume runs it."""
    # t000r0's env takes 3 s to close: the early launch of t001r0 surely happens while it shuts down
    spec = write_spec(tmp_path / "e.yaml", env="envs.faulty:FaultyEnv", framework="plain", iterations=2,
                      env_config="{close_s: 3}", grid="{env_config.episode_len: [10, 20]}")
    out = tmp_path / "out"
    proc = start_sweep(spec, out)
    early = out / "trials" / "t001r0"
    deadline = time.monotonic() + 120
    while not ((early / "plan.json").exists() and not (out / "trials" / "t000r0" / "record.json").exists()):
        assert proc.poll() is None and time.monotonic() < deadline, "t001r0 was never launched early"
        time.sleep(0.01)
    os.killpg(proc.pid, signal.SIGINT)
    stdout, _ = proc.communicate(timeout=120)
    assert proc.returncode == 130, stdout
    assert not (early / "record.json").exists()
    start = next((json.loads(line) for line in (early / "events.jsonl").read_text().splitlines()
                  if json.loads(line)["event"] == "start"), None) if (early / "events.jsonl").exists() else None
    if start is not None:  # it got as far as its first event: that process is gone
        assert not alive({start["pid"]}) or psutil.Process(start["pid"]).create_time() > time.time() - 1
    assert trial_processes_alive(out) == []
    done = run_cli("sweep", str(spec), "--out", str(out), "--resume")
    assert done.returncode == 0, done.stdout + done.stderr
    assert record(out, "t001r0")["status"] == "ok"
