"""Change points over a history's whole series, the cumulative comparisons and learning beside speed, on hand-made
trials tables of six rounds: a planted step (1.0-1.2 at 1,000 env steps/s, 1.3-1.5 at 800), a planted drift (3% slower
each release over eight), a flat series, and a history of two releases."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from rlbench.analysis.curves import Curve
from rlbench.analysis.history.changes import ApiChange
from rlbench.analysis.history.points import LearningStep, learning_between, read_change_points, trade_words
from rlbench.analysis.history.trends import history_json, history_trends
from rlbench.analysis.stats import change_points

ROUNDS = 6


def versions(n: int) -> list[tuple[str, str]]:
    return [(f"1.{i}", f"p-1.{i}") for i in range(n)]


def trials(levels: list[float], learned: list[float] | None = None) -> pd.DataFrame:
    """One trial per release per round: ``levels[i]`` x the round's drift x a small alternating wobble (+-0.2%, the
    same each round pair, so that each release's rounds scatter and the fit has a noise to hold a break against); the
    env-step split's ``sample_ms_per_k`` the inverse (1e6 / speed). ``learned``: each release's return at 1,000 env
    steps, the same in every round but a small wobble."""
    rows = []
    for r in range(ROUNDS):
        drift = 1 + 0.01 * r  # the machine between rounds: the pairs within a round cancel it
        for i, (_, name) in enumerate(versions(len(levels))):
            speed = levels[i] * drift * (1 + 0.002 * (-1) ** (r + i))
            rows.append(
                {
                    "trial_id": f"t{i}r{r}",
                    "index": i,
                    "variant": name,
                    "round": r,
                    "status": "ok",
                    "env_steps_per_s": speed,
                    "sample_ms_per_k": 1e6 / speed,
                    "_return": None if learned is None else learned[i] + r,
                }
            )
    return pd.DataFrame(rows)


def curves_of(frame: pd.DataFrame) -> dict[str, Curve]:
    """Each trial's learning curve: 0 at 0 env steps, its return at 1,000 (the count every trial reached)."""
    return {
        t: Curve(np.array([0.0, 1000.0]), np.array([0.0, 1.0]), np.array([0.0, float(v)]))
        for t, v in zip(frame["trial_id"], frame["_return"])
    }


def test_the_fit_finds_a_planted_step_and_nothing_on_a_flat_series():
    wobble = [1.0, 1.01, 0.99]
    assert change_points([wobble] * 3 + [[2 * x for x in wobble]] * 3, 4.0) == [3]
    assert change_points([wobble] * 6, 4.0) == []
    assert change_points([[]] + [wobble] * 2 + [[2 * x for x in wobble]] * 2, 4.0) == [3]  # an empty group: skipped
    assert change_points([wobble], 4.0) == []


def test_a_planted_step_is_one_change_point_with_the_phase_that_moved():
    [trend] = history_trends(trials([1000.0] * 3 + [800.0] * 3), [], versions(6), threshold=0.05)
    reported = [p for p in trend.change_points if p.reported]
    assert [(p.metric, p.before, p.after) for p in reported] == [
        ("throughput", "1.2", "1.3"),
        ("sample_s", "1.2", "1.3"),
    ]
    point = next(p for p in reported if p.metric == "throughput")
    assert point.earlier == ["1.0", "1.1", "1.2"] and point.later == ["1.3", "1.4", "1.5"]
    assert point.verdict == "regressed" and point.change.paired_ratio == pytest.approx(0.8, abs=0.001)
    assert point.change.runs_a == ROUNDS and point.change.p_value == 2 / 2**ROUNDS  # every round one way
    assert point.sentence.startswith("1.3..1.5 is 20.0% slower than 1.0..1.2 (6 rounds; paired ratio 0.800")
    [moved] = point.moved  # the sample phase, in ms per 1,000 env steps: 1e6 / 1,000 x the rounds' median drift
    assert moved.phase == "sample_s" and moved.change.paired_ratio == pytest.approx(1.25, abs=0.001)
    assert moved.ms_before == pytest.approx(1e6 / 1025, rel=0.003) and moved.ms_after == pytest.approx(
        1e6 / 820, rel=0.003
    )
    # the one step is flagged too; nothing else is, and every release before the step differs from the last
    assert [(s.before, s.after) for s in trend.steps if s.flagged] == [("1.2", "1.3")]
    against_last = [(s.before, s.verdict) for s in trend.cumulative if s.after == "1.5" and s.before != "1.0"]
    assert against_last == [("1.1", "regressed"), ("1.2", "regressed"), ("1.3", "no significant change")]


