"""The report of result sets at their edges, generated in the real on-disk format (no Ray, issue 42): an axis
value missing (an off-grid baseline, a knob one framework lacks), a single trial, every trial failed, every
trial skipped, a plan.json this rlbench cannot read. Each builds its tables, its per-trial figures and its
report, and says what it could not show instead of raising."""

from __future__ import annotations

import importlib.util
import json

import pandas as pd
from conftest import REPO, assert_images_sane, parse_report

from rlbench.analysis.configs import SPEC_DEFAULT, axis_order, axis_pairs_text, axis_slot, axis_value_text
from rlbench.analysis.tables import UNREADABLE, build_tables
from rlbench.report.document import write_report
from rlbench.report.terminal import results_table
from rlbench.report.trial_plots import write_plots_beside
from rlbench.results.layout import ResultsFolder
from rlbench.results.records import TrialRecord, write_record

_spec = importlib.util.spec_from_file_location("bench_tables", REPO / "scripts" / "bench_tables.py")
bench_tables = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(bench_tables)

STEP = "env_config.step_cost_us"
GRID = {"num_env_runners": [0, 1], STEP: [0, 10]}  # index 0 (0, 0), 1 (0, 10), 2 (1, 0), 3 (1, 10)


def _generate(tmp_path, **kw):
    return bench_tables.generate(tmp_path / "set", iterations=5, **{"trials": 8, "repeats": 2, "grid": GRID, **kw})


def _edit_plans(out, edit, trial_ids):
    folder = ResultsFolder(out)
    for trial_id in trial_ids:
        path = folder.trial(trial_id).plan
        plan = json.loads(path.read_text())
        edit(plan)
        path.write_text(json.dumps(plan))


def _rewrite(out, status, reason, events):
    """Every trial given ``status`` with ``reason``, its events replaced by ``events`` (no iteration)."""
    folder = ResultsFolder(out)
    for trial in folder.trials():
        trial.events_file.write_text("".join(json.dumps(e) + "\n" for e in events))
        write_record(trial, TrialRecord(trial_id=trial.trial_id, status=status, reason=reason, exit_code=1))


def _report(out, axes):
    tables = build_tables(out)
    written = write_plots_beside(out, tables, axes)
    html, md, analysis = write_report(out, tables, written)
    parser = parse_report(html)
    assert parser.problems == [] and parser.open == []
    assert_images_sane(parser)
    return tables, md.read_text(), parser, analysis


def test_one_axis_value_text_for_labels_ticks_and_tables():
    assert [axis_value_text(v) for v in (None, float("nan"), pd.NA, 4.0, 0.5, "PPO", [64, 64])] == [
        SPEC_DEFAULT,
        SPEC_DEFAULT,
        SPEC_DEFAULT,
        "4",
        "0.5",
        "PPO",
        "[64, 64]",
    ]
    assert axis_pairs_text([("lr", None), ("num_env_runners", 2.0)]) == f"lr={SPEC_DEFAULT}, num_env_runners=2"
    order = axis_order([10, float("nan"), 0, 10, "x"])
    assert order == [0, 10, "x", None]  # numbers ascending, text, then the missing value once
    assert axis_slot(order, float("nan")) == 3 and axis_slot(order, 10.0) == 1


def test_an_axis_value_missing_is_drawn_and_printed_as_the_spec_default(tmp_path):
    """Grid point 3 planned as an off-grid autoconfig baseline is: its config leaves step_cost_us unset, so the
    axis column is NaN there (on main at 6fa35f8 plot_throughput_ci raised KeyError: nan and no report was
    written)."""
    out = _generate(tmp_path)
    _edit_plans(out, lambda p: p["axes"].update({STEP: None}), ["t003r0", "t003r1"])
    tables, md, parser, analysis = _report(out, list(GRID))
    assert tables["trials"][STEP].isna().sum() == 2
    assert f"Throughput vs {STEP} with 95% CI" in parser.titles
    assert (out / "plots" / "report_throughput_ci_env_config_step_cost_us.png").exists()
    label = f"num_env_runners=1, {STEP}={SPEC_DEFAULT}"
    assert label in md and "=nan" not in md and "| nan |" not in md
    scaling = md[md.index("## Scaling") : md.index("## Figures")]
    assert f"0 / 10 / {SPEC_DEFAULT}" not in scaling  # each group has its own values: 0 / 10, and 0 / the default
    assert f"0 / {SPEC_DEFAULT}" in scaling
    printed = results_table(tables["trials"], list(GRID))
    assert SPEC_DEFAULT in " ".join(str(c) for col in printed.columns for c in col._cells)


