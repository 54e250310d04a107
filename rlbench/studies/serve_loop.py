"""The measurement core of ``rlbench servebench``: one closed-loop client, on any clock (standard library only).

A client sends a request, waits for its answer and sends the next (with ``in_flight`` k, it keeps k requests
outstanding and waits for the oldest: a server that answers in order is kept busy while the next request
travels). It starts at once (warm-up) and counts from ``start``: a request counts when its answer arrives at
or after ``start``. It stops sending once ``stop`` has passed and at least ``min_requests`` answers counted
(or at ``give_up``, whatever has counted by then), and collects what is still in flight.

Throughput is measured between answers, not over the window: ``(n - 1) x batch / (last - first)`` for n
counted answers. In a closed loop each gap between two answers is one whole request's cycle, so the figure
is exact whatever the window's edges cut (a window rate, answers in [start, stop] / (stop - start), is off by
up to one request in either direction: 50% for a 2-request window). Latency is each counted request's
send-to-answer time. The clock and the two calls are given, so a test drives it with a fake clock whose
requests cost a known time and gets exact answers (tests/studies/test_serve_loop.py).
"""

from __future__ import annotations

import collections
import math
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any


@dataclass(frozen=True)
class LoopResult:
    """What one client measured in one run."""

    requests: int
    """Answers counted (arrived at or after the start)."""
    states: int
    """States in the counted answers (requests x batch)."""
    span_s: float
    """Seconds from the first counted answer to the last."""
    states_per_s: float | None
    """``(requests - 1) x batch / span_s``; None with fewer than 2 counted answers."""
    latencies_s: list[float]
    """Send-to-answer seconds of every counted request, in order."""
    warmup_requests: int
    """Answers that arrived before the start (not counted)."""
    short: bool
    """Gave up before ``min_requests`` answers counted."""

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def closed_loop(
    issue: Callable[[], Any],
    collect: Callable[[Any], Any],
    *,
    batch: int,
    clock: Callable[[], float],
    start: float,
    stop: float,
    give_up: float,
    min_requests: int = 3,
    in_flight: int = 1,
    check: Callable[[Any], None] | None = None,
) -> LoopResult:
    """Run one closed-loop client until ``stop`` (and ``min_requests`` counted answers) or ``give_up``.

    Args:
        issue: sends one request of ``batch`` states; returns what ``collect`` waits on (for a call that
            answers at once, the answer itself).
        collect: waits for one request's answer and returns it.
        clock: seconds (any origin, the one ``start``, ``stop`` and ``give_up`` use).
        in_flight: requests kept outstanding (1: synchronous).
        check: raises when an answer is wrong (the run then fails with its message).
    """
    if in_flight < 1 or batch < 1:
        raise ValueError("in_flight and batch must be >= 1")
    pending: collections.deque = collections.deque()
    answered: list[float] = []
    latencies: list[float] = []
    warmup = 0
    while True:
        now = clock()
        if (now < stop or len(answered) < min_requests) and now < give_up:
            while len(pending) < in_flight:
                sent = clock()
                pending.append((sent, issue()))
        if not pending:
            break
        sent, token = pending.popleft()
        answer = collect(token)
        arrived = clock()
        if check is not None:
            check(answer)
        if arrived >= start:
            answered.append(arrived)
            latencies.append(arrived - sent)
        else:
            warmup += 1
    span = answered[-1] - answered[0] if len(answered) >= 2 else 0.0
    rate = (len(answered) - 1) * batch / span if span > 0 else None
    return LoopResult(
        requests=len(answered),
        states=len(answered) * batch,
        span_s=span,
        states_per_s=rate,
        latencies_s=latencies,
        warmup_requests=warmup,
        short=len(answered) < min_requests,
    )


def percentile(values: list[float], q: float) -> float | None:
    """The ``q``-th percentile (0-100) with linear interpolation between order statistics (numpy's default);
    None without values."""
    if not values:
        return None
    ordered = sorted(values)
    position = (len(ordered) - 1) * q / 100.0
    low = math.floor(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)
