"""The one change rule (rlbench.analysis.change) on tiny samples whose answers are worked out by hand."""

from __future__ import annotations

import numpy as np
import pytest

from rlbench.analysis.change import (
    CHANGE_FIELDS,
    TESTS,
    by_rounds,
    can_show,
    changed,
    design_note,
    equivalent,
    flat,
    paired,
    rounds_can_show,
    unpaired,
)
from rlbench.analysis.findings import REPEATS_FOR_EVIDENCE, ROUNDS_FOR_EVIDENCE


def test_three_repeats_all_below_three_is_a_change_both_ways_of_telling():
    # every resample's ratio of medians is at most 82/100 < 1; ranks 1, 2, 3 against 4, 5, 6: p = 1/20
    c = unpaired([100.0, 101.0, 102.0], [80.0, 81.0, 82.0])
    assert (c.design, c.basis, c.test, c.n_a, c.n_b, c.runs_a, c.runs_b) == (
        "unpaired",
        "repeats",
        TESTS["unpaired"],
        3,
        3,
        3,
        3,
    )
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
    assert (c.design, c.basis, c.test, c.runs_a, c.runs_b, c.n_a, c.n_b) == (
        "paired",
        "rounds",
        TESTS["paired"],
        6,
        6,
        6,
        6,
    )
    assert c.paired_ratio == 0.5 and (c.paired_ci_low, c.paired_ci_high) == (0.5, 0.5) and c.ratio == 0.5
    assert c.p_value == pytest.approx(2 / 2**6) and c.differs and c.effect == 0.5
    del b[3]  # a failed round leaves the pairs only
    assert paired(a, b).runs_a == 5 and paired(a, b).n_a == 6 and paired(a, b).n_b == 5
    assert not paired(a, b).enough and not paired(a, b).differs  # 2 / 2**5 = 0.0625


def test_the_flat_columns_are_the_fields_in_order():
    c = unpaired([1.0, 2.0, 3.0], [2.0, 3.0, 4.0])
    assert list(flat(c)) == list(CHANGE_FIELDS) and flat(c)["ratio"] == 1.5
    assert list(flat(None, "time_to_target_")) == [f"time_to_target_{f}" for f in CHANGE_FIELDS]
    assert set(flat(None).values()) == {None}


def test_enough_runs_for_each_design():
    # unpaired: 1 / C(n_a + n_b, n_a) <= 0.05 from 3 a side (1/20), or 2 against 6 (1/28); 2 a side: 1/6
    assert can_show(3, 3) and can_show(2, 6) and can_show(1, 19)
    assert not can_show(2, 2) and not can_show(1, 3) and not can_show(0, 30)
    # paired: 2 / 2**n <= 0.05 from 6 rounds (0.031); 5 give 0.0625
    assert rounds_can_show(6) and not rounds_can_show(5) and not rounds_can_show(0)
    assert can_show(REPEATS_FOR_EVIDENCE, REPEATS_FOR_EVIDENCE) and not can_show(REPEATS_FOR_EVIDENCE - 1, 3)
    assert rounds_can_show(ROUNDS_FOR_EVIDENCE) and not rounds_can_show(ROUNDS_FOR_EVIDENCE - 1)


def test_the_one_rule_needs_every_interval_off_one_on_one_side_and_the_test():
    assert changed([(0.4, 0.6), (0.45, 0.55)], 0.03) and changed([(1.1, 1.3), (1.05, 1.2)], 0.03)
    assert changed([(0.7, 0.9)], 0.05)  # unpaired: one interval
    assert not changed([(0.8, 1.1), (0.9, 0.95)], 0.03)  # one interval holds 1
    assert not changed([(0.8, 0.9), (1.05, 1.2)], 0.03)  # off 1 on opposite sides
    assert not changed([(0.8, 0.9), (None, None)], 0.03)  # an interval missing
    assert not changed([(0.4, 0.6)], 0.0625) and not changed([(0.4, 0.6)], None)  # the test does not agree


def test_as_good_within_a_threshold_when_every_interval_lies_inside_it():
    # 100 x 3 against 99, 100, 101: every resample's ratio of medians is in [0.99, 1.01], and some reach each end
    c = unpaired([100.0, 100.0, 100.0], [99.0, 100.0, 101.0])
    assert (c.ci_low, c.ci_high) == (pytest.approx(0.99), pytest.approx(1.01)) and not c.differs
    assert equivalent(c, 0.05) and equivalent(c, 0.02) and not equivalent(c, 0.005)
    assert not equivalent(unpaired([100.0], [100.0]), 0.5)  # no interval: nothing says how close
    # paired: the paired ratio's interval must lie inside too
    pc = paired({0: 100.0, 1: 100.0}, {0: 100.0, 1: 130.0})
    assert pc.ci_low >= 0.95 and not equivalent(pc, 0.05) and pc.paired_ci_high == pytest.approx(1.3)


def test_rounds_are_paired_only_where_the_paired_test_can_show_a_change():
    five = {r: 100.0 + r for r in range(5)}
    c = by_rounds(five, {r: 80.0 + r for r in range(5)})
    assert c.design == "unpaired" and c.runs_a == 5 and c.differs  # 5 against 5, all below: p = 1/252
    assert design_note(5) == "5 rounds: the paired test needs 6, so the rounds were compared as independent repeats"
    six = {r: 100.0 + r for r in range(6)}
    c = by_rounds(six, {r: 80.0 + r for r in range(6)})
    assert c.design == "paired" and c.runs_a == 6 and c.p_value == pytest.approx(2 / 2**6) and c.differs
    assert design_note(6) is None
    # rounds one side missed drop out of the pairs: 6 rounds on A, 5 of them on B -> unpaired
    assert by_rounds(six, {r: 80.0 for r in range(5)}).design == "unpaired"
