"""The walk (rlbench/autoconfig/walk/session.py) on fake verdicts and fake readings: each stop reason, no move without
evidence, no value that cannot fit, a knob not moved back, resume without rerunning a finished step."""

from __future__ import annotations

import json
import math

import pytest
from walkworld import WalkWorld, advice_for, fake_advices, fake_ladder, value

from rlbench.autoconfig.walk import steps as walk_steps
from rlbench.autoconfig.walk.plan import StepPlan
from rlbench.autoconfig.walk.race import START_READINGS


@pytest.fixture(autouse=True)
def fake_verdicts(monkeypatch):
    monkeypatch.setattr(walk_steps, "advices", fake_advices)
    monkeypatch.setattr(walk_steps, "knob_values", fake_ladder)


def two_moves() -> WalkWorld:
    """Runners short first (1 -> 4 is 3x), then envs per runner (1 -> 4 is 2x), then nothing names a knob."""

    def truth(axes):
        r, e = value(axes, "num_env_runners"), value(axes, "num_envs_per_env_runner")
        return 100.0 * {1: 1.0, 2: 2.0, 4: 3.0}[r] * {1: 1.0, 2: 1.5, 4: 2.0}[e]

    def verdicts(axes):
        if value(axes, "num_env_runners") < 4:
            return advice_for("num_env_runners", value(axes, "num_env_runners"), (1, 2, 4))
        if value(axes, "num_envs_per_env_runner") < 4:
            return advice_for("num_envs_per_env_runner", value(axes, "num_envs_per_env_runner"), (1, 2, 4))
        return advice_for(None)

    return WalkWorld(truth, verdicts)


def test_two_moves_each_with_its_cause_then_no_knob():
    w = two_moves()
    s = w.session()
    answer = s.run(w)
    assert [(p.knob, p.from_value, p.to_value, p.outcome) for p in s.path] == [
        ("num_env_runners", 1, 4, "gain"),
        ("num_envs_per_env_runner", 1, 4, "gain"),
    ]
    assert s.stop_reason == "no_knob" and answer.chosen_key == "num_env_runners=4,num_envs_per_env_runner=4"
    assert all(p.speedup > 1 and p.ci_low > 1 for p in s.path)  # each move's interval is off 1: the rule's gain
    assert [p.readings_from >= 3 and p.readings_to >= 3 for p in s.path] == [True, True]
    assert s.path[0].changes_learning and "runners" in s.path[0].changes_learning
    assert [p.step for p in s.points_read] == [0, 1, 2]
    assert answer.baseline_key == "base" and answer.speedup > 5  # 6x by the truth, pooled over the steps
    assert answer.design_note and "pooled" in answer.design_note
    assert sum(line.startswith("step ") for line in w.lines) == 2 and w.lines[-1].startswith("walk stopped: no verdict")


def test_the_start_is_read_once_and_that_reading_is_its_first_rounds_in_step_1():
    """issue 57: the start's reading counts: step 1's race takes it as the start's trial of round 0 (same seed as the
    round's other trials), so the start is not measured twice, and it is pooled once in the answer."""
    w = two_moves()
    s = w.session()
    answer = s.run(w)
    assert [r for r in w.ran if r.startswith("walk0/")] == ["walk0/r0/i0/base"]
    assert "walk1/r0/i0/base" not in w.ran and s.path[0].readings_from >= 3  # round 0's start reading, reused
    race = s.stages[1]
    assert len({r.seed for r in race.requests() if r.rung == 0}) == 1
    assert race.trials_run == sum(len(race.scores(k)) for k in race.entrants) - 1  # the reused one is step 0's
    base = next(st for st in answer.standings if st.key == "base")
    assert base.n == s.path[0].readings_from  # pooled once, not once per stage


