"""CPU-seconds per role over a window (servebench's CPU figures): a child burns a known CPU time inside the
window (its own CPU clock, so the answer does not move with the machine's load), another stays idle."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from rlbench.adapters.roles import Role
from rlbench.measure.utilization import RoleCpuWindow

CHILD = """
import sys, time
sys.stdout.write("ready\\n"); sys.stdout.flush()
burn = float(sys.stdin.readline())
end = time.thread_time() + burn
while time.thread_time() < end:
    pass
sys.stdout.write("done\\n"); sys.stdout.flush()
sys.stdin.readline()
"""


class Roles:
    def classify_process(self, cmdline, *, is_driver):
        if is_driver:
            return Role("driver")
        return Role("burner" if "burner" in cmdline else "idler")


def child(tag: str) -> subprocess.Popen:
    proc = subprocess.Popen(
        [sys.executable, "-c", CHILD, tag], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    assert proc.stdout.readline() == "ready\n"
    return proc


def test_a_window_counts_the_cpu_time_each_role_used_inside_it():
    burner, idler = child("burner"), child("idler")
    window = RoleCpuWindow(os.getpid(), Roles())
    try:
        window.settle()
        window.start()
        burner.stdin.write("0.3\n")
        burner.stdin.flush()
        assert burner.stdout.readline() == "done\n"
        cpu = window.stop()
    finally:
        for proc in (burner, idler):
            proc.stdin.close()
            proc.wait(timeout=10)
        window.close()
    # /proc counts CPU time in ticks of 10 ms; the child also reads its stdin and writes a line in the window
    assert cpu["burner"] == pytest.approx(0.3, abs=0.04)
    assert cpu["idler"] == pytest.approx(0.0, abs=0.02)
    assert set(cpu) >= {"driver", "burner", "idler"}
