"""The race (interleaved rotating rounds, stopping, budget) and the answer on hand-made standings."""

from __future__ import annotations

import pytest
from helpers import cand, drive, noisy_throughput

from rlbench.analysis.change import paired, unpaired
from rlbench.analysis.findings import SEQUENTIAL_SIGNIFICANCE
from rlbench.autoconfig.ask_tell import standing
from rlbench.autoconfig.decide import MIN_ROUNDS, Race, choose, verdict


def standings_of(readings: dict, cpus: dict, gpus: dict | None = None):
    """Standings of hand-made readings, and the one rule between any two of them (unpaired, as the search's)."""
    gpus = gpus or {}
    standings = [standing(k, cpus[k], gpus.get(k, 0.0), v) for k, v in readings.items()]
    return standings, lambda a, b: unpaired(readings[a], readings[b])


def test_cheapest_within_five_percent_of_the_best_in_which_the_rule_finds_no_change():
    readings = {
        "fast": [960.0, 1000.0, 1040.0],
        "cheap_close": [900.0, 960.0, 1010.0],  # ranks mixed with fast's, 4% below: chosen (fewest CPUs)
        "cheaper_slow": [900.0, 940.0, 980.0],  # 980 above 960: no change shown, but 6% below: not chosen
        "cheapest_apart": [650.0, 700.0, 750.0],  # every reading below every one of fast's: p = 1/20, a change
        "same_cpus_gpu": [950.0, 990.0, 1030.0],  # 4 CPUs too, but a GPU: the CPU-only one wins the tie
    }
    standings, versus = standings_of(
        readings,
        {"fast": 8, "cheap_close": 4, "cheaper_slow": 2, "cheapest_apart": 1, "same_cpus_gpu": 4},
        {"same_cpus_gpu": 1.0},
    )
    chosen, same, thin = choose(standings, versus)
    assert chosen == "cheap_close"
    assert same == ("fast", "same_cpus_gpu", "cheap_close", "cheaper_slow") and thin == ()
    assert choose(standings, versus, threshold=0.10)[0] == "cheaper_slow"
    assert choose([standing("only", 1, 0.0, [])], versus) == (None, (), ())


def test_too_few_readings_are_neither_tied_nor_worse_but_not_measured_enough():
    """Issue 34: one reading with no interval had been read as overlapping, so the answer listed a
    configuration read once (at 3,437) as indistinguishable from the best while one read twice with an
    interval below it (5,658 [5,586-5,730]) was not. Only 3 readings a side can tell two apart (2 against 3:
    the rank test's smallest p is 1/10)."""
    standings, versus = standings_of(
        {"best": [960.0, 1000.0, 1010.0], "once": [980.0], "twice": [960.0, 980.0]}, {"best": 4, "once": 1, "twice": 1}
    )
    assert choose(standings, versus) == ("best", ("best",), ("once", "twice"))  # neither chosen over its evidence
    # the fastest on one reading: nothing compares with it
    standings, versus = standings_of({"lone": [1000.0], "other": [980.0, 990.0, 1000.0]}, {"lone": 4, "other": 1})
    assert choose(standings, versus) == ("lone", ("lone",), ("other",))


def test_rounds_rotate_and_pair_their_seeds():
    race = Race([cand(2), cand(4)], cand(1), objective="throughput", budget_s=1e6, trial_s=10)
    first = race.ask()
    assert [r.candidate_key for r in first] == [cand(2).key, cand(4).key, cand(1).key]
    assert len({r.seed for r in first}) == 1
    from rlbench.autoconfig.ask_tell import TrialResult

    race.tell([TrialResult(r.request_id, 100.0, 10.0) for r in first])
    second = race.ask()
    assert [r.candidate_key for r in second] == [cand(4).key, cand(1).key, cand(2).key]
    assert second[0].seed != first[0].seed


def test_the_baseline_among_the_finalists_races_once():
    race = Race([cand(1), cand(2)], cand(1), objective="throughput", budget_s=1e6, trial_s=10)
    assert len(race.ask()) == 2


