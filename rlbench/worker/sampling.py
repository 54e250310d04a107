"""The utilization sampler's core, shared by the sweep's own sampler and the cluster node samplers.

Both read Linux's ``/proc`` at ``sample_hz`` from outside the processes they measure:
:class:`rlbench.measure.utilization.UtilizationSampler` follows the trial's process tree on the
sweep's machine, :class:`rlbench.worker.node_sampler.NodeSampler` the trial's actors on a Ray node.
What they share lives here: the row shape, CPU % from two readings of a process, per-core busy %
from two readings of ``/proc/stat``, and the tick loop. Standard library only: it runs inside Ray
workers on every node.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

from rlbench.results.layout import UTILIZATION_COLUMNS
from rlbench.worker.nvml import EnergySinceStart, GpuReading
from rlbench.worker.procfs import ProcStat, parse_cpu_times
from rlbench.worker.rapl import CpuEnergySinceStart, Rapl

_NO_PROCESS = (None,) * 5
_NO_GPU = (None,) * 6
_NO_CPU_ENERGY = (None,) * 2


class Rows:
    """Utilization rows kept as tuples per kind and turned into columns once, at the end.

    Columns list the process rows first, then the core rows, the GPU rows and the CPU energy rows
    (each in time order).
    """

    def __init__(self, node_id: str | None = None, node_ip: str | None = None):
        self._node = (node_id, node_ip)
        self.process_rows: list[tuple] = []
        self.core_rows: list[tuple] = []
        self.gpu_rows: list[tuple] = []
        self.cpu_energy_rows: list[tuple] = []

    def process(self, t_s: float, role: str, pid: int, cpu_pct: float, rss_bytes: int) -> None:
        """One process's reading."""
        self.process_rows.append(
            (t_s, "process", role, pid, None, cpu_pct, rss_bytes) + _NO_GPU + self._node + _NO_CPU_ENERGY
        )

    def relabel(self, pid: int, role: str, since: int = 0, was: str = "other") -> None:
        """Give ``pid``'s ``was`` rows from index ``since`` on the role ``role`` (a worker that became an
        actor; a fork read before its exec)."""
        rows = self.process_rows
        for i in range(since, len(rows)):
            if rows[i][3] == pid and rows[i][2] == was:
                rows[i] = rows[i][:2] + (role,) + rows[i][3:]

    def core(self, t_s: float, core: int, cpu_pct: float) -> None:
        """One core's busy % since the previous reading."""
        self.core_rows.append((t_s, "core", None, None, core, cpu_pct, None) + _NO_GPU + self._node + _NO_CPU_ENERGY)

    def gpu(self, t_s: float, g: GpuReading, energy_mj: int | None) -> None:
        """One GPU's reading; ``energy_mj`` is its energy since the sampler's first reading."""
        self.gpu_rows.append(
            (t_s, "gpu")
            + _NO_PROCESS
            + (g.index, g.util_pct, g.mem_used_bytes, g.power_w, g.sm_clock_mhz, energy_mj)
            + self._node
            + _NO_CPU_ENERGY
        )

    def cpu_energy(self, t_s: float, package: int, energy_uj: int | None) -> None:
        """One CPU package's energy since the sampler's first reading of it (RAPL)."""
        self.cpu_energy_rows.append((t_s, "cpu_energy") + _NO_PROCESS + _NO_GPU + self._node + (package, energy_uj))

    def __len__(self) -> int:
        return len(self.process_rows) + len(self.core_rows) + len(self.gpu_rows) + len(self.cpu_energy_rows)

    def columns(self) -> dict[str, list[Any]]:
        """Every row so far, column-wise (:data:`UTILIZATION_COLUMNS`)."""
        rows = self.process_rows + self.core_rows + self.gpu_rows + self.cpu_energy_rows
        return {name: [row[i] for row in rows] for i, name in enumerate(UTILIZATION_COLUMNS)}


