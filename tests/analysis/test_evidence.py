"""Evidence: comparisons between configurations state their evidence (hand-computed p-values), and the
words of the one change rule on hand-made figures."""

from __future__ import annotations

import pandas as pd
import pytest

from rlbench.analysis.advice import recommendations
from rlbench.analysis.change import TESTS, Change, changed
from rlbench.analysis.change import paired as paired_change
from rlbench.analysis.curves import EqualSteps, below_at_equal_steps
from rlbench.analysis.evidence import (
    beyond,
    change_sentence,
    change_verdict,
    learning_notes,
    missing_evidence,
    time_to_target_verdict,
)


def unpaired(ratio, low, high, runs_a, runs_b, p, basis="repeats") -> Change:
    """Hand-made figures of an unpaired comparison (``differs`` by the rule itself)."""
    return Change(
        "unpaired",
        basis,
        runs_a,
        runs_b,
        ratio,
        low,
        high,
        None,
        None,
        None,
        TESTS["unpaired"],
        runs_a,
        runs_b,
        p,
        changed([(low, high)], p),
    )


def paired(ratio, low, high, rounds, p) -> Change:
    """Hand-made figures of a paired comparison: the paired ratio and interval equal the ratio's."""
    return Change(
        "paired",
        "rounds",
        rounds,
        rounds,
        ratio,
        low,
        high,
        ratio,
        low,
        high,
        TESTS["paired"],
        rounds,
        rounds,
        p,
        changed([(low, high), (low, high)], p),
    )


def test_a_threshold_counts_from_its_value_on_either_side():
    assert beyond(0.95, 0.05, "slower") and not beyond(0.96, 0.05, "slower") and not beyond(0.5, 0.05, "faster")
    assert beyond(1.05, 0.05, "faster") and beyond(1.05, 0.05) and beyond(0.95, 0.05) and not beyond(1.0, 0.05)
    assert not beyond(None, 0.05)


def test_too_few_runs_give_no_verdict_however_far_apart():
    # B at 0.8 of A with an interval below 1 (iterations of one run each): p could be 1/2 at best
    assert (
        change_verdict(unpaired(0.8, 0.75, 0.85, 1, 1, 0.5, "iterations"), 0.05)
        == "no evidence yet: 1 run a side; 3 repeats a side could show it"
    )
    # 2 a side: the rank test's smallest p is 1 / C(4, 2) = 1/6 > 0.05
    assert (
        change_verdict(unpaired(1.3, 1.2, 1.4, 2, 2, 1 / 6), 0.05)
        == "no evidence yet: 2 runs a side; 3 repeats a side could show it"
    )
    # 1 against 3: 1 / C(4, 1) = 1/4
    assert change_verdict(unpaired(1.0, 0.9, 1.1, 1, 3, 0.5), 0.05).startswith("no evidence yet: 1 run against 3;")
    # 5 rounds all one way: 2 / 2**5 = 0.0625
    assert (
        change_verdict(paired(0.5, 0.45, 0.55, 5, 0.0625), 0.05) == "no evidence yet: 5 rounds; 6 rounds could show it"
    )


def test_enough_runs_give_the_verdict_the_rule_says():
    assert change_verdict(unpaired(0.8, 0.7, 0.9, 3, 3, 0.05), 0.05) == "regressed"  # 1 / C(6, 3) = 0.05
    assert change_verdict(unpaired(0.8, 0.7, 0.9, 2, 6, 1 / 28), 0.05) == "regressed"  # 1 / C(8, 2)
    assert change_verdict(unpaired(0.8, 0.7, 0.9, 3, 3, 0.05), 0.25) == "small change"
    assert change_verdict(unpaired(1.3, 1.2, 1.4, 3, 3, 0.05), 0.05) == "improved"
    assert change_verdict(unpaired(0.95, 0.9, 0.97, 3, 3, 0.05), 0.05) == "regressed"  # at the threshold: counts
    assert change_verdict(unpaired(0.8, 0.7, 1.1, 3, 3, 0.05), 0.05) == "no significant change"  # 1 inside
    # the interval excludes 1 but the ranks overlap (one of B above one of A: 2/20 = 0.1): no change shown
    assert change_verdict(unpaired(0.8, 0.7, 0.9, 3, 3, 0.1), 0.05) == "no significant change"
    assert change_verdict(unpaired(None, None, None, 0, 3, None), 0.05) == "no data"
    assert change_verdict(None, 0.05) == "no data"
    # paired: judged on the paired ratio
    assert change_verdict(paired(0.5, 0.45, 0.55, 6, 2 / 64), 0.05) == "regressed"


def test_the_sentence_states_the_evidence_of_each_design():
    assert change_sentence("A", "B", paired(0.5, 0.5, 0.5, 6, 0.03125)) == (
        "B is 50.0% slower than A (6 rounds; paired ratio 0.500, 95% CI 0.500-0.500; ratio of medians 0.500, 95% CI "
        "0.500-0.500; Wilcoxon p=0.031)"
    )
    assert change_sentence("A", "B", paired(0.5, 0.45, 0.55, 5, 0.0625)).endswith("; 6 rounds could show one)")
    assert change_sentence("A", "B", unpaired(1.25, 1.2, 1.3, 3, 3, 0.05)) == (
        "B is 25.0% faster than A (3 runs a side; ratio of medians 1.250, 95% CI 1.200-1.300 over repeats; "
        "Mann-Whitney U p=0.05)"
    )
    assert change_sentence("A", "B", unpaired(0.8, 0.75, 0.85, 1, 1, 0.5, "iterations")) == (
        "no evidence of a difference (1 run a side; ratio of medians 0.800, 95% CI 0.750-0.850 over iterations; "
        "Mann-Whitney U p=0.5; 3 repeats a side could show one)"
    )
    assert change_sentence("A", "B", unpaired(None, None, None, 3, 0, None)) == "no data: B has no ok trial here"


