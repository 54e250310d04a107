"""FixedReturnEnv returns reward x episode_len per episode, for any actions; TinyEnv's env_seed fixes its
observations whatever seed RLlib passes."""

from __future__ import annotations

import numpy as np

from envs.fixed import FixedReturnEnv
from envs.tiny import TinyEnv


def _returns(env, actions, episodes: int) -> list[float]:
    out, total, i = [], 0.0, 0
    env.reset(seed=123)
    while len(out) < episodes:
        _, reward, terminated, truncated, _ = env.step(actions[i % len(actions)])
        i += 1
        total += reward
        if terminated or truncated:
            out.append(total)
            total = 0.0
            env.reset()
    return out


def test_random_and_constant_play_give_the_same_known_return():
    env = FixedReturnEnv({"episode_len": 7, "reward": 0.5})
    rng = np.random.default_rng(0)
    assert _returns(env, list(rng.integers(0, 2, 100)), 5) == [3.5] * 5
    assert _returns(env, [0], 5) == [3.5] * 5
    assert _returns(env, [1], 5) == [3.5] * 5


def test_tiny_env_seed_ignores_the_seeds_rllib_passes():
    a, b = TinyEnv({"env_seed": 7}), TinyEnv({"env_seed": 7})
    obs_a, _ = a.reset(seed=1)
    obs_b, _ = b.reset(seed=2)
    assert np.array_equal(obs_a, obs_b)
    free_a, free_b = TinyEnv({}), TinyEnv({})
    assert not np.array_equal(free_a.reset(seed=1)[0], free_b.reset(seed=2)[0])


def test_return_step_adds_to_each_later_episode():
    env = FixedReturnEnv({"episode_len": 4, "return_step": 10})
    assert _returns(env, [0, 1], 3) == [4.0, 14.0, 24.0]
