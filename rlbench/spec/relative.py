"""Grid values relative to the machine: ``cpus``, ``cpus-N``, ``cpus/N``.

``configs/ppo_cpu.yaml`` written for a 16-core machine skips 14 of its 16 trials on a 2-core laptop.
A grid value such as ``num_env_runners: [0, 1, cpus/2, cpus-1]`` scales the sweep to whatever
machine runs it instead. The value is checked when the spec is loaded (:mod:`rlbench.spec.load`)
and resolved when the sweep is planned (:mod:`rlbench.planning.plan`, which knows the machine); the
plan, ``plan.json`` and the manifest hold the resolved numbers, so a result set says exactly what
ran and ``rlbench reproduce`` writes plain numbers.

What ``cpus`` stands for: on the ``cpus`` axis, the cores this machine lets rlbench use (its
affinity mask; on a cluster, the cluster's CPUs); on every other axis, the trial's own ``cpus``
(after its own resolution), which is the machine's usable cores when ``cpus`` is not set.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

#: Knobs (grid axis columns) that take a relative value: counts of cores, processes or threads.
RELATIVE_KNOBS = (
    "cpus",
    "num_env_runners",
    "num_envs_per_env_runner",
    "num_cpus_for_main_process",
    "num_learners",
    "num_cpus_per_env_runner",
    "num_cpus_per_learner",
    "driver_torch_threads",
    "learner_torch_threads",
    "env_runner_torch_threads",
)

_PATTERN = re.compile(r"^\s*cpus\s*(?:(?P<op>[-/])\s*(?P<n>\d+))?\s*$")

#: How a relative value is written, for error messages.
SYNTAX = "'cpus', 'cpus-N' or 'cpus/N' (N a whole number; '/' rounds down)"


def looks_relative(value: object) -> bool:
    """Whether a grid value is meant as a relative value (a string starting with ``cpus``)."""
    return isinstance(value, str) and value.strip().startswith("cpus")


def is_relative(value: object) -> bool:
    """Whether a grid value is a well-formed relative value."""
    return isinstance(value, str) and _PATTERN.match(value) is not None


def resolve(expr: str, cpus: int) -> int:
    """The value of ``expr`` when ``cpus`` stands for ``cpus`` (``cpus/N`` rounds down).

    >>> resolve("cpus-1", 16), resolve("cpus/4", 2), resolve("cpus", 8)
    (15, 0, 8)
    """
    match = _PATTERN.match(expr)
    if match is None:
        raise ValueError(f"{expr!r} is not a relative value: write {SYNTAX}")
    n = int(match["n"]) if match["n"] else 0
    if match["op"] == "-":
        return cpus - n
    if match["op"] == "/":
        if n == 0:
            raise ValueError(f"{expr!r}: cannot divide by 0")
        return cpus // n
    return cpus


@dataclass(frozen=True)
class RelativeValue:
    """One grid value of a grid point written relative to the machine."""

    axis: str
    """The grid axis's table column, e.g. ``num_env_runners``."""
    path: tuple[str, ...]
    """Where it goes in the trial config, e.g. ``("env_runners", "num_env_runners")``."""
    expr: str
    """As written in the spec, e.g. ``cpus-1``."""
