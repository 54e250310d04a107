"""wait_dead: the sweep's clean-up waits for death, not for a slow PID 1 to reap."""

from __future__ import annotations

import subprocess
import time

import psutil

from rlbench.run.processes import wait_dead


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
