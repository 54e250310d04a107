"""The sweep's clean-up: it waits for death, not for a slow PID 1 to reap, and it kills nothing
but the trial's own processes (a recycled pid, a forged session name, a live session, another
user's process are all left alone)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import psutil
import pytest

from rlbench.results.layout import ResultsFolder
from rlbench.run import processes
from rlbench.run.processes import (
    ProcessRef,
    kill_survivors,
    kill_tree,
    names_session,
    survivors,
    wait_dead,
)
from rlbench.run.sweep import _kill_leftovers, move_aside
from rlbench.worker.procfs import read_stat


def test_returns_once_a_killed_process_is_a_zombie():
    child = subprocess.Popen(["sleep", "30"])
    proc = psutil.Process(child.pid)
    child.kill()  # not reaped: it stays a zombie, as an orphan does until PID 1 gets to it
    t = time.monotonic()
    wait_dead([proc], timeout=30)
    assert time.monotonic() - t < 30  # returned once it was a zombie, long before the timeout
    assert proc.status() == psutil.STATUS_ZOMBIE
    child.wait()


def test_gives_up_on_a_live_process_at_the_timeout():
    child = subprocess.Popen(["sleep", "30"])
    try:
        t = time.monotonic()
        wait_dead([psutil.Process(child.pid)], timeout=0.3)
        assert time.monotonic() - t >= 0.3  # it waited the whole timeout
        assert child.poll() is None
    finally:
        child.kill()
        child.wait()


def test_gone_processes_need_no_wait():
    child = subprocess.Popen(["true"])
    proc = psutil.Process(child.pid)
    child.wait()
    t = time.monotonic()
    wait_dead([proc], timeout=30)
    assert time.monotonic() - t < 30


# --- the leftover kill hits nothing but the trial's own processes ------------------------------

SESSION = "session_2026-11-23_01-16-52_908396_6070"
SLEEP = "import time; time.sleep(60)"


@pytest.fixture
def spawn():
    started = []

    def start(args, **kw) -> subprocess.Popen:
        started.append(subprocess.Popen(args, **kw))
        return started[-1]

    start.orphans, start.orphans_ticks = [], {}  # grandchildren to kill at the end (pid, and its start time)
    yield start
    for p in started:
        p.kill()
        p.wait()
    for pid in start.orphans:
        ref = ProcessRef.of(pid)
        if ref is not None and ref.start_ticks == start.orphans_ticks.get(pid):
            os.kill(pid, 9)


def _orphan_in_dead_session(spawn, session: str = SESSION) -> tuple[ProcessRef, int]:
    """A leader that starts a Ray-like child naming ``session`` in its own Linux session, then
    exits: (the dead leader, the live child's pid), as a crashed trial leaves its Ray."""
    code = (
        "import subprocess, sys; p = subprocess.Popen([sys.executable, '-c', %r, '--session-dir=/tmp/ray/%s']); "
        "print(p.pid, flush=True)" % (SLEEP, session)
    )
    leader = spawn([sys.executable, "-c", code], start_new_session=True, stdout=subprocess.PIPE, text=True)
    ref = ProcessRef.of(leader.pid)
    child = int(leader.stdout.readline())
    spawn.orphans.append(child)
    spawn.orphans_ticks[child] = read_stat(child).start_ticks
    leader.wait()
    return ref, child


def test_names_session_exactly():
    assert names_session(["raylet", f"--session_dir=/tmp/ray/{SESSION}"], SESSION)
    assert names_session([f"--session-name={SESSION}"], SESSION)
    assert names_session([f"/tmp/ray/{SESSION}/logs/x.out"], SESSION)
    assert not names_session([f"--session-name={SESSION}0"], SESSION)  # a longer name is another session
    assert not names_session(["/usr/bin/python3", "pythonista"], "python")


def test_a_dead_trials_orphan_is_killed(spawn):
    """The positive case, so the refusals below are refusals: the rules do find a real leftover."""
    leader, child = _orphan_in_dead_session(spawn)
    assert read_stat(child).session == leader.pid
    handle = psutil.Process(child)  # before the kill: once init reaps it, psutil.Process(child) raises NoSuchProcess
    assert kill_survivors(set(), f"/tmp/ray/{SESSION}", leader) == 1
    wait_dead([handle], timeout=5)
    assert read_stat(child) is None or read_stat(child).exiting


def test_a_forged_short_or_partial_session_name_kills_nothing(spawn):
    leader, child = _orphan_in_dead_session(spawn)
    for forged in ("/tmp/ray/python", "/tmp/ray/session_2026", "/tmp/ray/s", ["not", "text"], None):
        assert survivors(set(), forged, leader) == []
    assert ProcessRef.of(child).alive()


def test_the_session_must_be_the_trials(spawn):
    """The right session name, but the processes are in another Linux session: untouched."""
    _, child = _orphan_in_dead_session(spawn)
    other = ProcessRef.of(spawn([sys.executable, "-c", SLEEP], start_new_session=True).pid)
    assert survivors(set(), f"/tmp/ray/{SESSION}", ProcessRef(other.pid + 10**6, 0)) == []
    assert survivors(set(), f"/tmp/ray/{SESSION}", other) == []
    assert ProcessRef.of(child).alive() and other.alive()


def test_a_recycled_pid_is_not_the_process_the_sampler_saw(spawn):
    victim = spawn([sys.executable, "-c", SLEEP])
    ticks = read_stat(victim.pid).start_ticks
    assert survivors({(victim.pid, ticks - 1)}, None, None) == []  # same pid, another start time
    assert [p.pid for p in survivors({(victim.pid, ticks)}, None, None)] == [victim.pid]


def test_another_users_processes_are_never_touched(spawn, monkeypatch):
    victim = spawn([sys.executable, "-c", SLEEP])
    ticks = read_stat(victim.pid).start_ticks
    monkeypatch.setattr(processes.os, "getuid", lambda: 4242)
    assert survivors({(victim.pid, ticks)}, None, None) == []
    kill_tree(ProcessRef(victim.pid, ticks))
    assert victim.poll() is None


def test_kill_tree_of_a_reaped_trial_spares_a_new_process_with_its_pid(spawn):
    victim = spawn([sys.executable, "-c", SLEEP], start_new_session=True)
    kill_tree(ProcessRef(victim.pid, read_stat(victim.pid).start_ticks + 1))  # the trial was an earlier process
    assert victim.poll() is None


def test_psutil_errors_never_abort_the_clean_up(monkeypatch):
    def broken(*args, **kwargs):
        raise psutil.AccessDenied(1)

    monkeypatch.setattr(processes, "survivors", broken)
    assert kill_survivors({(1, 1)}, None, None) == 0
    monkeypatch.setattr(processes.psutil, "Process", broken)
    kill_tree(ProcessRef(os.getpid() + 10**6, 1))  # nothing to do, and nothing raised


def _forged_trial(tmp_path, pid: int, ticks: int | None, session: str):
    folder = ResultsFolder(tmp_path / "received")
    trial = folder.trial("t000r0")
    trial.path.mkdir(parents=True)
    events = [
        {"event": "start", "pid": pid, "start_ticks": ticks},
        {"event": "ray_init", "session_dir": f"/tmp/ray/{session}"},
    ]
    trial.events_file.write_text("".join(json.dumps(e) + "\n" for e in events))
    return folder, trial


def test_resume_of_a_forged_folder_naming_a_live_session_kills_nothing(spawn, tmp_path):
    """events.jsonl names the Ray session (and the exact pid and start time) of someone's running
    process: it is alive, so it is no leftover of a dead sweep, and it survives the resume."""
    victim = spawn([sys.executable, "-c", SLEEP, f"--session-name={SESSION}"], start_new_session=True)
    folder, trial = _forged_trial(tmp_path, victim.pid, read_stat(victim.pid).start_ticks, SESSION)
    assert _kill_leftovers(trial) == 0
    moved = move_aside(folder, "t000r0")
    assert json.loads((moved / "record.json").read_text())["leftover_processes_killed"] == 0
    assert victim.poll() is None


def test_resume_of_a_forged_folder_naming_a_dead_pid_kills_only_that_session(spawn, tmp_path):
    leader, child = _orphan_in_dead_session(spawn)
    bystander = spawn([sys.executable, "-c", SLEEP, f"--session-name={SESSION}"], start_new_session=True)
    _, trial = _forged_trial(tmp_path, leader.pid, None, SESSION)
    assert _kill_leftovers(trial) == 1  # the orphan of that dead session, not the bystander naming it too
    assert bystander.poll() is None
