"""Async tasks vs bulk-synchronous rounds for simulation (Ray OSDI'18, section 5.2.3, Table 4).

With n CPUs, 3n Pendulum rollouts of uneven length are run twice on a private local Ray runtime
pinned to n cores:

- ``bsp``: 3 rounds of n tasks with a barrier (``ray.get`` of the whole round) between rounds, as
  the paper's MPI baseline does;
- ``async``: all 3n tasks submitted at once and collected as they finish (``ray.wait``), so a
  core that finishes a short rollout starts the next one instead of waiting at a barrier.

Throughput is total env timesteps / wall time. Rollout lengths are drawn uniformly from
[0.1, 1.9] x ``mean_steps`` with a fixed seed, identical for both modes. Workers are warmed up
(one short rollout each) before timing, and the two modes alternate over ``repeats`` rounds.
"""

from __future__ import annotations

import multiprocessing
import os
import statistics
import time
from dataclasses import asdict, dataclass

#: Table 4 of the paper: timesteps/s for Pendulum-v0 (MPI BSP, Ray async) at 1, 16 and 256 CPUs.
PAPER_TABLE4 = {1: (22.6e3, 22.3e3), 16: (208e3, 290e3), 256: (2.16e6, 4.03e6)}

ENV_ID = "Pendulum-v1"


@dataclass(frozen=True)
class SimbenchResult:
    """Both modes at one CPU count."""

    cpus: int
    """CPUs (cores pinned, Ray CPUs) of the run."""
    tasks: int
    """Rollouts per mode (3 x cpus)."""
    timesteps: int
    """Env timesteps per mode run."""
    bsp_steps_per_s: float
    """Median over repeats, bulk-synchronous rounds."""
    async_steps_per_s: float
    """Median over repeats, asynchronous tasks."""
    async_over_bsp: float
    """async_steps_per_s / bsp_steps_per_s."""
    bsp_runs_steps_per_s: list[float]
    """Every bsp repeat (unsmoothed)."""
    async_runs_steps_per_s: list[float]
    """Every async repeat."""


def rollout_lengths(cpus: int, mean_steps: int, seed: int = 0) -> list[int]:
    """3 x cpus uneven rollout lengths, uniform in [0.1, 1.9] x mean_steps."""
    import numpy as np

    rng = np.random.default_rng(seed)
    return [int(x) for x in rng.integers(int(0.1 * mean_steps), int(1.9 * mean_steps) + 1, size=3 * cpus)]


def _rollout(steps: int, seed: int) -> int:
    import gymnasium

    env = gymnasium.make(ENV_ID)
    env.action_space.seed(seed)
    actions = [env.action_space.sample() for _ in range(256)]
    env.reset(seed=seed)
    for i in range(steps):
        _, _, terminated, truncated, _ = env.step(actions[i % 256])
        if terminated or truncated:
            env.reset()
    env.close()
    return steps


#: Alternating repeats per mode unless told (``rlbench simbench --repeats``).
DEFAULT_REPEATS = 3


def _run_at(cpus: int, cores: list[int], mean_steps: int, repeats: int, queue) -> None:
    os.sched_setaffinity(0, cores)
    import ray

    ray.init(address="local", num_cpus=cpus, include_dashboard=False, log_to_driver=False, logging_level="ERROR")
    try:
        rollout = ray.remote(num_cpus=1)(_rollout)
        ray.get([rollout.remote(200, i) for i in range(cpus)])  # start and warm the workers
        lengths = rollout_lengths(cpus, mean_steps)
        total = sum(lengths)
        bsp, asynchronous = [], []
        for _ in range(repeats):
            t = time.perf_counter()
            for r in range(3):
                ray.get([rollout.remote(n, i) for i, n in enumerate(lengths[r * cpus : (r + 1) * cpus])])
            bsp.append(total / (time.perf_counter() - t))
            t = time.perf_counter()
            pending = [rollout.remote(n, i) for i, n in enumerate(lengths)]
            while pending:
                done, pending = ray.wait(pending, num_returns=1)
                ray.get(done)
            asynchronous.append(total / (time.perf_counter() - t))
        queue.put((len(lengths), total, bsp, asynchronous))
    finally:
        ray.shutdown()


def run_simbench(
    cpu_counts: list[int], *, mean_steps: int = 20_000, repeats: int = DEFAULT_REPEATS
) -> list[SimbenchResult]:
    """Both modes at each CPU count, each count in its own process and Ray runtime."""
    usable = sorted(os.sched_getaffinity(0))
    results = []
    ctx = multiprocessing.get_context("spawn")
    for cpus in cpu_counts:
        if cpus > len(usable):
            raise ValueError(f"--cpus {cpus}: this machine has {len(usable)} usable cores")
        queue = ctx.Queue()
        proc = ctx.Process(target=_run_at, args=(cpus, usable[:cpus], mean_steps, repeats, queue))
        proc.start()
        try:
            tasks, total, bsp, asynchronous = queue.get(timeout=1800)
        finally:
            proc.join(timeout=60)
            if proc.is_alive():
                proc.kill()
        b, a = statistics.median(bsp), statistics.median(asynchronous)
        results.append(
            SimbenchResult(
                cpus=cpus,
                tasks=tasks,
                timesteps=total,
                bsp_steps_per_s=b,
                async_steps_per_s=a,
                async_over_bsp=a / b,
                bsp_runs_steps_per_s=bsp,
                async_runs_steps_per_s=asynchronous,
            )
        )
    return results


def result_dict(result: SimbenchResult) -> dict:
    """A result as plain JSON-able data."""
    return asdict(result)
