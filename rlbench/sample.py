"""Sample stage: CPU, memory and GPU use of a running trial, observed from outside its processes.

A :class:`Sampler` thread in the sweep process reads the trial's process tree at ``sample_hz``
and records, per process, its role (driver, learner, env_runner, ray_system, other), the cores it
kept busy since the last sample (``cpu_pct``, 100 = one core) and its resident memory; per core,
the machine's busy percentage; per GPU (through :mod:`rlbench.nvml`), utilization, memory, power,
SM clock and the energy counter.

It must not disturb what it measures (target: under 1% of one core at 10 Hz on a tree of 20+
processes; ``scripts/bench_sampler.py`` measures it), so it reads Linux's ``/proc`` directly:

- Tree membership is kept incrementally, and only looked at when the machine's fork counter
  (``processes`` in ``/proc/stat``) moved since the last tick. Then ``/proc`` is listed once and
  the parent pid of new pids only is read; a pid not in the tree is remembered as foreign while
  it stays listed (a process outside the tree cannot move into it). psutil's
  ``children(recursive=True)`` instead reads the status of every process on the machine on
  every call.
- Each member's ``/proc/<pid>/stat`` stays open and is re-read with one ``pread``: CPU time
  (user + system), start time (to notice a reused pid) and RSS come from that one line.
- Per-core busy time comes from one ``pread`` of ``/proc/stat``, with psutil's definition of busy.
- A process's role is read from its title once; only ``other`` (e.g. a pooled ``ray::IDLE``
  worker that may become an actor) is re-read, every :data:`RECLASSIFY_EVERY` ticks.
- Rows are kept as tuples and turned into columns once, at the end.
"""

from __future__ import annotations

import os
import threading
import time
from typing import Any

from rlbench.adapters.rllib import classify_process
from rlbench.nvml import EnergySinceStart, Gpus
from rlbench.procfs import ProcStat, parse_cpu_times, parse_stat

#: Columns of a utilization row (see docs/SCHEMA.md); ``kind`` is process, core or gpu.
UTILIZATION_COLUMNS: tuple[str, ...] = (
    "t_s", "kind", "role", "pid", "core", "cpu_pct", "rss_bytes",
    "gpu_index", "gpu_util_pct", "gpu_mem_used_bytes", "gpu_power_w", "gpu_sm_clock_mhz", "gpu_energy_mj",
)
#: Ticks between two reads of the title of a process classified ``other``.
RECLASSIFY_EVERY = 5

_PROC = "/proc"


def parse_forks(text: bytes) -> int | None:
    """The ``processes`` line of ``/proc/stat``: forks (and clones) since boot; None if absent."""
    start = text.find(b"\nprocesses ")
    if start < 0:
        return None
    end = text.find(b"\n", start + 1)
    return int(text[start + 11:end if end > 0 else None])


def _read_cmdline(pid: int) -> list[str]:
    with open(f"{_PROC}/{pid}/cmdline", "rb") as f:
        raw = f.read()
    return [part.decode(errors="replace") for part in raw.split(b"\0") if part]


class _Member:
    """One process of the tree, with its open stat file and last reading."""

    __slots__ = ("pid", "fd", "start_ticks", "role", "last_mono", "last_cpu_s")

    def __init__(self, pid: int, fd: int, start_ticks: int):
        self.pid = pid
        self.fd = fd
        self.start_ticks = start_ticks
        self.role: str | None = None
        self.last_mono: float | None = None
        self.last_cpu_s = 0.0


def _open_stat(pid: int) -> tuple[int, ProcStat] | None:
    try:
        fd = os.open(f"{_PROC}/{pid}/stat", os.O_RDONLY)
    except OSError:
        return None
    try:
        return fd, parse_stat(os.pread(fd, 4096, 0))
    except (OSError, ValueError, IndexError):
        os.close(fd)
        return None


