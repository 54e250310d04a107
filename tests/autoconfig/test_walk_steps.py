"""A walk step's decisions (rlbench/autoconfig/walk/steps.py) on hand-made readings and rows: where a race moves the
walk, which values a step races, a point read through the real verdicts, and learning compared at equal env steps."""

from __future__ import annotations

from verdict_rows import SHORT

from rlbench.analysis.change import unpaired
from rlbench.analysis.knobs import KNOBS, Knob
from rlbench.autoconfig.ask_tell import standing
from rlbench.autoconfig.walk.steps import (
    PointAdvice,
    at_ceiling,
    changes_learning,
    decide_step,
    learning_check,
    read_point,
    step_values,
)


def race(readings: dict[str, list[float]], cpus: dict[str, float]):
    """Standings and the unpaired rule over hand-made readings (what a race of as few rounds compares)."""
    standings = [standing(k, cpus[k], 0.0, v) for k, v in readings.items()]
    return standings, lambda a, b: unpaired(readings[a], readings[b])


def test_a_gain_moves_to_the_cheapest_as_good_as_the_best():
    # 2 and 4 runners both 2x the current, 4 no better than 2 by the rule: the cheaper, 2, is where the walk goes
    readings = {"r1": [100, 101, 99], "r2": [200, 202, 199], "r4": [201, 203, 200]}
    s, versus = race(readings, {"r1": 1.5, "r2": 2.0, "r4": 3.0})
    assert decide_step("r1", s, versus, 0.05) == ("r2", "gain")


def test_a_gain_beyond_doubt_but_under_the_tolerance_is_no_reason_to_move():
    readings = {"r1": [100.0, 100.2, 100.1], "r2": [101.0, 101.2, 101.1]}  # 1% above, every reading: a change
    s, versus = race(readings, {"r1": 1.0, "r2": 2.0})
    assert versus("r1", "r2").differs
    assert decide_step("r1", s, versus, 0.05) == ("r1", "stay")


def test_three_readings_a_side_are_the_fewest_that_move():
    two = {"r1": [100, 101], "r2": [300, 301]}
    s, versus = race(two, {"r1": 1.0, "r2": 2.0})
    assert decide_step("r1", s, versus, 0.05) == ("r1", "stay")  # 3x, but 2 a side can show nothing
    three = {"r1": [100, 101, 99], "r2": [300, 301, 299]}
    s, versus = race(three, {"r1": 1.0, "r2": 2.0})
    assert decide_step("r1", s, versus, 0.05) == ("r2", "gain")


def test_no_gain_moves_to_a_cheaper_point_as_good_within_the_tolerance():
    readings = {"d2": [100.0, 100.5, 99.8, 100.2, 99.9], "d1": [100.1, 99.7, 100.3, 100.0, 99.8]}
    s, versus = race(readings, {"d2": 3.0, "d1": 2.0})
    assert decide_step("d2", s, versus, 0.05) == ("d1", "cheaper")
    assert decide_step("d2", s, versus, 0.05, no_return=frozenset({"d1"})) == ("d2", "stay")  # not back for cost
    s_same, versus_same = race(readings, {"d2": 2.0, "d1": 2.0})
    assert decide_step("d2", s_same, versus_same, 0.05) == ("d2", "stay")  # a tie in cost stays


def test_a_point_left_is_returned_to_with_a_gain():
    readings = {"r2": [100, 101, 99], "r1": [200, 201, 199]}
    s, versus = race(readings, {"r2": 2.0, "r1": 1.0})
    assert decide_step("r2", s, versus, 0.05, no_return=frozenset({"r1"})) == ("r1", "gain")


def test_the_values_raced_nearest_first_on_the_verdicts_side():
    point = PointAdvice(500.0, None, None, "num_env_runners", 2.0, (1.0, 2.0, 4.0, 8.0), "", "", None)
    assert step_values(point, None) == (4.0, 8.0, 1.0)
    assert step_values(point, (0, 2, 3)) == (3.0, 0.0)  # a grid walk: the grid's values of that axis


def test_a_point_read_through_the_real_verdicts():
    point = read_point(SHORT)
    assert (point.knob, point.current, point.values, point.stop) == ("num_cpus_for_main_process", 1.0, (1.0, 2.0), None)
    assert point.label == "learner short of threads" and "short of threads" in point.text
    assert point.ceiling_frac is None and not at_ceiling(point)  # no ceiling measured: said, never guessed
    assert read_point({**SHORT, "cpus": 2}).stop == "no_fit"
    assert read_point({**SHORT, "learn_frac": 0.2, "sample_frac": 0.75}).stop == "no_knob"
    assert read_point(None).stop == "no_reading" and read_point({"index": 0}).stop == "no_reading"
    near = read_point({**SHORT, "ceiling_frac": 0.9, "ceiling_env_steps_per_s": 555.0})
    assert at_ceiling(near) and near.ceiling_env_steps_per_s == 555.0
    # the ceiling is the env's rate with the trial's runners: a verdict for more runners asks to raise it
    runners = PointAdvice(500.0, 555.0, 0.95, "num_env_runners", 1.0, (1.0, 2.0), "env waits", "", None)
    assert not at_ceiling(runners)


def test_knobs_that_change_learning_are_marked():
    assert changes_learning("minibatch_size") == KNOBS[Knob.MINIBATCH_SIZE].learning
    assert changes_learning("num_envs_per_env_runner") is not None
    assert changes_learning("num_cpus_for_main_process") is None and changes_learning(None) is None


def curve(ret: float, steps: float = 4000.0) -> tuple:
    return ((steps / 2, ret / 2), (steps, ret))


def test_learning_compared_at_equal_env_steps():
    cost = learning_check([curve(20), curve(21), curve(19)], [curve(10), curve(11), curve(9)])
    assert cost.cost and cost.env_steps == 4000 and (cost.from_return, cost.to_return) == (20, 10)
    assert "p = 0.05" in cost.text and "3 runs a side" in cost.text
    thin = learning_check([curve(20), curve(21)], [curve(10), curve(11)])
    assert not thin.cost and "no evidence yet" in thin.text  # lower, but 2 a side cannot show it
    same = learning_check([curve(20), curve(21), curve(19)], [curve(20), curve(19), curve(21)])
    assert not same.cost and same.text.startswith("no lower return")
    # the new point sampled more env steps in its trials: compared where both reached (2,000: halfway up each curve)
    longer = learning_check([curve(20, 2000), curve(20, 2000)], [curve(20, 4000), curve(20, 4000)])
    assert longer.env_steps == 2000 and longer.to_return == 10.0 and not longer.cost
    assert not learning_check([], [curve(1)]).cost
