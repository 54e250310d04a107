"""An environment that fails on purpose, for testing how rlbench handles broken trials.

``FaultyEnv`` behaves like ``envs.tiny:TinyEnv`` until its ``at_step``-th step (counted per env
instance over its whole life), then injects the fault named by ``fault``:

- ``none``: never fails (a healthy control in the same grid).
- ``raise``: raises ``RuntimeError("FaultyEnv: injected failure at step N")``.
- ``hang``: sleeps forever inside ``step`` (a hung simulator).
- ``memory``: allocates (and touches) ``memory_chunk_bytes`` more memory on every step, up to
  ``memory_max_bytes`` in all, then hangs holding it (a leaking simulator; the cap keeps a
  broken memory limit from taking the machine down with it).
"""

from __future__ import annotations

import time

import numpy as np

from envs.tiny import TinyEnv

FAULTS = ("none", "raise", "hang", "memory")


class FaultyEnv(TinyEnv):
    """TinyEnv with an injected fault.

    env_config keys: ``fault`` (one of :data:`FAULTS`, default ``none``), ``at_step`` (default
    300), ``memory_chunk_bytes`` (default 64 MiB), ``memory_max_bytes`` (default 3 GiB), and
    TinyEnv's ``episode_len`` (default 20) and ``obs_size`` (default 4).
    """

    def __init__(self, config: dict | None = None):
        config = dict(config or {})
        self.fault = str(config.get("fault", "none"))
        if self.fault not in FAULTS:
            raise ValueError(f"FaultyEnv: fault must be one of {FAULTS}, got {self.fault!r}")
        super().__init__(config)
        self.at_step = int(config.get("at_step", 300))
        self.chunk_bytes = int(config.get("memory_chunk_bytes", 64 * 2**20))
        self.max_bytes = int(config.get("memory_max_bytes", 3 * 2**30))
        self._steps = 0
        self._hog: list[np.ndarray] = []

    def step(self, action):
        self._steps += 1
        if self._steps >= self.at_step:
            self._inject()
        return super().step(action)

    def _inject(self) -> None:
        if self.fault == "raise":
            raise RuntimeError(f"FaultyEnv: injected failure at step {self._steps}")
        if self.fault == "memory" and sum(a.nbytes for a in self._hog) < self.max_bytes:
            self._hog.append(np.ones(self.chunk_bytes, dtype=np.uint8))  # ones: the pages are touched
            return
        if self.fault in ("hang", "memory"):
            while True:
                time.sleep(3600)
