"""autoconfig.json read back typed (rlbench/results/autoconfig_file.py): a damaged or hostile value reads as its
field's default, a list keeps its good entries, and only a file that is no JSON object reads as None."""

from __future__ import annotations

import json
import math

from rlbench.results.autoconfig_file import AutoconfigFile, read_autoconfig_file


def read(tmp_path, data) -> AutoconfigFile | None:
    path = tmp_path / "autoconfig.json"
    path.write_text(data if isinstance(data, str) else json.dumps(data))
    return read_autoconfig_file(path)


def test_no_file_or_no_object_reads_as_none(tmp_path):
    assert read_autoconfig_file(tmp_path / "autoconfig.json") is None  # a sweep's folder
    for text in ("", "not json", "[1, 2]", '"text"', "null", "[" * 100_000):
        assert read(tmp_path, text) is None, text[:20]
    (tmp_path / "dir.json").mkdir()
    assert read_autoconfig_file(tmp_path / "dir.json") is None


def test_an_older_file_reads_with_defaults(tmp_path):
    """Schema 1: no plan, no probes, no tolerance, no mode: a search whose answer rests on the race."""
    old = read(tmp_path, {"best": {"key": "a", "median": 400.0, "n": 2}, "trials_run": 4, "eliminations": []})
    assert old is not None and old.mode == "search" and old.answer_source == "race"
    assert (old.plan, old.probe_trials, old.tolerance_pct, old.best.key) == (None, None, None, "a")
    assert old.speedup.ratio is None and old.path == [] and old.unit == ""


def test_a_damaged_value_reads_as_its_default_and_a_damaged_entry_is_left_out(tmp_path):
    data = {
        "mode": "walk",
        "trials_run": True,  # a bool is no count
        "wall_s": "12",  # a text is no number
        "budget_s": 600,  # an int stays an int: the report prints what was written
        "tolerance_pct": float("nan"),
        "best": "not an object",
        "speedup": {"ratio": "x", "ci_low": 1.5},
        "standings": [{"key": "a", "cpus": 2, "n": 3.5, "axes": [1]}, "junk", None, 7],
        "path": [{"step": 1, "axis": {"a": 1}, "from_value": {"deep": [1, None]}, "values": "2", "skipped": [1]}],
        "walk_points": [{"step": "one", "median": 1.0}, {"step": 0, "median": None}],
        "plan": {"left_s": 180.0, "trial_cost_s": 0, "measured": ["a", 2]},
        "unknown_newer_field": {"kept": "out"},
    }
    f = read(tmp_path, data)
    assert f is not None and f.mode == "walk"
    assert (f.trials_run, f.wall_s, f.budget_s, f.best) == (None, None, 600, None)
    assert isinstance(f.budget_s, int) and math.isnan(f.tolerance_pct)
    assert (f.speedup.ratio, f.speedup.ci_low) == (None, 1.5)
    [standing] = f.standings
    assert (standing.key, standing.cpus, standing.n, standing.axes) == ("a", 2, None, {})
    [step] = f.path
    assert (step.step, step.axis, step.from_value, step.values, step.skipped) == (1, None, {"deep": [1, None]}, [], [])
    assert [p.step for p in f.walk_points] == [None, 0]
    assert f.plan is not None and (f.plan.left_s, f.plan.trial_cost_s, f.plan.measured) == (180.0, 0, [])
