"""The planned trials as a terminal table (``rlbench sweep --dry-run``).

Apart from :mod:`rlbench.report.terminal` so that a dry run imports no pandas or matplotlib: through that
module's tables it imported both, 0.54 s of its 1.3 s of imports here (``python -X importtime``, 2026-11-30).
Every cell is a ``Text`` of :func:`~rlbench.results.text.plain` (the terminal backend), never markup.
"""

from __future__ import annotations

from rich.table import Table as RichTable

from rlbench.planning.plan import TrialPlan
from rlbench.report.blocks import Cell, Table, to_rich


def plan_table(plans: list[TrialPlan]) -> RichTable:
    """The planned trials (``--dry-run``): cores, threads and each trial's fate; a grid value written
    relative to the machine shows what it resolved to, then how it was written: ``1 (cpus-1)``."""
    axes = list(plans[0].axes) if plans else []
    variants = any(p.variant for p in plans)  # then each trial's variant and round, in run order
    header = [
        "trial",
        *axes,
        *(["variant", "round"] if variants else []),
        "cpus",
        "driver cores",
        "ray CPUs",
        "torch threads d/l/r",
        "seed",
        "fate",
    ]
    rows = []
    for p in plans:
        t = p.torch_threads
        rows.append(
            [
                p.trial_id,
                *[f"{p.axes[a]} ({p.relative[a]})" if a in p.relative else str(p.axes[a]) for a in axes],
                *([str(p.variant), _rounds(p)] if variants else []),
                str(p.cpus),
                ",".join(map(str, p.driver_cores)) or "-",
                str(p.ray_cpus),
                f"{t['driver']}/{t['learner']}/{t['env_runner']}",
                str(p.seed),
                Cell(f"skip: {p.skip_reason}", "yellow") if p.skip_reason else "run",
            ]
        )
    return to_rich(Table(header, rows, frozenset(range(len(header))), title="planned trials"))


def _rounds(plan) -> str:
    """A trial's round, or the rounds its windows read (``rounds_per_process``: ``0-2``)."""
    if plan.windows and plan.round is not None:
        return f"{plan.round}-{plan.round + plan.windows - 1}"
    return str(plan.round)
