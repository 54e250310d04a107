"""The workload catalogue (configs/workloads/, issue 37) cannot rot: every config loads and plans as ``--dry-run``
does, says what it is for, its stop rule and its published target, and each env it names is made through
rlbench's adapter seam and stepped once (no Ray: the plain adapter makes envs as the RLlib one does)."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import REPO

from rlbench.adapters import get_adapter
from rlbench.measure.machine import MachineInfo
from rlbench.planning.plan import plan_trials
from rlbench.spec.load import load_spec

WORKLOADS = sorted((REPO / "configs" / "workloads").glob("*.yaml"))
TWO_CORES = MachineInfo(
    hostname="test",
    cpu_model="fake",
    logical_cores=2,
    physical_cores=2,
    usable_cores=[0, 1],
    memory_bytes=2**34,
    gpus=[],
)


def test_the_catalogue_holds_each_family():
    assert {w.stem for w in WORKLOADS} >= {
        "cartpole_ppo",
        "pong_ppo",
        "halfcheetah_ppo",
        "halfcheetah_sac",
        "lunarlander_dqn",
        "synthetic_classes",
    }


@pytest.mark.parametrize("config", WORKLOADS, ids=[w.stem for w in WORKLOADS])
def test_each_workload_plans_and_its_env_steps(config):
    header = config.read_text().split("\nname:", 1)[0]
    for said in ("rlbench sweep configs/workloads/", "Published target", "Stop rule on 2 cores"):
        assert said in header, (config.name, said)
    loaded = load_spec(config)  # the env checked as at load: a missing extra would fail here, naming it
    plans = plan_trials(loaded, TWO_CORES, [0])
    assert plans and all(p.skip_reason is None for p in plans), [p.skip_reason for p in plans]
    assert all(p.stop_iterations and p.stop_iterations > p.warmup_iterations for p in plans)
    plain = get_adapter("plain")
    envs = {(p.config.environment.env, repr(sorted(p.config.environment.env_config.items()))): p for p in plans}
    for plan in envs.values():
        env = plain.make_env(plan.config.environment.env, dict(plan.config.environment.env_config))
        try:
            obs, _ = env.reset(seed=0)
            assert env.observation_space.contains(obs), (config.name, np.shape(obs))
            obs, reward, terminated, truncated, _ = env.step(env.action_space.sample())
            assert env.observation_space.contains(obs) and np.isfinite(reward)
        finally:
            env.close()


def test_pong_is_rllibs_preprocessed_game():
    """envs.atari:AtariEnv is RLlib's wrap_atari_for_new_api_stack around ALE/Pong-v5 with the frames stacked:
    64x64x4 in [-1, 1], Pong's 6 actions."""
    env = get_adapter("plain").make_env("envs.atari:AtariEnv", {"game": "ALE/Pong-v5"})
    try:
        assert env.observation_space.shape == (64, 64, 4) and env.action_space.n == 6
        assert (env.observation_space.low.min(), env.observation_space.high.max()) == (-1.0, 1.0)
    finally:
        env.close()
    with pytest.raises(ValueError, match="not an ALE id"):
        get_adapter("plain").make_env("envs.atari:AtariEnv", {"game": "Pong-v5"})


def test_a_gymnasium_module_id_is_made_as_an_id_not_as_a_class():
    """``ale_py:ALE/Pong-v5`` (RLlib's spelling: gymnasium imports ale_py, which registers the id) is an id with a
    module, not ``package.module:Class``: made by gymnasium, handed to RLlib as-is."""
    from rlbench.adapters.envs import is_import_path
    from rlbench.adapters.rllib.config import resolve_env

    assert is_import_path("envs.atari:AtariEnv") and not is_import_path("ale_py:ALE/Pong-v5")
    assert resolve_env("ale_py:ALE/Pong-v5") == "ale_py:ALE/Pong-v5"
    env = get_adapter("plain").make_env("ale_py:ALE/Pong-v5", {})
    try:
        assert env.spec.id == "ALE/Pong-v5" and env.action_space.n == 6
    finally:
        env.close()
