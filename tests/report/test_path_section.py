"""The report's walk section (rlbench/report/path_section.py) from a hand-written autoconfig.json: the answer, The
path a step a row, the stop reason, the figure with its ceiling line, and a hostile file drawn inert."""

from __future__ import annotations

import json

import pandas as pd

from rlbench.analysis.autoconfig_run import AutoconfigRun
from rlbench.report.blocks import Figure, Table, to_html, to_markdown
from rlbench.report.path_section import PATH_FIGURE, answer_text, draw_path_figure, path_rows, walk_blocks
from rlbench.results.autoconfig_file import AutoconfigFile

STEP = {
    "step": 1,
    "knob": "num_env_runners",
    "axis": "num_env_runners",
    "from_key": "base",
    "to_key": "num_env_runners=2",
    "from_value": 1,
    "to_value": 2,
    "values": [2],
    "verdict_label": "env waits",
    "verdict": "env runners idle inside sample(): on a CPU 20% of it",
    "outcome": "gain",
    "speedup": 1.91,
    "ci_low": 1.5,
    "ci_high": 2.15,
    "design": "unpaired",
    "readings_from": 3,
    "readings_to": 3,
    "rounds": 3,
    "wall_s": 252.0,
    "changes_learning": "rollouts",
    "learning": "no lower return at equal env steps",
    "learning_cost": False,
    "race_stop_reason": "one configuration left",
    "skipped": [],
}
WALK = {
    "mode": "walk",
    "objective": "throughput",
    "unit": "env_steps_per_s",
    "tolerance_pct": 5.0,
    "best": {"key": "num_env_runners=2", "median": 185.7, "n": 3},
    "baseline": {"key": "base"},
    "speedup": {"ratio": 1.91, "ci_low": 1.5, "ci_high": 2.15},
    "trials_run": 6,
    "probe_trials": 3,
    "wall_s": 405.0,
    "budget_s": 600.0,
    "evidence": "It rests on 1 step raced.",
    "path": [STEP, {**STEP, "step": 2, "from_value": 2, "to_value": 2, "outcome": "stay", "speedup": 1.02}],
    "stop_reason": "no_gain",
    "stop_text": "the step showed no evidence of a gain",
    "walk_points": [
        {
            "step": 0,
            "key": "base",
            "median": 105.7,
            "ci_low": 97.0,
            "ci_high": 116.7,
            "n": 3,
            "ceiling_env_steps_per_s": 168.2,
            "ceiling_frac": 0.63,
        },
        {
            "step": 1,
            "key": "num_env_runners=2",
            "median": 185.7,
            "ci_low": 182.6,
            "ci_high": 196.5,
            "n": 3,
            "ceiling_env_steps_per_s": 327.1,
            "ceiling_frac": 0.57,
        },
    ],
}


def run(data: dict) -> AutoconfigRun:
    """The run as the analysis reads it (autoconfig.json through JSON, as a file gives it)."""
    return AutoconfigRun(typed(data), pd.DataFrame())


def typed(data: dict) -> AutoconfigFile:
    """autoconfig.json as the analysis reads it, typed."""
    return AutoconfigFile.model_validate_json(json.dumps(data))


def test_the_answer_and_one_row_a_step():
    assert answer_text(typed(WALK)).startswith(
        "Endpoint: num_env_runners=2, 1 move from the start (base), 1.91x (1.50-2.15) its throughput"
    )  # the second step stayed: listed in the path, not counted as a move
    rows = path_rows(typed(WALK))
    assert rows[0] == [
        "1",
        "env waits",
        "num_env_runners: 1 -> 2",
        "2",
        "gain",
        "1.91x (1.50-2.15)",
        "3 + 3",
        "3",
        "252",
        "yes (rollouts); no lower return at equal env steps",
    ]
    assert rows[1][4] == "stay" and rows[1][5] == "1.02x (1.50-2.15)"
    assert rows[1][2] == "num_env_runners: stays at 2"  # not "2 -> 2": the values raced are the next column
    trade = {**WALK["path"][1], "partner_axis": "num_cpus_for_main_process", "partner_from": 1, "partner_to": 1}
    stayed = path_rows(typed({**WALK, "path": [trade]}))[0][2]
    assert stayed == "num_env_runners: stays at 2; num_cpus_for_main_process: stays at 1"
    assert "cost learning" not in answer_text(typed(WALK))


def test_the_answer_says_first_which_moves_cost_learning():
    """The walk's objective is speed: a move whose return at equal env steps was lower with evidence is taken, and
    the answer says so before the median (a LunarLander DQN walk took two such moves, 2026-11-30)."""
    costly = {**STEP, "step": 2, "from_value": 2, "to_value": 3, "learning_cost": True, "learning": "it cost learning"}
    data = typed({**WALK, "path": [STEP, costly]})
    assert answer_text(data).startswith(
        "Endpoint: num_env_runners=2, 2 moves from the start (base), 1.91x (1.50-2.15) its throughput (95% interval "
        "in brackets); 1 of its 2 moves cost learning at equal env steps (step 2: the path's learning column); median"
    )
    one = typed({**WALK, "path": [{**STEP, "learning_cost": True}]})
    assert "; its one move cost learning at equal env steps (step 1: the path's learning column); median" in (
        answer_text(one)
    )