def test_the_race_stops_when_intervals_separate():
    rates = {cand(1).key: 500.0, cand(2).key: 900.0, cand(4).key: 1600.0}

    def reading(req):
        return rates[req.candidate_key] * (1 + 0.01 * ((req.rung * 7 + len(req.candidate_key)) % 3 - 1)), True

    race = Race([cand(2), cand(4)], cand(1), objective="throughput", budget_s=1e6, trial_s=10)
    drive(race, reading)
    answer = race.answer()
    assert race.stop_reason.startswith("settled") and answer.rounds == 3  # the minimum: 3 against 3, all below
    assert answer.chosen_key == answer.fastest_key == cand(4).key and answer.indistinguishable == (cand(4).key,)
    assert answer.speedup == pytest.approx(1600 / 500, rel=0.03)
    assert answer.speedup_ci_low <= answer.speedup <= answer.speedup_ci_high


def test_the_race_stops_on_budget_and_stays_within_it():
    race = Race([cand(2), cand(4)], cand(1), objective="throughput", budget_s=100, trial_s=10, cold_start_s=2)
    drive(race, lambda req: (1000.0, True), wall_s=10.0, cold_start_s=2.0)  # identical: never separates
    # 3 trials x 12 s a round: 2 whole rounds (72 s), then 28 s buy a partial round of 2 (the leader, the
    # cheapest on a tie, and one more); after it the three are practically equal
    assert race.stop_reason.startswith("settled") and race.round + 1 == 3 and race.partial_rounds == 1
    assert race.spent_s == pytest.approx(96.0) and race.spent_s <= race.budget_s
    assert [s.n for s in race.standings()] == [3, 2, 3]  # cand(2), cand(4), then the baseline cand(1)


def test_a_partial_round_runs_the_leader_and_its_closest_rival():
    truth = {cand(1).key: 500.0, cand(2).key: 1000.0, cand(4).key: 990.0}
    race = Race([cand(2), cand(4)], cand(1), objective="throughput", budget_s=85, trial_s=10, cold_start_s=0)
    told = drive(race, lambda req: (truth[req.candidate_key], True), wall_s=10.0, cold_start_s=0.0)
    # 2 whole rounds of 3 (60 s); 25 s left buy 2 trials: cand(2) (1000) and cand(4) (990), not the baseline
    assert [r.request_id.split("/")[1] for r in told].count("r2") == 2
    assert {r.request_id.split("/", 3)[3] for r in told if "/r2/" in r.request_id} == {cand(2).key, cand(4).key}
    a = race.answer()
    assert (a.rounds, a.partial_rounds) == (3, 1) and race.spent_s == pytest.approx(80.0)
    # after it, cand(4) (3 x 990 against 3 x 1000) is 1% below: the same within the tolerance, so it stays; the
    # baseline, with 2 readings, cannot be told (the rank test needs 3 a side), so the race stops on its budget
    assert a.left_race == () and race.stop_reason.startswith("budget: a round needs 3")
    assert verdict(race.versus(cand(2).key, cand(4).key), race.threshold, first_look=True) == "same"


def test_two_tied_readings_never_count_as_worse_beyond_doubt():
    from rlbench.autoconfig.ask_tell import worse_beyond_doubt

    assert not worse_beyond_doubt([500.0, 500.0], [1000.0, 1000.0, 1000.0])  # scipy's approximation: p = 0.04
    assert worse_beyond_doubt([500.0, 500.0, 500.0], [1000.0, 1000.0, 1000.0])


def test_no_partial_round_before_one_whole_round():
    race = Race([cand(2), cand(4)], cand(1), objective="throughput", budget_s=25, trial_s=10, cold_start_s=0)
    assert race.ask() == [] and race.partial_rounds == 0  # 2 trials fit, but no entrant has a race reading yet


