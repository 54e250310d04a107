"""Where a ``--parallel`` trial runs: the node set it holds and its placement group's bundles, node by node.

With ``rlbench sweep --address ADDR --parallel N|auto`` each trial holds whole nodes of one type
(:func:`~rlbench.measure.machine.node_type`) that no other trial of the sweep gets while it runs, and
one Ray placement group on them: bundle 0 for the driver (the trial actor that holds the algorithm,
``num_cpus_for_main_process`` CPUs and a learner's GPU when the learner is the driver's), then one
bundle per actor (env runner, learner, aggregator) of its CPUs and GPUs, each bundle pinned to one
node by ``bundle_label_selector`` on ``ray.io/node-id`` (docs/CLUSTER.md, "Several trials at once").
Which node set a trial gets is decided when its turn comes (:mod:`rlbench.run.schedule`); here
are the pure parts both the plan (skips) and the scheduler use: the bundles of a trial, and packing
them onto the fewest nodes of a list.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from pydantic import BaseModel, ConfigDict

from rlbench.adapters import ResourceDemand
from rlbench.measure.machine import ClusterInfo, node_type

#: CPUs of the driver's bundle when ``num_cpus_for_main_process`` is 0 and it holds no GPU: Ray refuses a
#: bundle of zeros, and the trial actor must land on one of the trial's nodes all the same.
MIN_DRIVER_CPUS = 0.01

#: Room left for float sums (1/3 + 1/3 + 1/3 CPU on a 1-CPU node fits).
_EPS = 1e-9


class Bundle(BaseModel):
    """One bundle of a trial's placement group: what one process of the trial reserves, and on which node."""

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)

    role: str
    """Whose bundle it is: ``driver`` (bundle 0, the trial actor), ``env_runner``, ``learner``, ..."""
    cpus: float
    """CPUs it reserves."""
    gpus: float
    """GPUs it reserves."""
    node_id: str
    """The node it is pinned to (``bundle_label_selector`` ``{"ray.io/node-id": node_id}``)."""


class Placement(BaseModel):
    """The node set a ``--parallel`` trial runs on (written into its plan when its turn comes)."""

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)

    node_type: str
    """The type of all its nodes (:func:`~rlbench.measure.machine.node_type`)."""
    node_ids: list[str]
    """The nodes it holds, no other trial of the sweep on them while it runs."""
    bundles: list[Bundle]
    """Its placement group's bundles, the driver's first."""
    node_cpus: float
    """The Ray CPUs of its nodes together: the trial's ``cpus`` (what "all cores busy" is measured against)."""
    node_gpus: float
    """The Ray GPUs of its nodes together."""


@dataclass(frozen=True)
class NodeRoom:
    """One alive node as the scheduler sees it: its type and its Ray resources."""

    node_id: str
    """Ray node id (hex)."""
    node_type: str
    """Its hardware type."""
    cpus: float
    """Its Ray CPUs."""
    gpus: float
    """Its Ray GPUs."""


#: A bundle before it has a node: (role, cpus, gpus).
Need = tuple[str, float, float]


def trial_bundles(demand: ResourceDemand) -> tuple[Need, ...]:
    """The bundles a trial asks for, the driver's first: one per actor that reserves anything (an actor of
    0 CPUs and 0 GPUs, as RLlib's state server, fits in any bundle of the group)."""
    driver_cpus = float(demand.driver_cpus)
    if driver_cpus <= 0 and demand.driver_gpus <= 0:
        driver_cpus = MIN_DRIVER_CPUS
    out: list[Need] = [("driver", driver_cpus, float(demand.driver_gpus))]
    for actor in demand.actors:
        if actor.cpus > 0 or actor.gpus > 0:
            out += [(actor.role, float(actor.cpus), float(actor.gpus))] * actor.count
    return tuple(out)


