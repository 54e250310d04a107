"""compare.csv and compare.json: one versioned schema for both kinds of ``rlbench compare`` (hand-made rows)."""

from __future__ import annotations

import json

import pandas as pd

from rlbench.analysis.change import CHANGE_FIELDS, COMPARISON_SCHEMA_VERSION, paired, unpaired
from rlbench.analysis.comparison import CSV_COLUMNS, Comparison, ComparisonRow, TimeToTarget, write_outputs
from rlbench.analysis.findings import CHANGE_THRESHOLD


def folders() -> Comparison:
    slow = unpaired([100.0, 101.0, 102.0], [80.0, 81.0, 82.0])
    ttt = TimeToTarget("3/3", "3/3", 10.0, 12.0, unpaired([10.0, 10.5, 9.5], [12.0, 12.5, 11.5]), "later")
    rows = [
        ComparisonRow("x=1", {"x": 1}, "A", "B", 101.0, 81.0, slow, "regressed", "B is ...", ttt),
        ComparisonRow("x=2", {"x": 2}, "A", "B", 5.0, None, unpaired([5.0], []), "only in A", "only in A: ..."),
    ]
    return Comparison("folders", "/r/a", "/r/b", 0.05, ["x"], rows)


def variants() -> Comparison:
    change = paired({0: 100.0, 1: 110.0}, {0: 50.0, 1: 55.0})
    rows = [ComparisonRow("x=1", {"x": 1}, "A", "B", 105.0, 52.5, change, "no evidence yet: ...", "no evidence ...")]
    return Comparison("variants", "/r/v", "/r/v", 0.05, ["x"], rows)


def test_both_kinds_write_the_same_columns_with_the_schema_version(tmp_path):
    tables = []
    for comparison in (folders(), variants()):
        out = tmp_path / comparison.kind
        write_outputs(comparison, out)
        tables.append(pd.read_csv(out / "compare.csv"))
        body = json.loads((out / "compare.json").read_text())
        assert body["schema_version"] == COMPARISON_SCHEMA_VERSION == 2 and body["kind"] == comparison.kind
        assert set(body["rows"][0]) == {
            "label",
            "axes",
            "a",
            "b",
            "a_env_steps_per_s",
            "b_env_steps_per_s",
            "change",
            "verdict",
            "sentence",
            "time_to_target",
        }
        assert list(body["rows"][0]["change"]) == list(CHANGE_FIELDS)
    assert list(tables[0].columns) == list(tables[1].columns) == ["schema_version", "x", *CSV_COLUMNS]
    assert (tables[0]["schema_version"] == 2).all() and (tables[1]["schema_version"] == 2).all()


def test_the_rows_say_what_each_figure_is(tmp_path):
    write_outputs(folders(), tmp_path)
    table = pd.read_csv(tmp_path / "compare.csv")
    assert list(table["design"]) == ["unpaired", "unpaired"] and list(table["verdict"]) == ["regressed", "only in A"]
    assert table.loc[0, "p_value"] == 0.05 and table.loc[0, "time_to_target_p_value"] == 0.05
    assert table.loc[0, "time_to_target_verdict"] == "later" and pd.isna(table.loc[1, "time_to_target_ratio"])
    # "-" starts like a formula: a spreadsheet gets it quoted (docs/SCHEMA.md, "CSV cells")
    assert (table.loc[1, "n_a"], table.loc[1, "n_b"], table.loc[1, "basis"]) == (1, 0, "'-")
    body = json.loads((tmp_path / "compare.json").read_text())
    assert body["regressed"] == 1 and body["threshold"] == 0.05 and body["significance"] == 0.05
    assert body["rows"][0]["time_to_target"]["change"]["ratio"] == 1.2 and body["rows"][1]["time_to_target"] is None


def test_the_cli_defaults_are_the_analysis_thresholds():
    """findings.py imports only the standard library, so the commands take its constants at their top."""
    from rlbench.analysis.findings import ROUNDS_FOR_EVIDENCE
    from rlbench.commands import _package
    from rlbench.commands._common import threshold_of

    assert threshold_of(None) == CHANGE_THRESHOLD and _package.DEFAULT_ROUNDS == ROUNDS_FOR_EVIDENCE
