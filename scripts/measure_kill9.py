"""Measure how long a trial's processes outlive a ``kill -9`` of the ``rlbench sweep`` process.

Runs a one-trial sweep (tiny env, one env runner) in the background, waits for its first
iteration, SIGKILLs the rlbench process and prints, for every process that was in its tree, the
seconds until it was gone (a zombie counts as gone: it holds nothing, its parent has only not
reaped it yet). Run from the repository root:

    flock /tmp/rlbench-ray.lock python scripts/measure_kill9.py [--repeats 3]
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psutil

SPEC = """\
name: kill9
environment: {env: envs.tiny:TinyEnv}
env_runners: {num_env_runners: 1}
training: {train_batch_size_per_learner: 128, minibatch_size: 64, num_epochs: 1}
rl_module: {fcnet_hiddens: [8]}
cpus: 2
stop: {iterations: 100000}
trial_timeout_s: 600
"""


def _gone(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


def _title(cmd: list[str]) -> str:
    """A short name for a process: its Ray title, its Python script or module, or its program."""
    if cmd[0].startswith("ray::"):
        return cmd[0].split(".")[0]
    name = Path(cmd[0]).name
    if "-c" in cmd:
        code = cmd[cmd.index("-c") + 1]
        return f"{name} -c " + (code.split(" import ")[0].removeprefix("from ") if " import " in code else code[:30])
    scripts = [Path(c).name for c in cmd[1:] if c.endswith(".py")]
    return f"{name} {scripts[0]}" if scripts else name


def measure_once(workdir: Path) -> dict[str, float]:
    """Title of each process of the sweep's tree -> seconds it outlived the kill (max per title)."""
    spec = workdir / "kill9.yaml"
    spec.write_text(SPEC)
    out = workdir / "out"
    proc = subprocess.Popen(
        [sys.executable, "-m", "rlbench", "sweep", str(spec), "--out", str(out)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    events = out / "trials" / "t000r0" / "events.jsonl"
    while not (events.exists() and '"event": "iteration"' in events.read_text()):
        if proc.poll() is not None:
            raise RuntimeError("the sweep ended before its first iteration")
        time.sleep(0.05)
    trial_pid = json.loads(events.read_text().splitlines()[0])["pid"]
    tree = {}
    for child in psutil.Process(proc.pid).children(recursive=True):
        try:
            tree[child.pid] = "trial (driver)" if child.pid == trial_pid else _title(child.cmdline())
        except psutil.Error:
            pass
    os.kill(proc.pid, signal.SIGKILL)
    t0 = time.monotonic()
    proc.wait()
    lived: dict[str, float] = {}
    pending = dict(tree)
    while pending and time.monotonic() - t0 < 120:
        for pid in [p for p in pending if _gone(p)]:
            title = pending.pop(pid)
            lived[title] = max(lived.get(title, 0.0), time.monotonic() - t0)
        time.sleep(0.01)
    for title in pending.values():
        lived[title] = float("inf")
    return lived


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    runs = []
    for _ in range(args.repeats):
        with tempfile.TemporaryDirectory() as tmp:
            runs.append(measure_once(Path(tmp)))
    titles = sorted({t for r in runs for t in r}, key=lambda t: max(r.get(t, 0) for r in runs))
    print(f"seconds each process outlived kill -9 of rlbench ({args.repeats} runs):")
    for title in titles:
        print(f"  {title:62s} " + "  ".join(f"{r.get(title, float('nan')):6.2f}" for r in runs))
    print(f"  {'all gone after':62s} " + "  ".join(f"{max(r.values()):6.2f}" for r in runs))


if __name__ == "__main__":
    main()
