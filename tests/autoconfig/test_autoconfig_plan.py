"""What the budget buys, on hand-computed costs: how long a trial is, the plan's steps, the smallest budget."""

from __future__ import annotations

import pytest

from rlbench.autoconfig.plan import TrialShape, budget_for, minimum_budget_s, reserve_s, size_plan

#: Thirteen configurations of 13 s a trial each (the issue-34 space after the model: 2 probes of 13-14 s),
#: named a..m in the model's order; the baseline B is not a grid point.
KEYS = list("abcdefghijklm")
COST = {k: 13.0 for k in [*KEYS, "B"]}


def plan(left_s, cap_s=1000.0, **kw):
    knobs = {"first_rung_readings": 3, "finalists": 3, "min_rounds": 3, **kw}
    return size_plan(KEYS, "B", COST, left_s, search_cap_s=cap_s, **knobs)


def test_each_step_of_the_plan_on_hand_computed_costs():
    # the race's minimum: 3 rounds of the model's top 3 and the baseline, 3 x 4 x 13 = 156 s
    full = plan(700)  # 544 s beside the race: 3 readings of 13 (507 s) fit
    assert (full.step, full.readings, full.measured, full.race_min_s) == ("full", 3, tuple(KEYS), 156.0)
    fewer = plan(400)  # 244 s: 3 x 169 and 2 x 169 do not fit, 1 x 169 does
    assert (fewer.step, fewer.readings, len(fewer.measured)) == ("fewer_readings", 1, 13)
    top = plan(300)  # 144 s: one reading of the model's top 11 (143 s), 2 not measured
    assert (top.step, top.readings, top.measured, top.not_measured) == ("model_top", 1, tuple(KEYS[:11]), ("l", "m"))
    race = plan(200)  # no search beside the race: 5 entrants x 3 rounds = 195 s fit, 6 would need 234 s
    assert (race.step, race.readings, race.race, len(race.not_measured)) == (
        "race_only",
        0,
        ("a", "b", "c", "d", "B"),
        9,
    )
    small = plan(60)  # not even 3 rounds of two (78 s): one reading of the top 4 (52 s)
    assert (small.step, small.readings, small.measured) == ("smallest", 1, ("a", "b", "c", "d"))
    assert "78 s" in small.words and f"about {budget_for(78):.0f} s would" in small.words


def test_the_search_share_caps_the_search_and_every_plan_is_stated():
    capped = plan(700, cap_s=200.0)  # 200 s for the search: one reading each (169 s)
    assert (capped.step, capped.readings, capped.search_budget_s) == ("fewer_readings", 1, 200.0)
    for left in (700, 400, 300, 200, 60, 0):
        assert plan(left).words and plan(left).trials == int(left // 13)


def test_a_space_no_larger_than_the_finalists_is_raced_whole():
    p = size_plan(
        ["a", "b", "B"],
        "B",
        {"a": 10.0, "b": 10.0, "B": 10.0},
        1000,
        search_cap_s=600,
        first_rung_readings=3,
        finalists=3,
        min_rounds=3,
    )
    assert (p.step, p.race, p.not_measured) == ("race_only", ("a", "b", "B"), ())


def test_a_trial_is_as_long_as_the_spec_says():
    iterations = TrialShape(stop_iterations=6, stop_seconds=None, warmup_iterations=1)
    assert iterations.limit_s is None and iterations.training_s(None) is None  # unknown before a probe
    assert iterations.training_s(0.5) == 3.0 and iterations.cap_for(0.5) == 13.0  # 6 x 0.5; 3 s + 10 s margin
    assert iterations.cap_for(10.0) == 120.0  # twice the 60 s predicted
    both = TrialShape(stop_iterations=6, stop_seconds=20.0, cap_s=8.0)
    assert (
        both.limit_s == 8.0 and both.training_s(0.5) == 3.0 and both.training_s(5.0) == 8.0 and both.cap_for(5.0) == 8.0
    )
    assert "6 iterations (1 warm-up)" in iterations.describe() and "2x the probes' prediction" in iterations.describe()
    assert "capped at 8 s (autoconfig.trial_s)" in both.describe()
    seconds = TrialShape(stop_iterations=None, stop_seconds=30.0)
    assert seconds.training_s(None) == 30.0 and seconds.describe() == "each trial runs the spec's stop: 30 s"


def test_the_smallest_budget_and_the_reserve():
    assert (reserve_s(20), reserve_s(100), reserve_s(10_000)) == (4.0, 5.0, 60.0)  # at least 4 s, 5%, at most 60 s
    assert budget_for(95.0) == pytest.approx(100.0) and budget_for(2000.0) == 2060.0 and budget_for(12.0) == 16.0
    # two probes and 3 rounds of two at 1.5 s a trial: 12 s, and the reserve
    assert minimum_budget_s([1.5, 1.5], 1.5, 3) == 16.0
