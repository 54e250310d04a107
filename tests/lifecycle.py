"""Shared by the lifecycle end-to-end tests (tests/e2e/test_reliability_e2e.py with real RLlib,
tests/e2e/test_faults_e2e.py on the plain adapter): a tiny spec, a trial's record, a sweep started as a
terminal's foreground job, and waiting on what its files say."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
from conftest import REPO

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


def write_spec(
    path: Path,
    *,
    name="rel",
    env="envs.tiny:TinyEnv",
    env_config="{}",
    runners=0,
    grid="{}",
    iterations=3,
    timeout=120,
    extra="",
    framework="rllib",
    ceiling=0,
) -> Path:
    """A tiny spec; env ceilings off (``ceiling``) unless the test reads them."""
    path.write_text(
        TINY.format(
            name=name,
            env=env,
            env_config=env_config,
            runners=runners,
            grid=grid,
            iterations=iterations,
            timeout=timeout,
            framework=framework,
            ceiling=ceiling,
        )
        + extra
    )
    return path


def record(out: Path, trial_id: str) -> dict:
    return json.loads((out / "trials" / trial_id / "record.json").read_text())


def start_sweep(spec: Path, out: Path, *extra: str) -> subprocess.Popen:
    """``python -m rlbench sweep`` in its own session, like a foreground job in a terminal.

    SIGINT is reset to its default in the child: a test run started in the background (``&``,
    nohup) passes SIGINT on ignored, and a foreground job in a terminal would not have it so.
    """
    return subprocess.Popen(
        [sys.executable, "-m", "rlbench", "sweep", str(spec), "--out", str(out), *extra],
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )


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