def test_a_single_trial(tmp_path):
    out = _generate(tmp_path, trials=1, repeats=1, grid={"num_env_runners": [1]})
    tables, md, parser, analysis = _report(out, ["num_env_runners"])
    assert len(tables["trials"]) == 1 and len(analysis.configs) == 1
    assert "- trials: `1 (1 ok); repeats per configuration: 1`" in md
    assert not any("Throughput vs" in t for t in parser.titles)  # one point compares nothing: no such figure
    assert analysis.recs  # one measured configuration is still the fastest measured
    # a one-point sweep scales along nothing: no "## Scaling" heading over nothing (issue 59)
    assert "## Scaling" not in md and "; the only configuration measured." in md


def test_every_trial_failed(tmp_path):
    out = _generate(tmp_path, trials=4, repeats=1)
    _rewrite(
        out,
        "failed",
        "RuntimeError: the env exploded at step 7",
        [
            {"event": "start", "t_s": 0.1, "pid": 1},
            {"event": "error", "t_s": 0.2, "error": "RuntimeError: x"},
            {"event": "end", "t_s": 0.3, "status": "failed"},
        ],
    )
    tables, md, _, analysis = _report(out, list(GRID))
    assert set(tables["trials"]["status"]) == {"failed"} and tables["iterations"].empty
    assert analysis.recs == [] and "no configuration was measured" in md
    assert md.count("RuntimeError: the env exploded at step 7") >= 4  # every trial's reason in the Trials table


def test_every_trial_skipped(tmp_path):
    out = _generate(tmp_path, trials=4, repeats=1)
    reason = "needs 1 GPU for its learners; this machine has 0 (NVML found none)"
    _rewrite(out, "skipped", reason, [])
    tables, md, _, analysis = _report(out, list(GRID))
    assert set(tables["trials"]["status"]) == {"skipped"}
    assert analysis.recs == [] and "no configuration was measured" in md and reason in md


def test_a_plan_that_cannot_be_read_is_listed_and_left_out_of_every_count(tmp_path):
    """t001r0's plan.json says learner_gpus=1 beside num_gpus_per_learner=0 (a real conflict); t002r1's is not JSON.
    Both rows stay in trials.parquet as ``unreadable`` with the reason and their record's verdict; every
    figure counts the other 6, and the report lists the two."""
    out = _generate(tmp_path)
    _edit_plans(out, lambda p: p["config"]["learners"].update({"learner_gpus": 1}), ["t001r0"])
    ResultsFolder(out).trial("t002r1").plan.write_text("{not json")
    tables, md, _, analysis = _report(out, list(GRID))
    trials = tables["trials"].set_index("trial_id")
    assert list(trials.loc[["t001r0", "t002r1"], "status"]) == [UNREADABLE, UNREADABLE]
    assert (trials.loc[["t001r0", "t002r1"], ["index", "repeat"]].to_numpy().tolist()) == [[1, 0], [2, 1]]
    reason = trials.loc["t001r0", "reason"]
    assert (
        "t001r0/plan.json is not a plan this rlbench reads: config.learners: learner_gpus=1 (old name "
        "num_gpus) means num_gpus_per_learner=1, but num_gpus_per_learner=0 is set too: keep one" in reason
    )
    assert reason.endswith("left out of every figure and count (its record says ok)")
    assert (
        "t002r1/plan.json is not a plan this rlbench reads: its top level: Invalid JSON"
        in trials.loc["t002r1", "reason"]
    )
    assert "t001r0" not in set(tables["iterations"]["trial_id"])  # its iterations are not counted either
    configs = analysis.configs.set_index("index")
    assert configs.loc[1, "n"] == 1 and configs.loc[2, "n"] == 1 and configs.loc[0, "n"] == 2
    assert "2 trials left out of every figure and count: their plan.json cannot be read" in md
    assert "- trials: `8 (6 ok, 2 unreadable);" in md
    row = next(line for line in md.splitlines() if line.startswith("| t001r0 "))
    assert row.startswith("| t001r0 | unreadable | ? | ? |")
    assert (out / "summary.csv").read_text().count(UNREADABLE) == 2


def test_every_plan_unreadable_still_gives_a_report(tmp_path):
    out = _generate(tmp_path, trials=2, repeats=1)
    for trial in ResultsFolder(out).trials():
        trial.plan.write_text("[]")
    tables, md, _, analysis = _report(out, list(GRID))
    assert list(tables["trials"]["status"]) == [UNREADABLE, UNREADABLE]
    assert analysis.trials.empty and "no configuration was measured" in md
    assert "2 trials left out of every figure and count" in md


def test_the_report_command_on_a_planted_bad_plan_exits_0(tmp_path, capsys):
    from rlbench.commands import main

    out = _generate(tmp_path, trials=2, repeats=1)
    ResultsFolder(out).trial("t000r0").plan.write_text("{}")
    assert main(["report", str(out), "--rebuild"]) == 0
    printed = capsys.readouterr().out
    assert "Report:" in printed and "Traceback" not in printed
