"""Calibrating a model to a forward time on this CPU: the paper's 10 ms and 5 ms per batch of 64, measured here.

The paper's two policies took 10 ms (a residual network, 4 KB states) and 5 ms (a small fully connected
network, 100 KB states) per batch of 64 on its machine. servebench keeps the times, not the networks: it
searches the width of a model of fixed depth whose forward pass over 64 states takes the target time on this
CPU with one torch thread (every server and client here runs one), and records every probe
(``servebench.json``, ``calibration``). The search (:func:`search_width`) is a pure function of a timing
callable, so a test gives it a cost law with a known answer.
"""

from __future__ import annotations

import math
import statistics
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any

#: States per batch of the paper's clients, and of the calibration.
CALIBRATION_BATCH = 64
#: Forward passes timed per probe (after 3 untimed ones); the median is the probe's time.
CALIBRATION_REPS = 15


@dataclass(frozen=True)
class WidthProbe:
    """One width tried."""

    width: int
    """Units in every hidden layer."""
    forward_ms: float
    """Median forward time of a batch of 64, milliseconds."""


@dataclass
class Calibration:
    """A calibrated model as measured (written to servebench.json)."""

    model: str
    """servebench's name of the model (``residual``, ``fc``)."""
    input_bytes: int
    """Bytes per state (float32)."""
    target_ms: float
    """The paper's time per batch of 64."""
    depth: int
    """Hidden layers (residual blocks for the residual model)."""
    residual: bool
    """Blocks with skip connections."""
    width: int = 0
    """The width chosen: the probe closest to the target."""
    forward_ms: float | None = None
    """That probe's median time per batch of 64, milliseconds (this machine, one thread, as loaded)."""
    parameters: int | None = None
    """Parameters of the chosen model."""
    checkpoint: str = ""
    """Where it is saved."""
    probes: list[WidthProbe] = field(default_factory=list)
    """Every width tried, in order."""
    seconds: float = 0.0
    """Wall seconds the calibration took."""

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def search_width(
    forward_ms: Callable[[int], float],
    *,
    target_ms: float,
    start: int,
    exponent: float = 1.0,
    step: int = 8,
    low: int = 8,
    high: int = 16384,
    max_probes: int = 7,
    tolerance: float = 0.05,
) -> tuple[int, list[WidthProbe]]:
    """The width whose measured time is closest to ``target_ms`` (in ratio), and every probe.

    Time grows as a power of the width: the next width is the last one scaled by (target / time)^(1/e), with
    the exponent e fitted on the last two probes once there are two (``exponent`` until then), kept in
    [0.5, 3]. Widths are multiples of ``step`` in [low, high]. Stops within ``tolerance`` of the target, at
    a width tried before, or after ``max_probes``.
    """
    probes: list[WidthProbe] = []
    width = _snap(start, step, low, high)
    e = exponent
    for _ in range(max_probes):
        probes.append(WidthProbe(width, float(forward_ms(width))))
        last = probes[-1]
        if last.forward_ms <= 0 or abs(last.forward_ms / target_ms - 1.0) <= tolerance:
            break
        if len(probes) >= 2:
            a, b = probes[-2], probes[-1]
            if a.width != b.width and a.forward_ms > 0 and b.forward_ms != a.forward_ms:
                fitted = math.log(b.forward_ms / a.forward_ms) / math.log(b.width / a.width)
                e = min(3.0, max(0.5, fitted))
        nxt = _snap(last.width * (target_ms / last.forward_ms) ** (1.0 / e), step, low, high)
        if any(p.width == nxt for p in probes):
            break
        width = nxt
    best = min(probes, key=lambda p: abs(math.log(max(p.forward_ms, 1e-9) / target_ms)))
    return best.width, probes


def _snap(width: float, step: int, low: int, high: int) -> int:
    return int(min(high, max(low, step * round(width / step))))


def forward_ms(
    act: Callable[[Any], Any], states: Any, reps: int = CALIBRATION_REPS, clock: Callable[[], float] = time.perf_counter
) -> float:
    """Median milliseconds of ``act(states)`` over ``reps`` calls, after 3 untimed ones."""
    for _ in range(3):
        act(states)
    times = []
    for _ in range(reps):
        t = clock()
        act(states)
        times.append(clock() - t)
    return 1000.0 * statistics.median(times)
