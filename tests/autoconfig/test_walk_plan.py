"""The walk's step planning (rlbench/autoconfig/walk/plan.py, issue 57) on fake verdicts and fake readings: the next
verdict when one is blocked or showed no gain, a knob pushed on while it pays, a trade of two knobs under a fixed
budget of cores, the cores' limit said only after the shared work's race."""

from __future__ import annotations

import pytest
from walkworld import WalkWorld, advice_for, fake_advices, fake_ladder, value

from rlbench.autoconfig.walk import steps as walk_steps
from rlbench.autoconfig.walk.steps import next_value, trade_pairs


@pytest.fixture(autouse=True)
def fake_verdicts(monkeypatch):
    monkeypatch.setattr(walk_steps, "advices", fake_advices)
    monkeypatch.setattr(walk_steps, "knob_values", fake_ladder)


def envs_pay(envs: int) -> float:
    """Envs a runner that pay up to 8 (1, 2, 4, 8, 16: 100, 170, 260, 330, 335 env steps/s; 330 past 16)."""
    return {1: 100.0, 2: 170.0, 4: 260.0, 8: 330.0, 16: 335.0}.get(envs, 330.0)


def test_a_blocked_first_verdict_is_passed_for_the_next():
    """The issue's case: the learner's verdict names the driver's CPUs, none fits (nor a trade); the sampler's
    verdict, envs a runner, still pays: the walk follows it and says which verdict it passed and why."""
    w = WalkWorld(
        lambda a: envs_pay(value(a, "num_envs_per_env_runner")),
        lambda a: [
            advice_for("num_cpus_for_main_process", 1, (1,), stop="no_fit"),
            advice_for("num_envs_per_env_runner", e := value(a, "num_envs_per_env_runner"), (e, 2 * e, 4 * e)),
        ],
        runs=lambda a: "needs more cores" if value(a, "num_cpus_for_main_process") > 1 else None,
    )
    s = w.session(budget_s=2000)
    s.run(w)
    first = s.path[0]
    assert (first.knob, first.from_value, first.to_value, first.outcome) == ("num_envs_per_env_runner", 1, 4, "gain")
    assert first.passed and first.passed[0].startswith("short of num_cpus_for_main_process: no value fits")
    assert "needs more cores" in first.passed[0]  # the trade it tried, and why it could not run
    assert s.end_key.endswith("num_envs_per_env_runner=16") or "num_envs_per_env_runner=8" in s.end_key


def test_a_verdict_whose_race_showed_no_gain_is_passed_for_the_next():
    """Runners first (no gain: 2 runners run as fast as 1), then envs a runner, which pays."""
    w = WalkWorld(
        lambda a: 100.0 * (2.0 if value(a, "num_envs_per_env_runner") == 2 else 1.0),
        lambda a: [
            advice_for("num_env_runners", r := value(a, "num_env_runners"), (r, r + 1)),
            advice_for("num_envs_per_env_runner", e := value(a, "num_envs_per_env_runner"), (e, 2 * e)),
        ],
    )
    s = w.session(budget_s=2000)
    s.run(w)
    assert [(p.knob, p.outcome) for p in s.path[:2]] == [
        ("num_env_runners", "stay"),
        ("num_envs_per_env_runner", "gain"),
    ]
    assert s.path[1].passed == ("short of num_env_runners: its race showed no evidence of a gain",)
    assert s.end_key == "num_envs_per_env_runner=2"


def test_a_knob_that_paid_is_pushed_on_while_it_pays():
    """1 -> 2 envs a runner (the verdict's only larger value) pays; 4 and 8 are raced one at a time, each before a new
    verdict is read; 16 (335 against 330: within the noise and the tolerance) does not pay, and the walk then reads
    the point's verdict, which names nothing new."""
    w = WalkWorld(
        lambda a: envs_pay(value(a, "num_envs_per_env_runner")),
        lambda a: (
            advice_for("num_envs_per_env_runner", 1, (1, 2))
            if value(a, "num_envs_per_env_runner") == 1
            else advice_for(None)
        ),
        ladder=lambda knob, current: (2 * current,) if current < 16 else (),
        cv=0.01,
    )
    s = w.session(budget_s=3000)
    s.run(w)
    assert [(p.kind, p.from_value, p.to_value, p.outcome) for p in s.path] == [
        ("verdict", 1, 2, "gain"),
        ("continue", 2, 4, "gain"),
        ("continue", 4, 8, "gain"),
        ("continue", 8, 8, "stay"),
    ]
    assert s.path[3].values == (16,) and s.path[1].verdict_label == "continued"
    assert s.stop_reason == "no_knob" and s.end_key == "num_envs_per_env_runner=8"