def test_the_section_with_its_figure_and_stop(tmp_path):
    [figure] = draw_path_figure(tmp_path, run(WALK))
    assert figure.path == tmp_path / "plots" / PATH_FIGURE and figure.path.stat().st_size > 0
    assert "crosses: what the point's env and learner allow here" in figure.caption
    blocks = walk_blocks(run(WALK), tmp_path, pd.DataFrame(), [])
    md = to_markdown(blocks)
    assert "## Autoconfig: the walk" in md and "### The path" in md
    assert "Stopped: the step showed no evidence of a gain" in md
    assert "- step 1: env runners idle inside sample(): on a CPU 20% of it" in md
    assert any(isinstance(b, Figure) for b in blocks) and any(isinstance(b, Table) for b in blocks)


def test_the_answer_leads_with_the_path_and_the_stop(tmp_path):
    """issue 59: the walk's section opens with the start, the endpoint, the speed-up and the stop reason, then the
    path in one line (the moves only: a step that stayed is in the table)."""
    md = to_markdown(walk_blocks(run(WALK), tmp_path, pd.DataFrame(), []))
    answer = next(line for line in md.splitlines() if line.startswith("Answer: "))
    assert "1.91x (1.50-2.15) its throughput" in answer and "stopped: the step showed no evidence of a gain" in answer
    path = next(line for line in md.splitlines() if line.startswith("Path: "))
    assert path.endswith("num_env_runners 1 -> 2 (1.91x)")
    assert md.index("Path: ") < md.index("### The path")


def test_not_a_walk_no_section(tmp_path):
    search = run({**WALK, "mode": "search"})
    assert walk_blocks(search, tmp_path, pd.DataFrame(), []) == [] and draw_path_figure(tmp_path, search) == []
    assert walk_blocks(None, tmp_path, pd.DataFrame(), []) == [] and draw_path_figure(tmp_path, None) == []


def test_a_hostile_or_damaged_file_is_drawn_inert(tmp_path):
    evil = "<script>alert(1)</script> $\\frac{1}{0}$ [x](http://e.vil)"
    data = {
        **WALK,
        "best": {"key": evil, "median": "NaN?", "n": None},
        "path": [{**STEP, "verdict": evil, "axis": evil, "speedup": "x"}, "not a step", None],
        "walk_points": [{"step": 0, "median": 1.0}, {"step": "one"}, "junk"],
        "stop_text": evil,
    }
    draw_path_figure(tmp_path, run(data))  # no mathtext, no error
    blocks = walk_blocks(run(data), tmp_path, pd.DataFrame(), [])
    html = to_html(blocks, "t", "")
    assert "<script>" not in html and "&lt;script&gt;" in html
    assert path_rows(typed(data))[0][5] == "-"


def test_a_walk_stopped_before_its_first_step_says_the_verdict_it_read(tmp_path):
    """The budget (or the ceiling) stopped it after the start's readings: the section says what the start's verdict
    named, which the walk did not follow (a new user's 10-minute walk of configs/walk_cpu.yaml on a busy machine)."""
    data = {**WALK, "path": [], "stop_reason": "budget", "stop_text": "the budget left no step: 358 s left"}
    data["walk_points"] = [{**WALK["walk_points"][0], "verdict": "env runners mostly outside the env <i>x</i>"}]
    md = to_markdown(walk_blocks(run(data), tmp_path, pd.DataFrame(), []))
    assert "No step was raced. Its point's verdict: env runners mostly outside the env" in md
    assert "<i>" not in to_html(walk_blocks(run(data), tmp_path, pd.DataFrame(), []), "t", "")


def test_a_step_with_more_to_say_ends_its_verdict_with_a_full_stop_first(tmp_path):
    """A step's bullet: its verdict, then (a sentence each) what it passed, what it could not run and why its race went
    past its cap; the verdict, which has no full stop of its own, gets one before them (a new user's walk read
    "... a step Passed first: ...", 2026-11-30)."""
    passed = {**STEP, "passed": ["continued: its race showed no evidence of a gain"], "extra_rounds": 4}
    data = {**WALK, "path": [passed, {**STEP, "step": 2, "verdict": "env waits."}]}
    md = to_markdown(walk_blocks(run(data), tmp_path, pd.DataFrame(), []))
    assert (
        "- step 1: env runners idle inside sample(): on a CPU 20% of it. Passed first: continued: its race showed no "
        "evidence of a gain. Its race went on: one configuration left." in md
    )
    assert "- step 2: env waits.\n" in md + "\n"  # nothing more to say: no full stop added (nor a second one)