def test_a_separated_entrant_leaves_the_race_and_the_rest_go_on():
    """The baseline (100) is below both others in every one of 3 rounds: 3 against 3, p = 1/20, it leaves.
    cand(2) and cand(4) read 1000 and 1000 +/- 10% by turns: never separated nor practically equal, so
    the race goes on with those two only, to its round cap."""

    def reading(req):
        if req.candidate_key == cand(1).key:
            return 100.0, True
        return (1000.0 if req.candidate_key == cand(2).key else (1100.0 if req.rung % 2 else 900.0)), True

    race = Race([cand(2), cand(4)], cand(1), objective="throughput", budget_s=1e6, trial_s=10, max_rounds=6)
    told = drive(race, reading)
    assert [len([r for r in told if f"/r{i}/" in r.request_id]) for i in range(6)] == [3, 3, 3, 2, 2, 2]
    (left,) = race.answer().left_race
    assert (left.key, left.rung, left.reason, left.leader_key) == (cand(1).key, 2, "separated", cand(2).key)
    assert race.stop_reason == "6 rounds"
    base = next(s for s in race.answer().standings if s.key == cand(1).key)
    assert base.n == 3  # its readings stay: the speed-up over it is still reported
    assert race.answer().speedup == pytest.approx(10.0)


def test_equal_configurations_settle_as_practically_equal():
    race = Race([cand(2, 2)], cand(2, 1), objective="throughput", budget_s=1e6, trial_s=10)
    drive(race, lambda req: (1000.0 + (req.rung % 2), True))  # 0.1% apart at most
    assert race.stop_reason.startswith("settled") and race.answer().rounds == 3
    assert set(race.answer().indistinguishable) == {cand(2, 2).key, cand(2, 1).key}


def test_a_censored_baseline_has_no_speed_up_ratio():
    race = Race([cand(4)], cand(1), objective="time_to_target", budget_s=1e6, trial_s=60, max_rounds=4)
    drive(race, lambda req: (60.0, False) if req.candidate_key == cand(1).key else (20.0 + req.rung, True))
    answer = race.answer()
    assert answer.chosen_key == cand(4).key and answer.speedup is None
    base = next(s for s in answer.standings if s.key == cand(1).key)
    assert base.censored == base.n == 3 and base.median == 0.0  # settled after 3 rounds, censored kept


def test_with_no_round_run_the_answer_comes_from_the_search():
    from rlbench.autoconfig.search import SuccessiveHalving

    space = [cand(1), cand(2), cand(4)]
    search = SuccessiveHalving(
        space,
        objective="throughput",
        budget_s=1e6,
        trial_s=10,
        cold_start_s=0,
        seed=0,
        finalists=2,
        protect=[cand(1).key],
    )
    readings = {cand(1).key: [90, 100, 110], cand(2).key: [290, 300, 320], cand(4).key: [300, 310, 315]}
    drive(search, lambda req: (float(readings[req.candidate_key][req.index]), True), cold_start_s=0.0)
    race = Race(search.survivors, cand(1), objective="throughput", budget_s=5, trial_s=10, cold_start_s=0)
    assert race.ask() == [] and race.round == -1  # not one round fits
    assert race.answer().chosen_key is None  # the race alone has nothing
    a = race.answer(fallbacks=[search])
    assert a.chosen_key == cand(2).key and a.fastest_key == cand(4).key  # median 300: within 5% of 310, fewer CPUs
    assert a.speedup == pytest.approx(3.0) and "the answer is from the search readings" in a.stop_reason
    assert a.rounds == 0 and all(s.n == 3 for s in a.standings) and a.source == "search"


def test_with_no_search_either_the_probes_and_search_readings_are_pooled():
    from rlbench.autoconfig.ask_tell import TrialResult
    from rlbench.autoconfig.search import SuccessiveHalving
    from rlbench.autoconfig.session import ProbeStage

    probe = ProbeStage([cand(1)], objective="throughput", budget_s=1e6, trial_s=10, cold_start_s=0, seed=0)
    (req,) = probe.ask()
    probe.tell([TrialResult(req.request_id, 100.0, 10.0)])
    search = SuccessiveHalving([cand(2)], objective="throughput", budget_s=1e6, trial_s=10, cold_start_s=0, finalists=0)
    drive(search, lambda req: (300.0, True), cold_start_s=0.0)
    race = Race([cand(2)], cand(1), objective="throughput", budget_s=5, trial_s=10, cold_start_s=0)
    a = race.answer(fallbacks=[search, probe])
    assert (a.chosen_key, a.source, a.speedup) == (cand(2).key, "search+probe", pytest.approx(3.0))
    assert "pooled, not paired" in a.stop_reason and a.not_measured_enough == (cand(1).key,)


