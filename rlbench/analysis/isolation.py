"""Where a trial ran and what else ran there: its node set, its time span, and the foreign CPU on its nodes.

trials.parquet's ``node_ids`` (JSON text, as ``versions``: the nodes the trial held with ``--parallel``, else the
nodes its actors were found on; null locally), ``node_type`` (its nodes' type, ``--parallel`` only),
``started_epoch``/``ended_epoch`` (Unix seconds: two trials overlapped when one started before the other
ended), and ``foreign_cpu_s`` with ``foreign_cpu_pct``: the CPU seconds that processes neither the trial's
nor Ray's own used on its nodes while its node samplers ran (:mod:`rlbench.worker.foreign`), and that as a
share of the trial's CPUs over the same time. Null where no node sampler ran (local trials, results from
before these columns); 0 is measured: nothing else ran there.
"""

from __future__ import annotations

import json
from typing import Any

from rlbench.results.events_file import NodeSamplingEvent, TrialEvent, first


def node_set_columns(plan: Any, record: Any, events: list[TrialEvent]) -> dict[str, Any]:
    """The trials.parquet columns of this module for one trial."""
    sampling = first(events, NodeSamplingEvent)
    placement = getattr(plan, "placement", None)
    if placement is not None:
        node_ids: list[str] | None = list(placement.node_ids)
    elif sampling is not None:
        node_ids = sorted(n["node_id"] for n in sampling.nodes if n.get("actors"))
    else:
        node_ids = None
    foreign_s = foreign_pct = None
    nodes = sampling.nodes if sampling is not None else []
    if nodes and all("foreign_cpu_s" in n for n in nodes):
        foreign_s = float(sum(n["foreign_cpu_s"] for n in nodes))
        sampled_s = max((float(n.get("sampled_s") or 0.0) for n in nodes), default=0.0)
        capacity = sampled_s * float(plan.cpus or 0)
        foreign_pct = 100.0 * foreign_s / capacity if capacity > 0 else None
    started = record.started_epoch
    return {
        "node_ids": json.dumps(node_ids) if node_ids is not None else None,
        "node_type": placement.node_type if placement is not None else None,
        "started_epoch": started,
        "ended_epoch": started + record.trial_wall_s
        if started is not None and record.trial_wall_s is not None
        else None,
        "foreign_cpu_s": foreign_s,
        "foreign_cpu_pct": foreign_pct,
    }
