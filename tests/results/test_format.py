"""A results folder states its format and it is checked on read (rlbench.results.format): the golden
folders under tests/data are real sweeps, one per format (format 1 written by 46fa6de; 1 and 2 RLlib
smoke sweeps, 3 a plain-adapter sweep with two variants in two rounds)."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import pandas as pd
import pyarrow.parquet as pq
import pytest
from conftest import REPO

from rlbench import SCHEMA_VERSION
from rlbench.commands import main
from rlbench.commands.exit_codes import EXIT_BAD_INPUT, EXIT_OK
from rlbench.results.format import FormatError, folder_format

GOLDEN = {version: REPO / "tests" / "data" / f"results-format-{version}" for version in (1, 2, 3)}


def _copy(version: int, tmp_path: Path) -> Path:
    """A copy of a golden folder (tests never write into tests/data)."""
    return Path(shutil.copytree(GOLDEN[version], tmp_path / f"format-{version}"))


def _with_format(folder: Path, version: str) -> Path:
    manifest = json.loads((folder / "manifest.json").read_text())
    manifest["software"]["schema_version"] = version
    (folder / "manifest.json").write_text(json.dumps(manifest))
    return folder


def _trial_files(folder: Path) -> dict[str, str]:
    return {
        str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted((folder / "trials").rglob("*"))
        if p.is_file()
    }


def test_the_golden_folders_hold_their_formats():
    assert SCHEMA_VERSION == 3  # a new format needs its own golden folder and a migration test here
    for version, folder in GOLDEN.items():
        manifest = json.loads((folder / "manifest.json").read_text())
        assert folder_format(manifest, "x").version == version


@pytest.mark.parametrize(
    "manifest, message",
    [
        (
            {"software": {"schema_version": "4", "rlbench": "9.1.0"}},
            "x holds results format 4, written by rlbench 9.1.0; this rlbench reads formats 1 to 3: "
            "read it with that rlbench",
        ),
        ({"software": {"schema_version": "0", "rlbench": "0.0.1"}}, "read it with the rlbench that wrote it"),
        ({"software": {"rlbench": "0.1.0"}}, "x states no results format"),
        ({}, "x states no results format"),
        ({"software": {"schema_version": "two\x1b[31m"}}, "is 'two\\x1b[31m', not a format number"),
    ],
)
def test_what_cannot_be_read_is_refused_with_the_reason(manifest, message):
    with pytest.raises(FormatError) as e:
        folder_format(manifest, "x")
    assert message in str(e.value)


def test_a_hostile_writer_name_is_not_repeated():
    fmt = folder_format({"software": {"schema_version": "1", "rlbench": "<script>x</script>"}}, "x")
    assert fmt.written_by == "an unknown rlbench" and fmt.migrated


def test_report_reads_a_format_1_folder_by_migrating_it(tmp_path, capsys):
    folder = _copy(1, tmp_path)
    before = _trial_files(folder)
    assert main(["report", str(folder)]) == EXIT_OK
    out = capsys.readouterr().out
    assert "holds results format 1 (written by rlbench 0.1.0); read as format 3" in out
    trials = pd.read_parquet(folder / "trials.parquet")
    # the migration's known answers: every trial exited normally (exit_code 0), and format 1 knew only RLlib
    assert list(trials["exit_signal"].isna()) == [True] * 4
    assert list(trials["framework"]) == ["rllib"] * 4
    assert list(trials["variant"].isna()) == [True] * 4 and list(trials["round"]) == list(trials["repeat"])
    assert pq.read_schema(folder / "trials.parquet").metadata[b"rlbench_schema_version"] == b"3"
    assert _trial_files(folder) == before  # the per-trial files (the truth) are never rewritten
    assert (folder / "report.md").exists()


def test_report_reads_a_format_2_folder_by_migrating_it(tmp_path, capsys):
    folder = _copy(2, tmp_path)
    before = _trial_files(folder)
    assert main(["report", str(folder)]) == EXIT_OK
    assert "holds results format 2 (written by rlbench 0.1.0); read as format 3" in capsys.readouterr().out
    trials = pd.read_parquet(folder / "trials.parquet")
    assert list(trials["status"]) == ["ok"] * 4 and list(trials["exit_signal"].isna()) == [True] * 4
    # format 2 knew no variants or rounds: no variant, and each trial's round is its repeat
    assert list(trials["variant"].isna()) == [True] * 4 and list(trials["round"]) == list(trials["repeat"])
    assert _trial_files(folder) == before


def test_report_reads_a_format_3_folder_as_it_is(tmp_path, capsys):
    folder = _copy(3, tmp_path)
    table = (folder / "trials.parquet").read_bytes()
    assert main(["report", str(folder)]) == EXIT_OK
    assert "results format" not in capsys.readouterr().out
    assert (folder / "trials.parquet").read_bytes() == table  # read, not rebuilt
    trials = pd.read_parquet(folder / "trials.parquet")
    assert list(zip(trials["trial_id"], trials["variant"], trials["round"])) == [
        ("t000r0", "A", 0),
        ("t000r1", "A", 1),
        ("t001r0", "B", 0),
        ("t001r1", "B", 1),
    ]
    assert list(trials["execution"]) == ["tune"] * 4
    assert all(json.loads(v)["python"] for v in trials["versions"])  # what each trial's process imported
    # its known answer, fixed data: B's env burns 4x the CPU per step; 2 rounds are too few to say so
    text = (folder / "report.md").read_text()
    assert "B against A**: no evidence of a difference (2 rounds; paired ratio 0.365" in text
    assert text.count("6 rounds could show one") == 1


def test_a_column_added_to_format_3_is_filled_from_the_plans_on_read(tmp_path):
    """learner_gpus_allocated came after the golden format-3 tables were written: read, it is the plans' adapter's
    answer (one plan edited to an RLlib trial whose driver's learner has half a GPU), not a 0 and not a rebuild."""
    from rlbench.analysis.tables import read_tables

    folder = _copy(3, tmp_path)
    table = (folder / "trials.parquet").read_bytes()
    assert "learner_gpus_allocated" not in pq.read_schema(folder / "trials.parquet").names
    plan_file = folder / "trials" / "t000r0" / "plan.json"
    plan = json.loads(plan_file.read_text())
    plan["config"]["framework"], plan["config"]["learners"]["num_gpus_per_learner"] = "rllib", 0.5
    plan_file.write_text(json.dumps(plan))
    trials = read_tables(folder)["trials"].set_index("trial_id")
    assert trials["learner_gpus_allocated"].to_dict() == {"t000r0": 0.5, "t000r1": 0.0, "t001r0": 0.0, "t001r1": 0.0}
    assert (folder / "trials.parquet").read_bytes() == table  # filled on read: the stored table is untouched


def test_compare_reads_both_formats_side_by_side(tmp_path, capsys):
    a, b = _copy(1, tmp_path), _copy(2, tmp_path)
    code = main(["compare", str(a), str(b), "--out", str(tmp_path)])
    assert code in (0, 1)  # 1: a regression found between two single runs; either way both were read
    table = pd.read_csv(tmp_path / "compare.csv")
    assert len(table) == 4 and table["ratio"].notna().all()
    assert "holds results format 1" in capsys.readouterr().out


@pytest.mark.parametrize("verb", ["report", "compare", "reproduce"])
def test_a_newer_format_is_refused_by_every_reader(verb, tmp_path, capsys):
    folder = _with_format(_copy(2, tmp_path), "4")
    before = _trial_files(folder)
    argv = {
        "report": ["report", str(folder)],
        "compare": ["compare", str(folder), str(folder)],
        "reproduce": ["reproduce", str(folder), "t000r0"],
    }[verb]
    assert main(argv) == EXIT_BAD_INPUT
    text = capsys.readouterr().out
    assert "holds results format 4, written by rlbench 0.1.0; this rlbench reads formats 1 to 3" in text
    assert not (folder / "report.md").exists() and not (folder / "compare.csv").exists()
    assert _trial_files(folder) == before


def test_resume_refuses_an_older_and_a_newer_format(tmp_path, capsys):
    for version, expected in (
        (
            None,
            "it holds results format 1 (written by rlbench 0.1.0) and this rlbench "
            "writes format 3; a resume would mix the two",
        ),
        ("4", "holds results format 4, written by rlbench 0.1.0"),
    ):
        folder = (
            _copy(1, tmp_path / str(version))
            if version is None
            else _with_format(_copy(2, tmp_path / version), version)
        )
        before = _trial_files(folder)
        assert main(["sweep", str(REPO / "configs" / "smoke.yaml"), "--out", str(folder), "--resume"]) == EXIT_BAD_INPUT
        assert expected in capsys.readouterr().out
        assert _trial_files(folder) == before
