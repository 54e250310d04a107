"""A results folder opened the one way (rlbench.results.session) and its manifest typed (rlbench.results.manifest):
the checks' order and messages, nothing written before the lock, the manifest read back key for key. No Ray."""

from __future__ import annotations

import json
import os
import shutil

import pytest
from conftest import REPO

from rlbench import SCHEMA_VERSION
from rlbench.results.format import FormatError
from rlbench.results.layout import LOCK_FILE
from rlbench.results.lock import OutDirError
from rlbench.results.manifest import Manifest, ManifestError, read_manifest
from rlbench.results.session import RunFacts, open_for_read, open_for_write

GOLDEN = [REPO / "tests" / "data" / f"results-format-{v}" for v in (1, 2, 3)]
MACHINE = {
    "hostname": "h",
    "cpu_model": "Test CPU",
    "logical_cores": 4,
    "physical_cores": 2,
    "usable_cores": [0, 1],
    "memory_bytes": 8 * 2**30,
    "gpus": [],
}
SOFTWARE = {"rlbench": "0.1.0", "schema_version": str(SCHEMA_VERSION), "python": "3.11.7", "ray": "2.60.0"}
FACTS = RunFacts({"name": "t", "repeats": 1}, MACHINE, SOFTWARE, spec_may_change=("repeats",))


def _held(tmp_path, **changes):
    """A folder holding results of FACTS' run (a manifest and trials/), with ``changes`` to its manifest."""
    out = tmp_path / "out"
    (out / "trials").mkdir(parents=True)
    data = {"spec": FACTS.spec, "machine": MACHINE, "software": SOFTWARE, **changes}
    (out / "manifest.json").write_text(json.dumps(data))
    return out


def _files(root):
    return sorted(str(p.relative_to(root)) for p in root.rglob("*"))


@pytest.mark.parametrize("golden", GOLDEN, ids=lambda p: p.name)
def test_every_golden_manifest_reads_typed_and_writes_back_key_for_key(golden, tmp_path):
    manifest = read_manifest(golden / "manifest.json")
    assert manifest.machine.logical_cores == 2 and manifest.software.ray == "2.60.0"
    assert manifest.format.version == int(golden.name[-1]) and manifest.statuses["t000r0"] == "ok"
    manifest.write(tmp_path / "manifest.json")
    assert json.loads((tmp_path / "manifest.json").read_text()) == json.loads((golden / "manifest.json").read_text())


def test_keys_unknown_or_absent_stay_so_and_a_run_records_its_end_where_it_belongs():
    m = Manifest.model_validate({"software": {"schema_version": 3}, "from_a_newer_rlbench": [1]})
    assert m.software.schema_version == "3"  # a number as text, as software_versions writes it
    m.end("t1", interrupted=False, statuses={"t000r0": "ok"})
    assert m.as_json() == {
        "software": {"schema_version": "3"},
        "from_a_newer_rlbench": [1],
        "ended_at": "t1",
        "interrupted": False,
        "statuses": {"t000r0": "ok"},
    }  # no cpu_energy_zones: none recorded
    m.begin_resume(["rlbench", "sweep"], "t2", rerun={}, kept=1)
    m.end("t3", interrupted=True, statuses={})
    assert m.as_json()["ended_at"] == "t1" and m.as_json()["resumes"] == [
        {"command": ["rlbench", "sweep"], "started_at": "t2", "ended_at": "t3", "rerun": {}, "kept": 1}
    ]


def test_what_cannot_be_read_says_what_and_where(tmp_path):
    path = tmp_path / "manifest.json"
    with pytest.raises(ManifestError, match="manifest.json is missing"):
        read_manifest(path)
    for text, message in (
        ("{", "is not JSON"),
        ("[1]", "is not a JSON object"),
        (
            '{"software": {"schema_version": "3"}, "machine": {"logical_cores": "many"}}',
            "manifest.json: machine.logical_cores: Input should be a valid integer",
        ),
    ):
        path.write_text(text)
        with pytest.raises(ManifestError, match=message):
            read_manifest(path)
    # a newer format may shape its fields otherwise: named as newer, not as damaged
    path.write_text('{"software": {"schema_version": "9", "rlbench": "9.0.0"}, "machine": []}')
    with pytest.raises(FormatError, match="holds results format 9, written by rlbench 9.0.0"):
        read_manifest(path)
    path.unlink()
    os.mkfifo(path)  # would hang a reader that opened it to read
    with pytest.raises(ManifestError, match="is not a plain file"):
        read_manifest(path)


def test_a_new_run_refuses_results_naming_the_command_that_continues_them_and_writes_nothing(tmp_path):
    out = _held(tmp_path)
    before = _files(out)
    with pytest.raises(
        OutDirError,
        match=r"already holds results; to continue them, keeping every finished trial: "
        r"rlbench x --resume; or choose another --out",
    ):
        open_for_write(out, "new", resume_with="rlbench x --resume")
    with pytest.raises(OutDirError, match=r"already holds results; choose another --out"):
        open_for_write(out, "new")
    assert _files(out) == before


