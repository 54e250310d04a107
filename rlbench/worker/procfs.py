"""Linux /proc reading shared by the samplers, the trial and the node tasks (standard library only,
so it imports inside Ray workers)."""

from __future__ import annotations

import os
from dataclasses import dataclass

_CLK_TCK = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
_PAGE_BYTES = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096
#: The kernel's PF_EXITING task flag: set from the start of exit(), before the memory is released.
PF_EXITING = 0x4


@dataclass
class ProcStat:
    """The fields rlbench uses from one ``/proc/<pid>/stat`` line."""

    state: str
    """One-letter state (``Z`` = zombie)."""
    ppid: int
    """Parent pid."""
    cpu_s: float
    """User + system CPU seconds."""
    start_ticks: int
    """Start time since boot, in clock ticks (tells a reused pid apart)."""
    rss_bytes: int
    """Resident memory."""
    session: int = 0
    """Session id (``setsid``): a trial and its Ray runtime share the trial's pid as theirs."""
    exiting: bool = False
    """The process is dying: exit has begun (``PF_EXITING``) or it is a zombie. Its memory reads 0
    or less than it used, so a sampler must record no row for it (a 0 would drag means down)."""


def parse_stat(text: bytes) -> ProcStat:
    """Parse a ``/proc/<pid>/stat`` line (the command name may hold spaces and parentheses)."""
    rest = text[text.rindex(b")") + 2 :].split()
    state = rest[0].decode()
    return ProcStat(
        state=state,
        ppid=int(rest[1]),
        cpu_s=(int(rest[11]) + int(rest[12])) / _CLK_TCK,
        start_ticks=int(rest[19]),
        rss_bytes=int(rest[21]) * _PAGE_BYTES,
        session=int(rest[3]),
        exiting=state in ("Z", "X", "x") or bool(int(rest[6]) & PF_EXITING),
    )


def parse_cpu_times(text: bytes) -> dict[int, tuple[int, int]]:
    """Core id -> (busy, total) clock ticks from ``/proc/stat``, busy as psutil defines it.

    Total leaves out guest and guest_nice (already counted in user and nice); busy is total less
    idle and iowait.
    """
    out = {}
    for line in text.splitlines():
        if not line.startswith(b"cpu") or line.startswith(b"cpu "):
            continue
        name, *fields = line.split()
        v = [int(x) for x in fields] + [0] * 8
        total = sum(v[:8])  # user nice system idle iowait irq softirq steal
        out[int(name[3:])] = (total - v[3] - v[4], total)
    return out


def parse_steal(text: bytes) -> tuple[int, int] | None:
    """(steal, total) clock ticks of all cores from ``/proc/stat``'s ``cpu`` line, or None without one.

    Steal is time a virtual CPU was ready to run while the hypervisor ran something else (another
    guest): the guest's processes lose it without any process here using it. Total as in
    :func:`parse_cpu_times`.
    """
    for line in text.splitlines():
        if line.startswith(b"cpu "):
            v = [int(x) for x in line.split()[1:]] + [0] * 8
            return v[7], sum(v[:8])
    return None


def read_steal() -> tuple[int, int] | None:
    """:func:`parse_steal` of this machine's ``/proc/stat`` now (None where it cannot be read)."""
    try:
        with open("/proc/stat", "rb") as f:
            return parse_steal(f.read())
    except (OSError, ValueError):
        return None


def steal_pct(before: tuple[int, int] | None, after: tuple[int, int] | None) -> float | None:
    """Steal as % of all cores' time between two :func:`read_steal` readings (None without both or
    without time between them)."""
    if before is None or after is None or after[1] <= before[1]:
        return None
    return 100.0 * max(after[0] - before[0], 0) / (after[1] - before[1])


def read_stat(pid: int) -> ProcStat | None:
    """One process's ``/proc/<pid>/stat``, or None when it is gone or unreadable."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            return parse_stat(f.read())
    except (OSError, ValueError, IndexError):
        return None


def read_cmdline(pid: int) -> list[str]:
    """A process's command line (its title, for Ray's workers), split at NULs; OSError when it is gone."""
    with open(f"/proc/{pid}/cmdline", "rb") as f:
        raw = f.read()
    return [part.decode(errors="replace") for part in raw.split(b"\0") if part]


def all_stats() -> dict[int, ProcStat]:
    """pid -> stat of every process on the machine now (those that vanish while read are left out)."""
    out = {}
    for name in os.listdir("/proc"):
        if name.isdigit() and (stat := read_stat(int(name))) is not None:
            out[int(name)] = stat
    return out
