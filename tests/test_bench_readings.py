"""scripts/bench_readings.py's handovers on hand-made tables: only gaps between different windows, under a second,
on the run's clock (each trial's times are its own, from its ``started_epoch``)."""

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
