"""An environment that fails on purpose, for testing how rlbench handles broken trials.

``FaultyEnv`` behaves like ``envs.tiny:TinyEnv`` until its ``at_step``-th step (counted per env
instance over its whole life), then injects the fault named by ``fault``:

- ``none``: never fails (a healthy control in the same grid).
- ``raise``: raises ``RuntimeError("FaultyEnv: injected failure at step N")``, or
  ``RuntimeError(message)`` when ``message`` is given (hostile error text, for the printing tests).
- ``hang``: sleeps forever inside ``step`` (a hung simulator).
- ``memory``: inside its ``at_step``-th step, allocates (and touches) ``memory_max_bytes`` in
  chunks of ``memory_chunk_bytes``, then hangs holding it (a simulator whose memory blows up; the
  cap keeps a broken memory limit from taking the machine down with it).
- ``segv``: the process dies with SIGSEGV inside its ``at_step``-th step (a crashing native
  simulator), before the trial has finished training.
- ``segv_in_shutdown``: from its ``at_step``-th step on, the process dies with SIGSEGV the moment
  Ray marks it disconnected inside ``ray.shutdown()`` (``ray.is_initialized()`` turns false), that
  is after the trial wrote ``trained`` and stopped its algorithm, while Ray tears down (as Ray's C++
  threads crash now and then). It wraps the driver's ``global_worker.set_is_connected``, so it needs
  the env in the trial's driver process (0 env runners): a test double bound to Ray's internals.
- ``segv_in_close``: from its ``at_step``-th step on, ``close`` kills the process with SIGSEGV: a crash
  in the framework's teardown (the plain adapter closes its env in ``stop``).
- ``segv_after_shutdown``: from its ``at_step``-th step on, the process dies with SIGSEGV at the
  moment the trial process starts writing its ``end`` event, that is after it trained, shut its
  runtime down and wrote ``shutdown`` (a crash in a runtime's exit, as Ray's C++ threads once
  crashed at interpreter exit). It watches the calling thread's function calls
  (``sys.setprofile``), so it needs the env to step in the trial process's main thread (0 env
  runners), and it names the trial's ``EventLog.write``: a test double bound to rlbench's own code.
- ``segv_after_end``: the same watch, firing as the trial process calls ``exit_now``: after its
  ``end`` event was written and fsynced.

Every fault fires at a step count and, for ``memory``, a byte count, never after some time: how
far the fault has gone when a watcher looks depends on nothing but what the env was asked to do,
so a test built on it gives the same verdict on a quiet machine and on a busy one (a leak spread
over steps let a time-bounded measurement end before the limit was crossed on a busy machine).
"""

from __future__ import annotations

import os
import signal
import sys
import time

import numpy as np

from envs.tiny import TinyEnv

FAULTS = (
    "none",
    "raise",
    "hang",
    "memory",
    "segv",
    "segv_in_shutdown",
    "segv_in_close",
    "segv_after_shutdown",
    "segv_after_end",
)


class FaultyEnv(TinyEnv):
    """TinyEnv with an injected fault.

    env_config keys: ``fault`` (one of :data:`FAULTS`, default ``none``), ``at_step`` (default
    300), ``message`` (the ``raise`` fault's error text), ``close_s`` (default 0: seconds ``close``
    sleeps, a slow shutdown that holds the trial open after it trained), ``memory_chunk_bytes`` (default 64 MiB),
    ``memory_max_bytes`` (default 3 GiB), and TinyEnv's ``episode_len`` (default 20) and
    ``obs_size`` (default 4).
    """

    def __init__(self, config: dict | None = None):
        config = config if config is not None else {}  # RLlib's EnvContext, kept (TinyEnv reads worker_index)
        self.fault = str(config.get("fault", "none"))
        if self.fault not in FAULTS:
            raise ValueError(f"FaultyEnv: fault must be one of {FAULTS}, got {self.fault!r}")
        super().__init__(config)
        self.at_step = int(config.get("at_step", 300))
        self.message = config.get("message")
        self.chunk_bytes = int(config.get("memory_chunk_bytes", 64 * 2**20))
        self.max_bytes = int(config.get("memory_max_bytes", 3 * 2**30))
        self.close_s = float(config.get("close_s", 0.0))
        self._steps = 0
        self._hog: list[np.ndarray] = []

    def close(self):
        time.sleep(self.close_s)
        if self.fault == "segv_in_close" and self._steps >= self.at_step:
            os.kill(os.getpid(), signal.SIGSEGV)
        super().close()

    def step(self, action):
        self._steps += 1
        if self._steps >= self.at_step:
            self._inject()
        return super().step(action)

    def _inject(self) -> None:
        if self.fault == "segv":
            os.kill(os.getpid(), signal.SIGSEGV)
        if self.fault == "segv_in_shutdown":
            _die_when_ray_disconnects()
        if self.fault == "segv_after_shutdown" and sys.getprofile() is not _die_at_end_event:
            sys.setprofile(_die_at_end_event)
        if self.fault == "segv_after_end" and sys.getprofile() is not _die_at_exit_now:
            sys.setprofile(_die_at_exit_now)
        if self.fault == "raise":
            raise RuntimeError(self.message or f"FaultyEnv: injected failure at step {self._steps}")
        if self.fault == "memory":
            held = 0
            while held < self.max_bytes:
                chunk = min(self.chunk_bytes, self.max_bytes - held)
                self._hog.append(np.ones(chunk, dtype=np.uint8))  # ones: the pages are touched
                held += chunk
        if self.fault in ("hang", "memory"):
            while True:
                time.sleep(3600)


def _die_at_end_event(frame, event, _arg) -> None:
    """A profile hook: SIGSEGV this process when it calls ``EventLog.write("end", ...)``."""
    if event == "call" and frame.f_code.co_name == "write" and frame.f_locals.get("event") == "end":
        os.kill(os.getpid(), signal.SIGSEGV)


def _die_at_exit_now(frame, event, _arg) -> None:
    """A profile hook: SIGSEGV this process when it calls the trial's ``exit_now`` (after ``end``)."""
    if event == "call" and frame.f_code.co_name == "exit_now":
        os.kill(os.getpid(), signal.SIGSEGV)


def _die_when_ray_disconnects() -> None:
    """SIGSEGV this process when Ray sets its driver disconnected, inside ``ray.shutdown()``: a state
    of the runtime, not a time (``ray.is_initialized()`` reads the flag this sets)."""
    from ray._private import worker

    driver = worker.global_worker
    if getattr(driver, "_faulty_hooked", False):
        return
    original = driver.set_is_connected

    def set_is_connected(is_connected: bool) -> None:
        original(is_connected)
        if not is_connected:
            os.kill(os.getpid(), signal.SIGSEGV)

    driver.set_is_connected = set_is_connected
    driver._faulty_hooked = True
