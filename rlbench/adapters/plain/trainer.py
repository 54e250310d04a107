"""The plain adapter's trainer: step the env with random actions, an iteration at a time."""

from __future__ import annotations

import math
import time
from typing import TYPE_CHECKING, Any

from rlbench.adapters.envs import make_env
from rlbench.adapters.timings import IterationTimings

if TYPE_CHECKING:
    from rlbench.adapters.base import TrialConfig


class PlainTrainer:
    """One env, stepped ``train_batch_size_per_learner`` times per :meth:`train` with random actions."""

    def __init__(self, config: TrialConfig, *, seed: int | None, steps_per_iteration: int):
        self.config = config
        self.seed = seed
        self.steps_per_iteration = steps_per_iteration
        self.env: Any = None
        self._last: dict[str, Any] = {}
        self._returns: list[float] = []
        self._episode_return = 0.0

    def infeasible_reason(self) -> str | None:
        c = self.config
        if c.env_runners.num_env_runners or c.learners.num_learners:
            return (
                "framework plain runs everything in the trial process: it has no env runners or learners "
                f"(num_env_runners={c.env_runners.num_env_runners}, num_learners={c.learners.num_learners})"
            )
        return None

    def build(self) -> None:
        self.env = make_env(self.config.environment.env, self.config.environment.env_config)
        self.env.action_space.seed(self.seed)
        self.env.reset(seed=self.seed)

    def set_threads(self, threads: dict[str, int]) -> dict[str, int | None]:
        return {"driver": threads.get("driver"), "learner": None, "env_runner": None}

    def facts(self) -> dict[str, Any]:
        return {"weight_receivers": 0}

    def train(self) -> None:
        env, step_s, act_s = self.env, 0.0, 0.0
        self._returns = []
        t0 = time.perf_counter()
        for _ in range(self.steps_per_iteration):
            t = time.perf_counter()
            action = env.action_space.sample()
            t1 = time.perf_counter()
            _, reward, terminated, truncated, _ = env.step(action)
            step_s += time.perf_counter() - t1
            act_s += t1 - t
            self._episode_return += float(reward)
            if terminated or truncated:
                self._returns.append(self._episode_return)
                self._episode_return = 0.0
                env.reset()
        sample_s = time.perf_counter() - t0
        self._last = {
            "sample_s": sample_s,
            "env_step_s": step_s,
            "inference_s": act_s,
            "sample_other_s": sample_s - step_s - act_s,
        }

    def iteration(self) -> IterationTimings:
        mean = sum(self._returns) / len(self._returns) if self._returns else math.nan
        return IterationTimings(
            env_steps_sampled=self.steps_per_iteration,
            **self._last,
            learner_connector_s=0.0,
            sgd_s=0.0,
            weight_sync_s=0.0,
            sync_bytes=0,
            env_steps_trained=0,
            episode_return_mean=mean,
            training_steps=1,
        )

    def metric(self, name: str) -> float | None:
        if name == "num_episodes":
            return float(len(self._returns))
        if name == "episode_return_mean" and self._returns:
            return sum(self._returns) / len(self._returns)
        return None

    def stop(self) -> None:
        if self.env is not None:
            env, self.env = self.env, None
            env.close()
