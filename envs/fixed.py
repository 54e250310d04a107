"""An environment whose episode return is known in advance: the known answer for learning outcomes.

``FixedReturnEnv`` pays ``reward`` on every step whatever the action, and every episode lasts
exactly ``episode_len`` steps, so random play and perfect play both return
``reward x episode_len``, in every episode, from the first. RLlib's ``episode_return_mean`` is then
missing (NaN) until the first episode ends and exactly that value afterwards, so the iteration at
which a return target is reached follows from the batch size alone: with ``B`` env steps per
iteration, the first episode ends in iteration ``ceil(episode_len / B)``. A target above the
return is never reached.

With ``return_step`` the return still ignores the actions but grows by that much per episode
(episode ``k`` of an env copy, counted from 1, returns ``reward x episode_len + return_step x
(k - 1)``): how RLlib averages returns over episodes and iterations can then be read off exactly.
"""

from __future__ import annotations

import gymnasium as gym
import numpy as np


class FixedReturnEnv(gym.Env):
    """Reward ``reward`` per step, whatever the action; episodes of exactly ``episode_len`` steps.

    env_config keys: ``episode_len`` (default 100), ``reward`` (default 1.0), ``return_step``
    (default 0: added to the last reward of episode k as ``return_step x (k - 1)``), ``obs_size``
    (default 4; the observation is all zeros).
    """

    def __init__(self, config: dict | None = None):
        config = dict(config or {})
        self.episode_len = int(config.get("episode_len", 100))
        self.reward = float(config.get("reward", 1.0))
        self.return_step = float(config.get("return_step", 0.0))
        self._episodes = 0
        obs_size = int(config.get("obs_size", 4))
        self.observation_space = gym.spaces.Box(-1.0, 1.0, (obs_size,), np.float32)
        self.action_space = gym.spaces.Discrete(2)
        self._obs = np.zeros(obs_size, np.float32)
        self._t = 0

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self._t = 0
        self._episodes += 1
        return self._obs.copy(), {}

    def step(self, action):
        self._t += 1
        done = self._t >= self.episode_len
        reward = self.reward + (self.return_step * (self._episodes - 1) if done else 0.0)
        return self._obs.copy(), reward, False, done, {}