class Sampler:
    """Samples one process tree until stopped; rows accumulate and are read back as ``columns``.

    ``hz <= 0`` turns sampling off (no thread, no rows): an internal switch for
    ``scripts/bench_sampler.py``, which compares trials with and without the sampler. The spec
    itself asks ``sample_hz > 0``.
    """

    def __init__(self, root_pid: int, *, t0_epoch: float, hz: float, gpus: Gpus | None = None,
                 per_core: bool = True):
        self.root_pid = root_pid
        self.t0_epoch = t0_epoch
        self.enabled = hz > 0
        self.period_s = 1.0 / hz if self.enabled else 0.0
        self.gpus = gpus
        self.per_core = per_core
        self.samples = 0
        self.cpu_s = 0.0
        """CPU time the sampler thread itself used."""
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="rlbench-sampler", daemon=True)
        self._members: dict[int, _Member] = {}
        self._foreign: set[int] = set()
        self._seen: set[int] = set()
        self._process_rows: list[tuple] = []
        self._core_rows: list[tuple] = []
        self._gpu_rows: list[tuple] = []
        self._stat_fd: int | None = None
        self._last_cores: dict[int, tuple[int, int]] = {}
        self._tick = 0
        self._last_forks: int | None = None
        self._energy = EnergySinceStart()
        """Per GPU index: energy since the first reading (counter wrap allowed for)."""

    @property
    def seen_pids(self) -> set[int]:
        """Every pid the sampler has seen in the tree."""
        return set(self._seen)

    @property
    def columns(self) -> dict[str, list[Any]]:
        """All rows so far, column-wise (the :data:`UTILIZATION_COLUMNS`)."""
        cols: dict[str, list[Any]] = {c: [] for c in UTILIZATION_COLUMNS}
        n_gpu_fields = 6
        for t_s, role, pid, cpu_pct, rss in self._process_rows:
            self._add(cols, t_s, "process", role, pid, None, cpu_pct, rss, *([None] * n_gpu_fields))
        for t_s, core, cpu_pct in self._core_rows:
            self._add(cols, t_s, "core", None, None, core, cpu_pct, None, *([None] * n_gpu_fields))
        for t_s, *gpu in self._gpu_rows:
            self._add(cols, t_s, "gpu", None, None, None, None, None, *gpu)
        return cols

    @staticmethod
    def _add(cols: dict[str, list[Any]], *values: Any) -> None:
        for column, value in zip(cols.values(), values):
            column.append(value)

    def start(self) -> "Sampler":
        """Begin sampling in a background thread (nothing when sampling is off)."""
        if self.enabled:
            self._thread.start()
        return self

    def stop(self) -> None:
        """Stop sampling, wait for the thread and release the open files."""
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join()
        self.close()

    def close(self) -> None:
        """Close every open ``/proc`` file (done by :meth:`stop`)."""
        for member in self._members.values():
            os.close(member.fd)
        self._members.clear()
        if self._stat_fd is not None:
            os.close(self._stat_fd)
            self._stat_fd = None

    def _loop(self) -> None:
        start_cpu = time.thread_time()
        next_t = time.monotonic()
        try:
            self._last_cores = self._read_cores() or {}  # baseline for the first per-core reading
            while not self._stop.is_set():
                self.sample_once()
                next_t += self.period_s
                delay = next_t - time.monotonic()
                if delay < 0:  # fell behind (machine overloaded): skip missed ticks, do not burst
                    next_t = time.monotonic()
                    delay = 0
                self._stop.wait(delay)
        finally:
            self.cpu_s = time.thread_time() - start_cpu

    # -- the tree ----------------------------------------------------------------------------

    def _admit(self, pid: int) -> ProcStat | None:
        opened = _open_stat(pid)
        if opened is None:
            return None
        fd, stat = opened
        self._members[pid] = _Member(pid, fd, stat.start_ticks)
        self._seen.add(pid)
        return stat

    def _refresh_tree(self) -> None:
        """Add processes born into the tree since the last tick (new pids only are read)."""
        try:
            listed = {int(name) for name in os.listdir(_PROC) if name.isdigit()}
        except OSError:
            return
        self._foreign &= listed  # a pid that vanished may come back as anyone's child
        if not self._members and self.root_pid in listed:
            self._admit(self.root_pid)
        new = listed - self._foreign - self._members.keys()
        parents: dict[int, int] = {}
        for pid in new:
            opened = _open_stat(pid)
            if opened is None:
                continue
            fd, stat = opened
            os.close(fd)
            parents[pid] = stat.ppid
        # Closure: a new child of a new child joins too, whatever order the pids came in.
        added = True
        while added:
            added = False
            for pid, ppid in list(parents.items()):
                if ppid in self._members:
                    del parents[pid]
                    if self._admit(pid) is not None:
                        added = True
        self._foreign |= parents.keys()

    def _role(self, member: _Member) -> str:
        if member.role is not None and (member.role != "other" or self._tick % RECLASSIFY_EVERY):
            return member.role
        try:
            member.role = classify_process(_read_cmdline(member.pid), is_driver=member.pid == self.root_pid)
        except OSError:
            member.role = member.role or "other"
        return member.role

    # -- one sample --------------------------------------------------------------------------

    def _read_proc_stat(self) -> bytes:
        try:
            if self._stat_fd is None:
                self._stat_fd = os.open(f"{_PROC}/stat", os.O_RDONLY)
            return os.pread(self._stat_fd, 65536, 0)
        except OSError:
            return b""

    def _read_cores(self) -> dict[int, tuple[int, int]] | None:
        return parse_cpu_times(self._read_proc_stat()) if self.per_core else None

    def sample_once(self) -> None:
        """Take one sample of the tree, the cores and the GPUs."""
        t_s = time.time() - self.t0_epoch
        mono = time.monotonic()
        proc_stat = self._read_proc_stat()
        forks = parse_forks(proc_stat)
        if forks is None or forks != self._last_forks or not self._members:
            self._refresh_tree()  # only when some process was created since the last look
            self._last_forks = forks
        rows = self._process_rows
        for pid, member in list(self._members.items()):
            try:
                stat = parse_stat(os.pread(member.fd, 4096, 0))
            except (OSError, ValueError, IndexError):
                stat = None
            if stat is None or stat.start_ticks != member.start_ticks:
                os.close(member.fd)  # gone (or the pid now names another process)
                del self._members[pid]
                continue
            last_mono, last_cpu_s = member.last_mono, member.last_cpu_s
            member.last_mono, member.last_cpu_s = mono, stat.cpu_s
            if last_mono is None or mono <= last_mono or stat.exiting or stat.rss_bytes == 0:
                continue  # cpu_pct needs two readings; a dying process (exit begun, memory released) yields no row
            rows.append((t_s, self._role(member), pid, 100.0 * (stat.cpu_s - last_cpu_s) / (mono - last_mono),
                         stat.rss_bytes))
        cores = parse_cpu_times(proc_stat) if self.per_core and proc_stat else None
        if cores is not None:
            for core, (busy, total) in cores.items():
                if core in self._last_cores:
                    busy0, total0 = self._last_cores[core]
                    d_total = total - total0
                    pct = 100.0 * min(max((busy - busy0) / d_total, 0.0), 1.0) if d_total > 0 else 0.0
                    self._core_rows.append((t_s, core, pct))
            self._last_cores = cores
        if self.gpus is not None:
            # stamped when read: energy per second is counter delta / time delta, and the /proc
            # reads above take longer on a busy machine
            t_s = time.time() - self.t0_epoch
            for g in self.gpus.read():
                self._gpu_rows.append((t_s, g.index, g.util_pct, g.mem_used_bytes, g.power_w, g.sm_clock_mhz,
                                       self._energy.update(g.index, g.energy_mj)))
        self._tick += 1
        self.samples += 1
