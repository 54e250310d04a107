"""A synthetic simulator whose per-step CPU cost, observation size and episode length are knobs.

Use it to emulate a heavy simulator: ``step_cost_us: 500`` makes every ``step`` (and ``reset``)
burn 500 microseconds of one core in a busy loop, so the env's share of an iteration is known in
advance (steps x cost).

It can also time itself (``self_timing_dir``): the seconds spent inside the bodies of ``step``
and ``reset``, summed per process, with the step and reset counts. That total is the exact known
answer for rlbench's ``env_step_s``, busy machine or not: a runner descheduled inside ``step``
makes both clocks run on alike, whereas steps x cost only holds on a quiet machine.
"""

from __future__ import annotations

import mmap
import os
import struct
import time
from pathlib import Path

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


#: Layout of a self-timing file: seconds inside step/reset (float64), steps (int64), resets (int64).
SELF_TIMING = struct.Struct("<dqq")


class SelfTiming:
    """One process's running totals, kept in a small memory-mapped file ``<dir>/<pid>.timing``.

    Every update is a write to shared memory (no system call, so it adds nothing measurable to the
    timed step), and the page belongs to the file: the totals survive the process being killed,
    as Ray kills env runners at shutdown. All envs of a process add to the same totals.
    """

    _by_process: dict[tuple[int, str], SelfTiming] = {}

    def __init__(self, directory: str):
        path = Path(directory) / f"{os.getpid()}.timing"
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o644)
        try:
            os.ftruncate(fd, SELF_TIMING.size)
            self._map = mmap.mmap(fd, SELF_TIMING.size)
        finally:
            os.close(fd)
        self.seconds, self.steps, self.resets = 0.0, 0, 0

    @classmethod
    def of_process(cls, directory: str) -> SelfTiming:
        """This process's totals for ``directory`` (a forked child gets its own file)."""
        key = (os.getpid(), str(directory))
        if key not in cls._by_process:
            cls._by_process[key] = cls(directory)
        return cls._by_process[key]

    def add(self, seconds: float, *, step: bool) -> None:
        """Count one timed step (or reset) of ``seconds``."""
        self.seconds += seconds
        if step:
            self.steps += 1
        else:
            self.resets += 1
        SELF_TIMING.pack_into(self._map, 0, self.seconds, self.steps, self.resets)


def read_self_timing(directory: str | Path) -> dict[int, tuple[float, int, int]]:
    """pid -> (seconds inside step/reset, steps, resets) of every process that timed itself there."""
    out = {}
    for path in Path(directory).glob("*.timing"):
        seconds, steps, resets = SELF_TIMING.unpack(path.read_bytes()[: SELF_TIMING.size])
        out[int(path.stem)] = (seconds, steps, resets)
    return out


class SyntheticEnv(gym.Env):
    """Reach the target action hidden in the observation, at a chosen CPU cost per step.

    env_config keys:
        step_cost_us: busy CPU time per step and per reset, in microseconds (default 0).
        obs_size: length of the float32 observation vector (default 16).
        episode_len: steps until the episode is truncated (default 200).
        num_actions: size of the discrete action space (default 4).
        self_timing_dir: a folder; when set, each process records the seconds it spent inside
            ``step``/``reset`` and their counts there (see :class:`SelfTiming`). Default: off.
        slow_worker_index: the env runner (RLlib's worker index, 1-based; 0 is the driver's local
            runner) whose envs are made slower, for straggler tests and studies. Default: none.
        slow_factor: that runner's step and reset cost is ``step_cost_us x slow_factor`` (default 1).

    ``config`` is RLlib's ``EnvContext`` when RLlib creates the env (a dict with ``worker_index``,
    ``num_workers`` and ``vector_index`` attributes); it is kept as given, never copied into a plain
    dict, so the env knows which runner it is in (a plain dict reads as worker 0).
    """

    def __init__(self, config: dict | None = None):
        config = config if config is not None else {}
        self.worker_index = int(getattr(config, "worker_index", 0))
        """RLlib's index of the env runner this env lives in (0: the driver's local runner)."""
        self.step_cost_us = float(config.get("step_cost_us", 0.0))
        slow_index = config.get("slow_worker_index")
        slow_factor = float(config.get("slow_factor", 1.0))
        if slow_factor <= 0:
            raise ValueError(f"SyntheticEnv needs slow_factor > 0; got {dict(config)}")
        if slow_index is not None and int(slow_index) == self.worker_index:
            self.step_cost_us *= slow_factor
        self.episode_len = int(config.get("episode_len", 200))
        obs_size = int(config.get("obs_size", 16))
        num_actions = int(config.get("num_actions", 4))
        if self.step_cost_us < 0 or self.episode_len < 1 or obs_size < 1 or num_actions < 2:
            raise ValueError(
                "SyntheticEnv needs step_cost_us >= 0, episode_len >= 1, obs_size >= 1, num_actions >= 2; "
                f"got {dict(config)}"
            )
        timing_dir = config.get("self_timing_dir")
        self._timing = SelfTiming.of_process(timing_dir) if timing_dir else None
        self.observation_space = gym.spaces.Box(-1.0, 1.0, (obs_size,), np.float32)
        self.action_space = gym.spaces.Discrete(num_actions)
        self._target = 0
        self._t = 0

    def _observe(self) -> np.ndarray:
        obs = self.np_random.uniform(-1.0, 1.0, self.observation_space.shape).astype(np.float32)
        obs[0] = self._target / max(1, self.action_space.n - 1)
        return obs

    def reset(self, *, seed=None, options=None):
        t = time.perf_counter()
        super().reset(seed=seed)
        burn_cpu(self.step_cost_us)
        self._t = 0
        self._target = int(self.np_random.integers(self.action_space.n))
        out = self._observe(), {}
        if self._timing is not None:
            self._timing.add(time.perf_counter() - t, step=False)
        return out

    def step(self, action):
        t = time.perf_counter()
        burn_cpu(self.step_cost_us)
        reward = 1.0 if int(action) == self._target else 0.0
        self._t += 1
        self._target = int(self.np_random.integers(self.action_space.n))
        out = self._observe(), reward, False, self._t >= self.episode_len, {}
        if self._timing is not None:
            self._timing.add(time.perf_counter() - t, step=True)
        return out
