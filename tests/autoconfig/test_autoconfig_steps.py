"""Env steps to the target raced beside the time to it: medians with censoring, and differences with
evidence, on hand-computed readings."""

from __future__ import annotations

import pytest
from helpers import cand

from rlbench.autoconfig.ask_tell import TrialResult
from rlbench.autoconfig.decide import Race
from rlbench.autoconfig.steps import compare_steps, scores, steps_standing

FEW = [(1000.0, True), (1200.0, True), (1100.0, True)]  # median 1100
MANY = [(2000.0, True), (2400.0, True), (2200.0, True)]  # median 2200: twice as many
CENSORED_ONE = [(1000.0, True), (1100.0, True), (900.0, False)]  # missed once, at 900 steps
CENSORED_TWO = [(500.0, True), (800.0, False), (700.0, False)]


def test_scores_count_a_censored_trial_as_never_reaching_the_target():
    assert scores([(1000.0, True), (900.0, False)]) == [0.001, 0.0]


def test_the_median_in_steps_with_censored_trials_kept():
    assert steps_standing("a", FEW).median == pytest.approx(1100)
    # scores 1/1000, 1/1100, 0: the median is 1/1100 whatever the censored trial's 900 steps were
    one = steps_standing("c", CENSORED_ONE)
    assert (one.median, one.n, one.censored) == (pytest.approx(1100), 3, 1)
    two = steps_standing("d", CENSORED_TWO)
    assert two.median is None and two.censored == 2  # more than half censored: beyond the cap
    assert steps_standing("e", []).median is None


def test_the_interval_turns_around_and_is_open_when_it_reaches_the_censored():
    s = steps_standing("a", FEW)
    assert 1000 <= s.ci_low <= 1100 <= s.ci_high <= 1200
    assert steps_standing("c", CENSORED_ONE).ci_high is None  # a resample of mostly censored: unbounded


def test_three_rounds_all_one_way_show_a_difference():
    (c,) = compare_steps({"few": FEW, "many": MANY}, "few")
    # every one of many's scores below every one of few's: p = 1 / C(6, 3) = 0.05
    assert c.key == "many" and c.differ and c.p_value == pytest.approx(0.05)
    assert c.ratio == pytest.approx(2.0)  # 2200 / 1100
    assert "many needs more env steps to the target than few" in c.text and "2,200 against 1,100" in c.text
    (back,) = compare_steps({"many": MANY, "few": FEW}, "many")
    assert back.differ and back.ratio == pytest.approx(0.5) and "needs fewer" in back.text


def test_equal_medians_show_no_difference():
    (c,) = compare_steps({"few": FEW, "c": CENSORED_ONE}, "few")
    assert not c.differ and c.text.startswith("no difference in env steps to the target shown")


def test_two_rounds_say_what_evidence_is_missing():
    (c,) = compare_steps({"few": FEW[:2], "many": MANY[:2]}, "few")
    assert not c.differ and c.p_value is None
    assert c.text == (
        "no evidence yet that many and few differ in env steps to the target: 2 runs a side; "
        "3 repeats a side could show it"
    )


def test_the_race_answers_steps_to_target_per_entrant():
    """Known answer: finalist 4 runners needs half the env steps of the baseline (1 runner) and is faster too."""
    race = Race([cand(4)], cand(1), objective="time_to_target", budget_s=1e6, trial_s=60, max_rounds=3)
    steps = {cand(4).key: 1000.0, cand(1).key: 2000.0}
    while requests := race.ask():
        race.tell(
            [
                TrialResult(
                    r.request_id,
                    10.0 + r.rung + (10 if r.candidate_key == cand(1).key else 0),
                    30.0,
                    2.0,
                    True,
                    env_steps=steps[r.candidate_key] + r.rung,
                )
                for r in requests
            ]
        )
    a = race.answer()
    assert a.chosen_key == cand(4).key
    by_key = {s.key: s for s in a.steps}
    assert by_key[cand(4).key].median == pytest.approx(1001) and by_key[cand(1).key].median == pytest.approx(2001)
    (c,) = a.steps_comparisons
    assert c.key == cand(1).key and c.differ and c.ratio == pytest.approx(2001 / 1001)


def test_throughput_races_no_steps():
    race = Race([cand(4)], cand(1), objective="throughput", budget_s=1e6, trial_s=60, max_rounds=3)
    while requests := race.ask():
        race.tell([TrialResult(r.request_id, 100.0, 30.0, 2.0, True, env_steps=5.0) for r in requests])
    assert race.answer().steps == () and race.answer().steps_comparisons == ()
