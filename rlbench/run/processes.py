"""Killing a trial's processes and waiting for them to die, from the sweep's side.

A trial runs in its own session and process group; the sweep kills the group, every descendant
it can still see, and afterwards anything of the trial still alive. "Of the trial" is decided
so that nothing else is ever hit (a pid is recycled within seconds on a busy machine, and a
resumed folder may come from someone else):

- a process is named by its pid *and* its start time (``/proc/<pid>/stat``, clock ticks since
  boot): the pairs the utilization sampler saw in the trial's tree, or the trial process itself;
- a process found by its Ray session must name that session exactly (a whole path component or
  ``--session-name=`` value, and the name must look like Ray's ``session_<date>_<time>_<us>_<pid>``),
  belong to the trial's Linux session (the trial calls ``setsid``), and that session's leader (the
  trial) must be dead or be the very process that was started;
- only processes of this user are touched; a ``psutil``/``/proc`` error never propagates (a
  process that vanished or cannot be read is simply not killed).

Every sweep ends with no process of its trials alive, also when a trial fails or times out.
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import time
from dataclasses import dataclass

import psutil

from rlbench.worker.procfs import read_stat

#: What Ray's session folders are called (``ray._private.node``): a forged short name such as
#: ``python`` or ``s`` must match nothing.
SESSION_NAME = re.compile(r"session_\d{4}-\d{2}-\d{2}_\d{2}-\d{2}-\d{2}_\d+_\d+")


@dataclass(frozen=True)
class ProcessRef:
    """One process, told apart from any later process that gets its pid."""

    pid: int
    """Process id."""
    start_ticks: int
    """Start time since boot in clock ticks (``/proc/<pid>/stat`` field 22)."""

    @classmethod
    def of(cls, pid: int) -> ProcessRef | None:
        """The process running as ``pid`` now, or None."""
        stat = read_stat(pid)
        return None if stat is None else cls(pid, stat.start_ticks)

    def alive(self) -> bool:
        """Whether this very process (not a successor with its pid) still runs (a zombie does not)."""
        stat = read_stat(self.pid)
        return stat is not None and stat.start_ticks == self.start_ticks and stat.state not in ("Z", "X")


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
            with contextlib.suppress(psutil.Error):
                if proc.status() != psutil.STATUS_ZOMBIE:
                    still.append(proc)
        pending = still
        if pending:
            time.sleep(0.01)


def _mine(pid: int) -> bool:
    try:
        return os.stat(f"/proc/{pid}").st_uid == os.getuid()
    except OSError:
        return False


def _kill(ref: ProcessRef) -> psutil.Process | None:
    """SIGKILL ``ref`` if it is still that process and this user's; the psutil handle, or None."""
    try:
        proc = psutil.Process(ref.pid)
        stat = read_stat(ref.pid)
        if stat is None or stat.start_ticks != ref.start_ticks or not _mine(ref.pid):
            return None
        proc.kill()  # psutil checks again that the pid was not reused since Process() was made
        return proc
    except (psutil.Error, OSError):
        return None


def session_members(leader: ProcessRef) -> list[ProcessRef]:
    """This user's processes in the Linux session ``leader`` started (``setsid``), ``leader`` left out.

    Empty when another process now runs as the leader's pid (the session is someone else's).
    While any member lives, the kernel does not give the session id to a new process.
    """
    now = ProcessRef.of(leader.pid)
    if now is not None and now.start_ticks != leader.start_ticks:
        return []
    out = []
    for name in _pids():
        stat = read_stat(name)
        if stat is not None and stat.session == leader.pid and name != leader.pid and _mine(name):
            out.append(ProcessRef(name, stat.start_ticks))
    return out


def _pids() -> list[int]:
    try:
        return [int(n) for n in os.listdir("/proc") if n.isdigit()]
    except OSError:
        return []


def kill_tree(trial: ProcessRef) -> None:
    """SIGKILL a trial process, its process group and every member of its session still alive.

    The group and the descendants are killed only while ``trial`` is still that process (its pid
    not reaped and reused); the session's members are found as :func:`session_members` says.
    """
    targets = session_members(trial)
    if ProcessRef.of(trial.pid) == trial:  # running, or a zombie not yet reaped: the pid is still the trial's
        with contextlib.suppress(psutil.Error):
            targets += [
                ProcessRef(c.pid, s.start_ticks)
                for c in psutil.Process(trial.pid).children(recursive=True)
                if (s := read_stat(c.pid)) is not None
            ]
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(trial.pid, signal.SIGKILL)
        _kill(trial)
    killed = [p for ref in set(targets) if (p := _kill(ref)) is not None]
    wait_dead(killed, timeout=5)


def names_session(cmdline: list[str], session: str) -> bool:
    """Whether a command line names Ray session ``session`` exactly: as an argument, a
    ``--flag=`` value or a whole path component (never as a part of a longer word)."""
    pattern = re.compile(rf"(?:^|[=/\s]){re.escape(session)}(?:$|[/\s])")
    return any(pattern.search(arg) for arg in cmdline)


def survivors(seen: set[tuple[int, int]], session_dir: str | None, leader: ProcessRef | None) -> list[psutil.Process]:
    """Processes of a finished trial still alive, each of this user: a (pid, start ticks) pair
    the sampler saw, or a process naming the trial's Ray session exactly inside the trial's Linux
    session (``leader``: the trial process; see the module's rules). Never raises."""
    session = os.path.basename(session_dir) if isinstance(session_dir, str) else None
    if session is not None and not SESSION_NAME.fullmatch(session):
        session = None  # not a Ray session's name: match nothing by it
    members = {m.pid: m for m in session_members(leader)} if (session and leader) else {}
    alive = []
    for pid in _pids():
        if pid == os.getpid():
            continue
        stat = read_stat(pid)
        if stat is None or stat.exiting or not _mine(pid):
            continue  # gone, dying, a zombie (dead, only not yet reaped), or another user's
        ref = (pid, stat.start_ticks)
        match = ref in seen
        if not match and session and pid in members and members[pid].start_ticks == stat.start_ticks:
            try:
                match = names_session(psutil.Process(pid).cmdline(), session)
            except psutil.Error:
                match = False
        if match:
            try:
                proc = psutil.Process(pid)
            except psutil.Error:
                continue
            alive.append(proc)
    return alive


def kill_survivors(seen: set[tuple[int, int]], session_dir: str | None, leader: ProcessRef | None) -> int:
    """Kill :func:`survivors` and wait for them; returns how many were killed. Never raises: a
    clean-up that cannot read ``/proc`` kills nothing and lets the sweep go on."""
    try:
        left = survivors(seen, session_dir, leader)
    except (psutil.Error, OSError):
        return 0
    killed = []
    for proc in left:
        with contextlib.suppress(psutil.Error):
            proc.kill()
            killed.append(proc)
    wait_dead(killed, timeout=5)
    return len(killed)
