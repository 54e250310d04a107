"""The plain adapter's trainer: step the env with random actions, an iteration at a time.

A planted learner, for known answers (the ceiling of docs/ANALYSIS.md, "Why sampling is slow"): ``env_config``'s
``plain_learn_cost_us`` (default 0: nothing learns) makes each iteration's learn phase burn that many microseconds
of this thread's CPU per env step sampled, after the sampling, as a synchronous learner would; the key is taken out
of the config the env is made with.
"""

from __future__ import annotations

import math
import time
from typing import TYPE_CHECKING, Any

from rlbench.adapters.envs import make_env
from rlbench.adapters.timings import IterationTimings

if TYPE_CHECKING:
    from rlbench.adapters.base import TrialConfig


#: The ``env_config`` key of the planted learner's cost (CPU microseconds per env step sampled).
LEARN_COST_KEY = "plain_learn_cost_us"


def _burn_cpu_us(duration_us: float) -> None:
    """Use ``duration_us`` microseconds of this thread's CPU in a busy loop (a core shared with another process
    stretches it in wall time, as real work)."""
    if duration_us <= 0:
        return
    deadline_ns = time.thread_time_ns() + int(duration_us * 1000)
    while time.thread_time_ns() < deadline_ns:
        pass


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
        self.learn_cost_us = float(config.environment.env_config.get(LEARN_COST_KEY, 0.0))
        """CPU microseconds the planted learner burns per env step sampled (0: it learns nothing)."""

    def infeasible_reason(self) -> str | None:
        c = self.config
        if self.learn_cost_us < 0:
            return f"env_config.{LEARN_COST_KEY} is {self.learn_cost_us:g}: a planted learner's cost is 0 or more"
        if c.env_runners.num_env_runners or c.learners.num_learners:
            return (
                "framework plain runs everything in the trial process: it has no env runners or learners "
                f"(num_env_runners={c.env_runners.num_env_runners}, num_learners={c.learners.num_learners})"
            )
        return None

    def build(self) -> None:
        env_config = {k: v for k, v in self.config.environment.env_config.items() if k != LEARN_COST_KEY}
        self.env = make_env(self.config.environment.env, env_config)
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
        t1 = time.perf_counter()
        _burn_cpu_us(self.learn_cost_us * self.steps_per_iteration)
        learn_s = time.perf_counter() - t1
        self._last = {
            "sample_s": sample_s,
            "env_step_s": step_s,
            "inference_s": act_s,
            "sample_other_s": sample_s - step_s - act_s,
            "learn_s": learn_s,
            "sgd_s": learn_s,
        }

    def iteration(self) -> IterationTimings:
        mean = sum(self._returns) / len(self._returns) if self._returns else math.nan
        return IterationTimings(
            env_steps_sampled=self.steps_per_iteration,
            **self._last,
            learner_connector_s=0.0,
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
