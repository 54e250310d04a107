"""servebench's calibration: the width search on cost laws with known answers, the timer on a fake clock."""

from __future__ import annotations

import pytest

from rlbench.studies.serve_calibrate import forward_ms, search_width


def test_a_quadratic_cost_law_is_solved_to_its_width():
    calls = []

    def cost(width: int) -> float:  # ms per batch: 2.5 at width 64, 10 at 128 (a hidden layer's w^2)
        calls.append(width)
        return 2.5 * (width / 64) ** 2

    width, probes = search_width(cost, target_ms=10.0, start=96, exponent=2.0)
    assert width == 128 and probes[-1].forward_ms == 10.0
    assert calls == [p.width for p in probes] and len(probes) <= 3


def test_the_exponent_is_learned_when_the_first_guess_is_wrong():
    width, probes = search_width(lambda w: 0.05 * w, target_ms=5.0, start=40, exponent=2.0, step=2)
    assert width == 100 and probes[-1].forward_ms == pytest.approx(5.0)


def test_the_closest_probe_wins_when_the_target_falls_between_widths():
    # the time jumps between 56 and 64 (as a cache boundary does): neither is within 5%
    law = {w: (4.0 if w <= 56 else 7.6) for w in range(8, 200, 8)}
    width, probes = search_width(lambda w: law[w], target_ms=5.0, start=64)
    assert law[width] == 4.0 and 64 in {p.width for p in probes}  # 4.0 is 20% off, 7.6 is 52% off


def test_widths_stay_in_bounds():
    width, probes = search_width(lambda w: w / 1000, target_ms=1e6, start=64, high=256)
    assert width == 256 and max(p.width for p in probes) == 256


def test_forward_ms_is_the_median_of_the_timed_calls_after_three_untimed_ones():
    now = [0.0]
    costs = iter([9.0, 9.0, 9.0, 0.001, 0.003, 0.002])  # the first three are the warm-up, never timed

    def act(_states):
        now[0] += next(costs)

    assert forward_ms(act, None, reps=3, clock=lambda: now[0]) == pytest.approx(2.0)
