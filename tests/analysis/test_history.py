"""The trend and step verdicts of ``rlbench history`` on a hand-made trials table: three versions, six
rounds; 2.0 halves the throughput in every round and doubles the time to target, 1.0 and 1.1 are twins."""

from __future__ import annotations

import pandas as pd

from rlbench.analysis.history.trends import flagged_steps, history_json, history_trends

VERSIONS = [("1.0", "p-1.0"), ("1.1", "p-1.1"), ("2.0", "p-2.0")]


def trials(target: bool = True) -> pd.DataFrame:
    rows = []
    for r in range(6):
        base = 1000.0 + 10 * r  # the machine drifts between rounds; the pairs within a round do not
        for i, (version, name) in enumerate(VERSIONS):
            speed = base * (0.5 if version == "2.0" else 1.0) * (1 + 0.001 * (i == 1) * (-1) ** r)
            rows.append(
                {
                    "trial_id": f"t{i}r{r}",
                    "index": i,
                    "variant": name,
                    "round": r,
                    "repeat": r,
                    "status": "ok",
                    "env_steps_per_s": speed,
                    "reached_target": True if target else None,
                    "time_to_target_s": 50_000 / speed if target else None,
                }
            )
    return pd.DataFrame(rows)


def test_the_halving_step_is_flagged_and_the_twins_are_not():
    [trend] = history_trends(trials(), [], VERSIONS, threshold=0.05)
    assert trend.label == "all" and [p.version for p in trend.points] == ["1.0", "1.1", "2.0"]
    assert trend.points[0].env_steps_per_s == 1025.0 and trend.points[2].env_steps_per_s == 512.5  # medians of 6
    assert trend.points[2].time_to_target_s == (50_000 / 510 + 50_000 / 515) / 2 and trend.points[2].reached_target == 6
    steps = {(s.before, s.after, s.metric): s for s in trend.steps}
    assert len(steps) == 4  # two adjacent pairs x two metrics
    half = steps[("1.1", "2.0", "throughput")]
    c = half.change
    assert half.flagged and half.slower and half.verdict == "regressed"
    assert c.design == "paired" and c.runs_a == 6 and abs(c.paired_ratio - 0.5) < 0.001 and c.paired_ci_high < 1
    assert c.p_value == 2 / 2**6  # every round one way: the exact two-sided p
    assert half.sentence.startswith("p-2.0 is 50.0% slower than p-1.1 (6 rounds; paired ratio 0.50")
    # time to target doubled: compared as speed to the target, so the same 0.5 and the same words
    assert steps[("1.1", "2.0", "time_to_target")].flagged
    assert abs(steps[("1.1", "2.0", "time_to_target")].change.paired_ratio - 0.5) < 0.001
    twin = steps[("1.0", "1.1", "throughput")]
    assert not twin.flagged and twin.verdict == "no significant change"
    assert twin.sentence.startswith("no evidence of a difference")
    assert [(s.before, s.after, s.metric) for _, s in flagged_steps([trend])] == [
        ("1.1", "2.0", "throughput"),
        ("1.1", "2.0", "time_to_target"),
    ]


def test_too_few_rounds_give_no_verdict_and_no_target_no_time_steps():
    few = trials(target=False)
    few = few[few["round"] < 3]
    [trend] = history_trends(few, [], VERSIONS, threshold=0.05)
    assert {s.metric for s in trend.steps} == {"throughput"} and trend.points[0].reached_target is None
    half = trend.steps[1]
    assert half.change.paired_ratio < 0.51 and not half.change.differs and not half.flagged
    assert (
        half.sentence.endswith("; 6 rounds could show one)")
        and half.verdict == "no evidence yet: 3 rounds; 6 rounds could show it"
    )


def test_a_version_without_ok_trials_has_no_reading_and_no_step():
    table = trials()
    table.loc[table["variant"] == "p-2.0", "status"] = "skipped"
    [trend] = history_trends(table, [], VERSIONS, threshold=0.05)
    assert trend.points[2].ok_rounds == 0 and trend.points[2].env_steps_per_s is None
    assert trend.steps[1].change.paired_ratio is None and trend.steps[1].verdict == "no data"
    assert trend.steps[1].sentence.startswith("no data: p-2.0 has no ok trial")
    body = history_json([trend], package="p", versions=["1.0", "1.1", "2.0"], threshold=0.05, rounds=6, results="r")
    assert body["flagged"] == 0 and body["configurations"][0]["points"][2]["ok_rounds"] == 0


def test_history_json_is_versioned_with_each_steps_pair_nested():
    [trend] = history_trends(trials(), [], VERSIONS, threshold=0.05)
    body = history_json([trend], package="p", versions=["1.0", "1.1", "2.0"], threshold=0.05, rounds=6, results="r")
    assert body["schema_version"] == 2 and body["flagged"] == 2
    step = body["configurations"][0]["steps"][1]
    assert set(step) == {
        *("before", "after", "metric", "change", "verdict", "sentence"),
        *("api", "phases", "outcome", "confirmation", "confirmation_run", "learning", "trade"),
    }
    assert step["verdict"] == "regressed" and step["change"]["design"] == "paired" and step["change"]["runs_a"] == 6


def test_each_grid_point_gets_its_own_trend():
    a, b = trials(), trials()
    a["num_env_runners"], b["num_env_runners"] = 0, 1
    b["index"] += 3
    b.loc[b["variant"] == "p-2.0", "env_steps_per_s"] *= 2  # on this point 2.0 is as fast as before
    trends = history_trends(pd.concat([a, b], ignore_index=True), ["num_env_runners"], VERSIONS, threshold=0.05)
    assert [t.label for t in trends] == ["num_env_runners=0", "num_env_runners=1"]
    assert [s.flagged for s in trends[0].steps if s.metric == "throughput"] == [False, True]
    assert [s.flagged for s in trends[1].steps if s.metric == "throughput"] == [False, False]
