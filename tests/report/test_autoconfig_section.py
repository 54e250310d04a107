"""The report's Autoconfig section from a hand-written autoconfig.json and trials table."""

from __future__ import annotations

import json

import pandas as pd

from rlbench.analysis.autoconfig_run import autoconfig_run, cpu_front
from rlbench.report.autoconfig_section import answer_text, autoconfig_blocks
from rlbench.report.blocks import to_markdown
from rlbench.results.autoconfig_file import AutoconfigFile

AXES = ["num_env_runners"]


def trials() -> pd.DataFrame:
    # index 0: 1 CPU, 100 steps/s; index 1: 2 CPUs, 300 and 500 (median 400); index 2: 3 CPUs, 350 (beaten by 1)
    return pd.DataFrame(
        {
            "trial_id": ["t000r0", "t001r0", "t001r1", "t002r0", "t000r1"],
            "index": [0, 1, 1, 2, 0],
            "num_env_runners": [0, 1, 1, 2, 0],
            "status": ["ok"] * 4 + ["failed"],
            "env_steps_per_s": [100.0, 300.0, 500.0, 350.0, None],
            "driver_cpus_allocated": [1.0, 1.0, 1.0, 1.0, 1.0],
            "env_runner_cpus_allocated": [0.0, 1.0, 1.0, 2.0, 0.0],
            "phase": ["probe", "search", "race", "search", "race"],
            "rung": [None, 0, None, 0, None],
            "round": [None, None, 0, None, 0],
        }
    )


ANSWER = {
    "unit": "env_steps_per_s",
    "best": {"key": "num_env_runners=1", "median": 400.0, "n": 2},
    "baseline": {"key": "num_env_runners=0"},
    "speedup": {"ratio": 4.0, "ci_low": 3.0, "ci_high": 5.0},
    "indistinguishable": [{"key": "num_env_runners=1"}],
    "standings": [],
    "trials_run": 4,
    "wall_s": 100.0,
    "budget_s": 120.0,
    "race_rounds": 1,
    "race_stop_reason": "1 rounds",
    "search_stop_reason": "2 left",
    "eliminations": [{"key": "num_env_runners=2", "rung": 0, "reason": "separated", "detail": "below"}],
    "predicted_vs_measured": [
        {"key": "num_env_runners=1", "predicted_iteration_s": 1.0, "measured_iteration_s": 2.0, "error_pct": -50.0}
    ],
}


def typed(data: dict) -> AutoconfigFile:
    """autoconfig.json as the analysis reads it, from a hand-written dict."""
    return AutoconfigFile.model_validate_json(json.dumps(data))


def blocks_of(folder):
    """The section as the report builds it: the folder's autoconfig run as the analysis reads it."""
    return autoconfig_blocks(autoconfig_run(folder, trials(), AXES), trials(), AXES)


def test_the_pareto_front_keeps_what_no_cheaper_one_beats():
    front = cpu_front(trials(), AXES)
    assert front.to_dict("records") == [
        {"label": "num_env_runners=0", "cpus_given": 1.0, "env_steps_per_s": 100.0, "trials": 1},
        {"label": "num_env_runners=1", "cpus_given": 2.0, "env_steps_per_s": 400.0, "trials": 2},
    ]


def test_the_answer_in_words():
    text = answer_text(typed(ANSWER))
    assert "num_env_runners=1" in text and "4.00x (95% CI 3.00-5.00)" in text and "100 s of a 120 s budget" in text
    assert answer_text(typed({"trials_run": 3, "wall_s": 5.0, "budget_s": 9.0})).startswith(
        "No configuration gave a reading"
    )


def test_the_section_only_where_autoconfig_wrote(tmp_path):
    assert blocks_of(tmp_path) == []
    (tmp_path / "autoconfig.json").write_text(json.dumps(ANSWER))
    md = to_markdown(blocks_of(tmp_path))
    for text in (
        "## Autoconfig",
        "### Search path",
        "num_env_runners=2: separated from the leader after rung 0",
        "### Predicted against measured",
        "-50",
        "### CPUs against throughput: the Pareto front",
    ):
        assert text in md, text
    assert md.index("t000r0") < md.index("t001r0") < md.index("t001r1")  # probe, search rung 0, race round 0


def test_the_race_says_who_left_it_and_its_partial_rounds(tmp_path):
    data = {
        **ANSWER,
        "race_rounds": 4,
        "race_partial_rounds": 1,
        "race_left": [{"key": "num_env_runners=0", "rung": 2, "reason": "separated", "detail": "below the leader"}],
    }
    (tmp_path / "autoconfig.json").write_text(json.dumps(data))
    md = to_markdown(blocks_of(tmp_path))
    assert "4 interleaved rounds (1 of them partial: the leader and its closest rivals only)" in md
    assert "num_env_runners=0: left after round 2 (below the leader)" in md
    (tmp_path / "autoconfig.json").write_text(json.dumps(ANSWER))  # schema 2: neither field
    md = to_markdown(blocks_of(tmp_path))
    assert "1 interleaved rounds; stopped" in md and "left after round" not in md


