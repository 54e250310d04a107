"""The steady state of a trial run once and of a warm trial read in windows (issue 56), on hand-made rows."""

from __future__ import annotations

import pandas as pd

from rlbench.analysis.windows import in_steady_window, steady_window, steady_windows


def _its(rows):
    return pd.DataFrame(rows, columns=["trial_id", "iteration", "warmup", "window", "t_start_s", "t_end_s"])


ONCE = [("t0", 1, True, None, 0.0, 1.0), ("t0", 2, False, None, 1.0, 2.0), ("t0", 3, False, None, 2.0, 3.5)]
# a warm trial: warm-up and window 0 from 10 s to 12 s, paused, window 1 from 20 s to 21 s
WARM = [
    ("t1", 1, True, 0, 9.0, 10.0),
    ("t1", 2, False, 0, 10.0, 11.0),
    ("t1", 3, False, 0, 11.0, 12.0),
    ("t1", 4, False, 1, 20.0, 21.0),
]


def test_a_trial_run_once_has_one_window_from_its_first_steady_iteration_to_its_last():
    assert steady_window(_its(ONCE)) == (1.0, 3.5)
    spans = steady_windows(_its(ONCE))
    assert list(spans.index) == ["t0"] and spans.loc["t0", "t0"] == 1.0 and spans.loc["t0", "t1"] == 3.5


def test_a_warm_trial_has_one_window_a_measured_window_and_no_single_span():
    spans = steady_windows(_its(ONCE + WARM))
    warm = spans.loc[["t1"]]
    assert warm["t0"].tolist() == [10.0, 20.0] and warm["t1"].tolist() == [12.0, 21.0]
    assert steady_window(_its(WARM)) is None  # its pauses would be in one span: no energy over it


def test_samples_in_a_pause_are_outside_the_steady_state():
    samples = pd.DataFrame({"trial_id": ["t1", "t1", "t1", "t1", "t0", "t0"], "t_s": [9.5, 11.0, 15.0, 20.5, 0.5, 3.0]})
    inside = in_steady_window(samples, steady_windows(_its(ONCE + WARM)))
    assert inside.tolist() == [False, True, False, True, False, True]


def test_rows_without_a_window_column_read_as_before():
    its = _its(ONCE).drop(columns="window")
    assert steady_window(its) == (1.0, 3.5) and steady_windows(its)["t1"].tolist() == [3.5]
