"""worker/runtime.py: a private runtime's Ray agents started minimal, and only while ``ray.init`` runs."""

import subprocess
import sys
from types import SimpleNamespace

import ray._private.utils as ray_utils

from rlbench.worker.runtime import minimal_agents, stop_autoscaler_monitor


def test_minimal_agents_answers_missing_inside_only():
    probe = ray_utils.get_dashboard_dependency_error
    with minimal_agents(True) as agents:
        assert agents == "minimal"
        assert isinstance(ray_utils.get_dashboard_dependency_error(), ImportError)
    assert ray_utils.get_dashboard_dependency_error is probe


def test_minimal_agents_off_keeps_rays_choice():
    probe = ray_utils.get_dashboard_dependency_error
    with minimal_agents(False) as agents:
        assert ray_utils.get_dashboard_dependency_error is probe
    # the test extra installs ray[serve], so Ray's own probe finds the packages: full; without them, minimal
    assert agents == ("full" if probe() is None else "minimal")


def test_minimal_agents_restores_after_a_failed_init():
    probe = ray_utils.get_dashboard_dependency_error
    try:
        with minimal_agents(True):
            raise RuntimeError("ray.init failed")
    except RuntimeError:
        pass
    assert ray_utils.get_dashboard_dependency_error is probe


def test_the_autoscaler_monitor_is_killed_and_reaped_and_nothing_else():
    monitor = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    raylet = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        node = SimpleNamespace(
            all_processes={"monitor": [SimpleNamespace(process=monitor)], "raylet": [SimpleNamespace(process=raylet)]}
        )
        assert stop_autoscaler_monitor(node) == 1
        assert monitor.returncode is not None and raylet.poll() is None  # reaped; Ray's own left to ray.shutdown
        assert stop_autoscaler_monitor(node) == 0  # already gone
    finally:
        raylet.kill()
        raylet.wait()
    assert stop_autoscaler_monitor(None) == 0 and stop_autoscaler_monitor(SimpleNamespace()) == 0
