"""The env ceiling: how fast an environment steps on its own, in 1..N parallel processes.

RLlib can never sample faster than the env steps by itself; ``rlbench envbench ENV`` measures that
ceiling with the same env syntax as sweeps (a gymnasium id or ``package.module:Class`` plus
``env_config``). Each process creates the env, steps it with actions drawn in advance (so the
action sampler's cost is not counted), resets it at episode ends (resets are counted in the time,
not in the steps), and reports steps and seconds after a short warm-up. N processes run at once,
each pinned to its own core; the ceiling for N is the sum of their rates.
"""

from __future__ import annotations

import json
import math
import multiprocessing
import os
import time
from contextlib import suppress
from dataclasses import asdict, dataclass
from typing import Any

#: Actions drawn in advance and cycled, so sampling actions costs nothing during the measurement.
_ACTION_POOL = 1024


@dataclass(frozen=True)
class CeilingResult:
    """The env's raw step rate with ``procs`` processes stepping at once."""

    env: str
    """The env, as in a spec."""
    env_config: dict
    """Its config."""
    procs: int
    """Processes stepping in parallel (one env each)."""
    steps: int
    """Env steps taken in the measured window, all processes together."""
    measured_s: float
    """Length of the measured window (the slowest process's)."""
    steps_per_s: float
    """Sum over processes of each one's steps / seconds."""
    steps_per_s_per_proc: float
    """steps_per_s / procs."""
    cpu_s: float = 0.0
    """CPU seconds the processes used in the measured window, together. ``steps / cpu_s`` is the
    env's speed per core-second whatever else ran on the machine (a process that shares its core
    takes fewer steps per wall second, not per CPU second)."""
    peak_rss_bytes: int = 0
    """The processes' peak resident memory (``VmHWM``), summed: an upper bound of what they held at once."""


def make_env(env: str, env_config: dict) -> Any:
    """Create an env the way the training framework does (the adapter's
    :meth:`~rlbench.adapters.base.Adapter.make_env`: for RLlib, gymnasium ids via
    ``gymnasium.make(id, **env_config)``, import paths via ``Class(env_config)``)."""
    from rlbench.adapters import get_adapter

    return get_adapter().make_env(env, env_config)


def _step_for(env_name: str, env_config: dict, seconds: float, warmup_s: float, core: int | None, queue) -> None:
    try:
        queue.put(_steps_in(env_name, env_config, seconds, warmup_s, core))
    except BaseException as e:  # noqa: BLE001 - report the env's own error to the parent, then exit
        queue.put(("error", f"{type(e).__name__}: {e}"))


def peak_rss_bytes(pid: int | str = "self") -> int:
    """A process's peak resident memory so far (``VmHWM`` of ``/proc/<pid>/status``); 0 if unreadable."""
    with suppress(OSError, ValueError, IndexError):
        with open(f"/proc/{pid}/status", "rb") as f:
            for line in f:
                if line.startswith(b"VmHWM:"):
                    return int(line.split()[1]) * 1024
    return 0


def _steps_in(
    env_name: str, env_config: dict, seconds: float, warmup_s: float, core: int | None
) -> tuple[int, float, float, int]:
    if core is not None:
        with suppress(AttributeError, OSError):
            os.sched_setaffinity(0, [core])
    env = make_env(env_name, env_config)
    env.action_space.seed(0)
    actions = [env.action_space.sample() for _ in range(_ACTION_POOL)]
    env.reset(seed=0)
    steps, i = 0, 0
    start = time.perf_counter()
    measuring_from = start + warmup_s
    counted_start = None
    end = math.inf  # the window is ``seconds`` from when counting starts: a process the machine gave no core for
    cpu_start = 0.0  # the whole warm-up and window (load 11) had measured 0 steps in 0 s, an env stepping at 0/s
    while True:
        now = time.perf_counter()
        if counted_start is None and now >= measuring_from:
            counted_start, steps, cpu_start = now, 0, time.process_time()
            end = now + seconds
        if now >= end:
            break
        _, _, terminated, truncated, _ = env.step(actions[i % _ACTION_POOL])
        i += 1
        steps += 1
        if terminated or truncated:
            env.reset()
    assert counted_start is not None  # the loop ends only once counting started (``end`` is infinite before)
    elapsed_s = time.perf_counter() - counted_start
    cpu_s = time.process_time() - cpu_start
    env.close()
    return steps, elapsed_s, cpu_s, peak_rss_bytes()


