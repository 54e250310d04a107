"""Successive halving on intervals: noisy seeded readings, budget, censoring, resume, pruning."""

from __future__ import annotations

import pytest
from helpers import cand, drive, noisy_throughput

from rlbench.autoconfig.ask_tell import TrialResult, standing
from rlbench.autoconfig.decide import Race
from rlbench.autoconfig.model import CostModel, ProbeCosts
from rlbench.autoconfig.search import SuccessiveHalving

#: Nine configurations; the true best (4 runners x 4 envs, 2000 steps/s) has a close second (1960, 2% less).
SPACE = [cand(r, e) for r in (1, 2, 4) for e in (1, 2, 4)]
TRUTH = {c.key: 500.0 * c.num_env_runners**0.5 * (1 + 0.25 * (c.num_envs_per_env_runner > 1)) for c in SPACE}
TRUTH[cand(4, 4).key], TRUTH[cand(4, 2).key] = 2000.0, 1960.0
BEST, SECOND = cand(4, 4).key, cand(4, 2).key


def search(budget_s=3000.0, **kw):
    return SuccessiveHalving(SPACE, objective="throughput", budget_s=budget_s, trial_s=10.0, cold_start_s=2.0, **kw)


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_noisy_search_then_race_names_the_best_or_one_indistinguishable(seed):
    s = search(seed=seed)
    drive(s, noisy_throughput(TRUTH, cv=0.08, seed=seed))
    finalists = {c.key for c in s.survivors}
    assert BEST in finalists
    # Dropped only on an interval from at least two readings, and never one of the top third.
    for e in s.eliminations:
        assert e.reason == "separated" and len(s.scores(e.key)) >= 2 and e.ci_high < TRUTH[BEST]
    race = Race(s.survivors, cand(1, 1), objective="throughput", budget_s=1500.0, trial_s=10.0, seed=seed)
    drive(race, noisy_throughput(TRUTH, cv=0.08, seed=100 + seed))
    answer = race.answer()
    assert answer.chosen_key in (BEST, SECOND)
    assert BEST in answer.indistinguishable
    assert answer.speedup_ci_low <= 2000 / 500 <= answer.speedup_ci_high or answer.chosen_key == SECOND


def test_a_single_reading_never_drops_a_candidate():
    # Every first-rung trial of 1x1 fails but one: a lone, terrible reading; it must survive the rung.
    s = search(budget_s=12 * 9 * 3 + 1)  # room for rung 0 only
    lone = cand(1, 1).key
    drive(s, noisy_throughput(TRUTH, cv=0.02), fail=lambda req: req.candidate_key == lone and req.index > 0)
    assert s.rung == 0 and s.scores(lone) and len(s.scores(lone)) == 1
    assert lone in {c.key for c in s.survivors}


def test_two_readings_a_side_never_drop_however_far_apart():
    s = search(first_rung_readings=2, budget_s=12 * 9 * 2 + 1)
    drive(s, noisy_throughput(TRUTH, cv=0.01))
    assert s.rung == 0 and s.eliminations == [] and len(s.survivors) == 9  # 1x1 is 4x slower, read twice


def test_the_search_stops_when_the_next_rung_would_not_fit():
    s = search(budget_s=500.0)  # rung 0: 9 x 3 trials x (10 + 2) s = 324 s; rung 1: 9 more each, 4 x 9 x 12 at least
    drive(s, noisy_throughput({c.key: 1000.0 for c in SPACE}, cv=0.10))  # all equal: none separates
    assert s.rung == 0 and s.trials_run == 27 and s.spent_s == pytest.approx(324.0)
    assert s.stop_reason.startswith("budget") and s.spent_s <= s.budget_s
    first = search(budget_s=300.0)
    assert first.ask() == [] and first.stop_reason.startswith("budget") and len(first.survivors) == 9


def test_a_rung_is_interleaved_and_every_slot_shares_a_seed():
    requests = search().ask()
    assert len(requests) == 27 and len({r.request_id for r in requests}) == 27
    assert [r.candidate_key for r in requests[:9]] == [c.key for c in SPACE]
    assert [r.candidate_key for r in requests[9:18]] == [c.key for c in SPACE[1:] + SPACE[:1]]  # rotated
    assert len({r.seed for r in requests[:9]}) == 1 and requests[0].seed != requests[9].seed
    assert search().ask() == requests  # deterministic: same arguments, same requests
    assert search(seed=7).ask()[0].seed != requests[0].seed


def test_resume_by_replaying_told_results():
    s = search(seed=5)
    told = drive(s, noisy_throughput(TRUTH, cv=0.08, seed=5))
    again = search(seed=5)
    pending = again.replay(told[:25])  # interrupted two trials before the end of rung 0
    assert [r.request_id for r in pending] == [t.request_id for t in told[25:27]]
    assert again.ask() == pending  # asking again hands out the same two
    assert again.replay(told) == []
    assert [c.key for c in again.survivors] == [c.key for c in s.survivors]
    assert again.eliminations == s.eliminations and again.spent_s == pytest.approx(s.spent_s)


def test_tell_refuses_what_was_never_asked():
    s = search()
    s.ask()
    with pytest.raises(ValueError, match="never asked"):
        s.tell([TrialResult("search/r9/i0/x", 1.0, 1.0)])


def test_the_model_prunes_before_any_trial_for_throughput_only():
    model = CostModel(
        ProbeCosts(env_step_s=0.001, inference_step_s=0.0, learner_step_s=0.00025, sync_per_runner_s=0.05, cores=4)
    )
    space = [cand(r) for r in (0, 1, 2, 4)]
    s = SuccessiveHalving(space, objective="throughput", budget_s=1000, trial_s=10, model=model, protect=[cand(0).key])
    assert [(e.key, e.reason, e.rung) for e in s.eliminations] == [(cand(1).key, "model", -1)]
    assert cand(1).key not in {c.key for c in s.survivors}
    ttt = SuccessiveHalving(space, objective="time_to_target", budget_s=1000, trial_s=10, model=model)
    assert ttt.eliminations == []


def test_censored_median_is_kaplan_meier_with_one_cap():
    # Times 10 and 20 reached, one censored at the cap: scores 0.1, 0.05, 0 -> median 0.05 = 1/(20 s).
    assert standing("a", 1, 0, [0.1, 0.05, 0.0], censored=1).median == pytest.approx(1 / 20)
    # Three of five censored: the median is "more than the cap" (score 0).
    assert standing("b", 1, 0, [0.1, 1 / 12, 0.0, 0.0, 0.0], censored=3).median == 0.0


def test_time_to_target_keeps_censored_trials_and_ranks_them_last():
    space = [cand(1), cand(2), cand(4)]
    times = {cand(1).key: None, cand(2).key: 40.0, cand(4).key: 20.0}  # None: never reaches within 60 s

    def reading(req):
        t = times[req.candidate_key]
        jitter = 1 + 0.02 * (req.index % 3)
        return (60.0, False) if t is None else (t * jitter, True)

    s = SuccessiveHalving(
        space, objective="time_to_target", budget_s=5000, trial_s=60, cold_start_s=2, finalists=1, eta=2
    )
    drive(s, reading, wall_s=60.0)
    never = s.standing_of(cand(1).key, 2, 0)
    assert never.n == len(s.scores(cand(1).key)) >= 2 and never.censored == never.n and never.failed == 0
    assert [e.key for e in s.eliminations] == [cand(1).key, cand(2).key]
    assert all(e.reason == "separated" for e in s.eliminations)
    assert [c.key for c in s.survivors] == [cand(4).key]
