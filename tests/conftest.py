"""Shared test helpers."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import psutil
import pytest

REPO = Path(__file__).resolve().parents[1]


def run_cli(*args: str, cwd: Path = REPO, timeout: float = 600, env: dict | None = None) -> subprocess.CompletedProcess:
    """Run ``python -m rlbench ARGS`` for real; returns the completed process (text output)."""
    return subprocess.run([sys.executable, "-m", "rlbench", *args], cwd=cwd, capture_output=True, text=True,
                          timeout=timeout, env={**os.environ, **(env or {})})


def trial_processes_alive(out_dir: Path) -> list[str]:
    """Processes of a finished sweep still running: any pid the sampler saw, or any naming its Ray sessions."""
    import pandas as pd

    util = pd.read_parquet(out_dir / "utilization.parquet")
    pids = set(util["pid"].dropna().astype(int))
    sessions = set()
    for events in (out_dir / "trials").glob("*/events.jsonl"):
        for line in events.read_text().splitlines():
            e = json.loads(line)
            if e.get("event") == "ray_init" and e.get("session_dir"):
                sessions.add(os.path.basename(e["session_dir"]))
    alive = []
    for proc in psutil.process_iter(["pid", "cmdline", "status"]):
        if proc.info["status"] == psutil.STATUS_ZOMBIE:
            continue
        cmd = " ".join(proc.info["cmdline"] or [])
        if proc.pid in pids or any(s in cmd for s in sessions):
            alive.append(f"{proc.pid}: {cmd[:120]}")
    return alive


@pytest.fixture
def repo() -> Path:
    return REPO
