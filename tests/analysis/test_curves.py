"""Learning curves per configuration and the returns at equal env steps, on hand-made tables."""

from __future__ import annotations

import pandas as pd

from rlbench.analysis.curves import (
    learning_curves,
    returns_at_equal_steps,
)


def _tables(curves: dict[tuple[int, int], list[tuple[int, float, float | None]]]):
    """(index, repeat) -> [(env steps sampled, wall_s, return) per iteration]."""
    trials, rows = [], []
    for (index, repeat), its in curves.items():
        trial_id = f"t{index:03d}r{repeat}"
        trials.append({"trial_id": trial_id, "index": index, "repeat": repeat, "status": "ok"})
        for i, (steps, wall, ret) in enumerate(its, start=1):
            rows.append(
                {
                    "trial_id": trial_id,
                    "iteration": i,
                    "env_steps_sampled": steps,
                    "wall_s": wall,
                    "episode_return_mean": ret,
                }
            )
    return pd.DataFrame(trials), pd.DataFrame(rows)


def test_curve_is_the_median_of_repeats_on_their_x_with_the_band_and_no_extrapolation():
    trials, its = _tables(
        {
            (0, 0): [(100, 1.0, 10.0), (100, 1.0, 20.0), (100, 1.0, 30.0)],
            (0, 1): [(100, 2.0, 12.0), (100, 2.0, None), (100, 2.0, 40.0)],  # no episode ended in iteration 2
            (0, 2): [(100, 1.0, 14.0), (100, 1.0, 16.0)],  # stopped early (its target, say)
        }
    )
    c = learning_curves(trials, its, "env_steps")
    assert list(c["x"]) == [100, 200, 300]
    # at 200 steps: 20, 26 (12 -> 40 interpolated over the missing point), 16 -> median 20, band 16..26
    assert list(c["median"]) == [12.0, 20.0, 35.0]
    assert list(c["low"]) == [10.0, 16.0, 30.0] and list(c["high"]) == [14.0, 26.0, 40.0]
    assert list(c["n"]) == [3, 3, 2]  # repeat 2 ends at 200: nothing drawn beyond it
    s = learning_curves(trials, its, "seconds")
    assert list(s["x"]) == [1.0, 2.0, 3.0, 6.0]  # repeat 1's point at 4 s has no return
    assert list(s["n"]) == [2, 3, 2, 1]  # repeat 1 starts at 2 s, repeat 2 ends at 2 s


def test_returns_at_equal_env_steps():
    trials, its = _tables(
        {
            (0, 0): [(100, 1.0, 10.0), (100, 1.0, 50.0)],
            (0, 1): [(100, 1.0, 10.0), (100, 1.0, 40.0)],
            (1, 0): [(100, 1.0, 10.0), (100, 1.0, 30.0), (100, 1.0, 90.0)],  # ran further: compared at 200 steps
            (1, 1): [(100, 1.0, 10.0), (100, 1.0, 35.0), (100, 1.0, 90.0)],
            (2, 0): [(100, 1.0, 10.0), (100, 1.0, 38.0)],
            (2, 1): [(100, 1.0, 10.0), (100, 1.0, 44.0)],
        }
    )
    equal = returns_at_equal_steps(trials, its)
    assert equal.env_steps == 200
    assert equal.returns == {0: [50.0, 40.0], 1: [30.0, 35.0], 2: [38.0, 44.0]}
    assert equal.median(0) == 45.0 and equal.median(1) == 32.5


def test_no_returns_no_curve():
    trials, its = _tables({(0, 0): [(100, 1.0, None)]})
    assert learning_curves(trials, its, "env_steps").empty
    equal = returns_at_equal_steps(trials, its)
    assert equal.env_steps is None and equal.median(0) is None
