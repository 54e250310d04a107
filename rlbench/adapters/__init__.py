"""Adapters: everything that knows a training system (RLlib first) lives under this package.

The rest of rlbench asks :func:`get_adapter` for the system a spec names and talks to it through
:class:`rlbench.adapters.base.Adapter` alone. The names below are the default (RLlib) adapter's,
for the rooms that need one fact quickly (the process roles, a trial's resource demand).
"""

from __future__ import annotations

from rlbench.adapters.base import Adapter, ResourceDemand
from rlbench.adapters.rllib import (
    RAY_TITLE_ROLES,
    ROLES,
    RLlibAdapter,
    classify_process,
    resource_demand,
    torch_threads,
)

_ADAPTERS: dict[str, Adapter] = {"rllib": RLlibAdapter()}


def get_adapter(framework: str = "rllib") -> Adapter:
    """The adapter of a training framework (``rllib``: RLlib's new API stack)."""
    return _ADAPTERS[framework]


def is_asynchronous(algo: str) -> bool:
    """Whether the default adapter's algorithm ``algo`` samples while it learns (APPO, IMPALA)."""
    return get_adapter().is_asynchronous(algo)


__all__ = ["Adapter", "ResourceDemand", "get_adapter", "is_asynchronous", "RAY_TITLE_ROLES", "ROLES", "classify_process",
           "resource_demand", "torch_threads"]
