"""An env whose per-step cost an installed package decides: the known answer of ``rlbench history`` and
``rlbench bisect`` (docs/VERSIONS.md).

``cost_from: "slowstep:step_cost_us"`` names a function of an installed package that returns the CPU
microseconds each step (and reset) burns, on top of ``step_cost_us``. Install one version of the package
or another (a variant's ``packages:``) and the same spec steps a cheaper or a dearer env: the cost is CPU
time (:func:`envs.synthetic.burn_cpu`), so a version that doubles it halves the throughput on any
machine, busy or not, for both sides of an interleaved pair alike.
"""

from __future__ import annotations

import importlib

from envs.synthetic import SyntheticEnv


class VersionedCostEnv(SyntheticEnv):
    """:class:`~envs.synthetic.SyntheticEnv` plus the cost an installed package's function returns.

    env_config keys: ``cost_from`` (``module:function``, required), and every key of SyntheticEnv.
    """

    def __init__(self, config: dict | None = None):
        super().__init__(config)  # kept as given: RLlib's EnvContext carries the runner's index
        target = str((config or {}).get("cost_from", ""))
        module, _, name = target.partition(":")
        if not module or not name.isidentifier():
            raise ValueError(f"VersionedCostEnv needs cost_from: 'module:function' (got {target!r})")
        cost = float(getattr(importlib.import_module(module), name)())
        if cost < 0:
            raise ValueError(f"VersionedCostEnv: {target}() returned {cost}, a negative cost")
        self.step_cost_us += cost
        self.cost_from_us = cost
        """What the package's function returned (what this env adds to each step)."""