def test_steps_to_target_only_under_time_to_target():
    from rlbench.report.autoconfig_section import steps_blocks

    assert steps_blocks(typed(ANSWER)) == []  # throughput: no steps raced
    ttt = {
        **ANSWER,
        "standings": [
            {
                "key": "a",
                "steps_to_target": {"median": 1100.0, "ci_low": 1000.0, "ci_high": 1200.0, "n": 3, "censored": 0},
            },
            {"key": "b", "steps_to_target": {"median": None, "ci_low": 2000.0, "ci_high": None, "n": 3, "censored": 2}},
        ],
        "steps_to_target": [{"key": "b", "text": "b needs more env steps to the target than a"}],
    }
    md = to_markdown(steps_blocks(typed(ttt)))
    assert "#### Env steps to the target" in md and "b needs more env steps to the target than a" in md
    assert "| a | 1,100 | 1,000-1,200 | 3 | 0 |" in md and "| b | - | 2,000-- | 3 | 2 |" in md


def test_the_plan_the_evidence_and_what_was_measured_too_little(tmp_path):
    plan = {
        "step": "race_only",
        "readings": 0,
        "measured": [],
        "not_measured": ["a", "b"],
        "race": ["c", "base"],
        "search_budget_s": 0.0,
        "race_min_s": 150.0,
        "left_s": 180.0,
        "trial_cost_s": 12.0,
        "words": "no search fits beside the race",
    }
    data = {
        **ANSWER,
        "plan": plan,
        "trial": "each trial runs the spec's stop: 6 iterations (1 warm-up)",
        "cold_start_s": 8.0,
        "evidence": "It rests on 3 race rounds.",
        "answer_source": "race",
        "not_measured_enough": [{"key": "num_env_runners=2", "n": 1, "median": 380.0}],
        "eliminations": [{"key": "a", "rung": -1, "reason": "budget", "detail": "the model's #3 of 4"}],
    }
    (tmp_path / "autoconfig.json").write_text(json.dumps(data))
    md = to_markdown(blocks_of(tmp_path))
    for text in (
        "Evidence: It rests on 3 race rounds.",
        "### What the budget bought",
        "6 iterations (1 warm-up)",
        "12.0 s, of it 8.0 s of cold start",
        "180 s: about 15 trials at that cost",
        "race_only: no search fits beside the race",
        "none: the race's 2 entrants are measured in the race",
        "Not measured enough to tell from the fastest",
        "num_env_runners=2 (1 reading, median 380.0)",
        "a: not measured (budget) (the model's #3 of 4)",
    ):
        assert text in md, text
    assert "over 2 race readings" in answer_text(typed(data))
    assert "### What the budget bought" not in to_markdown(autoconfig_blocks_of(tmp_path, ANSWER))  # older runs


def autoconfig_blocks_of(tmp_path, data):
    (tmp_path / "autoconfig.json").write_text(json.dumps(data))
    return blocks_of(tmp_path)


def test_the_indistinguishable_sentence_says_the_runs_tolerance_and_the_rule(tmp_path):
    """Issue 51: "within 5%" and "intervals overlapping" were the old rule's words whatever the run's tolerance."""
    from rlbench.analysis.findings import REPEATS_FOR_EVIDENCE

    data = dict(ANSWER, indistinguishable=[{"key": "num_env_runners=1"}, {"key": "num_env_runners=2"}])
    (tmp_path / "autoconfig.json").write_text(json.dumps(dict(data, tolerance_pct=10.0)))
    md = to_markdown(blocks_of(tmp_path))
    assert "cheapest of them within 10% of the fastest's median (the run's tolerance_pct)" in md
    assert f"({REPEATS_FOR_EVIDENCE} or more readings a side, the change rule finding no difference)" in md
    assert "overlapping" not in md and "within 5%" not in md
    (tmp_path / "autoconfig.json").write_text(json.dumps(data))  # autoconfig.json 5 and older: not recorded
    md = to_markdown(blocks_of(tmp_path))
    assert "within the run's tolerance_pct of the fastest's median (not recorded by this autoconfig.json)" in md


def test_a_hostile_or_damaged_search_file_is_drawn_inert(tmp_path):
    """Every field of the wrong type, entries that are no objects, text with markup: dashes and escaped text, no
    error (a NaN of seconds left once crashed the plan's trial count)."""
    from rlbench.report.blocks import to_html

    evil = "<script>alert(1)</script> [x](http://e.vil)"
    data = {
        **ANSWER,
        "best": {"key": evil, "median": "NaN?", "n": True},
        "baseline": "junk",
        "speedup": {"ratio": 2.0, "ci_low": 1.0, "ci_high": None},
        "standings": [{"key": evil, "steps_to_target": "x"}, "junk", None],
        "indistinguishable": [{"key": evil}, 3, {"key": "b"}],
        "not_measured_enough": [{"key": evil, "n": "many"}],
        "eliminations": [{"key": evil, "rung": "2", "reason": evil, "detail": None}, []],
        "plan": {"left_s": float("nan"), "trial_cost_s": 12.0, "step": evil, "measured": "all"},
        "race_left": "junk",
        "predicted_vs_measured": [{"key": evil, "error_pct": "big"}],
        "steps_to_target": [{"text": evil}, "junk"],
        "tolerance_pct": "ten",
        "evidence": 42,
    }
    (tmp_path / "autoconfig.json").write_text(json.dumps(data))
    blocks = blocks_of(tmp_path)
    html = to_html(blocks, "t", "")
    assert "<script>" not in html and "&lt;script&gt;" in html
    md = to_markdown(blocks)
    assert "(no interval: too few readings)" in md and "not recorded by this autoconfig.json" in md
    assert "seconds for the search and the race | nan s" not in md and "| - s |" in md
