"""worker/runtime.py: a private runtime's Ray agents started minimal, and only while ``ray.init`` runs."""

import ray._private.utils as ray_utils

from rlbench.spec.fidelity import tune_differences
from rlbench.spec.model import TrialConfig
from rlbench.worker.runtime import minimal_agents


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


def _config(**kw) -> TrialConfig:
    return TrialConfig.model_validate({"environment": {"env": "CartPole-v1"}, **kw})


def test_the_plan_says_the_agents_are_minimal_where_they_are():
    said = lambda lines: any("start minimal" in line for line in lines)  # noqa: E731
    assert said(tune_differences(_config(), 2, 2))
    assert not said(tune_differences(_config(switch_off=["agents"]), 2, 2))
    assert not said(tune_differences(_config(), 2, 2, include_dashboard=True))
    assert not said(tune_differences(_config(), 2, 2, on_cluster=True))
    assert not said(tune_differences(_config(), 2, 2, ray_runtime=False))
