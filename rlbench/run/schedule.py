"""Which waiting trial runs next, and on which free nodes (``--parallel``): one pure function, :func:`choose`.

The sweep (:mod:`rlbench.run.parallel`) calls it whenever a trial has ended or started, and
``scripts/sim_cluster_schedule.py`` calls the same function on a simulated cluster of hundreds of
trials, so the simulation checks the scheduler the sweep runs.

The rules, in order:

- trials go in plan order; one that does not fit the free nodes now waits and the next one may
  go first (backfilling: a small trial never idles nodes a big one cannot use yet; a big one can
  wait until enough nodes are free at once, measured by the simulation);
- a trial takes the fewest whole nodes of one type that hold its bundles
  (:func:`~rlbench.planning.placement.placement`), never a node another trial of the sweep holds;
- a configuration's repeats prefer the node type it already ran on most (its repeats then compare
  on one type), and within a type the nodes it ran on least, then the nodes used least by the
  whole sweep: repeats rotate over nodes, so a node's own speed does not read as a configuration's;
- at most ``room`` trials start (``--parallel N`` minus those running; None for ``auto``).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field

from rlbench.planning.placement import Need, NodeRoom, Placement, by_type, placement


@dataclass(frozen=True)
class Waiting:
    """A trial waiting for nodes."""

    trial_id: str
    """Its id."""
    config: str
    """Its configuration (grid point and variant): its repeats share it, and rotate over nodes."""
    bundles: tuple[Need, ...]
    """What its placement group asks for (:func:`~rlbench.planning.placement.trial_bundles`)."""


@dataclass
class NodeHistory:
    """Where the sweep's trials have run so far: what the rotation reads."""

    by_config: dict[str, Counter] = field(default_factory=dict)
    """Configuration -> node id -> its trials placed there."""
    types_by_config: dict[str, Counter] = field(default_factory=dict)
    """Configuration -> node type -> its trials placed on that type."""
    total: Counter = field(default_factory=Counter)
    """Node id -> trials placed there."""

    def add(self, config: str, where: Placement) -> None:
        """A trial of ``config`` was placed on ``where``."""
        self.by_config.setdefault(config, Counter()).update(where.node_ids)
        self.types_by_config.setdefault(config, Counter())[where.node_type] += 1
        self.total.update(where.node_ids)

    def copy(self) -> NodeHistory:
        """An independent copy (:func:`choose` counts its own choices in one)."""
        return NodeHistory(
            {k: Counter(v) for k, v in self.by_config.items()},
            {k: Counter(v) for k, v in self.types_by_config.items()},
            Counter(self.total),
        )


def choose(
    waiting: Sequence[Waiting], free: Sequence[NodeRoom], history: NodeHistory, room: int | None
) -> list[tuple[Waiting, Placement]]:
    """The trials to start now and their placements, in plan order (``history`` is not changed: the caller
    adds each choice once the trial starts)."""
    seen = history.copy()
    free = list(free)
    out: list[tuple[Waiting, Placement]] = []
    for trial in waiting:
        if (room is not None and len(out) >= room) or not free:
            break
        ran_on = seen.by_config.get(trial.config, Counter())
        types = by_type(free)
        preferred = seen.types_by_config.get(trial.config, Counter())
        for kind in sorted(types, key=lambda t: (-preferred[t], t)):
            nodes = sorted(types[kind], key=lambda n: (ran_on[n.node_id], seen.total[n.node_id], n.node_id))
            found = placement(trial.bundles, nodes)
            if found is not None:
                out.append((trial, found))
                seen.add(trial.config, found)
                held = set(found.node_ids)
                free = [n for n in free if n.node_id not in held]
                break
    return out