def test_a_drift_passes_every_step_and_is_found_against_the_first_release():
    levels = [1000.0 * 0.97**i for i in range(8)]
    [trend] = history_trends(trials(levels), [], versions(8), threshold=0.05)
    throughput = [s for s in trend.steps if s.metric == "throughput"]
    assert not any(s.flagged for s in throughput)  # each step: 3%, under the threshold
    assert {s.verdict for s in throughput} == {"small change"}  # a change with evidence, each too small
    first = {s.after: s for s in trend.cumulative if s.before == "1.0"}
    assert sorted(first) == [f"1.{i}" for i in range(2, 8)]  # 1.1 against 1.0 is a step already
    assert [first[f"1.{i}"].verdict for i in range(2, 8)] == ["regressed"] * 6  # 0.97**2 = 0.941 on
    assert first["1.7"].change.paired_ratio == pytest.approx(0.97**7, abs=0.003)
    assert first["1.7"].sentence.startswith("p-1.7 is 19.2% slower than p-1.0 (6 rounds;")
    # the fit cuts the drift into segments of two releases, each about 6% below the one before: said as steps
    cuts = [(p.earlier, p.later, p.verdict) for p in trend.change_points if p.metric == "throughput"]
    assert sorted(cuts) == [
        (["1.0", "1.1"], ["1.2", "1.3"], "regressed"),
        (["1.2", "1.3"], ["1.4", "1.5"], "regressed"),
        (["1.4", "1.5"], ["1.6", "1.7"], "regressed"),
    ]


def test_a_flat_series_reports_no_change_point():
    [trend] = history_trends(trials([1000.0] * 6), [], versions(6), threshold=0.05)
    assert [p for p in trend.change_points if p.reported] == []
    assert not any(s.flagged for s in trend.steps + trend.cumulative)


def test_a_history_of_two_releases_is_its_own_confirmation(monkeypatch, tmp_path):
    [trend] = history_trends(trials([1000.0, 800.0]), [], versions(2), threshold=0.05)
    [step] = trend.steps
    assert step.flagged and step.outcome == "alone" and step.called == "regressed" and step.slower
    assert trend.cumulative == []  # the one step is both comparisons
    # confirm_flagged runs nothing for it: the history's run already is a run of the two releases alone
    from rlbench.commands import history

    monkeypatch.setattr("rlbench.analysis.history.runs.history_trends_of", lambda out_dir, threshold: (None, [trend]))
    monkeypatch.setattr("rlbench.spec.versions.load_versions", lambda *a, **k: pytest.fail("a confirmation ran"))
    history.confirm_flagged(tmp_path, None, 0.05, ROUNDS, None)  # type: ignore[arg-type]
    # with three releases the same step is unconfirmed, and would be run
    [three] = history_trends(trials([1000.0, 1000.0, 800.0]), [], versions(3), threshold=0.05)
    assert [s.outcome for s in three.steps if s.flagged] == ["unconfirmed"]


def test_learning_at_equal_steps_with_its_evidence():
    better = learning_between("1.0", "1.1", [100, 101, 102, 103, 104, 105], [150, 151, 152, 153, 154, 155], 1000.0)
    assert better.verdict == "learns better" and better.p_value == pytest.approx(1 / 924)  # 1 / C(12, 6)
    assert better.sentence == (
        "return at 1,000 env steps 102.5 -> 152.5 (p = 0.0011, one-sided Mann-Whitney U, 6 runs a side)"
    )
    worse = learning_between("1.0", "1.1", [150, 151, 152], [100, 101, 102], 1000.0)
    assert worse.verdict == "learns worse" and worse.p_value == pytest.approx(1 / 20)  # 1 / C(6, 3)
    few = learning_between("1.0", "1.1", [100], [150], 1000.0)
    assert few.verdict == "no evidence yet that 1.1 learns better: 1 run a side; 3 repeats a side could show it"
    close = learning_between("1.0", "1.1", [100, 101, 102], [103, 104, 105], 1000.0)  # 3% apart: under 10%
    assert close.verdict == "no clear difference"
    assert learning_between("1.0", "1.1", [], [1.0], None).verdict == "no data"


