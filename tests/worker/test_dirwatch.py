"""The folder watch a paused warm trial waits on: woken by its gate's name, by nothing else, a sleep without inotify.

Every check reads what the kernel queued in the create or rename itself (a wait of 0 s), so no answer depends on how
fast the machine is."""

import os

from rlbench.worker.dirwatch import FolderWatch


def test_a_name_renamed_or_made_in_the_folder_wakes_the_wait(tmp_path):
    (tmp_path / "gate").mkdir()
    with FolderWatch(tmp_path / "gate") as watch:
        assert watch.active
        assert watch.wait(0) is False  # nothing made yet
        (tmp_path / "tmp").write_bytes(b"")
        os.replace(tmp_path / "tmp", tmp_path / "gate" / "window_1")  # as write_atomic makes a gate
        assert watch.wait(0) is True
        assert watch.wait(0) is False  # the events were read: the next wait is asleep again
        (tmp_path / "gate" / "stop").touch()
        assert watch.wait(0) is True


def test_names_elsewhere_and_writes_to_a_name_already_there_do_not_wake_it(tmp_path):
    (tmp_path / "gate").mkdir()
    (tmp_path / "gate" / "events.jsonl").write_bytes(b"")
    with FolderWatch(tmp_path / "gate") as watch:
        (tmp_path / "other").touch()  # the folder above
        (tmp_path / "gate" / "events.jsonl").write_bytes(b"{}\n")  # the trial's own appends
        assert watch.wait(0) is False


class _NoInotify:
    """A C library whose inotify_init1 fails (out of instances): the watch is off and waits sleep."""

    def inotify_init1(self, flags):
        return -1


def test_without_inotify_the_wait_is_the_whole_timeout_and_never_a_wake(tmp_path):
    with FolderWatch(tmp_path, libc=_NoInotify()) as watch:  # type: ignore[arg-type]
        assert not watch.active
        (tmp_path / "window_0").touch()
        assert watch.wait(0) is False


def test_a_folder_that_cannot_be_watched_leaves_the_watch_off(tmp_path):
    with FolderWatch(tmp_path / "missing") as watch:
        assert not watch.active
        assert watch.wait(0) is False
