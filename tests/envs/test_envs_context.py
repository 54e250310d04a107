"""Envs keep RLlib's EnvContext: they know which env runner they live in; SyntheticEnv can slow one down."""

from __future__ import annotations

import time

import pytest

from envs.faulty import FaultyEnv
from envs.synthetic import SyntheticEnv
from envs.tiny import TinyEnv


class _EnvContext(dict):
    """Shaped like RLlib's EnvContext (a dict with attributes); the real one is checked end to end."""

    def __init__(self, config: dict, worker_index: int, num_workers: int, vector_index: int = 0):
        super().__init__(config)
        self.worker_index, self.num_workers, self.vector_index = worker_index, num_workers, vector_index


@pytest.mark.parametrize("cls", [SyntheticEnv, TinyEnv, FaultyEnv])
def test_envs_know_their_runner(cls):
    assert cls(_EnvContext({"episode_len": 5}, worker_index=3, num_workers=4)).worker_index == 3
    assert cls({"episode_len": 5}).worker_index == 0  # a plain dict: the driver's local runner
    assert cls(None).worker_index == 0


def _cpu_per_step_s(env: SyntheticEnv, steps: int) -> float:
    env.reset(seed=0)
    t = time.thread_time()
    for _ in range(steps):
        env.step(0)
    return (time.thread_time() - t) / steps


def test_slow_worker_costs_slow_factor_times_the_cpu():
    config = {"step_cost_us": 2000, "slow_worker_index": 2, "slow_factor": 3, "episode_len": 1000}
    normal = SyntheticEnv(_EnvContext(config, worker_index=1, num_workers=2))
    slow = SyntheticEnv(_EnvContext(config, worker_index=2, num_workers=2))
    assert (normal.step_cost_us, slow.step_cost_us) == (2000, 6000)
    # CPU time, not wall time: the spin watches the thread's CPU clock, so load cannot move this
    ratio = _cpu_per_step_s(slow, 20) / _cpu_per_step_s(normal, 20)
    assert ratio == pytest.approx(3.0, rel=0.05)


def test_slow_factor_must_be_positive():
    with pytest.raises(ValueError, match="slow_factor > 0"):
        SyntheticEnv({"slow_factor": 0})
