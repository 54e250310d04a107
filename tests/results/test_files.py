"""Writing never follows a symbolic link planted in a results folder; one file mode for everything."""

from __future__ import annotations

import os
import stat

import pytest

from rlbench.results.files import (
    FILE_MODE,
    LinkRefused,
    open_append,
    read_events,
    write_atomic,
    write_json,
)


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def test_a_link_at_the_target_is_replaced_and_its_target_untouched(tmp_path):
    victim = tmp_path / "victim.txt"
    victim.write_text("precious")
    folder = tmp_path / "out"
    folder.mkdir()
    (folder / "manifest.json").symlink_to(victim)
    write_json(folder / "manifest.json", {"a": 1})
    assert victim.read_text() == "precious"
    assert not (folder / "manifest.json").is_symlink() and '"a": 1' in (folder / "manifest.json").read_text()


def test_a_linked_folder_is_refused(tmp_path):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    out = tmp_path / "out"
    out.mkdir()
    (out / "plots").symlink_to(elsewhere, target_is_directory=True)
    with pytest.raises(LinkRefused, match="symbolic link"):
        write_atomic(out / "plots" / "a.png", b"x")
    assert list(elsewhere.iterdir()) == []  # not even a temporary file landed there


def test_planted_temp_names_are_never_written_through(tmp_path, monkeypatch):
    """The temporary file is created exclusively: a link waiting under the name it will pick is
    never opened (the name is drawn again)."""
    victim = tmp_path / "victim.txt"
    victim.write_text("precious")
    out = tmp_path / "out"
    out.mkdir()
    names = iter(["aaaa", "bbbb"])
    monkeypatch.setattr("rlbench.results.files.secrets.token_hex", lambda n: next(names))
    (out / ".record.json.aaaa.tmp").symlink_to(victim)
    write_atomic(out / "record.json", b"{}")
    assert victim.read_text() == "precious" and (out / "record.json").read_bytes() == b"{}"
    assert (out / ".record.json.aaaa.tmp").is_symlink()  # the planted link itself is left as it was


def test_one_mode_for_every_file(tmp_path):
    write_atomic(tmp_path / "a.json", b"{}")
    os.close(open_append(tmp_path / "events.jsonl"))
    want = FILE_MODE & ~_umask()
    assert stat.S_IMODE((tmp_path / "a.json").stat().st_mode) == want
    assert stat.S_IMODE((tmp_path / "events.jsonl").stat().st_mode) == want


def test_append_refuses_a_link(tmp_path):
    victim = tmp_path / "victim.txt"
    victim.write_text("precious")
    (tmp_path / "events.jsonl").symlink_to(victim)
    with pytest.raises(OSError):
        open_append(tmp_path / "events.jsonl")
    assert victim.read_text() == "precious"


def test_forged_event_lines_that_are_not_objects_are_dropped(tmp_path):
    path = tmp_path / "events.jsonl"
    path.write_text('[1, 2]\n"start"\n' + "[" * 100_000 + "\n" + '{"event": "start", "pid": 5}\n')
    assert read_events(path) == [{"event": "start", "pid": 5}]


def test_remove_if_empty_removes_only_an_empty_folder_never_through_a_link(tmp_path):
    from rlbench.results.files import remove_if_empty

    empty, full, target = tmp_path / "empty", tmp_path / "full", tmp_path / "target"
    empty.mkdir(), full.mkdir(), target.mkdir()
    (full / "kept.txt").write_text("x")
    link = tmp_path / "link"
    link.symlink_to(target, target_is_directory=True)
    assert remove_if_empty(empty) is True and not empty.exists()
    assert remove_if_empty(full) is False and (full / "kept.txt").read_text() == "x"
    assert remove_if_empty(link) is False and link.is_symlink() and target.is_dir()
    assert remove_if_empty(tmp_path / "missing") is False
