"""The sampling split: the env/inference timing callback and the arithmetic that splits sample_s."""

from __future__ import annotations

import functools
import os
import time

import pytest

from rlbench.adapters.rllib import timing
from rlbench.adapters.rllib.results import sampling_split
from rlbench.adapters.rllib.timing import (
    DRIVER_SUM_TIMERS,
    ENV_S_KEY,
    INFERENCE_S_KEY,
    RUNNER_KEY,
    RUNNER_SUMS,
    PhaseTimingCallback,
)


def test_split_divides_runner_totals_by_runners():
    # 2 runners spent 0.8 s in the env and 0.2 s in inference together; sampling took 0.6 s wall
    split = sampling_split(0.6, 0.8, 0.2, sampling_runners=2)
    assert split == pytest.approx({"env_step_s": 0.4, "inference_s": 0.1, "sample_other_s": 0.1})


def test_split_one_runner_is_the_totals():
    split = sampling_split(1.0, 0.7, 0.1, sampling_runners=1)
    assert split == pytest.approx({"env_step_s": 0.7, "inference_s": 0.1, "sample_other_s": 0.2})


class _Clock:
    """The timing module's clock in a test (it reads ``time.perf_counter`` and ``time.thread_time``): it
    moves only when a fake env or module call says how long it took, so the callback's sums are known
    answers whatever the load. (Real sleeps with a slack once failed under load: a preemption between
    the callback's clock read and the fake's put 8.3 ms on a 5 ms slack.)"""

    def __init__(self):
        self.now_s = 0.0

    def perf_counter(self):
        return self.now_s

    def thread_time(self):
        return 0.0

    def sleep(self, seconds):
        self.now_s += seconds


class _Env:
    def __init__(self, clock=time):
        self.clock = clock  # the time module (real sleeps) unless a test gives a _Clock

    def step(self, action):
        self.clock.sleep(0.01)
        return action

    def reset(self, seed=None):
        self.clock.sleep(0.02)
        return seed


class _Module:
    def __init__(self, clock=time):
        self.clock = clock

    def forward_exploration(self, batch, t=0):
        self.clock.sleep(0.005)
        return batch

    def forward_inference(self, batch):
        self.clock.sleep(0.005)
        return batch


class _Runner:
    def __init__(self, env=None):
        self.env = env or _Env()
        self.module = None
        self.metrics = _Logger()

    def sample(self, num_timesteps=None):
        time.sleep(0.01)
        return ["episode"] * (num_timesteps or 1)


class _Logger:
    def __init__(self):
        self.logged: list[tuple] = []

    def log_value(self, key, value, reduce):
        self.logged.append((key, value, reduce))


def test_callback_times_env_and_forward_and_logs_sums_per_sample_call(monkeypatch):
    clock = _Clock()
    monkeypatch.setattr(timing, "time", clock)
    cb, runner, logger = PhaseTimingCallback(), _Runner(_Env(clock)), _Logger()
    cb.on_environment_created(env_runner=runner, metrics_logger=logger, env=runner.env, env_context={})
    runner.module = _Module(clock)  # RLlib builds the module after the env, before the first episode
    cb.on_episode_created(env_runner=runner, episode=None)
    cb.on_episode_created(env_runner=runner, episode=None)  # a second episode does not wrap twice
    assert runner.env.reset(seed=3) == 3  # results pass through
    assert runner.env.step(1) == 1
    runner.env.step(2)
    assert runner.module.forward_exploration("b", t=5) == "b"
    runner.module.forward_inference("b")
    cb.on_sample_end(env_runner=runner, metrics_logger=logger, samples=[])
    (k1, env_s, r1), (k2, inf_s, r2) = logger.logged[:2]
    assert (k1, r1, k2, r2) == (ENV_S_KEY, "sum", INFERENCE_S_KEY, "sum")
    assert env_s == pytest.approx(0.04)  # 0.02 reset + 2 x 0.01 step, each timed once
    assert inf_s == pytest.approx(0.01)  # 2 x 0.005
    # the totals restart for the next sample() call
    runner.env.step(3)
    logger.logged.clear()
    cb.on_sample_end(env_runner=runner, metrics_logger=logger, samples=[])
    assert logger.logged[0][1] == pytest.approx(0.01)
    assert logger.logged[1][1] == 0.0


