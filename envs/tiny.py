"""A tiny, fast environment for smoke runs: the cost of a step is close to nothing."""

from __future__ import annotations

import gymnasium as gym
import numpy as np


class TinyEnv(gym.Env):
    """Guess the sign of a random number: reward 1 for the right action, 0 otherwise.

    env_config keys: ``episode_len`` (steps per episode, default 20), ``obs_size`` (default 4),
    ``env_seed`` (default None: the observations follow the seeds RLlib passes to ``reset``; an int:
    they come from one generator seeded with it when the env is made, and RLlib's seeds are
    ignored, so two trials see the same observations and differ only by their policy's randomness).
    ``config`` is kept as RLlib gives it (its ``EnvContext``: ``worker_index`` and friends).
    """

    def __init__(self, config: dict | None = None):
        config = config if config is not None else {}
        self.worker_index = int(getattr(config, "worker_index", 0))
        """RLlib's index of the env runner this env lives in (0: the driver's local runner)."""
        self.episode_len = int(config.get("episode_len", 20))
        obs_size = int(config.get("obs_size", 4))
        self.observation_space = gym.spaces.Box(-1.0, 1.0, (obs_size,), np.float32)
        self.action_space = gym.spaces.Discrete(2)
        self._obs = np.zeros(obs_size, np.float32)
        self._t = 0
        self._env_seed = config.get("env_seed")
        if self._env_seed is not None:
            super().reset(seed=int(self._env_seed))

    def reset(self, *, seed=None, options=None):
        super().reset(seed=None if self._env_seed is not None else seed)
        self._t = 0
        self._obs = self.np_random.uniform(-1.0, 1.0, self.observation_space.shape).astype(np.float32)
        return self._obs, {}

    def step(self, action):
        reward = 1.0 if (self._obs[0] > 0) == (int(action) == 1) else 0.0
        self._t += 1
        self._obs = self.np_random.uniform(-1.0, 1.0, self.observation_space.shape).astype(np.float32)
        return self._obs, reward, False, self._t >= self.episode_len, {}