@pytest.mark.parametrize(
    "changes, message",
    [
        ({"spec": {"name": "u", "repeats": 3}}, r"the spec changed \(spec.name: 'u' -> 't'\)"),  # repeats may change
        ({"machine": {**MACHINE, "usable_cores": [0]}}, r"different machine \(usable_cores: \[0\] -> \[0, 1\]\)"),
        ({"machine": {**MACHINE, "gpus": [{"name": "H100"}]}}, r"different machine \(gpus: \['H100'\] -> \[\]\)"),
        ({"software": {**SOFTWARE, "rlbench": "0.0.9"}}, r"software changed \(rlbench: '0.0.9' -> '0.1.0'\)"),
        ({"software": {**SOFTWARE, "schema_version": "1"}}, r"holds results format 1 .* a resume would mix the two"),
    ],
)
def test_a_resume_is_checked_against_the_runs_facts_before_anything_is_written(tmp_path, changes, message):
    out = _held(tmp_path, **changes)
    before = _files(out)
    with pytest.raises(OutDirError, match=message):
        open_for_write(out, "resume", facts=FACTS)
    assert _files(out) == before  # not even the lock file


def test_the_link_check_comes_before_the_manifest_is_read(tmp_path):
    out = _held(tmp_path)
    (out / "manifest.json").unlink()
    (out / "manifest.json").symlink_to(tmp_path / "nowhere.json")
    for opening in (lambda: open_for_write(out, "resume", facts=FACTS), lambda: open_for_read(out)):
        with pytest.raises(OutDirError, match="never follows a symbolic link"):
            opening()


def test_the_lock_is_held_while_entered_and_the_manifest_written_only_then(tmp_path):
    out = _held(tmp_path)
    session = open_for_write(out, "resume", facts=FACTS)
    assert session.manifest.machine.cpu_model == "Test CPU" and not (out / LOCK_FILE).exists()
    with pytest.raises(RuntimeError, match="only while the folder is locked"):
        session.save(session.manifest)
    with session:
        with pytest.raises(OutDirError, match="another rlbench sweep"):
            open_for_write(out, "resume", facts=FACTS).lock()
        session.manifest.begin_resume(["again"], "now")
        session.save(session.manifest)
    assert read_manifest(out / "manifest.json").resumes[0].command == ["again"]
    open_for_write(out, "resume", facts=FACTS).lock().close()  # free again
    fresh = open_for_write(tmp_path / "new", "resume", facts=FACTS)  # a resume of nothing begins a new folder
    assert fresh.manifest is None and not (tmp_path / "new").exists()


def test_reading_names_an_older_format_and_refuses_what_is_no_result_set(tmp_path):
    folder = shutil.copytree(GOLDEN[0], tmp_path / "f1")
    opened = open_for_read(folder)
    assert opened.format.version == 1 and "read as format 3" in opened.note
    assert open_for_read(GOLDEN[1]).manifest.trial_ids == ["t000r0", "t001r0", "t002r0", "t003r0"]
    with pytest.raises(OutDirError, match="is not an rlbench result folder"):
        open_for_read(tmp_path)
    (folder / "manifest.json").write_text('{"software": {"schema_version": "3"}, "statuses": ["ok"]}')
    with pytest.raises(OutDirError, match="statuses: Input should be a valid dictionary.*the folder is damaged"):
        open_for_read(folder)


def test_a_history_folder_is_new_empty_or_a_history_and_adds_runs_of_the_same_spec_and_machine(tmp_path):
    from rlbench.results.session import open_history

    history = open_history(tmp_path / "h")  # new: nothing made until it is locked
    assert not (tmp_path / "h").exists() and history.folder.new_run("history").name == "01-history"
    with history:
        history.folder.runs_dir.mkdir()
        run = _held(tmp_path / "made").rename(history.folder.runs_dir / "01-history")
        assert history.folder.runs() == [run] and history.folder.new_run("confirm", "1.0-2.0-c1").name == (
            "02-confirm-1.0-2.0-c1"
        )
    open_history(tmp_path / "h").check_run(FACTS)  # the same spec, machine and software: added to
    changed = RunFacts({**FACTS.spec, "name": "u"}, FACTS.machine, FACTS.software)
    with pytest.raises(OutDirError, match=r"cannot add a run to the history in .*01-history: the spec changed"):
        open_history(tmp_path / "h").check_run(changed)
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "notes.txt").write_text("mine")
    with pytest.raises(OutDirError, match="already holds files \\(notes.txt\\) and is not an rlbench history"):
        open_history(tmp_path / "mine")
    with pytest.raises(OutDirError, match="holds one sweep's results, not a history"):
        open_history(run)
