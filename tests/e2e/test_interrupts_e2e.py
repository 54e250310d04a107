"""An interrupted ``sweep``, ``history`` or ``bisect`` ends with its resume line (bisect: where its probes
are), exit 130, no traceback and no process left, whichever of SIGINT, SIGTERM and SIGHUP stops it and
wherever (issue 39; ``autoconfig``: tests/run/test_autoconfig_driver.py). Each signal is sent the moment a file
the command writes shows it has reached a point, never after some time, so the point is the same on a
quiet machine and a busy one; the command has seconds of work left there (trials, tables, a report, the
next probe), so the signal lands while it runs. The plain adapter (no Ray) and, for the versions,
a tiny package in three versions written by the test (tests/wheels.py), installed from a local folder."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest
from conftest import REPO
from wheels import write_wheel

pytestmark = pytest.mark.slow

SPEC = """\
name: stop
framework: plain
environment:
  env: {env}
  env_config: {env_config}
env_runners: {{num_env_runners: 0}}
training: {{train_batch_size_per_learner: 200}}
{grid}
stop: {{iterations: 2}}
warmup_iterations: 1
env_ceiling_s: 0
sample_hz: 5
"""
#: The sweep's three trials: a tiny env stepping 100 us of CPU a step (a trial in about a second).
SWEEP_SPEC = SPEC.format(
    env="envs.synthetic:SyntheticEnv",
    env_config="{episode_len: 50, step_cost_us: 100}",
    grid="grid: {training.train_batch_size_per_learner: [200, 300, 400]}",
)
#: One configuration whose env's step cost comes from the installed ``slowstep`` (envs.versioned).
VERSIONS_SPEC = SPEC.format(
    env="envs.versioned:VersionedCostEnv", env_config='{cost_from: "slowstep:step_cost_us", episode_len: 50}', grid=""
)
VERSIONS = ("1.0.0", "1.1.0", "1.2.0")


def _exists(pattern: str):
    return lambda out: any(out.glob(pattern))


def _has_iteration(pattern: str):
    def ready(out: Path) -> bool:
        for events in out.glob(pattern):
            try:
                if '"event": "iteration"' in events.read_text():
                    return True
            except OSError:
                pass
        return False

    return ready


#: Per command, where it is stopped and with which signal (each command meets each signal once).
POINTS = {
    "sweep": [
        ("folder taken", _exists("manifest.json"), signal.SIGINT),
        ("a trial iterating", _has_iteration("trials/*/events.jsonl"), signal.SIGTERM),
        ("tables written, report to come", _exists("trials.parquet"), signal.SIGHUP),
    ],
    "history": [  # a history's run is a sweep folder under runs/ (docs/VERSIONS.md, "A history folder")
        ("folder taken", _exists("runs/01-history/manifest.json"), signal.SIGHUP),
        ("a trial finished", _exists("runs/01-history/trials/*/record.json"), signal.SIGINT),
        ("tables written, history to come", _exists("runs/01-history/trials.parquet"), signal.SIGTERM),
    ],
    "bisect": [
        ("first probe's folder taken", _exists("01-*/manifest.json"), signal.SIGTERM),
        ("first probe iterating", _has_iteration("01-*/trials/*/events.jsonl"), signal.SIGHUP),
        ("first probe's first trial finished", _exists("01-*/trials/*/record.json"), signal.SIGINT),
    ],
}
CASES = [(command, name, predicate, sig) for command, points in POINTS.items() for name, predicate, sig in points]


@pytest.fixture(scope="module")
def tools(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("interrupts")
    for version in VERSIONS:
        write_wheel(
            tmp / "wheels", "slowstep", version, {"slowstep/__init__.py": "def step_cost_us():\n    return 100\n"}
        )
    (tmp / "sweep.yaml").write_text(SWEEP_SPEC)
    (tmp / "versions.yaml").write_text(VERSIONS_SPEC)
    return tmp


def _argv(command: str, tmp: Path, out: Path) -> list[str]:
    versions = ["--package", "slowstep", "--index", str(tmp / "wheels"), "--out", str(out)]
    if command == "sweep":
        return ["sweep", str(tmp / "sweep.yaml"), "--out", str(out)]
    if command == "history":
        return ["history", str(tmp / "versions.yaml"), "--versions", ",".join(VERSIONS), "--rounds", "2", *versions]
    # 6 rounds: the fewest a probe takes; it is stopped in its first round
    return [
        "bisect",
        str(tmp / "versions.yaml"),
        "--good",
        VERSIONS[0],
        "--bad",
        VERSIONS[-1],
        "--rounds",
        "6",
        *versions,
    ]


def _default_signals() -> None:
    """In the command: SIGINT and SIGHUP as a terminal's foreground job has them (a test run started with
    ``&`` or nohup passes them on ignored, and rlbench leaves a signal ignored at start alone)."""
    for sig in (signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, signal.SIG_DFL)


@pytest.mark.parametrize(("command", "point", "predicate", "sig"), CASES, ids=[f"{c}-{p}" for c, p, _, _ in CASES])
def test_a_signal_at_a_point_ends_with_the_resume_line_130_and_no_traceback(
    tools, tmp_path, command, point, predicate, sig
):
    out = tmp_path / "out"
    proc = subprocess.Popen(
        [sys.executable, "-m", "rlbench", *_argv(command, tools, out)],
        cwd=REPO,
        text=True,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        preexec_fn=_default_signals,
        env={**os.environ, "RLBENCH_ENV_CACHE": str(tools / "envs")},
    )
    deadline = time.monotonic() + 240
    while not predicate(out) and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.005)
    assert proc.poll() is None, f"{command} ended before {point}: " + "".join(proc.communicate())
    children = psutil.Process(proc.pid).children(recursive=True)
    proc.send_signal(sig)
    stdout, stderr = proc.communicate(timeout=240)
    assert proc.returncode == 130, stdout + stderr
    assert "Traceback" not in stderr and "Exception" not in stderr, stderr
    said = " ".join(stdout.split())
    if command == "bisect":  # bisect does not resume: it says where its probes are
        assert f"Interrupted: the probes so far are in {out}" in said, stdout
    else:
        assert "Resume with:" in said and f"--out {out}" in said and "--resume" in said, stdout
    _, alive = psutil.wait_procs(children, timeout=30)
    assert not alive, alive
