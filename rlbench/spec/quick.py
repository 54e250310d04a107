"""``rlbench sweep SPEC --quick`` (asv's word for it): does every configuration of a spec run here?

A quick sweep runs each grid point (each variant) once, for one iteration, with no warm-up, on a train batch
its framework's adapter cuts to a small size the algorithm accepts (``Adapter.quick_settings``: RLlib's rule per
algorithm, SB3's, the plain framework's; docs/SPEC.md, "--quick"), and measures each env's ceiling for
:data:`QUICK_ENV_CEILING_S` at most. Its figures are start-up more than steady state, so the folder says so: its
manifest holds ``quick: true``, ``rlbench compare`` refuses it, its report recommends nothing, and only a
``--quick`` run may resume it (and a ``--quick`` run resumes no full one). ``scripts/check_configs.py`` runs
every shipped config this way.
"""

from __future__ import annotations

import copy
from typing import Any

from rlbench.adapters import get_adapter
from rlbench.spec.matched import with_keys
from rlbench.spec.model import GridPoint

#: The flag, as the plan's skip reasons and the messages name it.
QUICK_FLAG = "--quick"

#: The sweep's own keys under ``--quick``: one repeat (and one round), no warm-up, one iteration (the spec's
#: ``stop:`` seconds and target are dropped: one iteration is the whole trial).
QUICK_KEYS: dict[str, Any] = {
    "repeats": 1,
    "rounds": 1,
    "rounds_per_process": 1,
    "warmup_iterations": 0,
    "stop": {"iterations": 1},
}

#: Seconds each env's ceiling is measured under ``--quick`` at most (the spec's own when shorter, 0 stays off):
#: the envbench path is checked too, in a fifth of its default second.
QUICK_ENV_CEILING_S = 0.2


def quick_data(data: dict[str, Any]) -> dict[str, Any]:
    """The spec mapping with :data:`QUICK_KEYS` and the shorter env ceiling (a copy; a value of the wrong type is
    left for the validation to name)."""
    out = {**copy.deepcopy(data), **copy.deepcopy(QUICK_KEYS)}
    ceiling = data.get("env_ceiling_s", QUICK_ENV_CEILING_S)
    if isinstance(ceiling, (int, float)) and not isinstance(ceiling, bool):
        out["env_ceiling_s"] = min(ceiling, QUICK_ENV_CEILING_S)
    return out


def quick_point(point: GridPoint) -> GridPoint:
    """The grid point with its train batch cut as its framework's adapter says; ValueError when the cut config
    is one the trial checks refuse (an adapter's rule and its own checks disagreeing: a bug, said as such)."""
    keys = get_adapter(point.config.framework).quick_settings(point.config)
    if not keys:
        return point
    try:
        return with_keys(point, keys)
    except ValueError as e:
        raise ValueError(
            f"--quick cuts {', '.join(f'{s}.{k}={v}' for (s, k), v in keys.items())}, which this trial "
            f"config refuses: {e}; run the spec without --quick"
        ) from None
