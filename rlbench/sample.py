"""Sample stage: CPU, memory and GPU use of a running trial, observed from outside its processes.

A :class:`Sampler` thread in the sweep process walks the trial's process tree at ``sample_hz``
and records, per process, its role (driver, learner, env_runner, ray_system, other), the cores it
kept busy since the last sample (``cpu_pct``, 100 = one core) and its resident memory; per core,
the machine's busy percentage; per GPU (through :mod:`rlbench.nvml`), utilization, memory, power,
SM clock and the energy counter.
"""

from __future__ import annotations

import threading
import time
from typing import Any

import psutil

from rlbench.adapters.rllib import classify_process
from rlbench.nvml import Gpus

#: Columns of a utilization row (see docs/SCHEMA.md); ``kind`` is process, core or gpu.
UTILIZATION_COLUMNS: tuple[str, ...] = (
    "t_s", "kind", "role", "pid", "core", "cpu_pct", "rss_bytes",
    "gpu_index", "gpu_util_pct", "gpu_mem_used_bytes", "gpu_power_w", "gpu_sm_clock_mhz", "gpu_energy_mj",
)


class Sampler:
    """Samples one process tree until stopped; rows accumulate column-wise in ``columns``."""

    def __init__(self, root_pid: int, *, t0_epoch: float, hz: float, gpus: Gpus | None = None,
                 per_core: bool = True):
        self.root_pid = root_pid
        self.t0_epoch = t0_epoch
        self.period_s = 1.0 / hz
        self.gpus = gpus
        self.per_core = per_core
        self.columns: dict[str, list[Any]] = {c: [] for c in UTILIZATION_COLUMNS}
        self.samples = 0
        self.cpu_s = 0.0
        """CPU time the sampler thread itself used."""
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="rlbench-sampler", daemon=True)
        self._procs: dict[int, psutil.Process] = {}
        self._roles: dict[int, str] = {}
        self._last_cpu: dict[int, tuple[float, float]] = {}

    @property
    def seen_pids(self) -> set[int]:
        """Every pid the sampler has seen in the tree."""
        return set(self._procs)

    def start(self) -> "Sampler":
        """Begin sampling in a background thread."""
        if self.per_core:
            psutil.cpu_percent(percpu=True)  # sets the baseline for the first per-core reading
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop sampling and wait for the thread."""
        self._stop.set()
        self._thread.join()

    def _loop(self) -> None:
        start_cpu = time.thread_time()
        next_t = time.monotonic()
        while not self._stop.is_set():
            self.sample_once()
            next_t += self.period_s
            delay = next_t - time.monotonic()
            if delay < 0:  # fell behind (machine overloaded): skip missed ticks, do not burst
                next_t = time.monotonic()
                delay = 0
            self._stop.wait(delay)
        self.cpu_s = time.thread_time() - start_cpu

    # -- one sample --------------------------------------------------------------------------

    def _tree(self) -> list[psutil.Process]:
        try:
            root = self._procs.get(self.root_pid) or psutil.Process(self.root_pid)
            self._procs[self.root_pid] = root
            procs = [root] + root.children(recursive=True)
        except psutil.Error:
            return []
        # Reuse Process objects so psutil's own per-process caches (and create_time checks) hold.
        out = []
        for p in procs:
            known = self._procs.get(p.pid)
            if known is not None and known.is_running():
                out.append(known)
            else:
                self._procs[p.pid] = p
                self._roles.pop(p.pid, None)
                self._last_cpu.pop(p.pid, None)
                out.append(p)
        return out

    def _role(self, proc: psutil.Process) -> str:
        role = self._roles.get(proc.pid)
        if role is not None and role != "other":
            return role  # a worker's title only changes while it is idle ("other")
        try:
            role = classify_process(proc.cmdline(), is_driver=proc.pid == self.root_pid)
        except psutil.Error:
            role = "other"
        self._roles[proc.pid] = role
        return role

    def sample_once(self) -> None:
        """Take one sample of the tree, the cores and the GPUs."""
        now = time.time()
        t_s = now - self.t0_epoch
        mono = time.monotonic()
        cols = self.columns
        for proc in self._tree():
            try:
                with proc.oneshot():
                    times = proc.cpu_times()
                    rss = proc.memory_info().rss
            except psutil.Error:
                continue
            busy_s = times.user + times.system
            last = self._last_cpu.get(proc.pid)
            self._last_cpu[proc.pid] = (mono, busy_s)
            if last is None:
                continue  # cpu_pct needs two readings
            dt = mono - last[0]
            if dt <= 0:
                continue
            self._append(t_s=t_s, kind="process", role=self._role(proc), pid=proc.pid,
                         cpu_pct=100.0 * (busy_s - last[1]) / dt, rss_bytes=rss)
        if self.per_core:
            for core, pct in enumerate(psutil.cpu_percent(percpu=True)):
                self._append(t_s=t_s, kind="core", core=core, cpu_pct=pct)
        if self.gpus is not None:
            for g in self.gpus.read():
                self._append(t_s=t_s, kind="gpu", gpu_index=g.index, gpu_util_pct=g.util_pct,
                             gpu_mem_used_bytes=g.mem_used_bytes, gpu_power_w=g.power_w,
                             gpu_sm_clock_mhz=g.sm_clock_mhz, gpu_energy_mj=g.energy_mj)
        self.samples += 1

    def _append(self, **values: Any) -> None:
        for name, column in self.columns.items():
            column.append(values.get(name))
