"""Killing a trial's processes and waiting for them to die, from the sweep's side.

A trial runs in its own session and process group; the sweep kills the group, every descendant
it can still see, and afterwards anything of the trial still alive (a pid the sampler saw, or a
process naming the trial's private Ray session). Every sweep ends with no process of its trials
alive, also when a trial fails or times out.
"""

from __future__ import annotations

import os
import signal
import time

import psutil


def wait_dead(procs: list[psutil.Process], timeout: float = 5.0) -> None:
    """Wait until every process is gone or a zombie (dead, only not yet reaped by its parent).

    psutil.wait_procs waits for the reaping too: an orphan killed here is reaped by PID 1, which
    in some containers polls, and that wait (measured: 1.2 s for 6 Ray workers) would be charged to
    the harness, not to the trial.
    """
    deadline = time.monotonic() + timeout
    pending = list(procs)
    while pending and time.monotonic() < deadline:
        still = []
        for proc in pending:
            try:
                if proc.status() != psutil.STATUS_ZOMBIE:
                    still.append(proc)
            except psutil.Error:
                pass
        pending = still
        if pending:
            time.sleep(0.01)


def kill_tree(pid: int) -> None:
    """SIGKILL a trial process, its process group and every descendant still alive."""
    try:
        descendants = psutil.Process(pid).children(recursive=True)
    except psutil.Error:
        descendants = []
    for target in (lambda: os.killpg(pid, signal.SIGKILL), lambda: os.kill(pid, signal.SIGKILL)):
        try:
            target()
        except (ProcessLookupError, PermissionError):
            pass
    for proc in descendants:
        try:
            proc.kill()
        except psutil.Error:
            pass
    wait_dead(descendants, timeout=5)


def survivors(pids: set[int], session_dir: str | None) -> list[psutil.Process]:
    """Processes of a finished trial still alive: a pid it had, or anything naming its Ray session."""
    alive = []
    session = os.path.basename(session_dir) if session_dir else None
    for proc in psutil.process_iter(["pid", "cmdline", "status"]):
        if proc.pid == os.getpid() or proc.info["status"] == psutil.STATUS_ZOMBIE:
            continue  # a zombie is dead already, only not yet reaped by its parent
        cmdline = " ".join(proc.info["cmdline"] or [])
        if proc.pid in pids or (session and session in cmdline):
            alive.append(proc)
    return alive