def test_no_fit_stops_before_any_trial_of_a_step():
    w = WalkWorld(lambda a: 100.0, lambda a: advice_for(None, stop="no_fit", text="no larger value fits"))
    s = w.session()
    answer = s.run(w)
    assert s.stop_reason == "no_fit" and s.path == [] and answer.chosen_key == "base"
    assert all(r.startswith("walk0/") for r in w.ran) and "no larger value fits" in s.stop_text


def test_cores_limit_is_said():
    w = WalkWorld(lambda a: 100.0, lambda a: advice_for(None, stop="cores_limit", text="2 of 2 cores busy"))
    s = w.session()
    s.run(w)
    assert (
        s.stop_reason == "cores_limit"
        and s.stop_text == "no more env runners fit, the sampler's verdict says what limits them: 2 of 2 cores busy"
    )


def test_no_move_without_evidence():
    """A value 1% faster (noise 2%): the rule shows no gain, the walk stays and says so."""
    w = WalkWorld(
        lambda a: 100.0 * (1.01 if value(a, "num_env_runners") == 2 else 1.0),
        lambda a: advice_for("num_env_runners", value(a, "num_env_runners"), (1, 2)),
    )
    s = w.session()
    answer = s.run(w)
    assert [p.outcome for p in s.path] == ["stay"] and s.stop_reason == "no_gain"
    assert answer.chosen_key == "base" and answer.speedup == 1.0
    assert "no evidence of a gain" in w.lines[-2]


def test_ceiling_stops_the_walk():
    knob = "num_envs_per_env_runner"
    w = WalkWorld(lambda a: 100.0, lambda a: advice_for(knob, 1, (1, 2)), ceiling_frac=lambda a: 0.93)
    s = w.session()
    s.run(w)
    assert s.stop_reason == "ceiling" and s.path == [] and "93%" in s.stop_text
    assert s.points_read[0].ceiling_frac == 0.93


def test_more_runners_raise_the_ceiling_so_they_are_raced_however_close():
    w = two_moves()
    w.ceiling_frac = lambda a: 0.95
    s = w.session()
    s.run(w)
    assert s.path[0].knob == "num_env_runners" and s.path[0].outcome == "gain"
    assert s.stop_reason == "ceiling"  # then envs per runner, which do not raise it: the walk stops there


def test_an_unmeasured_ceiling_stops_nothing():
    w = two_moves()
    s = w.session()
    s.run(w)
    assert all(p.ceiling_frac is None for p in s.points_read) and s.stop_reason == "no_knob"


def test_budget_stops_the_walk():
    w = two_moves()
    s = w.session(
        budget_s=75.0
    )  # the start's reading (7 s) and one step of 3 rounds x 3 less its reading (56 s) do not fit
    s.run(w)
    assert s.stop_reason == "budget" and "s left" in s.stop_text
    assert w.clock_s <= 75.0 * 1.1


def test_a_race_the_budget_cut_while_its_value_led_stops_on_the_budget_not_for_no_gain():
    """issue 57's env_waits_wide, second run: 4 envs a runner read 3.21x over 3 rounds, 2 of the current's readings
    against 3 (the rank test cannot show anything with 2), and the budget cut the race; the walk said "no gain".
    Here: 2 runners are 2x, two of the start's race readings fail, the budget ends the race after 4 rounds."""

    def truth_at(axes, request):
        failed = value(axes, "num_env_runners") == 1 and request.request_id.startswith(("walk1/r1/", "walk1/r2/"))
        return math.nan if failed else 100.0 * value(axes, "num_env_runners")

    w = WalkWorld(
        lambda a: 0.0,
        lambda a: (
            advice_for("num_env_runners", r, (1, 2)) if (r := value(a, "num_env_runners")) < 2 else advice_for(None)
        ),
        truth_at=truth_at,
    )
    s = w.session(budget_s=60.0)
    s.run(w)
    (step,) = s.path
    assert (step.outcome, step.readings_from, step.readings_to) == ("stay", 2, 4) and step.speedup > 1.9
    assert s.stop_reason == "budget" and "its race was cut, a round needs 2 trials" in s.stop_text
    assert "its best value read 2.00x the current from 4 and 2 readings, not yet evidence of a gain" in s.stop_text


