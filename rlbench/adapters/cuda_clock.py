"""The seam to the GPU's own clock: CUDA events, recorded on the device's stream and read after one synchronize.

Why events and not ``time.perf_counter``: a CUDA kernel launch returns at once, so the host's clock around an
update times the launches, not the device's work; a ``torch.cuda.synchronize()`` around every step would time
the work but stall the host each step, which is itself the cost rlbench must find (launch- and sync-bound
learners). An event pair recorded around a step costs no sync: the device stamps each when its stream reaches
it, and the elapsed times are read once, after one synchronize at the end of the learner's iteration.

What a pair measures is the device's span from the first to the last work of the step, idle gaps between
launches included; NVML's utilization (``gpu_busy_pct``) says how much of a window a kernel ran.

Tests replace :class:`CudaClock` with a fake on the CPU (tests/adapters/test_rllib_learner_device.py): a clock
whose events read a device time the test advances, so every figure derived from them is a known answer.
Standard library only at import time: torch is imported when a real clock is made, inside a learner's process.
"""

from __future__ import annotations

from typing import Any, Protocol


class DeviceEvent(Protocol):
    """One point on the device's stream."""

    def record(self) -> None:
        """Enqueue the event on the current stream (returns at once)."""

    def seconds_to(self, end: DeviceEvent) -> float:
        """Device seconds from this event to ``end`` (both recorded; valid after :meth:`DeviceClock.synchronize`)."""


class DeviceClock(Protocol):
    """Events on one device and the one wait that makes them readable."""

    def event(self) -> DeviceEvent:
        """A new event, not yet recorded."""

    def synchronize(self) -> None:
        """Wait until the device has done everything enqueued so far."""


class _TorchEvent:
    """A ``torch.cuda.Event(enable_timing=True)``."""

    def __init__(self, torch: Any):
        self._event = torch.cuda.Event(enable_timing=True)

    def record(self) -> None:
        self._event.record()

    def seconds_to(self, end: DeviceEvent) -> float:
        if not isinstance(end, _TorchEvent):
            raise TypeError(f"a CUDA event's time runs to another CUDA event, not to {type(end).__name__}")
        return float(self._event.elapsed_time(end._event)) / 1000.0  # torch reports milliseconds


class CudaClock:
    """The real clock of one CUDA device (torch's events and ``torch.cuda.synchronize``)."""

    def __init__(self, device: Any):
        import torch

        self._torch, self._device = torch, device

    def event(self) -> _TorchEvent:
        return _TorchEvent(self._torch)

    def synchronize(self) -> None:
        self._torch.cuda.synchronize(self._device)


def cuda_clock(device: Any) -> DeviceClock | None:
    """The clock of ``device`` when it is a CUDA device (a ``torch.device`` of type ``cuda``), else None: a CPU
    learner has no device time to read, and its columns stay null."""
    return CudaClock(device) if getattr(device, "type", None) == "cuda" else None
