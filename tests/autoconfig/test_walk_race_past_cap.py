"""The walk's step race past its cap of 6 rounds (issue 57, "the walk that ends at the best"): it goes on only while the
one rule cannot say and the best value leads the current point by more than the tolerance, and stops when it can.

Readings by hand: the current point (A) reads 100 every round, the value (B) the figures of its list, one a round, so
each round's ratio B/A is B's reading / 100 and the paired test's p can be counted by hand (exact Wilcoxon, two-sided:
with one round below 1 at rank r of |log ratio| among n, p = 2 * #(subsets of 1..n summing to <= r) / 2**n)."""

from __future__ import annotations

from helpers import cand, drive

from rlbench.autoconfig.ask_tell import TrialResult
from rlbench.autoconfig.decide import EXTENDED_ROUNDS
from rlbench.autoconfig.walk.path import PathStep, step_line
from rlbench.autoconfig.walk.race import WalkRace
from rlbench.autoconfig.walk.steps import decide_step

A, B = cand(1), cand(2)

#: Round 5 (97) below: rank 1 of 6, p = 2 * 2/64 = 0.0625 at 6 (no gain); then 0.031 at 7 and 0.0156 at 8 (above the
#: 0.01 a move past the cap asks), 2 * 2/512 = 0.0078 at 9: a gain there. Median 112.5 at 6: 1.125x, more than 5%.
GAIN_AT_9 = [108.0, 112.0, 113.0, 114.0, 97.0, 115.0, 116.0, 117.0, 118.0]
#: 97 below (rank 2 of |log ratio|, after 103): p = 2 * 3/64 = 0.094 at 6, median 106.5 (1.065x); 96 and 95 after it
#: bring the median to 106 (1.06x, 7 rounds), then 104.5 (1.045x, 8 rounds): within 5%.
LEAD_FALLS_AT_8 = [97.0, 103.0, 106.0, 107.0, 108.0, 109.0, 96.0, 95.0]
#: Two rounds of three far below (ranks 11-12 of 12 and the like): no p near 0.05, and the median of the 110-117 above
#: 1.05x at every round: unknown to the cap.
NEVER_SAYS = [110.0, 111.0, 80.0, 112.0, 113.0, 79.0, 114.0, 115.0, 78.0, 116.0, 117.0, 77.0, 118.0]


def walk_race(b_reads: list[float], budget_s: float = 1e9, extend_to: int = EXTENDED_ROUNDS) -> WalkRace:
    """A step's race of B against the current point A, as the walk builds it (3 to 6 rounds, 5%), run to its end;
    each trial 10 s and a 2 s cold start (12 s a trial)."""
    race = WalkRace(
        1,
        [B],
        A,
        objective="throughput",
        budget_s=budget_s,
        trial_s=10.0,
        cold_start_s=2.0,
        min_rounds=3,
        max_rounds=6,
        threshold=0.05,
        extend_to=extend_to,
    )
    drive(race, lambda req: (100.0 if req.candidate_key == A.key else b_reads[req.rung], True))
    return race


def moved(race: WalkRace) -> str:
    return decide_step(A.key, race.standings(), race.versus, 0.05, level=race.level)[1]


def test_unknown_at_6_with_the_value_ahead_runs_on_until_the_rule_shows_the_gain():
    race = walk_race(GAIN_AT_9)
    assert (race.rounds_done, race.extra_rounds) == (9, 3)
    assert [r.rung for r in race.requests() if r.candidate_key == B.key] == list(range(9))  # a 7th round, an 8th...
    assert moved(race) == "gain"
    assert race.stop_reason.startswith("3 rounds past the cap of 6: after 6 rounds the rule could not say and ")
    assert "led the current by 1.12x" in race.stop_reason and "more than the 5% tolerance" in race.stop_reason


def test_the_same_readings_stop_at_6_without_the_rounds_past_it():
    race = walk_race(GAIN_AT_9, extend_to=0)
    assert (race.rounds_done, race.extra_rounds, race.stop_reason) == (6, 0, "6 rounds")
    assert moved(race) == "stay"  # 1.125x read, p = 0.0625: what issue 57's pushes stayed on


def test_where_the_current_leads_at_6_it_stops_there():
    race = walk_race([200.0 - x for x in GAIN_AT_9])  # the mirror: B below A by as much
    assert (race.rounds_done, race.extra_rounds, race.stop_reason) == (6, 0, "6 rounds")
    assert len(race.requests()) == 12


def test_a_lead_within_the_tolerance_at_6_stops_there():
    race = walk_race([91.0, 112.0, 95.0, 110.0, 104.0, 99.0, 120.0])  # median (99 + 104) / 2: 1.015x
    assert (race.rounds_done, race.extra_rounds, race.stop_reason) == (6, 0, "6 rounds")


def test_decided_at_round_8_it_stops_there():
    race = walk_race(LEAD_FALLS_AT_8)
    assert (race.rounds_done, race.extra_rounds) == (8, 2) and moved(race) == "stay"
    assert "stopped: the lead of " in race.stop_reason and "within the 5% tolerance" in race.stop_reason


def test_the_hard_cap():
    race = walk_race(NEVER_SAYS)
    assert (race.rounds_done, race.extra_rounds) == (EXTENDED_ROUNDS, EXTENDED_ROUNDS - 6) and moved(race) == "stay"
    # the median of the 12 readings: (111 + 112) / 2, 1.115x
    assert (
        f"stopped: the hard cap of {EXTENDED_ROUNDS} rounds, still without evidence ({B.key} 1.11x" in race.stop_reason
    )


def test_the_budget_cuts_it():
    """12 s a trial: 6 rounds of two cost 144 s, a 7th 168 s; 180 s leaves 12 s, short of a round of the two (24 s).
    The stop reason begins with the budget, as the walk reads a race the budget cut (it stops the walk there)."""
    race = walk_race(GAIN_AT_9, budget_s=180.0)
    assert (race.rounds_done, race.extra_rounds) == (7, 1) and moved(race) == "stay"
    assert race.stop_reason.startswith("budget: a round of the two needs 24 s, 12 s left; 1 round past the cap of 6")


def test_a_resumed_race_decides_the_same_from_the_stored_readings():
    first = walk_race(GAIN_AT_9)
    told = [first._told[r.request_id] for r in first.requests()]
    again = WalkRace(
        1,
        [B],
        A,
        objective="throughput",
        budget_s=1e9,
        trial_s=10.0,
        cold_start_s=2.0,
        min_rounds=3,
        max_rounds=6,
        threshold=0.05,
        extend_to=EXTENDED_ROUNDS,
    )
    assert again.replay(told) == []
    assert (again.rounds_done, again.extra_rounds, again.stop_reason) == (9, 3, first.stop_reason)
    assert isinstance(told[0], TrialResult)


def test_the_step_line_says_how_many_rounds_and_why():
    race = walk_race(GAIN_AT_9)
    step = PathStep(
        step=1,
        knob="k",
        axis="k",
        from_key=A.key,
        to_key=B.key,
        from_value=1,
        to_value=2,
        values=(2,),
        verdict_label="continued",
        verdict="v",
        outcome="gain",
        speedup=1.15,
        ci_low=1.1,
        ci_high=1.2,
        design="paired",
        readings_from=9,
        readings_to=9,
        rounds=race.rounds_done,
        wall_s=216.0,
        changes_learning=None,
        learning=None,
        learning_cost=False,
        race_stop_reason=race.stop_reason,
        extra_rounds=race.extra_rounds,
    )
    assert "9 rounds (3 rounds past the cap of 6: after 6 rounds the rule could not say" in step_line(step)