def test_a_slower_release_that_learns_better_or_changed_a_default_is_a_trade():
    learns = LearningStep("1.0", "1.1", 1000.0, 100.0, 150.0, 6, 6, 1 / 924, "learns better")
    assert trade_words(True, learns, None) == (
        "a trade, not only a regression: slower, but it learns better at equal env steps (return at 1,000 env steps "
        "100.0 -> 150.0 (p = 0.0011, one-sided Mann-Whitney U, 6 runs a side))"
    )
    api = ApiChange("1.0", "1.1", defaults={"log_gradients": (True, False)})
    assert trade_words(True, None, api) == (
        "a trade, not only a regression: slower, but it changed defaults "
        "(defaults changed: log_gradients True -> False)"
    )
    assert trade_words(False, learns, api) == ""  # not slower: no trade to say
    assert (
        trade_words(True, LearningStep("1.0", "1.1", 1000.0, 100.0, 100.0, 6, 6, None, "no clear difference"), None)
        == ""
    )
    # from the trials: 1.1 is 20% slower and its return at 1,000 env steps is 150 against 100, in every round
    frame = trials([1000.0, 800.0], learned=[100.0, 150.0])
    [trend] = history_trends(frame, [], versions(2), threshold=0.05, curves=curves_of(frame))
    [step] = trend.steps
    assert step.learning is not None and step.learning.verdict == "learns better"
    assert step.trade.startswith("a trade, not only a regression: slower, but it learns better at equal env steps")
    assert step.learning.sentence == (
        "return at 1,000 env steps 102.5 -> 152.5 (p = 0.0011, one-sided Mann-Whitney U, 6 runs a side)"
    )


def test_change_points_are_read_back_from_history_json_through_their_schema():
    frame = trials([1000.0] * 3 + [800.0] * 3, learned=[100.0] * 6)
    [trend] = history_trends(frame, [], versions(6), threshold=0.05, curves=curves_of(frame))
    body = history_json(
        [trend], package="p", versions=[v for v, _ in versions(6)], threshold=0.05, rounds=6, results="r"
    )
    assert body["change_points"] == 2
    records = json.loads(json.dumps(body))["configurations"][0]["change_points"]
    assert read_change_points(records) == trend.change_points
    with pytest.raises(ValueError):  # pydantic's ValidationError: a record missing a field
        read_change_points([{k: v for k, v in records[0].items() if k != "change"}])


def test_the_issues_forward_pass_series_steps_where_it_moved():
    """Issue 60's CartPole PPO run: the forward pass per 1,000 env steps at 129, 117, 117, 117, 182, 210 ms passed
    every adjacent step of its history; here as the sample phase (and the throughput its inverse)."""
    ms = [129.0, 117.0, 117.0, 117.0, 182.0, 210.0]
    [trend] = history_trends(trials([1e6 / m for m in ms]), [], versions(6), threshold=0.05)
    found = {(p.earlier[0], p.later[0], p.verdict): p for p in trend.change_points if p.metric == "sample_s"}
    assert sorted(found) == [("1.0", "1.1", "improved"), ("1.1", "1.4", "regressed"), ("1.4", "1.5", "regressed")]
    step = found[("1.1", "1.4", "regressed")]
    assert step.earlier == ["1.1", "1.2", "1.3"] and step.later == ["1.4"]
    assert step.change.paired_ratio == pytest.approx(117 / 182, abs=0.001)  # as a speed: 0.643
    assert step.level_before == pytest.approx(117 / 1.025, rel=0.003)  # faster rounds, fewer ms: the drift 2.5%