def test_time_to_target_words():
    assert time_to_target_verdict(unpaired(1.25, 1.2, 1.3, 3, 3, 0.05)) == "later"
    assert time_to_target_verdict(unpaired(0.8, 0.7, 0.9, 3, 3, 0.05)) == "sooner"
    assert time_to_target_verdict(unpaired(0.8, 0.7, 1.1, 3, 3, 0.05)) == "no significant change"
    assert (
        time_to_target_verdict(unpaired(0.8, 0.7, 0.9, 2, 3, 0.1))
        == "no evidence yet: 2 runs against 3; 3 repeats a side could show it"
    )


def test_one_run_against_one_is_no_evidence_yet():
    # the smoke sweep's case: 9.1 against 10.4 is 12.5% lower, but one run a side gives p = 1/2 at best
    (below,) = below_at_equal_steps(EqualSteps(1024.0, {0: [9.1], 1: [10.4]}))
    assert (below.index, below.best_index, below.n, below.best_n) == (0, 1, 1, 1)
    assert below.p_value == pytest.approx(0.5) and not below.clear
    assert below.evidence == "no evidence yet: 1 run a side; 3 repeats a side could show it"
    notes = learning_notes(1, [below], {0: "a=0", 1: "a=1"}, steps=1024)
    assert notes == [
        "lower return at equal env steps (best 10.4 at 1,024 env steps), no evidence yet that it means "
        "worse learning: a=0 (return 9.1, 1 run a side); 3 repeats a side could show it"
    ]
    (mine,) = learning_notes(0, [below], {0: "a=0", 1: "a=1"}, steps=1024)
    assert mine == (
        "its return at equal env steps is lower (9.1 against 10.4 for a=1 at 1,024 env steps), but there "
        "is no evidence yet that it learns worse: 1 run a side; 3 repeats a side could show it"
    )


def test_three_runs_all_below_three_is_clearly_below():
    # ranks 1, 2, 3 against 4, 5, 6: one arrangement of C(6, 3) = 20, p = 0.05
    (below,) = below_at_equal_steps(EqualSteps(100.0, {0: [10.0, 11.0, 12.0], 1: [7.0, 8.0, 9.0]}))
    assert (below.index, below.median, below.best_index, below.best_median) == (1, 8.0, 0, 11.0)
    assert below.p_value == pytest.approx(0.05) and below.clear
    assert below.evidence == "p = 0.05, one-sided Mann-Whitney U, 3 runs a side"
    (note,) = learning_notes(0, [below], {0: "a=0", 1: "a=1"}, steps=100)
    assert note == (
        "learning clearly worse at equal env steps (best return 11.0 at 100 env steps): a=1 (return 8.0; "
        "p = 0.05, one-sided Mann-Whitney U, 3 runs a side)"
    )


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
        "no evidence yet that it beats b=1 (900 env steps/s): 1 run against 2; 3 repeats a side could show it"
    )


def _configs(n: list[int], low: list[float | None], high: list[float | None]) -> pd.DataFrame:
    return pd.DataFrame(
        {
            "index": [0, 1],
            "a": [0, 1],
            "env_steps_per_s": [1255.0, 1143.0],
            "n": n,
            "noisy": False,
            "env_steps_per_s_ci_low": low,
            "env_steps_per_s_ci_high": high,
            "cpus": [2, 2],
            "env_steps_per_s_per_cpu": [627.5, 571.5],
        }
    )


def test_a_single_run_recommendation_says_it_has_no_evidence_it_beats_the_next():
    rec, per_cpu = recommendations(_configs([1, 1], [None, None], [None, None]), ["a"])
    assert rec.label == "a=0" and rec.note == (
        "single run: no confidence interval; no evidence yet that it beats a=1 (1,143 env steps/s): 1 run a side; "
        "3 repeats a side could show it"
    )
    assert "it beats a=1 (572 env steps/s per CPU)" in per_cpu.note


def test_three_repeats_apart_need_no_caveat_and_overlapping_ones_tie():
    (rec, per_cpu) = recommendations(_configs([3, 3], [1200.0, 1100.0], [1300.0, 1180.0]), ["a"])
    assert rec.note == "" and per_cpu.note == ""
    (rec, per_cpu) = recommendations(_configs([3, 3], [1150.0, 1100.0], [1300.0, 1180.0]), ["a"])
    assert rec.note == "tied within the 95% CIs with a=1 (1,143 env steps/s)"
    assert per_cpu.note == "tied within the 95% CIs with a=1 (572 env steps/s per CPU)"  # 575 <= 590 per CPU


def test_a_paired_step_with_no_round_both_sides_ran_is_said_not_raised():
    """CPU per 1,000 env steps is read only by trials whose steady window held a CPU sample: two releases can have
    values in different rounds, so no pair. The history's step then says 0 rounds (it raised a TypeError at the
    format, under load, in the history e2e)."""
    change = paired_change({0: 100.0, 2: 110.0}, {1: 50.0, 3: 55.0})
    assert change.paired_ratio is None and change.runs_a == 0
    words = change_sentence("a", "b", change)
    assert "0 rounds; paired ratio -" in words and "no evidence" in words