def test_a_point_the_walk_left_is_not_raced_again():
    """1 -> 2 runners (the verdict names 1 and 2), then the verdict at 2 names 1, 2 and 3: 1 lost to 2 with
    evidence, so only 3 is raced (another race of 1 would cost its rounds and could only lose again), and the path
    says why 1 was left out."""
    w = WalkWorld(
        lambda a: 100.0 * value(a, "num_env_runners"),
        lambda a: advice_for("num_env_runners", r := value(a, "num_env_runners"), (max(1, r - 1), r, r + 1)),
    )
    w.runs = lambda a: "needs 3 CPUs, the trial has 2" if value(a, "num_env_runners") > 3 else None
    s = w.session()
    s.run(w)
    assert [(p.from_value, p.to_value, p.values) for p in s.path] == [(1, 2, (2,)), (2, 3, (3,))]
    assert not any(r.startswith("walk2/") and r.endswith("/base") for r in w.ran)
    assert "num_env_runners=1: the walk's own earlier point, left for a gain" in s.path[1].skipped
    assert s.stop_reason == "no_fit" and "left for a gain" in s.stop_text


def test_a_value_that_cannot_fit_is_never_run():
    w = two_moves()
    w.runs = lambda a: "needs 3 CPUs, the trial has 2" if value(a, "num_env_runners") == 4 else None
    s = w.session()
    s.run(w)
    assert not any("num_env_runners=4" in r for r in w.ran)
    assert s.path[0].to_value == 2 and s.path[0].skipped == ("num_env_runners=4: needs 3 CPUs, the trial has 2",)


def test_no_value_fits():
    w = two_moves()
    w.runs = lambda a: "too large" if a else None
    s = w.session()
    s.run(w)
    assert s.stop_reason == "no_fit" and "too large" in s.stop_text and s.path == []


def test_a_point_that_gives_no_reading():
    w = WalkWorld(lambda a: math.nan, lambda a: advice_for("num_env_runners", 1, (1, 2)))
    s = w.session()
    s.run(w)
    assert s.stop_reason == "no_reading" and len(w.ran) == START_READINGS


def test_a_grid_walk_moves_along_the_grids_axes_only():
    w = two_moves()
    w.verdicts = lambda a: (
        advice_for("num_env_runners", 1, (1, 2, 4))
        if value(a, "num_env_runners") == 1
        else advice_for("num_envs_per_env_runner", 1, (1, 2, 4))
    )
    grid = {"num_env_runners": ("env_runners.num_env_runners", (1, 2))}
    s = w.session(grid_axes=grid)
    s.run(w)
    assert s.path[0].axis == "env_runners.num_env_runners" and s.path[0].values == (2,)  # the grid's, not 4
    assert s.path[0].to_key == "env_runners.num_env_runners=2"
    assert s.stop_reason == "off_grid" and "num_envs_per_env_runner" in s.stop_text


