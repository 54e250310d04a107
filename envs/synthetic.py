"""A synthetic simulator whose per-step CPU cost, observation size and episode length are knobs.

Use it to emulate a heavy simulator: ``step_cost_us: 500`` makes every ``step`` (and ``reset``)
burn 500 microseconds of one core in a busy loop, so the env's share of an iteration is known in
advance (steps x cost).
"""

from __future__ import annotations

import time

import gymnasium as gym
import numpy as np


def burn_cpu(duration_us: float) -> None:
    """Use ``duration_us`` microseconds of CPU time in a busy loop.

    The loop watches this thread's CPU clock, not the wall clock, so the cost is real work: a
    process that shares its core takes longer in wall time, as a real simulator would, instead of
    finishing its step while it was not even running (which made oversubscribed env runners look
    faster than the cores allow).
    """
    if duration_us <= 0:
        return
    deadline_ns = time.thread_time_ns() + int(duration_us * 1000)
    while time.thread_time_ns() < deadline_ns:
        pass


class SyntheticEnv(gym.Env):
    """Reach the target action hidden in the observation, at a chosen CPU cost per step.

    env_config keys:
        step_cost_us: busy CPU time per step and per reset, in microseconds (default 0).
        obs_size: length of the float32 observation vector (default 16).
        episode_len: steps until the episode is truncated (default 200).
        num_actions: size of the discrete action space (default 4).
    """

    def __init__(self, config: dict | None = None):
        config = dict(config or {})
        self.step_cost_us = float(config.get("step_cost_us", 0.0))
        self.episode_len = int(config.get("episode_len", 200))
        obs_size = int(config.get("obs_size", 16))
        num_actions = int(config.get("num_actions", 4))
        if self.step_cost_us < 0 or self.episode_len < 1 or obs_size < 1 or num_actions < 2:
            raise ValueError(
                "SyntheticEnv needs step_cost_us >= 0, episode_len >= 1, obs_size >= 1, num_actions >= 2; "
                f"got {config}"
            )
        self.observation_space = gym.spaces.Box(-1.0, 1.0, (obs_size,), np.float32)
        self.action_space = gym.spaces.Discrete(num_actions)
        self._target = 0
        self._t = 0

    def _observe(self) -> np.ndarray:
        obs = self.np_random.uniform(-1.0, 1.0, self.observation_space.shape).astype(np.float32)
        obs[0] = self._target / max(1, self.action_space.n - 1)
        return obs

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        burn_cpu(self.step_cost_us)
        self._t = 0
        self._target = int(self.np_random.integers(self.action_space.n))
        return self._observe(), {}

    def step(self, action):
        burn_cpu(self.step_cost_us)
        reward = 1.0 if int(action) == self._target else 0.0
        self._t += 1
        self._target = int(self.np_random.integers(self.action_space.n))
        return self._observe(), reward, False, self._t >= self.episode_len, {}
