"""Exact time inside the env and inside the policy forward pass, per env runner and iteration.

RLlib's own ``env_step_timer`` / ``rlmodule_inference_timer`` are per-call averages, averaged
again across env runners, and a vector env's ``step`` call advances several sub-envs (and resets
the finished ones inside it, gymnasium's autoreset), so no product of those averages gives the
total. This RLlib callback measures the totals instead. In each env runner it wraps, on the
instance only:

- the env runner's (vector) env ``step`` and ``reset``: exactly what RLlib's ``env_step_timer`` and
  ``env_reset_timer`` time, autoresets included;
- the RLModule's ``forward_exploration`` and ``forward_inference``: exactly what RLlib's
  ``rlmodule_inference_timer`` times;

adds up ``time.perf_counter`` differences and, at the end of every ``sample()`` call, logs the
two totals with ``reduce="sum"``. RLlib sums those across env runners and clears them on every
reduce, so ``result["env_runners"]["rlbench"]["env_step_s"]`` is the seconds all env runners
together spent inside the env during that iteration (likewise ``inference_s``).

Per env runner it also logs, under a key of its own (``rlbench/runner/<worker index>/...``, so
RLlib's sum across runners leaves each runner's values apart): the same two totals, the CPU time
of its thread inside the env (``env_step_cpu_s``: what the env itself costs, which a busy machine
cannot inflate), the env steps
it sampled, the wall time of its ``sample()`` calls (``sample_s``: it wraps the runner's ``sample``
on the instance, which is what RLlib's ``synchronous_parallel_sample`` calls through
``foreach_env_runner``) and the CPU time of the sampling thread inside them (``sample_cpu_s``,
``time.thread_time``: a runner that waits for a core does not accrue it, so it compares runners
fairly on a busy machine), and its pid (``reduce="max"``: a constant).

This module imports RLlib at import time (the callback class of the running release, :mod:`.compat`); the adapter
imports it only when it builds a config. Its values are logged as one iteration's sums on every release: on
2.40-2.52 that takes ``clear_on_reduce=True``, which :func:`.compat.per_iteration` adds.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from typing import Any

from rlbench.adapters.rllib import compat

#: Keys (under ``env_runners``) of the summed seconds inside env step/reset and the forward pass.
ENV_S_KEY = ("rlbench", "env_step_s")
INFERENCE_S_KEY = ("rlbench", "inference_s")

#: The driver's timers of one training step (RLlib 2.60: PPO, DQN and SAC log ``env_runner_sampling_timer``,
#: IMPALA/APPO ``sample``; DQN and SAC their replay buffer's three) that rlbench makes sums over the iteration
#: (see :meth:`on_algorithm_init`).
DRIVER_SUM_TIMERS: tuple[tuple[str, str], ...] = (
    ("timers", "env_runner_sampling_timer"),
    ("timers", "sample"),
    ("timers", "learner_update_timer"),
    ("timers", "synch_weights"),
    ("timers", "replay_buffer_add_data_timer"),
    ("timers", "replay_buffer_sampling_timer"),
    ("timers", "replay_buffer_update_prios_timer"),
)

#: The driver's timers read as an iteration's mean: the env-connector state sync, peeked after ``train()``
#: (:func:`rlbench.adapters.rllib.results.iteration_timings`). From 2.53 the stats class makes it one already.
DRIVER_MEAN_TIMERS: tuple[tuple[str, str], ...] = (("timers", "synch_env_connectors"),)

#: Per env runner values live under ``env_runners`` at ``RUNNER_KEY + (str(worker_index), name)``.
RUNNER_KEY = ("rlbench", "runner")
#: Names of the per-runner values summed over an iteration (the pid is logged apart, ``reduce="max"``).
RUNNER_SUMS = ("env_steps", "env_step_s", "env_step_cpu_s", "inference_s", "sample_s", "sample_cpu_s")

_ENV, _INFERENCE, _ENV_CPU = 0, 1, 2

#: ``log_value``'s arguments for an iteration's sum and max in this process's RLlib release (:mod:`.compat`).
_SUM, _MAX = compat.per_iteration("sum"), compat.per_iteration("max")


class PhaseTimingCallback(compat.callback_base()):  # type: ignore[misc]
    """Times env step/reset and the RLModule forward pass inside one env runner (one instance each)."""

    def __init__(self) -> None:
        super().__init__()
        self._totals_s = [0.0, 0.0, 0.0]
        self._timed_module: Any = None
        self._sample_start: tuple[float, float] | None = None  # (perf_counter, thread_time) at sample() entry

    def _timed(self, fn: Callable, slot: int) -> Callable:
        totals, perf = self._totals_s, time.perf_counter

        def timed(*args, **kwargs):
            t = perf()
            try:
                return fn(*args, **kwargs)
            finally:
                totals[slot] += perf() - t

        timed.__wrapped__ = fn  # type: ignore[attr-defined]
        return timed

    def _timed_env(self, fn: Callable) -> Callable:
        """Like :meth:`_timed` for the env, also adding the thread's CPU time inside it (two
        ``thread_time`` calls, about 1 us per env step here, against RLlib's ~1 ms per step)."""
        totals, perf, cpu = self._totals_s, time.perf_counter, time.thread_time

        def timed(*args, **kwargs):
            t, c = perf(), cpu()
            try:
                return fn(*args, **kwargs)
            finally:
                totals[_ENV] += perf() - t
                totals[_ENV_CPU] += cpu() - c

        timed.__wrapped__ = fn  # type: ignore[attr-defined]
        return timed

    def on_algorithm_init(self, *, algorithm, metrics_logger=None, **kwargs) -> None:
        # IMPALA, APPO, DQN and SAC run many training steps per iteration, and time each phase once per step
        # (weight sync: only in steps that broadcast). Registered as sums before RLlib first logs
        # them, the timers add up over the iteration (RLlib's log_time reuses the registered stats);
        # with PPO's one step per iteration the sum is that step's value.
        logger = metrics_logger if metrics_logger is not None else algorithm.metrics
        for key in DRIVER_SUM_TIMERS:
            compat.register(logger, key, "sum")
        for key in DRIVER_MEAN_TIMERS:
            compat.register(logger, key, "mean")

    def on_environment_created(self, *, env_runner, metrics_logger=None, env=None, env_context=None, **kwargs) -> None:
        # The object RLlib calls step/reset on is the env runner's (wrapped) vector env.
        target = env_runner.env
        target.step = self._timed_env(target.step)
        target.reset = self._timed_env(target.reset)
        sample = getattr(env_runner, "sample", None)
        # RLlib's own decorators give sample a __wrapped__ too: look for rlbench's mark (make_env runs
        # again on a re-created env, and must not wrap twice)
        if sample is not None and not getattr(sample, "_rlbench_stamped", False):
            env_runner.sample = self._stamped(sample)

    def _stamped(self, sample: Callable) -> Callable:
        """``sample`` that notes when (wall and thread CPU clock) each call began."""

        def stamped(*args, **kwargs):
            self._sample_start = (time.perf_counter(), time.thread_time())
            return sample(*args, **kwargs)

        stamped.__wrapped__ = sample  # type: ignore[attr-defined]
        stamped._rlbench_stamped = True  # type: ignore[attr-defined]
        return stamped

    def on_episode_created(self, *, env_runner=None, **kwargs) -> None:
        # The module is built after the env, but before the first episode (and so before any
        # forward pass); wrap it here, once per module object.
        module = getattr(env_runner, "module", None)
        if module is None or module is self._timed_module:
            return
        for name in ("forward_exploration", "forward_inference"):
            setattr(module, name, self._timed(getattr(module, name), _INFERENCE))
        self._timed_module = module

    def on_sample_end(self, *, env_runner=None, metrics_logger=None, samples=None, **kwargs) -> None:
        logger = metrics_logger if metrics_logger is not None else env_runner.metrics
        env_s, inference_s, env_cpu_s = self._totals_s
        logger.log_value(ENV_S_KEY, env_s, **_SUM)
        logger.log_value(INFERENCE_S_KEY, inference_s, **_SUM)
        self._totals_s[:] = [0.0, 0.0, 0.0]
        start, self._sample_start = self._sample_start, None
        values = {
            "env_steps": sum(len(e) for e in samples or ()),
            "env_step_s": env_s,
            "env_step_cpu_s": env_cpu_s,
            "inference_s": inference_s,
        }
        if start is not None:  # else sample() was not called through the wrapper: no value, not a 0
            values.update(sample_s=time.perf_counter() - start[0], sample_cpu_s=time.thread_time() - start[1])
        key = (*RUNNER_KEY, str(getattr(env_runner, "worker_index", 0)))
        for name, value in values.items():
            logger.log_value((*key, name), value, **_SUM)
        logger.log_value((*key, "pid"), os.getpid(), **_MAX)


if compat.module_hook() != "on_episode_created":  # RLlib 2.40 refuses a callback that overrides it
    PhaseTimingCallback.on_episode_start = PhaseTimingCallback.on_episode_created  # type: ignore[method-assign]
    del PhaseTimingCallback.on_episode_created
