"""Small tasks rlbench runs on every node of a Ray cluster (zero-CPU tasks pinned to the node).

:func:`node_hardware` reads a node's hardware for the sweep's cluster probe; :func:`processes_gone`
waits, after a trial's driver left, until the trial's processes on the node have exited. Standard
library and /proc only: they run inside Ray workers on machines that may hold nothing but Ray.
"""

from __future__ import annotations

import os
import platform
import time
from contextlib import suppress
from pathlib import Path
from typing import Any


def node_hardware() -> dict[str, Any]:
    """This machine's hardware (runs as a task pinned to a node; standard library and /proc only)."""
    cpu_model, cores = None, set()
    physical = None
    core_id = None
    with suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            key, _, value = line.partition(":")
            key, value = key.strip(), value.strip()
            if key == "model name" and cpu_model is None:
                cpu_model = value
            elif key == "physical id":
                physical = value
            elif key == "core id":
                core_id = value
                cores.add((physical, core_id))
    memory = None
    with suppress(OSError):
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                memory = int(line.split()[1]) * 1024
    gpus: list[dict[str, Any]] = []
    try:
        from rlbench.worker.nvml import open_gpus

        opened = open_gpus()
        if opened is not None:
            gpus = opened.describe()
            opened.close()
    except Exception:  # noqa: BLE001 - no NVML on the node: no GPUs described
        gpus = []
    return {
        "hostname": platform.node(),
        "cpu_model": cpu_model or platform.processor() or platform.machine(),
        "logical_cores": os.cpu_count(),
        "physical_cores": len(cores) or None,
        "memory_bytes": memory,
        "gpus": gpus,
    }


def processes_gone(processes: list[list[Any]], wait_s: float) -> dict[str, Any]:
    """On one node: wait until every ``(pid, start ticks)`` has exited, then SIGKILL the ones left.

    Runs as a zero-CPU task pinned to the node (standard library and /proc only). A zombie counts
    as exited (only its parent's reaping is missing); a pid whose start time differs is another
    process now and is left alone, as is one whose start time was never read (no kill on a pid alone).
    """
    import signal

    from rlbench.worker.procfs import read_stat

    def alive(pid: int, ticks: int | None) -> bool:
        stat = read_stat(pid)
        return stat is not None and (ticks is None or stat.start_ticks == ticks) and stat.state not in ("Z", "X", "x")

    t = time.monotonic()
    pending = [(int(p), t_) for p, t_ in processes if alive(int(p), t_)]
    while pending and time.monotonic() - t < wait_s:
        time.sleep(0.05)
        pending = [(p, t_) for p, t_ in pending if alive(p, t_)]
    killed, unchecked = [], []
    for pid, ticks in pending:
        if ticks is None:
            unchecked.append(pid)
            continue
        with suppress(OSError):
            os.kill(pid, signal.SIGKILL)
            killed.append(pid)
    return {"waited_s": time.monotonic() - t, "killed": killed, "unchecked": unchecked}
