"""The one change rule (rlbench.analysis.change) on tiny samples whose answers are worked out by hand."""

from __future__ import annotations

import numpy as np
import pytest

from rlbench.analysis.change import CHANGE_FIELDS, TESTS, flat, paired, unpaired


def test_three_repeats_all_below_three_is_a_change_both_ways_of_telling():
    # every resample's ratio of medians is at most 82/100 < 1; ranks 1, 2, 3 against 4, 5, 6: p = 1/20
    c = unpaired([100.0, 101.0, 102.0], [80.0, 81.0, 82.0])
    assert (c.design, c.basis, c.test, c.n_a, c.n_b, c.runs_a, c.runs_b) == ("unpaired", "repeats", TESTS["unpaired"],
                                                                             3, 3, 3, 3)
    assert c.ratio == pytest.approx(81 / 101) and c.ci_high <= 82 / 100 and c.ci_low >= 80 / 102
    assert c.p_value == pytest.approx(0.05) and c.differs and c.enough and c.effect == c.ratio
    assert c.paired_ratio is None and c.paired_ci_low is None
    # the other way round, the test is one-sided in the ratio's direction: the same p
    assert unpaired([80.0, 81.0, 82.0], [100.0, 101.0, 102.0]).p_value == pytest.approx(0.05)


def test_one_run_a_side_resamples_its_iterations_and_the_test_still_counts_runs():
    c = unpaired([100.0], [80.0], within=([99.0, 100.0, 101.0], [79.0, 80.0, 81.0]))
    assert (c.basis, c.n_a, c.n_b, c.runs_a, c.runs_b) == ("iterations", 3, 3, 1, 1)
    assert c.ci_high < 1  # within-run noise only ...
    assert c.p_value == pytest.approx(0.5) and not c.enough and not c.differs  # ... no test can show it on one run
    assert unpaired([100.0], [80.0]).basis == "repeats"  # no iterations given: the runs, no interval
    assert unpaired([100.0, 101.0], [], within=([1.0], [])).basis == "-"


def test_no_direction_no_test():
    c = unpaired(np.array([100.0, 100.0, 100.0]), [100.0, 100.0, float("nan"), 100.0])  # arrays; NaN left out
    assert c.ratio == 1.0 and c.p_value is None and not c.differs and c.runs_b == 3
    assert unpaired([], [1.0, 2.0]).ratio is None


def test_a_variant_at_half_the_speed_in_six_rounds_is_a_paired_change():
    a = {r: v for r, v in enumerate([100.0, 110.0, 90.0, 100.0, 105.0, 95.0])}
    b = {r: v / 2 for r, v in a.items()}
    c = paired(a, b)
    assert (c.design, c.basis, c.test, c.runs_a, c.runs_b, c.n_a, c.n_b) == ("paired", "rounds", TESTS["paired"],
                                                                             6, 6, 6, 6)
    assert c.paired_ratio == 0.5 and (c.paired_ci_low, c.paired_ci_high) == (0.5, 0.5) and c.ratio == 0.5
    assert c.p_value == pytest.approx(2 / 2 ** 6) and c.differs and c.effect == 0.5
    del b[3]  # a failed round leaves the pairs only
    assert paired(a, b).runs_a == 5 and paired(a, b).n_a == 6 and paired(a, b).n_b == 5
    assert not paired(a, b).enough and not paired(a, b).differs  # 2 / 2**5 = 0.0625


def test_the_flat_columns_are_the_fields_in_order():
    c = unpaired([1.0, 2.0, 3.0], [2.0, 3.0, 4.0])
    assert list(flat(c)) == list(CHANGE_FIELDS) and flat(c)["ratio"] == 1.5
    assert list(flat(None, "time_to_target_")) == [f"time_to_target_{f}" for f in CHANGE_FIELDS]
    assert set(flat(None).values()) == {None}
