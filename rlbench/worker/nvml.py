"""The seam to NVIDIA's management library: every NVML call rlbench makes goes through here.

Tests pass a fake module with the same functions (``nvmlInit``, ``nvmlDeviceGetCount``, ...);
on a machine without a GPU or driver, :func:`open_gpus` returns None and callers record nulls.
"""

from __future__ import annotations

from dataclasses import dataclass
from types import ModuleType
from typing import Any

#: NVML's total-energy counter is an unsigned 64-bit millijoule count.
ENERGY_COUNTER_MODULUS_MJ = 2**64


@dataclass(frozen=True)
class GpuReading:
    """One GPU at one instant."""

    index: int
    """NVML device index."""
    util_pct: float | None
    """GPU busy percentage over NVML's last sample period."""
    mem_used_bytes: int | None
    """Device memory in use."""
    power_w: float | None
    """Board power draw."""
    sm_clock_mhz: int | None
    """Current SM clock."""
    energy_mj: int | None
    """Total energy counter since driver load (millijoules), None where unsupported."""


class Gpus:
    """An opened NVML with its device handles. ``read()`` never raises for a vanished device."""

    def __init__(self, nvml: Any):
        self.nvml = nvml
        self.handles = [nvml.nvmlDeviceGetHandleByIndex(i) for i in range(nvml.nvmlDeviceGetCount())]

    def describe(self) -> list[dict[str, Any]]:
        """Model, memory and driver of every GPU, for the manifest."""
        driver = _call(self.nvml.nvmlSystemGetDriverVersion)
        out = []
        for i, h in enumerate(self.handles):
            mem = _call(self.nvml.nvmlDeviceGetMemoryInfo, h)
            out.append(
                {
                    "index": i,
                    "name": _text(_call(self.nvml.nvmlDeviceGetName, h)),
                    "memory_bytes": getattr(mem, "total", None),
                    "driver": _text(driver),
                    "sm_count": _sm_count(self.nvml, h),
                }
            )
        return out

    def read(self) -> list[GpuReading]:
        """One reading per GPU; a field NVML cannot give (or a GPU gone) is None."""
        readings = []
        n = self.nvml
        for i, h in enumerate(self.handles):
            util = _call(n.nvmlDeviceGetUtilizationRates, h)
            mem = _call(n.nvmlDeviceGetMemoryInfo, h)
            power_mw = _call(n.nvmlDeviceGetPowerUsage, h)
            clock = _call(n.nvmlDeviceGetClockInfo, h, getattr(n, "NVML_CLOCK_SM", 1))
            energy = _call(getattr(n, "nvmlDeviceGetTotalEnergyConsumption", None), h)
            readings.append(
                GpuReading(
                    index=i,
                    util_pct=None if util is None else float(util.gpu),
                    mem_used_bytes=None if mem is None else int(mem.used),
                    power_w=None if power_mw is None else power_mw / 1000.0,
                    sm_clock_mhz=None if clock is None else int(clock),
                    energy_mj=None if energy is None else int(energy),
                )
            )
        return readings

    def close(self) -> None:
        _call(self.nvml.nvmlShutdown)


def energy_delta_mj(start_mj: int, end_mj: int) -> int:
    """Energy between two counter readings, allowing for one wrap of the 64-bit counter."""
    return (end_mj - start_mj) % ENERGY_COUNTER_MODULUS_MJ


class EnergySinceStart:
    """Per GPU, the energy used since the first reading, from NVML's wrapping total-energy counter.

    Exact Python integers: the unsigned 64-bit counter fits neither an int64 nor a float64 column,
    so the samplers store this difference instead of the raw counter.
    """

    def __init__(self) -> None:
        self._last: dict[Any, tuple[int, int]] = {}

    def update(self, gpu: Any, raw_mj: int | None) -> int | None:
        """Millijoules since the first reading of ``gpu``; None for a missing reading."""
        if raw_mj is None:
            return None  # unsupported, or the GPU stopped answering
        last = self._last.get(gpu)
        total = 0 if last is None else last[1] + energy_delta_mj(last[0], raw_mj)
        self._last[gpu] = (raw_mj, total)
        return total


def open_gpus(nvml: ModuleType | Any | None = None) -> Gpus | None:
    """Open NVML (``pynvml`` unless a module is given); None when there is no driver or no GPU."""
    if nvml is None:
        try:
            import pynvml
        except ImportError:
            return None
        nvml = pynvml
    try:
        nvml.nvmlInit()
        gpus = Gpus(nvml)
    except Exception:  # noqa: BLE001 - no NVML here: no GPUs read
        return None
    if not gpus.handles:
        gpus.close()
        return None
    return gpus


#: CUDA cores per streaming multiprocessor by compute capability (major, minor), from NVIDIA's CUDA
#: C++ Programming Guide ("Compute Capabilities", arithmetic instructions table). A capability
#: missing here gives no SM count rather than a guess.
CUDA_CORES_PER_SM: dict[tuple[int, int], int] = {
    (5, 0): 128,
    (5, 2): 128,
    (5, 3): 128,
    (6, 0): 64,
    (6, 1): 128,
    (6, 2): 128,
    (7, 0): 64,
    (7, 2): 64,
    (7, 5): 64,
    (8, 0): 64,
    (8, 6): 128,
    (8, 7): 128,
    (8, 9): 128,
    (9, 0): 128,
    (10, 0): 128,
    (10, 3): 128,
    (12, 0): 128,
    (12, 1): 128,
}


def _sm_count(nvml: Any, handle: Any) -> int | None:
    """Streaming multiprocessors of a GPU, or None when NVML cannot tell.

    ``nvmlDeviceGetAttributes().multiprocessorCount`` answers for MIG slices only: on a whole H100
    (driver 580.159) it raised NotSupported, and every ``cpu_threads_per_gpu_sm`` came out null.
    Otherwise: CUDA cores (``nvmlDeviceGetNumGpuCores``, 16,896 on that H100) over the cores per SM
    of its compute capability (9.0: 128), which gave 132, what torch's ``multi_processor_count``
    said on the same machine.
    """
    attributes = _call(getattr(nvml, "nvmlDeviceGetAttributes", None), handle)
    count = getattr(attributes, "multiprocessorCount", None)
    if count:
        return int(count)
    cores = _call(getattr(nvml, "nvmlDeviceGetNumGpuCores", None), handle)
    capability = _call(getattr(nvml, "nvmlDeviceGetCudaComputeCapability", None), handle)
    per_sm = CUDA_CORES_PER_SM.get(tuple(capability)) if capability else None
    if not cores or not per_sm or cores % per_sm:
        return None
    return int(cores) // per_sm


def _call(fn, *args):
    if fn is None:
        return None
    try:
        return fn(*args)
    except Exception:  # noqa: BLE001 - a counter this GPU does not give: None
        return None


def _text(value) -> str | None:
    return value.decode() if isinstance(value, bytes) else value