def pack(bundles: Sequence[Need], nodes: Sequence[NodeRoom]) -> list[str] | None:
    """The node id of each bundle, on the fewest nodes of ``nodes`` taken in their order (the caller's
    preference), or None when all of them together cannot hold the bundles.

    For k = 1, 2, ...: the first k usable nodes, filled first-fit in decreasing order of the bundles'
    (GPUs, CPUs). Exact for one bundle size (the common case: env runners of one size beside a driver);
    for mixed sizes first-fit decreasing may use a node more than the least possible, never fewer.
    """
    usable = [n for n in nodes if n.cpus > _EPS or n.gpus > _EPS]
    order = sorted(range(len(bundles)), key=lambda i: (-bundles[i][2], -bundles[i][1], i))
    for k in range(1, len(usable) + 1):
        chosen = usable[:k]
        free = [[n.cpus, n.gpus] for n in chosen]
        where: dict[int, str] = {}
        for i in order:
            _, cpus, gpus = bundles[i]
            for j, room in enumerate(free):
                if room[0] + _EPS >= cpus and room[1] + _EPS >= gpus:
                    room[0] -= cpus
                    room[1] -= gpus
                    where[i] = chosen[j].node_id
                    break
            else:
                break
        if len(where) == len(bundles):
            return [where[i] for i in range(len(bundles))]
    return None


def placement(bundles: Sequence[Need], nodes: Sequence[NodeRoom]) -> Placement | None:
    """The placement of ``bundles`` on the fewest of ``nodes`` (all of one type), or None when they do not fit."""
    where = pack(bundles, nodes)
    if where is None:
        return None
    held = list(dict.fromkeys(where))
    rooms = {n.node_id: n for n in nodes}
    return Placement(
        node_type=rooms[held[0]].node_type,
        node_ids=held,
        bundles=[Bundle(role=r, cpus=c, gpus=g, node_id=n) for (r, c, g), n in zip(bundles, where)],
        node_cpus=sum(rooms[n].cpus for n in held),
        node_gpus=sum(rooms[n].gpus for n in held),
    )


def node_rooms(cluster: ClusterInfo) -> list[NodeRoom]:
    """The cluster's nodes as the scheduler sees them (head first, as probed)."""
    return [
        NodeRoom(n.node_id, node_type(n), float(n.resources.get("CPU", 0.0)), float(n.resources.get("GPU", 0.0)))
        for n in cluster.nodes
    ]


def by_type(nodes: Sequence[NodeRoom]) -> dict[str, list[NodeRoom]]:
    """Node type -> its nodes, in the given order."""
    out: dict[str, list[NodeRoom]] = {}
    for n in nodes:
        out.setdefault(n.node_type, []).append(n)
    return out


def largest_node_set(bundles: Sequence[Need], nodes: Sequence[NodeRoom]) -> Placement | None:
    """Where the trial would run with the whole cluster free: the first type, in the given order, whose nodes
    hold it (the plan's ``cpus`` are its node set's); None when no type's nodes do (the trial is skipped)."""
    for members in by_type(nodes).values():
        found = placement(bundles, members)
        if found is not None:
            return found
    return None


def node_set_skip_reason(bundles: Sequence[Need], nodes: Sequence[NodeRoom], what: str) -> str | None:
    """Why no node set of one type can hold the trial's bundles (``what``: its actors in words), or None."""
    if largest_node_set(bundles, nodes) is not None:
        return None
    cpus = sum(b[1] for b in bundles)
    gpus = sum(b[2] for b in bundles)
    types = "; ".join(
        f"{len(ms)} node{'s' * (len(ms) != 1)} of type {t} with {sum(n.cpus for n in ms):g} CPUs and "
        f"{sum(n.gpus for n in ms):g} GPUs"
        for t, ms in by_type(nodes).items()
    )
    return (
        f"needs {cpus:g} CPUs and {gpus:g} GPUs (driver {bundles[0][1]:g} CPU + {what}) on nodes of one type, "
        f"and no type's nodes hold them together ({types or 'no alive node'}); --parallel never splits a "
        "trial across node types"
    )
