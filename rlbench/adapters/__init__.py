"""Adapters: everything that knows a training system lives under this package.

The rest of rlbench asks :func:`get_adapter` for the framework a trial config names
(``framework:``) and talks to it through :class:`rlbench.adapters.base.Adapter` alone; the
analysis reaches it through the trial's plan (``TrialPlan.demand()``, ``.asynchronous``). No name
that only one adapter defines is exported here; :func:`is_import_path` (whether a spec's env names a class or a
gymnasium id, the one rule every adapter makes envs by) is. Adding a framework: docs/ARCHITECTURE.md.
"""

from __future__ import annotations

from rlbench.adapters.base import Adapter, unsupported
from rlbench.adapters.demand import ResourceDemand
from rlbench.adapters.envs import is_import_path
from rlbench.adapters.plain import PlainAdapter
from rlbench.adapters.rllib import RLlibAdapter
from rlbench.adapters.sb3 import SB3Adapter

_ADAPTERS: dict[str, Adapter] = {"rllib": RLlibAdapter(), "plain": PlainAdapter(), "sb3": SB3Adapter()}

#: The frameworks a spec's ``framework`` may name; the first is the default.
FRAMEWORKS: tuple[str, ...] = tuple(_ADAPTERS)

#: Every role any adapter reports, in order (the tables have a column per role whatever the framework).
ALL_ROLES: tuple[str, ...] = tuple(dict.fromkeys(role for a in _ADAPTERS.values() for role in a.roles))

#: Every algorithm any adapter runs, in order (a spec's ``algo`` names one; its framework must run it).
ALL_ALGORITHMS: tuple[str, ...] = tuple(dict.fromkeys(algo for a in _ADAPTERS.values() for algo in a.algorithms))


def get_adapter(framework: str = "rllib") -> Adapter:
    """The adapter of a training framework (``rllib``: RLlib's new API stack; ``plain``: no framework,
    the env stepped with random actions in the trial process, no Ray; ``sb3``: Stable-Baselines3's PPO in the
    trial process, no Ray, the ``sb3`` extra)."""
    return _ADAPTERS[framework]


__all__ = [
    "ALL_ALGORITHMS",
    "ALL_ROLES",
    "FRAMEWORKS",
    "Adapter",
    "ResourceDemand",
    "get_adapter",
    "is_import_path",
    "unsupported",
]
