"""Variants compared per grid point (rlbench.analysis.variants): tiny fixtures whose answers are
worked out by hand."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from rlbench.analysis.change import paired
from rlbench.analysis.evidence import change_sentence
from rlbench.analysis.variants import compare_variants, grid_points, variant_names


def trials(values: dict[str, list[float | None]], x: list = (1,)) -> pd.DataFrame:
    """One row per grid point x, variant and round; variant v's throughput in round r is values[v][r]
    (None: the trial failed)."""
    rows = []
    names = list(values)
    for p, xv in enumerate(x):
        for v, name in enumerate(names):
            for r, value in enumerate(values[name]):
                rows.append(
                    {
                        "trial_id": f"t{p * len(names) + v:03d}r{r}",
                        "index": p * len(names) + v,
                        "repeat": r,
                        "round": r,
                        "variant": name,
                        "x": xv,
                        "status": "ok" if value is not None else "failed",
                        "env_steps_per_s": None if value is None else value * (1 + p),
                    }
                )
    return pd.DataFrame(rows)


A = [100.0, 110.0, 90.0, 100.0, 105.0, 95.0]
B = [50.0, 55.0, 45.0, 50.0, 52.5, 47.5]  # half of A in every round
C = [101.0, 108.0, 92.0, 99.0, 105.0, 95.0]  # A's twin: round ratios 1.01, 0.982, 1.022, 0.99, 1, 1


def test_a_variant_at_half_the_speed_in_every_round_is_called_slower():
    [b] = compare_variants(trials({"A": A, "B": B}), ["x"], ["A", "B"])
    c = b.change
    assert (b.label, b.a, b.b, c.runs_a, c.design) == ("x=1", "A", "B", 6, "paired")
    assert b.a_env_steps_per_s == 100.0 and b.b_env_steps_per_s == 50.0
    assert c.ratio == 0.5 and c.paired_ratio == 0.5
    assert (c.paired_ci_low, c.paired_ci_high) == (0.5, 0.5)  # every round's ratio is 0.5
    assert c.ci_high <= 55 / 90  # the largest ratio any resample of the medians can give
    assert c.p_value <= 0.05  # 6 rounds, all one way
    assert c.differs and b.verdict == "regressed"
    assert b.sentence.startswith(
        "B is 50.0% slower than A (6 rounds; paired ratio 0.500, 95% CI 0.500-0.500; ratio of medians 0.500, 95% CI "
    )
    # within the threshold: a change with evidence, not a regression
    assert compare_variants(trials({"A": A, "B": B}), ["x"], ["A", "B"], threshold=0.6)[0].verdict == "small change"


def test_five_rounds_all_one_way_are_not_yet_evidence():
    [b] = compare_variants(trials({"A": A[:5], "B": B[:5]}), ["x"], ["A", "B"])
    assert b.change.paired_ci_high < 1 and b.change.ci_high < 1  # both intervals exclude 1 ...
    assert b.change.p_value == pytest.approx(2 / 32, abs=0.01) and not b.change.differs  # ... no rank test can agree
    assert b.sentence.startswith("no evidence of a difference (5 rounds;") and b.sentence.endswith(
        "; 6 rounds could show one)"
    )
    assert b.verdict == "no evidence yet: 5 rounds; 6 rounds could show it"


def test_a_twin_of_the_reference_gets_no_evidence_of_a_difference():
    [c] = compare_variants(trials({"A": A, "C": C}), ["x"], ["A", "C"])
    assert c.change.paired_ratio == 1.0  # median of 0.982, 0.99, 1, 1, 1.01, 1.022
    assert c.change.ratio == 1.0  # medians 100 and (99 + 101) / 2
    assert c.change.paired_ci_low < 1 < c.change.paired_ci_high and not c.change.differs
    assert c.sentence.startswith("no evidence of a difference (6 rounds; paired ratio 1.000")
    assert c.verdict == "no significant change"


def test_each_grid_point_and_variant_against_the_first():
    rows = compare_variants(trials({"A": A, "B": B, "C": C}, x=[1, 2]), ["x"], ["A", "B", "C"])
    assert [(r.label, r.b) for r in rows] == [("x=1", "B"), ("x=1", "C"), ("x=2", "B"), ("x=2", "C")]
    assert rows[2].a_env_steps_per_s == 200.0 and rows[2].change.paired_ratio == 0.5


def test_a_failed_round_drops_that_pair_only():
    [b] = compare_variants(trials({"A": A, "B": [50.0, None, 45.0, 50.0, 52.5, 47.5]}), ["x"], ["A", "B"])
    assert b.change.runs_a == 5 and b.change.paired_ratio == 0.5 and b.b_env_steps_per_s == 50.0


def test_one_round_gives_no_interval_and_no_verdict():
    [b] = compare_variants(trials({"A": [100.0], "B": [50.0]}), ["x"], ["A", "B"])
    assert b.change.ci_low is None and b.change.paired_ci_low is None and not b.change.differs
    assert b.sentence.startswith("no evidence of a difference (1 round; paired ratio 0.500, 95% CI -;")


def test_without_two_variants_there_is_nothing_to_compare():
    assert compare_variants(trials({"A": A}), ["x"], ["A"]) == []
    assert compare_variants(pd.DataFrame({"index": [0], "status": ["ok"]}), [], []) == []


def test_no_data_on_a_side_is_said():
    change = paired({0: 100.0}, {})
    assert change_sentence("A", "B", change) == "no data: B has no ok trial here"
    [b] = compare_variants(trials({"A": A, "B": [None] * 6}), ["x"], ["A", "B"])
    assert b.verdict == "no data" and b.sentence == "no data: B has no ok trial here"


def test_variants_in_spec_order():
    t = trials({"B": B, "A": A})
    assert variant_names({"spec": {"variants": [{"name": "A"}, {"name": "B"}]}}, t) == ["A", "B"]
    assert variant_names({"spec": {}}, t) == ["B", "A"]  # no spec: as the grid indexes them
    assert variant_names({"spec": {}}, pd.DataFrame({"index": [0]})) == []


def test_grid_points_come_in_grid_order_with_numpy_values_as_python_ones():
    # rows out of order; index says the grid order: (x=2, y=a) is point 0, (x=1, y=b) point 1
    frame = pd.DataFrame(
        {"index": [3, 0, 2, 1], "x": np.array([1, 2, 1, 2], dtype=np.int64), "y": ["b", "a", "b", "a"]},
        index=[10, 11, 12, 13],
    )
    points = grid_points(frame, ["x", "y"])
    assert [(p.label, p.axes, list(p.rows)) for p in points] == [
        ("x=2, y=a", {"x": 2, "y": "a"}, [11, 13]),
        ("x=1, y=b", {"x": 1, "y": "b"}, [10, 12]),
    ]
    assert type(points[0].axes["x"]) is int  # not numpy.int64: it goes into json and the report as is
    [everything] = grid_points(frame, [])
    assert (everything.label, everything.axes, sorted(everything.rows)) == ("all", {}, [10, 11, 12, 13])


def test_warm_trials_windows_are_the_rounds_a_variant_is_paired_by():
    """rounds 6, 3 a process (issue 56): A's and B's processes each read 3 windows, B at half A's speed in every one;
    paired by window-as-round, the comparison has 6 rounds and calls B slower, as six cold rounds would."""
    rows, its = [], []
    for v, name in enumerate(("A", "B")):
        for r in (0, 3):
            tid = f"t{v:03d}r{r}"
            rows.append(
                {
                    "trial_id": tid,
                    "index": v,
                    "variant": name,
                    "round": r,
                    "repeat": r,
                    "status": "ok",
                    "env_steps_per_s": 0.0,
                }
            )
            for k in range(3):
                rate = (1000.0 + 10 * (r + k)) * (0.5 if name == "B" else 1.0)
                its.append({"trial_id": tid, "iteration": 1 + k, "window": k, "warmup": False, "env_steps_per_s": rate})
    frame, iterations = pd.DataFrame(rows), pd.DataFrame(its)
    [row] = compare_variants(frame, [], ["A", "B"], iterations=iterations)
    assert row.change.n_a == 6 and row.change.n_b == 6 and row.verdict == "regressed"
    assert row.a_env_steps_per_s == 1025.0 and row.b_env_steps_per_s == 512.5
    [cold] = compare_variants(frame.assign(env_steps_per_s=[1010.0, 1040.0, 505.0, 520.0]), [], ["A", "B"])
    assert cold.change.n_a == 2  # without the iterations: a process a round, as the table holds them
