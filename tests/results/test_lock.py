"""The lock and the folder checks: a planted link, FIFO or foreign file is refused before anything is written."""

from __future__ import annotations

import os

import pytest

from rlbench.results.layout import LOCK_FILE, ResultsFolder
from rlbench.results.lock import (
    OutDirError,
    SweepLock,
    check_new_sweep_folder,
    check_plain_folder,
)


def test_a_linked_lock_file_is_refused_and_its_target_not_truncated(tmp_path):
    victim = tmp_path / "victim.txt"
    victim.write_text("precious")
    out = tmp_path / "out"
    out.mkdir()
    (out / LOCK_FILE).symlink_to(victim)
    with pytest.raises(OutDirError, match="symbolic link"):
        SweepLock(out).acquire()
    assert victim.read_text() == "precious"


def test_a_fifo_or_hard_link_as_lock_is_refused(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    os.mkfifo(out / LOCK_FILE)
    with pytest.raises(OutDirError, match="not a plain file"):
        SweepLock(out).acquire()
    os.unlink(out / LOCK_FILE)
    victim = tmp_path / "victim.txt"
    victim.write_text("precious")
    os.link(victim, out / LOCK_FILE)
    with pytest.raises(OutDirError, match="not a plain file"):
        SweepLock(out).acquire()
    assert victim.read_text() == "precious"


def test_a_plain_lock_works(tmp_path):
    with SweepLock(tmp_path) as lock:
        assert lock.path.read_text() == f"{os.getpid()}\n"


def test_check_plain_folder_finds_links_and_fifos_anywhere(tmp_path):
    out = tmp_path / "out"
    (out / "trials" / "t000r0").mkdir(parents=True)
    (out / "trials" / "t000r0" / "plan.json").write_text("{}")
    check_plain_folder(out)  # plain files and folders only: fine
    (out / "plots").mkdir()
    (out / "plots" / "leak.png").symlink_to("/etc/passwd")
    os.mkfifo(out / "trials" / "t000r0" / "events.jsonl")
    assert sorted(p.name for p in ResultsFolder(out).unsafe_entries()) == ["events.jsonl", "leak.png"]
    with pytest.raises(OutDirError, match="leak.png|events.jsonl"):
        check_plain_folder(out)


def test_a_folder_that_is_a_link_is_named(tmp_path):
    (tmp_path / "real").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "real", target_is_directory=True)
    assert ResultsFolder(tmp_path / "link").unsafe_entries() == [tmp_path / "link"]


def test_new_sweep_folder_must_be_new_empty_or_a_sweep(tmp_path):
    check_new_sweep_folder(tmp_path / "missing")
    empty = tmp_path / "empty"
    empty.mkdir()
    check_new_sweep_folder(empty)
    (empty / LOCK_FILE).write_text("")
    check_new_sweep_folder(empty)  # rlbench's own lock only
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "notes.txt").write_text("my notes")
    with pytest.raises(OutDirError, match="notes.txt"):
        check_new_sweep_folder(mine)
    (mine / "manifest.json").write_text("{}")
    check_new_sweep_folder(mine)  # a sweep's folder: the resume rules decide