def test_a_knob_moved_back_only_at_a_new_point_with_evidence():
    """1 -> 2 runners (a gain), then 1 -> 2 envs a runner, then the verdict names runners again: 1 runner with 2 envs
    is a point the walk never stood at, so it is raced, and it moves back when it is faster by the rule (a later
    verdict naming the knob again, with evidence); where it is only as good, the cheaper point ends the walk (it is
    not one the walk left, so the tie-break may take it)."""

    def world(back: float) -> WalkWorld:
        def truth(a):
            r, e = value(a, "num_env_runners"), value(a, "num_envs_per_env_runner")
            return 100.0 * {(1, 1): 1.0, (2, 1): 2.0, (1, 2): back, (2, 2): 2.5}[(r, e)]

        def verdicts(a):
            r, e = value(a, "num_env_runners"), value(a, "num_envs_per_env_runner")
            if (r, e) == (2, 1):
                return advice_for("num_envs_per_env_runner", 1, (1, 2))
            return advice_for("num_env_runners", r, (1, 2))

        return WalkWorld(truth, verdicts, cv=0.005)

    w = world(back=3.0)
    s = w.session()
    s.run(w)
    moves = [(p.knob, p.from_value, p.to_value, p.outcome) for p in s.path]
    assert moves[:3] == [
        ("num_env_runners", 1, 2, "gain"),
        ("num_envs_per_env_runner", 1, 2, "gain"),
        ("num_env_runners", 2, 1, "gain"),
    ]
    w = world(back=2.5)
    s = w.session()
    s.run(w)
    assert [(p.from_value, p.to_value, p.outcome) for p in s.path][2] == (2, 1, "cheaper")  # a new point, as good
    # the walk reads the cheaper point's verdicts too (issue 57): 2 runners there is 2 runners x 2 envs, left for it
    assert s.stop_reason == "no_fit" and "left for a gain" in s.stop_text


def test_resume_runs_no_finished_trial_again():
    w = two_moves()
    w.interrupt_after = 14  # in the second step's race
    with pytest.raises(KeyboardInterrupt):
        w.session().run(w)
    done = list(w.ran)
    w.interrupt_after = None
    w.ran = []
    s = w.session(decided=w.saved)
    s.run(w)
    assert not set(w.ran) & set(done)
    assert [(p.from_value, p.to_value) for p in s.path] == [(1, 4), (1, 4)] and s.stop_reason == "no_knob"


def test_a_state_written_before_issue_57_resumes_and_a_step_reads_back_as_it_was_kept():
    """The state file's steps are plain JSON of :class:`StepPlan`; one kept before issue 57 (no kind, passed, partner,
    partner_of) reads back with their defaults and resumes as today's does."""
    w = two_moves()
    w.interrupt_after = 14  # in the second step's race
    with pytest.raises(KeyboardInterrupt):
        w.session().run(w)
    saved = json.loads(json.dumps(w.saved))  # as the state file holds it
    assert all(StepPlan.from_json(step).to_json() == step for step in saved["walk"]["steps"])
    for step in saved["walk"]["steps"]:
        for key in ("kind", "passed", "partner", "partner_of"):
            del step[key]
    old = StepPlan.from_json(saved["walk"]["steps"][0])
    assert (old.kind, old.passed, old.partner, dict(old.partner_of)) == ("verdict", (), None, {})
    done, w.interrupt_after, w.ran = list(w.ran), None, []
    s = w.session(decided=saved)
    s.run(w)
    assert not set(w.ran) & set(done)
    assert [(p.from_value, p.to_value, p.kind) for p in s.path] == [(1, 4, "verdict"), (1, 4, "verdict")]


def test_a_move_that_cost_learning_is_said():
    """minibatch 128 -> 512 is 2x the throughput and half the return at equal env steps: the step says so."""
    w = WalkWorld(
        lambda a: 100.0 * (2.0 if value(a, "minibatch_size") == 512 else 1.0),
        lambda a: (
            advice_for("minibatch_size", value(a, "minibatch_size"), (128, 512))
            if value(a, "minibatch_size") == 128
            else advice_for(None)
        ),
        curve=lambda a: 5.0 if value(a, "minibatch_size") == 512 else 10.0,
    )
    s = w.session()
    s.run(w)
    step = s.path[0]
    assert step.outcome == "gain" and step.changes_learning == "fewer, larger SGD steps an epoch"
    assert step.learning_cost and "cost learning" in step.learning


def test_time_to_target_races_time_not_throughput():
    """Under time to target the scores are 1/seconds: the faster point to the target wins."""
    w = two_moves()
    w.seconds_to_target = True
    s = w.session(objective="time_to_target")
    s.run(w)
    assert s.path[0].outcome == "gain" and s.path[0].learning is None  # the race itself judged learning


