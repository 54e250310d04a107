"""servebench's measurement core on a fake clock: every answer is known, whatever the machine's load."""

from __future__ import annotations

import numpy as np
import pytest

from rlbench.studies.serve_loop import closed_loop, percentile


class FakeClock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_a_synchronous_client_measures_exactly_its_request_cost():
    clock = FakeClock()

    def call():  # each request takes 1/8 s on the fake clock (exact in binary)
        clock.now += 0.125
        return "answer"

    r = closed_loop(call, lambda a: a, batch=64, clock=clock, start=0.5, stop=1.5, give_up=10.0)
    # answers at 0.125, 0.25, ...; counted from 0.5 on; no request is sent once the clock reads 1.5: 0.5 .. 1.5
    assert r.warmup_requests == 3
    assert r.requests == 9 and r.states == 576
    assert r.span_s == 1.0
    assert r.states_per_s == 64 / 0.125  # 512 states/s exactly
    assert r.latencies_s == [0.125] * 9
    assert not r.short


class FifoServer:
    """A server that answers in order, each request ``service`` seconds of its time; sending costs ``send``."""

    def __init__(self, clock: FakeClock, service: float, send: float):
        self.clock, self.service, self.send = clock, service, send
        self.free_at = 0.0

    def issue(self):
        self.clock.now += self.send
        self.free_at = max(self.free_at, self.clock.now) + self.service
        return self.free_at

    def collect(self, done_at):
        self.clock.now = max(self.clock.now, done_at)
        return done_at


def test_requests_in_flight_keep_the_server_busy_and_latency_is_k_services():
    clock = FakeClock()
    server = FifoServer(clock, service=0.25, send=0.0)
    r = closed_loop(server.issue, server.collect, batch=8, clock=clock, start=2.0, stop=6.0, give_up=60.0, in_flight=4)
    assert r.states_per_s == pytest.approx(8 / 0.25)  # the server's rate: it never waits
    assert r.latencies_s[-5] == pytest.approx(4 * 0.25)  # in steady state a request waits behind 3 others
    one = closed_loop(
        FifoServer(c := FakeClock(), 0.25, 0.0).issue,
        lambda t: setattr(c, "now", max(c.now, t)) or t,
        batch=8,
        clock=c,
        start=2.0,
        stop=6.0,
        give_up=60.0,
        in_flight=1,
    )
    assert one.states_per_s == pytest.approx(32.0) and one.latencies_s[0] == pytest.approx(0.25)


def test_sending_costs_add_to_a_synchronous_cycle_but_hide_behind_the_service_when_pipelined():
    clock = FakeClock()
    sync = FifoServer(clock, service=0.25, send=0.125)
    r1 = closed_loop(sync.issue, sync.collect, batch=1, clock=clock, start=1.0, stop=5.0, give_up=60.0)
    assert r1.states_per_s == pytest.approx(1 / 0.375)
    clock2 = FakeClock()
    piped = FifoServer(clock2, service=0.25, send=0.125)
    r2 = closed_loop(piped.issue, piped.collect, batch=1, clock=clock2, start=1.0, stop=5.0, give_up=60.0, in_flight=2)
    assert r2.states_per_s == pytest.approx(1 / 0.25)


def test_a_slow_path_runs_past_stop_until_min_requests_then_gives_up_short():
    clock = FakeClock()

    def slow():
        clock.now += 4.0
        return 1

    r = closed_loop(slow, lambda a: a, batch=2, clock=clock, start=0.1, stop=0.5, give_up=100.0, min_requests=3)
    assert r.requests == 3 and r.states_per_s == pytest.approx(2 / 4.0) and not r.short
    clock.now = 0.0
    short = closed_loop(slow, lambda a: a, batch=2, clock=clock, start=0.1, stop=0.5, give_up=7.0, min_requests=3)
    assert short.requests == 2 and short.short and short.states_per_s == pytest.approx(0.5)


def test_one_answer_gives_no_rate_and_a_wrong_answer_fails_the_run():
    clock = FakeClock()

    def call():
        clock.now += 1.0
        return [0, 1]

    r = closed_loop(call, lambda a: a, batch=2, clock=clock, start=0.5, stop=0.5, give_up=0.9, min_requests=3)
    assert r.requests == 1 and r.states_per_s is None and r.short

    def check(answer):
        if len(answer) != 3:
            raise RuntimeError("expected 3 actions")

    with pytest.raises(RuntimeError, match="expected 3"):
        closed_loop(call, lambda a: a, batch=3, clock=clock, start=0.0, stop=5.0, give_up=9.0, check=check)
    with pytest.raises(ValueError):
        closed_loop(call, lambda a: a, batch=0, clock=clock, start=0.0, stop=1.0, give_up=2.0)


def test_percentile_is_numpys_linear_interpolation():
    values = [5.0, 1.0, 4.0, 2.0, 3.0, 10.0]
    for q in (0, 25, 50, 90, 99, 100):
        assert percentile(values, q) == pytest.approx(float(np.percentile(values, q)))
    assert percentile([], 50) is None and percentile([7.0], 99) == 7.0
