"""Findings: comparisons between configurations state their evidence (hand-computed p-values)."""

from __future__ import annotations

import pandas as pd
import pytest

from rlbench.analysis.advice import recommendations
from rlbench.analysis.curves import EqualSteps
from rlbench.analysis.findings import below_at_equal_steps, learning_notes, missing_evidence, smallest_p


def test_smallest_p_of_an_exact_rank_test():
    # every value of one side below every value of the other: 1 / C(n_a + n_b, n_a)
    assert smallest_p(1, 1) == 0.5
    assert smallest_p(2, 2) == pytest.approx(1 / 6)
    assert smallest_p(3, 3) == pytest.approx(1 / 20)  # 0.05: the fewest repeats a side that can show it
    assert smallest_p(1, 19) == pytest.approx(1 / 20)
    assert smallest_p(0, 3) == 1.0


def test_one_run_against_one_is_no_evidence_yet():
    # the smoke sweep's case: 9.1 against 10.4 is 12.5% lower, but one run a side gives p = 1/2 at best
    (below,) = below_at_equal_steps(EqualSteps(1024.0, {0: [9.1], 1: [10.4]}))
    assert (below.index, below.best_index, below.n, below.best_n) == (0, 1, 1, 1)
    assert below.p_value == pytest.approx(0.5) and not below.clear
    assert below.evidence == "no evidence yet: 1 run a side; 3 repeats a side could show it"
    notes = learning_notes(1, pd.DataFrame(), [below], {0: "a=0", 1: "a=1"}, steps=1024)
    assert notes == ["lower return at equal env steps (best 10.4 at 1,024 env steps), no evidence yet that it means "
                     "worse learning: a=0 (return 9.1, 1 run a side); 3 repeats a side could show it"]
    (mine,) = learning_notes(0, pd.DataFrame(), [below], {0: "a=0", 1: "a=1"}, steps=1024)
    assert mine == ("its return at equal env steps is lower (9.1 against 10.4 for a=1 at 1,024 env steps), but there "
                    "is no evidence yet that it learns worse: 1 run a side; 3 repeats a side could show it")


def test_three_runs_all_below_three_is_clearly_below():
    # ranks 1, 2, 3 against 4, 5, 6: one arrangement of C(6, 3) = 20, p = 0.05
    (below,) = below_at_equal_steps(EqualSteps(100.0, {0: [10.0, 11.0, 12.0], 1: [7.0, 8.0, 9.0]}))
    assert (below.index, below.median, below.best_index, below.best_median) == (1, 8.0, 0, 11.0)
    assert below.p_value == pytest.approx(0.05) and below.clear
    assert below.evidence == "p = 0.05, one-sided Mann-Whitney U, 3 runs a side"
    (note,) = learning_notes(0, pd.DataFrame(), [below], {0: "a=0", 1: "a=1"}, steps=100)
    assert note == ("learning clearly worse at equal env steps (best return 11.0 at 100 env steps): a=1 (return 8.0; "
                    "p = 0.05, one-sided Mann-Whitney U, 3 runs a side)")


def test_a_gap_enough_repeats_do_not_confirm_is_no_finding():
    # 3 against 3, one of the lower side above one of the best's: p = 2/20 = 0.1
    assert below_at_equal_steps(EqualSteps(100.0, {0: [10.0, 11.0, 12.0], 1: [7.0, 8.0, 10.5]})) == []


def test_a_small_gap_is_no_finding_whatever_the_repeats():
    # the medians differ by 5% of the best: under the 10% margin
    assert below_at_equal_steps(EqualSteps(100.0, {0: [100.0, 101.0], 1: [95.0, 96.0]})) == []
    assert below_at_equal_steps(EqualSteps(100.0, {0: [1.0]})) == []
    (below,) = below_at_equal_steps(EqualSteps(100.0, {0: [100.0, 101.0], 1: [80.0, 85.0]}))
    assert below.p_value == pytest.approx(1 / 6) and not below.clear  # 2 a side can never show it


def test_missing_evidence_names_both_sides():
    assert missing_evidence(1, 2, "it beats b=1 (900 env steps/s)") == (
        "no evidence yet that it beats b=1 (900 env steps/s): 1 run against 2; 3 repeats a side could show it")


def _configs(n: list[int], low: list[float | None], high: list[float | None]) -> pd.DataFrame:
    return pd.DataFrame({"index": [0, 1], "a": [0, 1], "env_steps_per_s": [1255.0, 1143.0], "n": n, "noisy": False,
                         "env_steps_per_s_ci_low": low, "env_steps_per_s_ci_high": high, "cpus": [2, 2],
                         "env_steps_per_s_per_cpu": [627.5, 571.5]})


def test_a_single_run_recommendation_says_it_has_no_evidence_it_beats_the_next():
    rec, per_cpu = recommendations(_configs([1, 1], [None, None], [None, None]), ["a"])
    assert rec.label == "a=0" and rec.note == (
        "single run: no confidence interval; no evidence yet that it beats a=1 (1,143 env steps/s): 1 run a side; "
        "3 repeats a side could show it")
    assert "it beats a=1 (572 env steps/s per CPU)" in per_cpu.note


def test_three_repeats_apart_need_no_caveat_and_overlapping_ones_tie():
    (rec, per_cpu) = recommendations(_configs([3, 3], [1200.0, 1100.0], [1300.0, 1180.0]), ["a"])
    assert rec.note == "" and per_cpu.note == ""
    (rec, per_cpu) = recommendations(_configs([3, 3], [1150.0, 1100.0], [1300.0, 1180.0]), ["a"])
    assert rec.note == "tied within the 95% CIs with a=1 (1,143 env steps/s)"
    assert per_cpu.note == "tied within the 95% CIs with a=1 (572 env steps/s per CPU)"  # 575 <= 590 per CPU
