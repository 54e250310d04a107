"""The utilization sampler: CPU, memory and GPU use of a running trial, observed from outside its processes.

A :class:`UtilizationSampler` thread in the sweep process reads the trial's process tree at
``sample_hz`` and records, per process, its role (driver, learner, env_runner, ray_system, other;
``harness`` for rlbench's own processes: the trial's reaper, and the py-spy profilers the sweep
adopts into the sample (:meth:`UtilizationSampler.adopt`); never counted as the trial's), the cores it kept
busy since the last sample (``cpu_pct``, 100 = one core) and its resident memory; per core, the
machine's busy percentage; per GPU (through :mod:`rlbench.worker.nvml`), utilization, memory,
power, SM clock and the energy counter; per CPU package (through :mod:`rlbench.worker.rapl`, when
the machine lets it be read), its energy counter. ("Sampler" here always means this utilization sampler;
RL sampling is the env runners' job.)

It must not disturb what it measures (target: under 1% of one core at 10 Hz on a tree of 20+
processes; ``configs/bench_sampler.yaml`` measures it), so it reads Linux's ``/proc`` directly:

- Tree membership is kept incrementally, and only looked at when the machine's fork counter
  (``processes`` in ``/proc/stat``) moved since the last tick. Then ``/proc`` is listed once and
  the parent pid of new pids only is read; a pid not in the tree is remembered as foreign while
  it stays listed (a process outside the tree cannot move into it). psutil's
  ``children(recursive=True)`` instead reads the status of every process on the machine on
  every call.
- Each member's ``/proc/<pid>/stat`` stays open and is re-read with one ``pread``: CPU time
  (user + system), start time (to notice a reused pid) and RSS come from that one line.
- Per-core busy time comes from one ``pread`` of ``/proc/stat``, with psutil's definition of busy.
- A process's role is read from its title once (the one classifier, :mod:`rlbench.adapters.roles`); only a
  role the classifier has not settled (a Ray worker that is no actor yet, ``ray::IDLE`` or still
  ``default_worker.py``: ``ray_system`` for now; ``other``) and a child still showing its parent's command line
  (forked, not yet exec'd) are re-read, every :data:`RECLASSIFY_EVERY` ticks. When such a
  worker takes an actor's title, its earlier rows get that role too: they are the actor's
  own start (Ray titles a worker ``ray::IDLE`` while it imports the actor's class: measured 6-7 s at
  25-47% of a core for APPO's aggregator and state server on 2 busy cores), not another process. A worker the
  raylet started and that never became an actor stays ``ray_system``: under load (a busy loop on one of 2 cores)
  an APPO trial's raylet started two such workers beside its actors' (``default_worker.py``, then ``ray::IDLE``,
  then gone: 35 rows each), which had been ``other`` (issue 44).
- Rows are kept as tuples and turned into columns once, at the end.

The row shape, CPU %, core busy % and the tick loop are shared with the cluster node samplers
(:mod:`rlbench.worker.sampling`).
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

from rlbench.adapters import Adapter, get_adapter
from rlbench.adapters.roles import Role
from rlbench.worker.nvml import Gpus
from rlbench.worker.procfs import ProcStat, parse_stat, read_cmdline
from rlbench.worker.rapl import Rapl
from rlbench.worker.sampling import CoreBusy, CpuEnergy, GpuEnergy, ProcessCpu, Rows, TickLoop

#: Ticks between two reads of the title of a process classified ``other``.
RECLASSIFY_EVERY = 5
#: Role of rlbench's own processes inside a trial's tree (the reaper): sampled, never the trial's.
HARNESS_ROLE = "harness"
#: The reaper's script: a process running it is the harness.
REAPER_SCRIPT = str(Path(__file__).resolve().parents[1] / "worker" / "reaper.py")

_PROC = "/proc"


def parse_forks(text: bytes) -> int | None:
    """The ``processes`` line of ``/proc/stat``: forks (and clones) since boot; None if absent."""
    start = text.find(b"\nprocesses ")
    if start < 0:
        return None
    end = text.find(b"\n", start + 1)
    return int(text[start + 11 : end if end > 0 else None])


def classify(cmdline: list[str], *, is_driver: bool, adapter: Adapter | None = None) -> Role:
    """A trial process's role: the harness (rlbench's reaper) first, then the trial's adapter's reading
    of its title (default: RLlib's)."""
    if REAPER_SCRIPT in cmdline[:4]:
        return Role(HARNESS_ROLE)
    return (adapter or get_adapter()).classify_process(cmdline, is_driver=is_driver)


class _Member:
    """One process of the tree, with its open stat file and last reading."""

    __slots__ = ("pid", "fd", "start_ticks", "role", "settled", "rss_bytes", "first_row", "ppid", "unexeced")

    def __init__(self, pid: int, fd: int, start_ticks: int, first_row: int = 0, ppid: int = 0):
        self.pid = pid
        self.fd = fd
        self.start_ticks = start_ticks
        self.ppid = ppid
        self.unexeced = False
        """Its command line was its parent's when classified: forked, not yet exec'd (see :meth:`Sampler._role`)."""
        self.role: str | None = None
        self.settled = False
        """The classifier's word that the role will not change (:attr:`rlbench.adapters.roles.Role.settled`)."""
        self.rss_bytes = 0
        self.first_row = first_row
        """Index of the first process row this process can have (rows before it are another pid's life)."""


def _parent_cmdline(ppid: int) -> list[str] | None:
    """The parent's command line, or None when it is gone."""
    try:
        return read_cmdline(ppid)
    except OSError:
        return None


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


class UtilizationSampler:
    """Samples one process tree until stopped; rows accumulate and are read back as ``columns``.

    ``hz <= 0`` turns sampling off (no thread, no rows): the ``sampler`` fidelity switch, which
    ``configs/bench_sampler.yaml`` sets as a variant to compare trials with and without the
    sampler. The spec itself asks ``sample_hz > 0``.
    """

    def __init__(
        self,
        root_pid: int,
        *,
        t0_epoch: float,
        hz: float,
        gpus: Gpus | None = None,
        per_core: bool = True,
        rapl: Rapl | None = None,
        adapter: Adapter | None = None,
        root_role: str | None = None,
    ):
        self.root_pid = root_pid
        self.root_role = root_role
        """The root process's role when it is not the trial's driver (``harness``: a ``--parallel`` trial's
        process here only carries its events; its driver is a trial actor on the nodes); None: ``driver``."""
        self.adapter = adapter or get_adapter()
        """Whose process titles the roles are read from (the trial's framework)."""
        self.t0_epoch = t0_epoch
        self.enabled = hz > 0
        self.gpus = gpus
        self.rapl = rapl
        self.per_core = per_core
        self.samples = 0
        self._loop = TickLoop(
            1.0 / hz if self.enabled else 0.0, self.sample_once, "rlbench-sampler", before=self._baseline
        )
        self._members: dict[int, _Member] = {}
        self._foreign: set[int] = set()
        self._seen: set[tuple[int, int]] = set()
        self._rows = Rows()
        self._cpu = ProcessCpu()
        self._cores = CoreBusy()
        self._gpu = GpuEnergy()
        self._cpu_energy = CpuEnergy()
        self._stat_fd: int | None = None
        self._tick = 0
        self._last_forks: int | None = None
        self._trial_rss_bytes = 0
        self._to_adopt: list[int] = []  # appended by the sweep's thread, admitted by the sampler's
        self._adopted: set[int] = set()

    @property
    def cpu_s(self) -> float:
        """CPU time the sampler thread itself used."""
        return self._loop.cpu_s

    @property
    def seen_processes(self) -> set[tuple[int, int]]:
        """Every (pid, start ticks) pair the sampler has seen in the tree: the leftover kill
        touches only these, never a later process that got one of the pids (adopted ones left out:
        the profiler ends its own py-spy)."""
        return {(pid, ticks) for pid, ticks in self._seen if pid not in self._adopted}

    def processes(self) -> dict[int, str]:
        """pid -> role of the trial's processes at the last sample (rlbench's own, ``harness``, left out)."""
        return {
            m.pid: m.role
            for m in list(self._members.values())
            if m.role is not None and m.role != HARNESS_ROLE and m.pid not in self._adopted
        }

    def adopt(self, pid: int) -> None:
        """Sample ``pid``, a process rlbench started beside the trial (py-spy), with role ``harness``:
        its CPU and memory show in the rows and never count as the trial's."""
        self._to_adopt.append(pid)

    @property
    def trial_rss_bytes(self) -> int:
        """Resident memory of the trial's processes together at the last tick (the harness left out;
        shared pages counted once per process): what the trial's memory limit is checked against."""
        return self._trial_rss_bytes

    @property
    def columns(self) -> dict[str, list[Any]]:
        """All rows so far, column-wise (:data:`rlbench.worker.sampling.UTILIZATION_COLUMNS`)."""
        return self._rows.columns()

    def start(self) -> UtilizationSampler:
        """Begin sampling in a background thread (nothing when sampling is off)."""
        if self.enabled:
            self._loop.start()
        return self

    def stop(self) -> None:
        """Stop sampling, wait for the thread and release the open files."""
        self._loop.stop()
        self.close()

    def close(self) -> None:
        """Close every open ``/proc`` file (done by :meth:`stop`)."""
        for member in self._members.values():
            os.close(member.fd)
        self._members.clear()
        if self._stat_fd is not None:
            os.close(self._stat_fd)
            self._stat_fd = None

    def _baseline(self) -> None:
        """The first per-core reading, which the first sample's busy % is measured against."""
        if self.per_core:
            self._cores.update(self._read_proc_stat())

    # -- the tree ----------------------------------------------------------------------------

    def _admit(self, pid: int) -> ProcStat | None:
        opened = _open_stat(pid)
        if opened is None:
            return None
        fd, stat = opened
        self._members[pid] = _Member(pid, fd, stat.start_ticks, len(self._rows.process_rows), stat.ppid)
        self._seen.add((pid, stat.start_ticks))
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
        """The member's role, read from its title once; re-read every :data:`RECLASSIFY_EVERY`
        ticks while the classifier has not settled it or it is still its parent's copy. Between fork and exec a
        child shows its parent's command line: the raylet's child that would become IMPALA's state server
        read as ``ray_system`` for good under load (``scripts/ci_under_load.sh 1`` at 101d520). A zombie (exited, not
        yet reaped) reads an empty command line: it keeps its role, where ``other`` had relabelled every row of its
        life (the async e2e's idle prestarted Ray worker, 77 rows, 2026-11-30)."""
        if member.role is not None and ((member.settled and not member.unexeced) or self._tick % RECLASSIFY_EVERY):
            return member.role
        was = member.role
        try:
            cmdline = read_cmdline(member.pid)
            if not cmdline and was is not None:  # exited, not yet reaped: it keeps what it was, and so do its rows
                return was
            role = classify(cmdline, is_driver=member.pid == self.root_pid, adapter=self.adapter)
            member.role, member.settled = role.name, role.settled
            if member.pid == self.root_pid and self.root_role is not None:
                member.role = self.root_role
            member.unexeced = (
                member.pid != self.root_pid
                and (was is None or member.unexeced)
                and _parent_cmdline(member.ppid) == cmdline
            )
        except OSError:
            member.role = member.role or "other"
            member.unexeced = False
        if was is not None and member.role != was:
            self._rows.relabel(member.pid, member.role, member.first_row, was=was)
        return member.role

    # -- one sample --------------------------------------------------------------------------

    def _read_proc_stat(self) -> bytes:
        try:
            if self._stat_fd is None:
                self._stat_fd = os.open(f"{_PROC}/stat", os.O_RDONLY)
            return os.pread(self._stat_fd, 65536, 0)
        except OSError:
            return b""

    def sample_once(self) -> None:
        """Take one sample of the tree, the cores and the GPUs."""
        t_s = time.time() - self.t0_epoch
        mono = time.monotonic()
        proc_stat = self._read_proc_stat()
        forks = parse_forks(proc_stat)
        if forks is None or forks != self._last_forks or not self._members:
            self._refresh_tree()  # only when some process was created since the last look
            self._last_forks = forks
        while self._to_adopt:
            pid = self._to_adopt.pop()
            if pid not in self._members and self._admit(pid) is not None:
                self._members[pid].role, self._members[pid].settled = HARNESS_ROLE, True  # never read again
                self._adopted.add(pid)
        trial_rss = 0
        for pid, member in list(self._members.items()):
            try:
                stat = parse_stat(os.pread(member.fd, 4096, 0))
            except (OSError, ValueError, IndexError):
                stat = None
            if stat is None or stat.start_ticks != member.start_ticks:
                os.close(member.fd)  # gone (or the pid now names another process)
                del self._members[pid]
                self._cpu.forget(pid)
                continue
            role = self._role(member)
            if role != HARNESS_ROLE and not stat.exiting:
                trial_rss += stat.rss_bytes
            cpu_pct = self._cpu.update(pid, mono, stat)
            if cpu_pct is not None:
                self._rows.process(t_s, role, pid, cpu_pct, stat.rss_bytes)
        self._trial_rss_bytes = trial_rss
        if self.per_core and proc_stat:
            for core, pct in self._cores.update(proc_stat):
                self._rows.core(t_s, core, pct)
        if self.gpus is not None:
            self._gpu.add(self._rows, time.time() - self.t0_epoch, self.gpus.read())
        if self.rapl is not None:
            self._cpu_energy.add(self._rows, time.time() - self.t0_epoch, self.rapl)
        self._tick += 1
        self.samples += 1


class RoleCpuWindow:
    """CPU-seconds per role of a process tree over a window: the sampler read at the window's two ends.

    Built on a :class:`UtilizationSampler` that runs no thread (``hz=0``): :meth:`start` and :meth:`stop` each
    take one sample, and a process's CPU-seconds in the window are the difference of its two readings of
    ``/proc/<pid>/stat`` (exact to the kernel's tick, whatever the load; a process that started or ended inside
    the window is not counted). ``roles`` reads a process's role from its command line (an adapter, or any
    object with its ``classify_process``). Used by ``rlbench servebench``.
    """

    def __init__(self, root_pid: int, roles: Any):
        self.sampler = UtilizationSampler(root_pid, t0_epoch=time.time(), hz=0, per_core=False, adapter=roles)
        self._before: dict[int, tuple[float, float, int]] = {}

    def settle(self, samples: int = RECLASSIFY_EVERY) -> None:
        """A few samples in a row, so that a process first read before it settled (a pooled worker that became
        an actor) has been classified again before a window counts it."""
        for _ in range(samples):
            self.sampler.sample_once()

    def _sample(self) -> None:
        self.sampler._rows.process_rows.clear()  # the readings are what counts: memory stays flat
        self.sampler.sample_once()

    def start(self) -> None:
        self._sample()
        self._before = dict(self.sampler._cpu._last)

    def stop(self) -> dict[str, float]:
        self._sample()
        roles = self.sampler.processes()
        out: dict[str, float] = {}
        for pid, (_mono, cpu_s, ticks) in self.sampler._cpu._last.items():
            before = self._before.get(pid)
            if before is not None and before[2] == ticks and pid in roles:
                out[roles[pid]] = out.get(roles[pid], 0.0) + cpu_s - before[1]
        return out

    def close(self) -> None:
        self.sampler.close()