def test_exception_in_env_step_is_still_timed_and_raised():
    cb, runner, logger = PhaseTimingCallback(), _Runner(), _Logger()

    def bad_step(action):
        time.sleep(0.01)
        raise RuntimeError("env broke")

    runner.env.step = bad_step
    cb.on_environment_created(env_runner=runner, metrics_logger=logger, env=runner.env, env_context={})
    with pytest.raises(RuntimeError, match="env broke"):
        runner.env.step(0)
    cb.on_sample_end(env_runner=runner, metrics_logger=logger, samples=[])
    assert logger.logged[0][1] >= 0.01


class _Episode:
    def __init__(self, steps: int):
        self.steps = steps

    def __len__(self) -> int:
        return self.steps


def _decorated(fn):
    """Like RLlib's decorators on ``SingleAgentEnvRunner.sample``: functools.wraps sets __wrapped__."""

    @functools.wraps(fn)
    def inner(*args, **kwargs):
        return fn(*args, **kwargs)

    return inner


class _SamplingRunner(_Runner):
    """A runner whose ``sample`` RLlib calls through the instance (``foreach_env_runner``'s lambda)."""

    worker_index = 2

    def __init__(self, cb, logger):
        super().__init__()
        self.cb, self.logger = cb, logger

    @_decorated
    def sample(self, steps: int):
        for _ in range(steps):
            self.env.step(0)
        t = time.thread_time()
        while time.thread_time() - t < 0.02:  # 20 ms of this thread's CPU
            pass
        self.cb.on_sample_end(env_runner=self, metrics_logger=self.logger, samples=[_Episode(steps - 1), _Episode(1)])
        return steps


def _runner_values(logger: _Logger, index: str) -> dict:
    return {k[-1]: (v, r) for k, v, r in logger.logged if k[:3] == (*RUNNER_KEY, index)}


def test_callback_logs_each_runner_apart_with_its_sample_wall_and_cpu_time():
    cb, logger = PhaseTimingCallback(), _Logger()
    runner = _SamplingRunner(cb, logger)
    cb.on_environment_created(env_runner=runner, metrics_logger=logger, env=runner.env, env_context={})
    runner.env = _Env()  # RLlib's make_env again (a re-created env): sample must not be wrapped twice
    cb.on_environment_created(env_runner=runner, metrics_logger=logger, env=runner.env, env_context={})
    assert runner.sample.__wrapped__.__self__ is runner
    assert runner.sample(3) == 3
    got = _runner_values(logger, "2")
    assert set(got) == {*RUNNER_SUMS, "pid"}
    assert got["env_steps"] == (3, "sum")  # the episodes' lengths: what RLlib counts as sampled
    assert got["pid"] == (os.getpid(), "max")
    assert all(reduce == "sum" for name, (_, reduce) in got.items() if name != "pid")
    assert got["env_step_s"][0] == logger.logged[0][1]  # the runner's own copy of the summed total
    assert got["sample_cpu_s"][0] >= 0.02  # the CPU the sampling thread used inside sample()
    assert got["env_step_cpu_s"][0] < 0.01  # the env only slept: wall time, next to no CPU
    assert got["sample_s"][0] >= got["env_step_s"][0] + 0.02  # wall: env steps, then the 20 ms spin


def test_callback_leaves_sample_times_out_when_sample_was_not_wrapped():
    cb, logger = PhaseTimingCallback(), _Logger()
    runner = _SamplingRunner(cb, logger)
    cb.on_sample_end(env_runner=runner, metrics_logger=logger, samples=[_Episode(4)])
    got = _runner_values(logger, "2")
    assert "sample_s" not in got and "sample_cpu_s" not in got  # missing, never a made-up 0
    assert got["env_steps"] == (4, "sum")


def test_driver_timers_are_registered_as_sums_before_rllib_logs_them():
    class Algo:
        metrics = _Logger()

    PhaseTimingCallback().on_algorithm_init(algorithm=Algo(), metrics_logger=Algo.metrics)
    assert Algo.metrics.logged == [(key, 0.0, "sum") for key in DRIVER_SUM_TIMERS]
    assert ("timers", "learner_update_timer") in DRIVER_SUM_TIMERS
    assert {("timers", "env_runner_sampling_timer"), ("timers", "sample")} <= set(DRIVER_SUM_TIMERS)
