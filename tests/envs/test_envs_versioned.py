"""envs.versioned: the per-step cost comes from an installed package's function (here a module the test
writes), added to SyntheticEnv's own; a bad ``cost_from`` is refused with the fix."""

from __future__ import annotations

import sys

import pytest

from envs.versioned import VersionedCostEnv


@pytest.fixture
def package(tmp_path, monkeypatch):
    (tmp_path / "costpkg.py").write_text("def step_cost_us():\n    return 250\n\ndef negative():\n    return -1\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    yield
    sys.modules.pop("costpkg", None)


def test_the_packages_cost_is_added_to_each_step(package):
    env = VersionedCostEnv({"cost_from": "costpkg:step_cost_us", "step_cost_us": 10})
    assert env.cost_from_us == 250 and env.step_cost_us == 260
    env.reset(seed=0)
    assert env.step(0)[0].shape == env.observation_space.shape


def test_a_bad_cost_from_is_refused(package):
    with pytest.raises(ValueError, match="needs cost_from: 'module:function'"):
        VersionedCostEnv({})
    with pytest.raises(ValueError, match="returned -1.0, a negative cost"):
        VersionedCostEnv({"cost_from": "costpkg:negative"})