class ProcessCpu:
    """A process's CPU % from two readings of its ``/proc/<pid>/stat``.

    None for the first reading, for a pid that now names another process (its start time changed),
    and for a dying process (exit begun, or a zombie; its memory then reads 0): it must give no
    row rather than a zero that drags the role's means down.
    """

    def __init__(self) -> None:
        self._last: dict[int, tuple[float, float, int]] = {}

    def update(self, pid: int, mono: float, stat: ProcStat) -> float | None:
        """CPU % (100 = one core) since the previous reading of ``pid``, or None (see the class)."""
        last = self._last.get(pid)
        self._last[pid] = (mono, stat.cpu_s, stat.start_ticks)
        if last is None or last[2] != stat.start_ticks or mono <= last[0] or stat.exiting or stat.rss_bytes == 0:
            return None
        return 100.0 * (stat.cpu_s - last[1]) / (mono - last[0])

    def forget(self, pid: int) -> None:
        """Drop a process that is gone."""
        self._last.pop(pid, None)


class CoreBusy:
    """Per-core busy % between consecutive readings of ``/proc/stat`` (psutil's definition of busy)."""

    def __init__(self) -> None:
        self._last: dict[int, tuple[int, int]] = {}

    def update(self, proc_stat: bytes) -> list[tuple[int, float]]:
        """(core, busy %) for every core also in the previous reading; the first reading is the baseline."""
        cores = parse_cpu_times(proc_stat)
        out = []
        for core, (busy, total) in cores.items():
            if core in self._last:
                busy0, total0 = self._last[core]
                d_total = total - total0
                out.append((core, 100.0 * min(max((busy - busy0) / d_total, 0.0), 1.0) if d_total > 0 else 0.0))
        self._last = cores
        return out


class GpuEnergy:
    """GPU rows with each GPU's energy since the first reading (NVML's counter wraps; see worker.nvml)."""

    def __init__(self) -> None:
        self._energy = EnergySinceStart()

    def add(self, rows: Rows, t_s: float, readings: list[GpuReading], key: Any = None) -> None:
        """Append one row per reading, stamped ``t_s`` (take it when NVML is read: energy per second is
        counter delta over time delta, and whatever else the tick reads takes longer on a busy machine)."""
        for g in readings:
            rows.gpu(t_s, g, self._energy.update((key, g.index), g.energy_mj))


class CpuEnergy:
    """CPU energy rows with each package's energy since the first reading (RAPL wraps; see worker.rapl)."""

    def __init__(self) -> None:
        self._energy = CpuEnergySinceStart()

    def add(self, rows: Rows, t_s: float, rapl: Rapl) -> None:
        """Read every package counter and append one row per package, stamped ``t_s`` (taken when read)."""
        for zone, raw_uj in rapl.read():
            rows.cpu_energy(t_s, zone.package, self._energy.update(zone.path, raw_uj, zone.max_energy_range_uj))


class TickLoop:
    """Calls ``tick`` every ``period_s`` in a thread until stopped; a late tick never bursts.

    When the machine is too busy to keep up, missed ticks are skipped rather than run back to back.
    ``cpu_s`` is the CPU time the thread used (the sampler's own cost, reported with its rows).
    """

    def __init__(self, period_s: float, tick: Callable[[], None], name: str, before: Callable[[], None] | None = None):
        self.period_s = period_s
        self.cpu_s = 0.0
        self._tick, self._before = tick, before
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name=name, daemon=True)

    def start(self) -> None:
        """Begin ticking in the background."""
        self._thread.start()

    def stop(self, timeout_s: float | None = None) -> None:
        """Ask the loop to end and wait for its thread."""
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout_s)

    def _loop(self) -> None:
        start_cpu = time.thread_time()
        next_t = time.monotonic()
        try:
            if self._before is not None:
                self._before()
            while not self._stop.is_set():
                self._tick()
                next_t += self.period_s
                delay = next_t - time.monotonic()
                if delay < 0:  # fell behind (machine overloaded): skip missed ticks, do not burst
                    next_t = time.monotonic()
                    delay = 0
                self._stop.wait(delay)
        finally:
            self.cpu_s = time.thread_time() - start_cpu