def measure_ceiling(
    env: str,
    env_config: dict | None = None,
    *,
    procs: int = 1,
    seconds: float = 2.0,
    warmup_s: float = 0.3,
    cores: list[int] | None = None,
    grace_s: float = 15.0,
    max_rss_bytes: int | None = None,
) -> CeilingResult:
    """Step ``procs`` copies of the env in parallel processes for ``seconds`` and sum their rates.

    Raises RuntimeError (the workers killed) when the env raises, crashes, gives no result within
    ``seconds + warmup_s + grace_s`` (it hangs, or one step is that slow), or when the workers
    together hold more than ``max_rss_bytes`` of memory: checked while they run and, against each
    worker's own peak, when they report, so an env that crossed the limit between two checks is
    caught however fast or slow the machine is.
    """
    env_config = dict(env_config or {})
    if cores is None:
        cores = sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else []
    ctx = multiprocessing.get_context("fork") if hasattr(os, "fork") else multiprocessing.get_context("spawn")
    queue = ctx.Queue()
    workers = [
        ctx.Process(
            target=_step_for,
            args=(env, env_config, seconds, warmup_s, cores[i % len(cores)] if cores else None, queue),
            daemon=True,
        )
        for i in range(procs)
    ]
    for w in workers:
        w.start()
    try:
        results = _collect(workers, queue, seconds + warmup_s + grace_s, max_rss_bytes)
    finally:
        for w in workers:
            if w.is_alive():
                w.kill()
            w.join(timeout=5)
    steps = sum(r[0] for r in results)
    rate = sum(r[0] / r[1] for r in results if r[1] > 0)
    return CeilingResult(
        env=env,
        env_config=env_config,
        procs=procs,
        steps=steps,
        measured_s=max(r[1] for r in results),
        steps_per_s=rate,
        steps_per_s_per_proc=rate / procs,
        cpu_s=sum(r[2] for r in results),
        peak_rss_bytes=sum(r[3] for r in results),
    )


def _over_limit(rss: int, max_rss_bytes: int) -> RuntimeError:
    return RuntimeError(
        f"the env processes hold {rss / 2**20:,.0f} MiB, over the limit of {max_rss_bytes / 2**20:,.0f} MiB"
    )


def _collect(workers: list, queue, limit_s: float, max_rss_bytes: int | None) -> list[tuple[int, float, float, int]]:
    """One (steps, seconds, cpu seconds, peak RSS) per worker, or RuntimeError as soon as one fails,
    hangs or hogs memory."""
    import queue as queues

    import psutil

    deadline = time.monotonic() + limit_s
    results: list[tuple[int, float, float, int]] = []
    while len(results) < len(workers):
        try:
            item = queue.get(timeout=0.2)
        except queues.Empty:
            item = None
        if item is not None:
            if item[0] == "error":
                raise RuntimeError(f"the env raised while stepping alone: {item[1]}")
            results.append(item)
            peaks = sum(r[3] for r in results)
            if max_rss_bytes is not None and peaks > max_rss_bytes:
                raise _over_limit(peaks, max_rss_bytes)
            continue
        died = [w.exitcode for w in workers if w.exitcode not in (None, 0)]
        if died and queue.empty():
            raise RuntimeError(f"an envbench process died (exit code {died[0]}) before reporting")
        if time.monotonic() > deadline:
            raise RuntimeError(f"no result within {limit_s:g} s: the env hangs, or one step takes that long")
        if max_rss_bytes is not None:
            rss = 0
            for w in workers:
                with suppress(psutil.Error):
                    rss += psutil.Process(w.pid).memory_info().rss
            if rss > max_rss_bytes:
                raise _over_limit(rss, max_rss_bytes)
    return results


def ceiling_procs(config: Any) -> int:
    """Processes that step envs at once in a trial of ``config`` (a spec's ``TrialConfig``), as its framework's
    adapter says (RLlib: its env runners, or the driver's local runner when it has none)."""
    from rlbench.adapters import get_adapter

    return get_adapter(config.framework).sampling_processes(config)


def ceiling_key(env: str, env_config: dict, procs: int, cpus: int) -> str:
    """Identity of one ceiling measurement: same env, config, process count and core count."""
    return f"{env}|{json.dumps(env_config, sort_keys=True)}|procs={procs}|cpus={cpus}"


def trial_ceiling_key(config: Any, cpus: int) -> str:
    """The ceiling a trial of ``config`` on ``cpus`` cores is measured against: its env stepping alone in as many
    processes as the trial samples in (:func:`ceiling_procs`), on as many cores."""
    env = config.environment
    return ceiling_key(env.env, env.env_config, ceiling_procs(config), cpus)


def default_proc_counts(cores: int) -> list[int]:
    """1, 2, 4, ... up to ``cores``, with ``cores`` itself last."""
    counts, n = [], 1
    while n < cores:
        counts.append(n)
        n *= 2
    counts.append(cores)
    return counts


def result_dict(result: CeilingResult) -> dict[str, Any]:
    """A result as plain JSON-able data."""
    return asdict(result)