def test_an_entrant_that_keeps_failing_leaves_the_race():
    race = Race([cand(2), cand(4)], cand(1), objective="throughput", budget_s=1e6, trial_s=10, max_rounds=5)
    told = drive(race, lambda req: (1000.0, True), fail=lambda req: req.candidate_key == cand(4).key)
    assert [e.reason for e in race.left if e.key == cand(4).key] == ["failed"]
    assert sum(cand(4).key in r.request_id for r in told) == 2  # its first two failures, then no more


def test_the_race_is_analysed_paired_once_its_rounds_can_show_a_change():
    """The machine drifts from round to round (up to 12%), alike for both entrants (the race's design); cand(4) is
    8% below cand(2) in every round. Unpaired (rounds 3-5), the drift mixes their readings' ranks: no change, and
    not within 5% either, so the race goes on. At round 6 the rounds are paired: every round says 0.92 (the
    signed-rank test's p = 2/64), a change by the one rule, and the answer says so; but a later look of the race
    asks for SEQUENTIAL_SIGNIFICANCE, so cand(4) does not leave, and the race ends at its cap. The drift was found
    by trying sequences until the two designs part (a seeded search)."""
    drift = [0.97, 1.12, 1.02, 1.02, 0.91, 1.01]

    def reading(req):
        return 1000.0 * drift[req.rung] * (0.92 if req.candidate_key == cand(4).key else 1.0), True

    race = Race([cand(4)], cand(2), objective="throughput", budget_s=1e6, trial_s=10, max_rounds=len(drift))
    drive(race, reading)
    assert race.left == [] and race.stop_reason == f"{len(drift)} rounds"
    a = race.answer()
    assert (a.chosen_key, a.indistinguishable, a.rounds, a.design, a.design_note) == (
        cand(2).key,
        (cand(2).key,),
        len(drift),
        "paired",
        None,
    )
    change = race.versus(cand(2).key, cand(4).key)
    assert change.differs and change.paired_ratio == pytest.approx(0.92) and change.p_value == pytest.approx(2 / 64)
    assert change.p_value > SEQUENTIAL_SIGNIFICANCE and verdict(change, race.threshold, first_look=False) == "unknown"


def test_a_race_of_fewer_rounds_than_the_paired_test_needs_says_so_and_goes_on_unpaired():
    race = Race([cand(4)], cand(2), objective="throughput", budget_s=1e6, trial_s=10, max_rounds=4)
    drive(race, lambda req: (1000.0 * (1.0 + 0.01 * req.rung), True))  # identical but for a drift: equal
    a = race.answer()
    assert race.stop_reason.startswith("settled") and a.rounds == 3  # as before: 3 rounds, no extra bought
    assert a.design == "unpaired" and a.design_note == (
        "3 rounds: the paired test needs 6, so the rounds were compared as independent repeats"
    )


# ---------------------------------------------------------------------------------------------
# The sequential rule (issue 56): stop when the evidence is clear either way, run more only while it cannot say


def test_an_obvious_1_6x_stops_at_min_rounds():
    """1.6x apart at a noise CV of 5%: different on the first look; the slower leaves and the race stops there."""
    truth = {cand(1).key: 1000.0, cand(2).key: 1600.0}
    for min_rounds in (MIN_ROUNDS, MIN_ROUNDS + 1):
        race = Race([cand(2)], cand(1), objective="throughput", budget_s=1e6, trial_s=10, min_rounds=min_rounds)
        drive(race, noisy_throughput(truth, 0.05))
        assert race.rounds_done == min_rounds and race.stop_reason.startswith("settled")
        assert [(e.key, e.rung, e.reason) for e in race.left] == [(cand(1).key, min_rounds - 1, "separated")]
        assert race.answer().chosen_key == cand(2).key


