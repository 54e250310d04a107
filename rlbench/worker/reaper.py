"""A trial's reaper: kills the trial's whole session the moment the sweep process dies.

Every trial starts one (``python -I -S reaper.py SWEEP_PID SESSION_ID``, standard library only,
a few MB). It waits on pidfds of the sweep process and of the trial (its parent); if the sweep dies (``kill -9``, OOM
killer,
a crash), it SIGKILLs every process in the trial's session (the trial called ``setsid``; its
Ray runtime, actors and agents stay in that session even where they change process group) and
exits. Without it, Ray's dashboard and runtime-env agents outlived a killed trial by about 60 s
(measured). If the trial ends first while the sweep lives, the reaper just exits: the sweep cleans up
(and counts) whatever the trial left.
"""

from __future__ import annotations

import os
import select
import signal
import sys
import time
from contextlib import suppress


def session_members(sid: int) -> list[int]:
    """Pids of every process whose session id is ``sid`` (read from /proc)."""
    pids = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as f:
                stat = f.read()
        except OSError:
            continue
        # fields after the parenthesised command: state ppid pgrp session ...
        fields = stat[stat.rfind(b")") + 2 :].split()
        if len(fields) > 3 and int(fields[3]) == sid:
            pids.append(int(name))
    return pids


def kill_session(sid: int, *, settle_s: float = 2.0) -> int:
    """SIGKILL every member of session ``sid`` but this process, repeating until none is left
    (a process may spawn while we kill) or ``settle_s`` passes; returns how many were killed."""
    killed: set[int] = set()
    deadline = time.monotonic() + settle_s
    while True:
        targets = [p for p in session_members(sid) if p != os.getpid() and p not in killed]
        for pid in targets:
            with suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
                killed.add(pid)
        if not targets or time.monotonic() > deadline:
            return len(killed)
        time.sleep(0.05)


def _pidfd(pid: int) -> int | None:
    try:
        return os.pidfd_open(pid)
    except (AttributeError, OSError):  # no pidfd (old kernel) or already gone
        return None


def _alive(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie, dead but not yet reaped by its parent, does not)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            stat = f.read()
    except OSError:
        return False
    return stat[stat.rfind(b")") + 2 :][:1] not in (b"Z", b"X")


def wait_for_either(sweep_pid: int, trial_pid: int) -> bool:
    """Block until the sweep or the trial exits; True if the sweep is gone."""
    sweep_fd, trial_fd = _pidfd(sweep_pid), _pidfd(trial_pid)
    if sweep_fd is not None and trial_fd is not None:
        ready, _, _ = select.select([sweep_fd, trial_fd], [], [])
        return sweep_fd in ready
    while _alive(sweep_pid) and _alive(trial_pid):
        time.sleep(0.2)
    return not _alive(sweep_pid)


def main(argv: list[str]) -> int:
    sweep_pid, sid = int(argv[1]), int(argv[2])
    trial_pid = os.getppid()
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # a terminal's Ctrl-C is the sweep's to handle
    if not wait_for_either(sweep_pid, trial_pid):
        return 0  # the trial ended while the sweep lives: the sweep cleans up (and counts) leftovers
    n = kill_session(sid)
    print(
        f"rlbench reaper: sweep process {sweep_pid} died; killed {n} processes of session {sid}",
        file=sys.stderr,
        flush=True,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