def test_a_trade_of_two_knobs_under_a_fixed_budget_of_cores():
    """The driver's CPUs are short and no larger value fits beside the runner: the walk races the pair (the driver up,
    the runners down) as one move of two knobs."""

    def fits(a):
        return None if value(a, "num_cpus_for_main_process") + value(a, "num_env_runners") <= 2 else "over 2 cores"

    w = WalkWorld(
        lambda a: 100.0 * (1.5 if value(a, "num_cpus_for_main_process") == 2 else 1.0),
        lambda a: [advice_for("num_cpus_for_main_process", value(a, "num_cpus_for_main_process"), (1,), stop="no_fit")],
        runs=fits,
    )
    s = w.session(budget_s=2000)
    s.run(w)
    (trade, *_) = s.path
    assert trade.kind == "trade" and trade.outcome == "gain"
    assert (trade.axis, trade.from_value, trade.to_value) == ("num_cpus_for_main_process", 1, 2)
    assert (trade.partner_axis, trade.partner_from, trade.partner_to) == ("num_env_runners", 1, 0)
    assert "and num_env_runners 1 -> 0" in next(line for line in w.lines if line.startswith("step 1"))


def test_the_cores_limit_is_said_after_the_shared_works_race_shows_no_gain():
    """At the cores' limit the sampler names envs a runner first (the shared work); when its race shows no gain, the
    walk stops on the cores' limit, with both verdicts said."""
    w = WalkWorld(
        lambda a: 100.0,
        lambda a: [
            advice_for("num_envs_per_env_runner", e := value(a, "num_envs_per_env_runner"), (e, 2 * e)),
            advice_for(None, stop="cores_limit", text="runners in the env on every core"),
        ],
    )
    s = w.session(budget_s=2000)
    s.run(w)
    assert [(p.knob, p.outcome) for p in s.path] == [("num_envs_per_env_runner", "stay")]
    assert s.stop_reason == "cores_limit" and "its race showed no evidence of a gain" in s.stop_text


def test_next_value_and_trade_pairs():
    row = {"_ladder": lambda knob, current: (current / 2, 2 * current)}
    assert next_value("num_envs_per_env_runner", 4, True, row) == 8
    assert next_value("num_envs_per_env_runner", 4, False, row) == 2
    assert next_value("num_envs_per_env_runner", 4, True, None) is None
    assert trade_pairs("num_cpus_for_main_process", 1, 1) == [(2, 0)]
    assert trade_pairs("num_env_runners", 2, 2) == [(3, 1), (4, 1)]  # the driver keeps a CPU
    assert trade_pairs("num_envs_per_env_runner", 4, 4) == [(8, 3), (8, 2)]
    assert trade_pairs("num_env_runners", 1, 1) == []  # the driver's one CPU is its floor


def test_a_push_that_did_not_pay_ends_that_way_from_the_point():
    """issue 57's inference walk: 8 -> 16 envs a runner read no gain as a push; the point's verdict then names envs
    again (16, 32): 16 was raced from here already and 32 lies past it, so neither is raced from 8 (before, 32 and 64
    were: a step of 12-30 s for nothing); the skip says why."""
    w = WalkWorld(
        lambda a: envs_pay(value(a, "num_envs_per_env_runner")),
        lambda a: [advice_for("num_envs_per_env_runner", e := value(a, "num_envs_per_env_runner"), (e, 2 * e, 4 * e))],
        ladder=lambda knob, current: (2 * current,),
        cv=0.01,
    )
    s = w.session(budget_s=3000)
    s.run(w)
    assert [(p.kind, p.from_value, p.to_value, p.outcome) for p in s.path][:3] == [
        ("verdict", 1, 4, "gain"),
        ("continue", 4, 8, "gain"),
        ("continue", 8, 8, "stay"),
    ]
    from_8 = [p for p in s.path if p.from_value == 8 and p.kind != "trade"]
    assert all(not {32, 64} & set(p.values) for p in from_8), s.path
    skipped = [line for p in s.path for line in p.skipped]
    assert (
        "num_envs_per_env_runner=32: past num_envs_per_env_runner=16, which raced from this point without a gain"
        in (skipped)
    )