def test_with_address_parallel_a_steps_round_runs_at_once():
    """A runner that runs several trials at once (``--parallel``) gets each round of a step, its values and the
    current point, together, and the walk takes the same path."""

    class AtOnce(WalkWorld):
        width = 3

        def run_many(self, requests):
            self.groups.append([r.request_id for r in requests])
            return [self.run(r) for r in requests]

    w = AtOnce(two_moves().truth, two_moves().verdicts)
    w.groups = []
    s = w.session()
    s.run(w)
    assert [(p.from_value, p.to_value) for p in s.path] == [(1, 4), (1, 4)]
    rounds = [g for g in w.groups if g[0].startswith("walk1/")]
    assert rounds and all(len(g) == 3 for g in rounds[1:])  # the current point and the values 2 and 4, at once
    assert len(rounds[0]) == 2  # round 0's start trial is the start's own reading (issue 57)
    assert sorted(r.split("/", 3)[3] for r in rounds[1]) == ["base", "num_env_runners=2", "num_env_runners=4"]


def test_a_step_race_unknown_at_6_with_its_value_ahead_goes_on_and_resumes_the_same():
    """issue 57, "the walk that ends at the best": 2 runners read the figures below against the start's 100 (no noise),
    one round below: p = 0.0625 at 6 rounds, no gain; the race goes on, and at 9 rounds (p = 0.0078) the walk moves.
    Interrupted in the rounds past 6, a resumed walk reads them back and decides the same."""
    twos = [108.0, 112.0, 113.0, 114.0, 97.0, 115.0, 116.0, 117.0, 118.0]

    def world() -> WalkWorld:
        return WalkWorld(
            lambda a: 0.0,
            lambda a: (
                advice_for("num_env_runners", r, (1, 2)) if (r := value(a, "num_env_runners")) < 2 else advice_for(None)
            ),
            truth_at=lambda a, req: twos[req.rung] if value(a, "num_env_runners") == 2 else 100.0,
            cv=0.0,
        )

    w = world()
    s = w.session()
    s.run(w)
    (step,) = s.path
    assert (step.outcome, step.rounds, step.extra_rounds) == ("gain", 9, 3)
    assert "9 rounds (3 rounds past the cap of 6: after 6 rounds the rule could not say" in w.lines[0]
    w2 = world()
    w2.interrupt_after = 15  # the start's reading, then 7 rounds of two less the reused one: in round 8
    with pytest.raises(KeyboardInterrupt):
        w2.session().run(w2)
    done, w2.interrupt_after, w2.ran = list(w2.ran), None, []
    s2 = w2.session(decided=w2.saved)
    s2.run(w2)
    assert not set(w2.ran) & set(done) and any("/r7/" in r for r in done)
    assert s2.path == s.path


def test_a_runner_that_starts_trials_ahead_is_given_each_batchs_new_requests_before_any_of_them_runs():
    """Issue 56: a runner with ``ahead`` (the driver's warm walk launches a race round's new trials together) is
    handed each batch's requests not run yet, capped, in the order they then run, before the first of them runs; a
    request already stored (the start's reading that step 1's round 0 reuses) is not among them. The walk is the one
    a runner without ``ahead`` walks."""
    from dataclasses import dataclass, field

    @dataclass
    class AheadWorld(WalkWorld):
        told: list = field(default_factory=list)

        def ahead(self, requests):
            self.told.append(([r.request_id for r in requests], len(self.ran)))

    plain = two_moves()
    w = AheadWorld(plain.truth, plain.verdicts)
    answer = w.session().run(w)
    assert answer.chosen_key == plain.session().run(plain).chosen_key and w.ran == plain.ran
    assert w.told and all(ids for ids, _ in w.told)
    ran_at = {rid: i for i, rid in enumerate(w.ran)}
    for ids, before in w.told:
        assert [ran_at[r] for r in ids] == list(range(before, before + len(ids)))  # next to run, in that order
    assert "walk1/r0/i0/base" not in {r for ids, _ in w.told for r in ids}  # stored: reused, not run
