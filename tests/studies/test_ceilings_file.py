"""env_ceilings.json read back typed (rlbench/results/ceilings_file.py): envbench's fields, and a damaged or
hostile file read as no ceiling, never an error."""

from __future__ import annotations

import dataclasses
import json

from rlbench.results.ceilings_file import CeilingEntry, read_env_ceilings
from rlbench.studies.envbench import CeilingResult, result_dict


def test_an_entry_read_has_the_fields_envbench_writes_and_its_error():
    assert set(CeilingEntry.model_fields) == {f.name for f in dataclasses.fields(CeilingResult)} | {"error"}


def test_a_written_ceiling_reads_back_whole(tmp_path):
    result = CeilingResult("CartPole-v1", {"k": [1, None]}, 2, 4000, 1.0, 4000.0, 2000.0, 1.9, 10_000_000)
    written = {"a": result_dict(result), "b": {"error": "ValueError: boom"}}
    (tmp_path / "env_ceilings.json").write_text(json.dumps(written))
    read = read_env_ceilings(tmp_path / "env_ceilings.json")
    assert {k: v.model_dump(exclude_unset=True) for k, v in read.items()} == written


def test_a_damaged_or_hostile_file_reads_as_no_ceiling(tmp_path):
    path = tmp_path / "env_ceilings.json"
    assert read_env_ceilings(path) == {}  # none measured
    for text in ("not json", "[1]", "null", "{" * 10_000):
        path.write_text(text)
        assert read_env_ceilings(path) == {}, text[:10]
    path.write_text(json.dumps({"a": {"steps_per_s": "fast", "procs": True}, "b": 3, "c": {"steps_per_s": 5}}))
    read = read_env_ceilings(path)
    assert sorted(read) == ["a", "c"] and read["a"].steps_per_s is None and read["a"].procs is None
    assert read["c"].steps_per_s == 5
