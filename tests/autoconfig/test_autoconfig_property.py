"""autoconfig's promises over generated spaces and budgets (issue 34), on simulated trials.

Over worlds of 1-40 configurations on 1-3 axes, baselines on and off the grid, some configurations that
always fail, trials of iterations or seconds, and budgets from too small to generous, every run of the
session either is refused before any trial (the budget is below the smallest plan that can answer) or
answers within the budget + 10%; it never ends without an answer while a trial gave a reading; and when
the budget buys two readings of every configuration, it picks one within the tolerance of the known best.
The world is simulated (tests/autoconfig/simulated.py): what is checked is the session's decisions, and
no verdict depends on the machine's load. scripts/autoconfig_property.py prints the counts over more worlds.
"""

from __future__ import annotations

import math

import pytest
from simulated import NOISE_CV, SimRunner, session, world

from rlbench.autoconfig.plan import budget_for
from rlbench.autoconfig.session import dump_decided, load_decided

#: Budgets as a multiple of the exhaustive sweep with 2 repeats: from too small to generous.
BUDGETS = (0.05, 0.2, 0.4, 0.65, 1.0, 2.0)
#: How far below the known best a pick may be: the answer's own tolerance (5%: the cheapest within it is
#: chosen) and two readings' noise.
PICK_TOLERANCE = 0.05 + 2 * NOISE_CV


def two_readings_each_s(w) -> float:
    """The budget that buys the probes and two readings of every configuration, at the true costs."""
    probes = 2 * (w.cold_s + max(w.training_s(k) for k in w.truth))
    return budget_for(probes + w.exhaustive_s(2))


def outcome(seed: int, multiple: float):
    w = world(seed)
    budget = multiple * w.exhaustive_s(2)
    s = session(w, budget)
    if s.minimum_budget_s() > budget:
        return w, budget, s, None, None
    runner = SimRunner(w)
    return w, budget, s, runner, s.run(runner)


@pytest.mark.parametrize("multiple", BUDGETS)
def test_every_run_is_refused_up_front_or_answers_within_its_budget(multiple):
    refused = answered = within = two = 0
    for seed in range(60):
        w, budget, s, runner, answer = outcome(seed, multiple)
        if runner is None:
            refused += 1
            continue
        assert runner.clock_s <= budget * 1.1, (seed, runner.clock_s, budget)
        readings = [r for r in runner.results.values() if r.value is not None]
        if answer.chosen_key is None:  # nothing to answer from: every trial failed
            assert not readings, (seed, answer.stop_reason)
            continue
        answered += 1
        best = max(v for v in w.truth.values() if not math.isnan(v))
        if budget >= two_readings_each_s(w):
            two += 1
            ok = w.truth[answer.chosen_key] >= (1 - PICK_TOLERANCE) * best
            within += ok
            assert ok, (seed, answer.chosen_key, w.truth[answer.chosen_key] / best, s.plan.step)
    assert refused + answered > 0
    if multiple >= 2.0:  # the generous budgets are not all refused: the properties are exercised
        assert answered >= 40 and two >= 10


def test_the_smallest_budgets_are_refused_and_generous_ones_never():
    refused_small = sum(outcome(seed, 0.05)[3] is None for seed in range(60))
    refused_large = sum(outcome(seed, 2.0)[3] is None for seed in range(60))
    assert refused_small > refused_large


def test_a_resumed_session_reaches_the_same_answer_without_running_a_finished_trial():
    for seed in range(12):
        w, budget, s, runner, answer = outcome(seed, 1.0)
        if runner is None:
            continue
        again = session(w, budget)
        again.decided = load_decided(dump_decided(runner.saved))  # through autoconfig_state.json's shape
        replay = SimRunner(w, clock_s=runner.clock_s, results=dict(runner.results))
        before = len(replay.results)
        assert again.run(replay) == answer
        assert len(replay.results) == before  # not one trial ran again
