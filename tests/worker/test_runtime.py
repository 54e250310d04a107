"""worker/runtime.py: a private runtime's Ray agents started minimal and its monitors not at all, only while
``ray.init`` runs."""

import os
import subprocess
import sys
from pathlib import Path
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


def _plan(modules, address=None, off=(), idle=0):
    return SimpleNamespace(
        worker_preload_modules=modules, ray_address=address, switched_off=list(off), idle_prestart_workers=idle
    )


def test_a_plan_with_worker_modules_puts_them_in_the_runtimes_environment(monkeypatch):
    from rlbench.worker.runtime import PRELOAD_ENV, set_worker_env

    monkeypatch.delenv(PRELOAD_ENV, raising=False)
    set_worker_env(_plan(["a.b", "c"]))
    assert os.environ[PRELOAD_ENV] == "a.b,c"
    monkeypatch.setenv(PRELOAD_ENV, "mine")  # the user's own value is kept
    set_worker_env(_plan(["a.b"]))
    assert os.environ[PRELOAD_ENV] == "mine"


def test_no_worker_modules_on_a_cluster_switched_off_or_none_planned(monkeypatch):
    from rlbench.worker.runtime import PRELOAD_ENV, set_worker_env

    for plan in (_plan(["a"], address="10.0.0.1:6379"), _plan(["a"], off=["preload"]), _plan([])):
        monkeypatch.delenv(PRELOAD_ENV, raising=False)
        set_worker_env(plan)
        assert PRELOAD_ENV not in os.environ


def test_a_runtime_with_idle_prestarted_workers_starts_none_ahead(monkeypatch):
    from rlbench.worker.runtime import PRESTART_ENV, set_worker_env

    monkeypatch.delenv(PRESTART_ENV, raising=False)
    set_worker_env(_plan([], idle=1))
    assert os.environ[PRESTART_ENV] == "0"
    monkeypatch.setenv(PRESTART_ENV, "1")  # the user's own value is kept
    set_worker_env(_plan([], idle=1))
    assert os.environ[PRESTART_ENV] == "1"
    for plan in (_plan([]), _plan([], address="10.0.0.1:6379", idle=3), _plan([], off=["on_demand_workers"], idle=1)):
        monkeypatch.delenv(PRESTART_ENV, raising=False)
        set_worker_env(plan)
        assert PRESTART_ENV not in os.environ


def test_the_installed_rays_raylet_knows_the_prestart_setting():
    """The fact behind PRESTART_ENV: a ``RAY_<name>`` variable reaches the raylet's config of that name."""
    raylet = Path(ray_utils.__file__).parents[1] / "core/src/ray/raylet/raylet"
    assert b"prestart_worker_first_driver" in raylet.read_bytes()


def test_the_installed_rays_workers_take_the_preload_setting():
    """The fact behind PRELOAD_ENV, on the installed Ray: the raylet knows the setting, and a worker imports what
    it is given (``default_worker.py``'s ``--worker-preload-modules``)."""
    import ray._private.workers.default_worker as default_worker

    assert "--worker-preload-modules" in Path(default_worker.__file__).read_text()
    raylet = Path(ray_utils.__file__).parents[1] / "_raylet.so"
    assert b"preload_python_modules" in raylet.read_bytes()


def test_without_monitors_gives_a_head_nodes_params_rays_own_switches_inside_only(monkeypatch):
    """What ray.init's head node is given inside (Ray's ``include_log_monitor`` and ``no_monitor``); a node that is
    not a head, a switched-off trial and the time after are left as Ray has them, also after a failed init."""
    import ray._private.node as ray_node

    from rlbench.worker.runtime import without_monitors

    seen = []
    monkeypatch.setattr(ray_node.Node, "__init__", lambda self, params, head=False, **kw: seen.append((head, params)))
    recorder = ray_node.Node.__init__

    def params():
        return SimpleNamespace(include_log_monitor=None, no_monitor=False)

    with without_monitors(True) as monitors:
        ray_node.Node(params(), head=True)
        ray_node.Node(params(), head=False)
    assert monitors == "off" and ray_node.Node.__init__ is recorder
    assert [(h, p.include_log_monitor, p.no_monitor) for h, p in seen] == [(True, False, True), (False, None, False)]
    seen.clear()
    with without_monitors(False) as monitors:
        ray_node.Node(params(), head=True)
    assert monitors == "on" and (seen[0][1].include_log_monitor, seen[0][1].no_monitor) == (None, False)
    try:
        with without_monitors(True):
            raise RuntimeError("ray.init failed")
    except RuntimeError:
        pass
    assert ray_node.Node.__init__ is recorder
