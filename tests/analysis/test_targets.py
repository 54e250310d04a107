"""Time to target per configuration, its ranking, the Pareto frontier and the target recommendations."""

from __future__ import annotations

import pandas as pd
import pytest

from rlbench.analysis.advice import (
    Recommendation,
    target_recommendations,
    with_learning_notes,
)
from rlbench.analysis.evidence import Below
from rlbench.analysis.targets import pareto_front, target_front, time_to_target


def _trials(rows):
    """rows: (index, runners, reached, time_to_target_s or None, final return, energy J or None)."""
    out = []
    repeats: dict[int, int] = {}
    for index, runners, reached, seconds, final, energy in rows:
        repeat = repeats.get(index, 0)
        repeats[index] = repeat + 1
        out.append(
            {
                "trial_id": f"t{index:03d}r{repeat}",
                "index": index,
                "repeat": repeat,
                "status": "ok",
                "num_env_runners": runners,
                "reached_target": reached,
                "time_to_target_s": seconds,
                "time_to_target_total_s": None if seconds is None else seconds + 5.0,
                "env_steps_to_target": None if seconds is None else int(seconds * 1000),
                "iterations_to_target": None if seconds is None else 3,
                "energy_to_target_j": energy,
                "final_episode_return_mean": final,
                "driver_cpus_allocated": 1.0,
                "env_runner_cpus_allocated": float(runners),
                "learner_cpus_allocated": 0.0,
                "num_gpus_per_learner": 0.0,
                "num_learners": 0,
            }
        )
    return pd.DataFrame(out)


ROWS = [
    (0, 0, True, 30.0, 150.0, 300.0),
    (0, 0, True, 40.0, 160.0, 400.0),
    (0, 0, True, 50.0, 155.0, 500.0),
    (1, 1, True, 10.0, 170.0, 200.0),
    (1, 1, True, 12.0, 180.0, 240.0),
    (1, 1, False, None, 90.0, None),
    (2, 2, True, 20.0, 160.0, 100.0),
    (2, 2, True, 21.0, 150.0, 105.0),
    (2, 2, True, 25.0, 165.0, 125.0),
    (3, 3, False, None, 20.0, None),
    (3, 3, False, None, 25.0, None),
    (3, 3, False, None, 30.0, None),
]


def test_time_to_target_per_configuration():
    t = time_to_target(_trials(ROWS), ["num_env_runners"]).set_index("index")
    assert list(t["reached"]) == [3, 2, 3, 0] and list(t["repeats"]) == [3, 3, 3, 3]
    assert t.loc[1, "reached_share"] == pytest.approx(2 / 3)
    assert t.loc[0, "time_to_target_s"] == 40.0 and t.loc[1, "time_to_target_s"] == 11.0  # medians of the reached
    assert t.loc[0, "time_to_target_total_s"] == 45.0 and t.loc[2, "env_steps_to_target"] == 21000
    assert list(t["cpus_given"]) == [1.0, 2.0, 3.0, 4.0]
    assert t.loc[2, "cpu_s_to_target"] == 63.0  # 3 CPUs x 21 s
    assert t.loc[0, "time_to_target_s_ci_low"] <= 40.0 <= t.loc[0, "time_to_target_s_ci_high"]
    assert t.loc[0, "final_episode_return_mean"] == 155.0 and t.loc[3, "final_episode_return_mean"] == 25.0
    # every repeat reached first (by time: 2 before 0), then 2 of 3 (config 1 despite being the fastest); 3 never
    assert [t.loc[i, "target_rank"] for i in (2, 0, 1)] == [1, 2, 3] and pd.isna(t.loc[3, "target_rank"])
    # 0: fewest CPUs; 2: faster with more CPUs; 1: fastest but reached less often; 3: never reached
    assert list(t["pareto"]) == [True, True, True, False]


def test_pareto_drops_a_configuration_no_better_in_anything():
    frame = pd.DataFrame(
        {
            "cpus_given": [1.0, 2.0, 2.0],
            "learner_gpus": [0.0, 0.0, 0.0],
            "time_to_target_s": [30.0, 20.0, 25.0],
            "reached_share": [1.0, 1.0, 1.0],
            "reached": [3, 3, 3],
        }
    )
    assert list(target_front(frame)) == [True, True, False]
    # the one front, any columns: (cpus lower, rate higher), a tie kept, a dominated one dropped
    rows = pd.DataFrame({"cpus": [1.0, 2.0, 2.0, 4.0, 1.0], "rate": [100.0, 400.0, 300.0, 400.0, 100.0]})
    assert list(pareto_front(rows, ["cpus"], ["rate"])) == [True, True, False, False, True]


def test_target_recommendations_never_name_one_that_missed_first():
    t = time_to_target(_trials(ROWS), ["num_env_runners"])
    fastest, cpu_s, energy = target_recommendations(t, ["num_env_runners"])
    assert (fastest.goal, fastest.index, fastest.value) == ("fastest to target", 2, 21.0)
    assert fastest.note.endswith(
        "not ranked, having missed the target in more repeats: num_env_runners=1 (2/3), num_env_runners=3 (0/3)"
    )
    assert (cpu_s.index, cpu_s.value) == (0, 40.0)  # 1 CPU x 40 s beats 3 CPUs x 21 s
    assert (energy.goal, energy.index, energy.value) == ("least energy to target", 2, 105.0)


def test_nobody_reached_says_so():
    t = time_to_target(_trials([r for r in ROWS if r[0] == 3]), ["num_env_runners"])
    (rec,) = target_recommendations(t, ["num_env_runners"])
    assert rec.index is None and "no configuration reached the target in any of its 3 ok repeats" in rec.note


def test_throughput_pick_gets_learning_notes():
    configs = pd.DataFrame({"index": [0, 1, 2], "num_env_runners": [0, 1, 2]})
    rec = Recommendation("highest throughput", "env_steps_per_s", 1, "num_env_runners=1", 900.0, "")
    t = time_to_target(_trials(ROWS), ["num_env_runners"])
    (noted,) = with_learning_notes([rec], configs, t, [], ["num_env_runners"])
    assert "it reached the learning target in 2 of 3 repeats, others in all of theirs" in noted.note
    below = [Below(1, 20.0, 0, 50.0, 3, 3, 0.05), Below(2, 30.0, 0, 50.0, 3, 3, 0.05)]
    (noted,) = with_learning_notes([rec], configs, pd.DataFrame(), below, ["num_env_runners"], steps=4000)
    evidence = "p = 0.05, one-sided Mann-Whitney U, 3 runs a side"
    assert noted.note == (
        f"but it learns clearly worse at equal env steps (return 20.0 against 50.0 for "
        f"num_env_runners=0 at 4,000 env steps; {evidence}); learning clearly worse at equal env "
        f"steps (best return 50.0 at 4,000 env steps): num_env_runners=2 (return 30.0; {evidence})"
    )
