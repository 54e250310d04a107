"""scripts/bench_readings.py on hand-made tables: the handovers are only gaps between different windows, under a
second, on the run's clock (each trial's times are its own, from its ``started_epoch``); a launch floor counts trials
started together as one launch."""

from __future__ import annotations

import pandas as pd
import pytest
from conftest import load_script


def test_handovers_are_the_short_gaps_between_windows_on_the_runs_clock():
    trials = pd.DataFrame({"trial_id": ["a", "b"], "started_epoch": [100.0, 110.0]})
    rows = [  # trial, window, warmup, start, end (the trial's own clock)
        ("a", 0, True, 1.0, 2.0),  # warm-up: not a reading
        ("a", 0, False, 12.0, 13.0),  # run clock 112-113
        ("a", 0, False, 13.01, 14.0),  # same window: its own gap is not a handover
        ("b", 0, False, 4.1, 5.0),  # run clock 114.1: handover 0.1 s
        ("a", 1, False, 15.25, 16.0),  # 115.25: handover 0.25 s
        ("b", 1, False, 9.0, 10.0),  # 119: a 3 s gap (a launch), not a handover
    ]
    iterations = pd.DataFrame(rows, columns=["trial_id", "window", "warmup", "t_start_s", "t_end_s"])
    assert load_script("bench_readings").handovers(trials, iterations) == pytest.approx([0.1, 0.25])


def test_a_launch_floor_counts_trials_started_together_once_at_their_longest():
    """Three launches: one trial, two within a second of each other (one launch: their longest ray.init and build on
    the path), one more; a run of 100 s from epoch 1,000 reading 50 s, its first trial at 1,004."""
    trials = pd.DataFrame(
        {
            "trial_id": ["a", "b", "c", "d"],
            "started_epoch": [1004.0, 1020.0, 1020.5, 1060.0],
            "ray_init_s": [2.0, 3.0, 4.0, 1.0],
            "build_s": [3.0, 6.0, 5.0, None],  # d failed before its build: nothing of it on the path
        }
    )
    floor = load_script("bench_readings").launch_floor(trials, steady_s=50.0, start=1000.0, wall_s=100.0)
    assert floor.launches == [1, 2, 1]
    assert (floor.ray_init_s, floor.start_s, floor.build_s) == (7.0, 4.0, 9.0)  # 2 + 4 + 1; 1,004 - 1,000; 3 + 6 + 0
    # 50 / 100, 50 / 93, 50 / 89, 50 / 80
    assert floor.shares == pytest.approx((0.5, 50 / 93, 50 / 89, 50 / 80))


def test_launch_sizes_are_counted_smallest_first():
    sizes = load_script("bench_readings").sizes
    assert sizes([1, 3, 1]) == "2 of 1 trial, 1 of 3 trials"
    assert sizes([3] * 56) == "56 of 3 trials"
