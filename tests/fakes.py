"""Fakes for the hardware seams: an NVML module with scripted devices and a powercap (RAPL) tree
whose counter a thread drives (GPU and CPU energy paths are tested through them, never by skipping)."""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path
from types import SimpleNamespace


class NVMLError(Exception):
    """Stands in for pynvml.NVMLError."""


class FakeNvml:
    """Just enough of pynvml: per-device scripted values; a device in ``gone`` raises on every call."""

    NVML_CLOCK_SM = 7  # not NVML's 1, so a test sees whether the constant is used

    def __init__(self, devices: list[dict], init_error: Exception | None = None, driver=b"550.54.15"):
        self.devices = devices
        self.init_error = init_error
        self.driver = driver
        self.gone: set[int] = set()
        self.calls: list[str] = []

    def _dev(self, handle: int) -> dict:
        if handle in self.gone:
            raise NVMLError("GPU is lost")
        return self.devices[handle]

    def _value(self, handle: int, key: str):
        value = self._dev(handle)[key]
        if isinstance(value, Exception):
            raise value
        return value

    def nvmlInit(self):
        self.calls.append("init")
        if self.init_error:
            raise self.init_error

    def nvmlShutdown(self):
        self.calls.append("shutdown")

    def nvmlDeviceGetCount(self):
        return len(self.devices)

    def nvmlDeviceGetHandleByIndex(self, i):
        return i

    def nvmlSystemGetDriverVersion(self):
        return self.driver

    def nvmlDeviceGetName(self, h):
        return self._value(h, "name")

    def nvmlDeviceGetMemoryInfo(self, h):
        return SimpleNamespace(total=self._value(h, "mem_total"), used=self._value(h, "mem_used"), free=0)

    def nvmlDeviceGetUtilizationRates(self, h):
        return SimpleNamespace(gpu=self._value(h, "util"), memory=0)

    def nvmlDeviceGetPowerUsage(self, h):
        return self._value(h, "power_mw")

    def nvmlDeviceGetClockInfo(self, h, clock_type):
        if clock_type != self.NVML_CLOCK_SM:
            raise NVMLError(f"asked for clock {clock_type}, not the SM clock")
        return self._value(h, "sm_mhz")

    def nvmlDeviceGetTotalEnergyConsumption(self, h):
        return self._value(h, "energy_mj")


def h100(**overrides) -> dict:
    return {
        "name": b"NVIDIA H100 80GB HBM3",
        "mem_total": 80 * 2**30,
        "mem_used": 3 * 2**30,
        "util": 37,
        "power_mw": 152_500,
        "sm_mhz": 1980,
        "energy_mj": 123_456_789,
        **overrides,
    }


class DrivenRapl:
    """A powercap tree under ``root`` with one package (``intel-rapl:0``, ``package-0``) drawing
    ``watts``: a thread rewrites its ``energy_uj`` every ``period_s`` (atomically: write and rename)
    from the monotonic clock, wrapping at ``max_energy_range_uj`` the way RAPL's counter does."""

    def __init__(self, root: Path, watts: float, max_energy_range_uj: int, start_uj: int = 0, period_s: float = 0.01):
        self.root, self.watts, self.range_uj, self.start_uj, self.period_s = (
            Path(root),
            watts,
            max_energy_range_uj,
            start_uj,
            period_s,
        )
        self.zone = self.root / "intel-rapl:0"
        self.zone.mkdir(parents=True, exist_ok=True)
        (self.zone / "name").write_text("package-0\n")
        (self.zone / "max_energy_range_uj").write_text(f"{max_energy_range_uj}\n")
        self.t0 = time.monotonic()
        self.wraps = 0
        self._stop = threading.Event()
        self._write()
        self._thread = threading.Thread(target=self._loop, daemon=True)

    def _write(self) -> None:
        total = self.start_uj + int(self.watts * 1e6 * (time.monotonic() - self.t0))
        self.wraps = total // self.range_uj
        tmp = self.zone / "energy_uj.tmp"
        tmp.write_text(f"{total % self.range_uj}\n")
        os.replace(tmp, self.zone / "energy_uj")

    def _loop(self) -> None:
        while not self._stop.wait(self.period_s):
            self._write()

    def __enter__(self) -> DrivenRapl:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()