def test_a_against_a_stops_as_same_when_the_spread_is_small():
    """The same configuration twice (two keys, one truth) at a CV of 0.5%: every interval inside 1 +/- 5% after
    min_rounds: same, nobody leaves, both are indistinguishable and the cheaper is chosen."""
    race = Race([cand(2, 2)], cand(2, 1), objective="throughput", budget_s=1e6, trial_s=10)
    drive(race, noisy_throughput({cand(2, 2).key: 1000.0, cand(2, 1).key: 1000.0}, 0.005))
    assert race.rounds_done == MIN_ROUNDS and race.stop_reason.startswith("settled") and race.left == []
    assert [v for v, _ in race.verdicts().values()] == ["same"]
    assert set(race.answer().indistinguishable) == {cand(2, 2).key, cand(2, 1).key}


def test_an_unclear_pair_runs_to_max_rounds():
    """3% apart at a CV of 10%: neither different by more than the tolerance nor inside it: unknown every look."""
    max_rounds = MIN_ROUNDS + 4
    race = Race([cand(2)], cand(1), objective="throughput", budget_s=1e6, trial_s=10, max_rounds=max_rounds)
    drive(race, noisy_throughput({cand(1).key: 1000.0, cand(2).key: 1030.0}, 0.10))
    assert race.rounds_done == max_rounds and race.left == [] and race.stop_reason == f"{max_rounds} rounds"
    assert [v for v, _ in race.verdicts().values()] == ["unknown"]


def test_the_first_look_at_significance_later_ones_stricter():
    """3 readings all below 3 others, 1.6x apart: p = 1/20, different on the first look only (later looks ask
    SEQUENTIAL_SIGNIFICANCE); 5 against 5 (p = 1/252) is different on any look; 2% apart with every reading
    apart is a change by the one rule but within the tolerance: same, never different."""
    low, high = [600.0, 610.0, 620.0, 630.0, 640.0], [1000.0, 1010.0, 1020.0, 1030.0, 1040.0]
    three = unpaired(high[:3], low[:3])
    assert three.differs and three.p_value == pytest.approx(1 / 20) and three.p_value > SEQUENTIAL_SIGNIFICANCE
    assert verdict(three, 0.05, first_look=True) == "different"
    assert verdict(three, 0.05, first_look=False) == "unknown"
    assert verdict(unpaired(high, low), 0.05, first_look=False) == "different"
    tight = [1000.0, 1001.0, 1002.0, 1003.0, 1004.0]
    near = unpaired(tight, [x * 0.98 for x in tight])
    assert near.differs and verdict(near, 0.05, first_look=False) == "same"
    rounds = dict(enumerate(high * 2))
    assert verdict(paired(rounds, {k: v * 0.5 for k, v in rounds.items()}), 0.05, first_look=False) == "different"


def test_the_race_says_its_counts_and_tolerance_from_its_settings():
    """No count or threshold typed in the race's words: a cap of 4 says 4 rounds, a tolerance of 8% says 8%."""
    race = Race([cand(2)], cand(1), objective="throughput", budget_s=1e6, trial_s=10, max_rounds=MIN_ROUNDS + 1)
    drive(race, noisy_throughput({cand(1).key: 1000.0, cand(2).key: 1030.0}, 0.10))
    assert race.stop_reason == f"{MIN_ROUNDS + 1} rounds"
    race = Race([cand(2)], cand(1), objective="throughput", budget_s=1e6, trial_s=10, threshold=0.08)
    drive(race, noisy_throughput({cand(1).key: 1000.0, cand(2).key: 1600.0}, 0.02))
    assert (
        race.stop_reason == "settled: every other configuration is below the leader by more than 8% or within 8% of it"
    )
    assert "by more than 8%" in race.left[0].detail
