"""Node to node: a configuration's throughput on each node it ran on, and a node slower than its peers.

With ``--parallel`` every trial records its nodes and their type (trials.parquet ``node_ids``,
``node_type``), and a configuration's repeats rotate over nodes (:mod:`rlbench.run.schedule`). Here:

- **spread per configuration**: its ok trials' median env steps/s per node set it ran on, and the
  largest over the smallest; a configuration whose repeats ran on more than one node type is marked,
  since its figures then mix hardware (the report says so wherever it shows them);
- **a slow node**, by the one change rule (:func:`rlbench.analysis.change.unpaired`): each ok trial's
  throughput relative to its configuration's median on its node type, the trials on one node against
  those of the same type on the other nodes. A node is named slower than its peers only when the rule
  finds the difference (every interval below 1 and the rank test at ``SIGNIFICANCE``), so only with
  enough trials on it (:data:`~rlbench.analysis.findings.REPEATS_FOR_EVIDENCE` a side). A trial held
  several nodes counts for each of them: a slow node slows the trials it is part of. Nodes are only
  ever compared with nodes of their own type.
"""

from __future__ import annotations

import json
from collections import defaultdict
from dataclasses import dataclass, field

import pandas as pd

from rlbench.analysis.change import Change, unpaired
from rlbench.analysis.config_row import num
from rlbench.analysis.configs import config_label
from rlbench.analysis.evidence import change_sentence


@dataclass(frozen=True)
class NodeSpread:
    """One configuration's throughput node set by node set."""

    index: int
    """Its grid index."""
    label: str
    """Its axis values."""
    node_types: tuple[str, ...]
    """The node types its ok trials ran on (more than one: its figures mix hardware)."""
    by_node: dict[str, float]
    """Node set (short node ids, ``+``-joined) -> the median env steps/s of its ok trials there."""
    trials: int
    """Its ok trials with a throughput and a node set."""

    @property
    def spread(self) -> float | None:
        """The fastest node set's median over the slowest's (None with fewer than two node sets)."""
        values = [v for v in self.by_node.values() if v > 0]
        return max(values) / min(values) if len(values) >= 2 else None


@dataclass(frozen=True)
class NodeCheck:
    """One node's trials against its peers' (same type), relative to their configurations."""

    node_id: str
    """The node."""
    node_type: str
    """Its type: its peers are the other nodes of it."""
    change: Change
    """Its trials' relative throughput (B) against its peers' (A), by the one rule."""

    @property
    def slower(self) -> bool:
        """Slower than its peers beyond doubt (the rule found the difference, below 1)."""
        return self.change.differs and (self.change.ratio or 1.0) < 1.0

    def sentence(self) -> str:
        """The check in words, with its evidence."""
        me = f"node {self.node_id[:12]}"
        said = change_sentence("its peers", me, self.change)
        return said if self.change.differs else f"{me} against its peers: {said}"


@dataclass
class NodeReport:
    """What the report's Nodes section shows (a sweep whose trials recorded their node sets)."""

    spreads: list[NodeSpread] = field(default_factory=list)
    """Per configuration that ran on at least one node set, in grid order."""
    checks: list[NodeCheck] = field(default_factory=list)
    """Per node with ok trials and peers of its type."""
    types: dict[str, int] = field(default_factory=dict)
    """Node type -> ok trials that ran on it."""

    @property
    def slow(self) -> list[NodeCheck]:
        """The nodes slower than their peers beyond doubt."""
        return [c for c in self.checks if c.slower]

    @property
    def mixed(self) -> list[NodeSpread]:
        """The configurations whose trials ran on more than one node type."""
        return [s for s in self.spreads if len(s.node_types) > 1]


def _nodes(text) -> list[str]:
    try:
        value = json.loads(text) if isinstance(text, str) else None
    except ValueError:  # a hostile or damaged table: no node set
        return []
    return [str(n) for n in value] if isinstance(value, list) else []


def node_report(trials: pd.DataFrame, axes: list[str]) -> NodeReport | None:
    """The node-to-node figures of a result set, or None when no trial recorded a node type (not ``--parallel``)."""
    if "node_type" not in trials or not trials["node_type"].notna().any():
        return None
    ok = trials[(trials["status"] == "ok") & trials["node_type"].notna()].copy()
    ok["_rate"] = [num(v) for v in ok["env_steps_per_s"]]
    ok = ok[ok["_rate"].notna()]
    ok["_nodes"] = pd.Series([_nodes(t) for t in ok["node_ids"]], index=ok.index, dtype=object)
    ok = ok[ok["_nodes"].map(len) > 0]
    report = NodeReport(types={str(k): int(v) for k, v in ok["node_type"].value_counts().sort_index().items()})
    if ok.empty:
        return report
    # relative to the configuration's median on the same node type: what a node adds to any configuration
    medians = ok.groupby(["index", "node_type"])["_rate"].transform("median")
    ok["_rel"] = ok["_rate"] / medians.where(medians > 0)
    for index, rows in ok.groupby("index", sort=True):
        by_node = rows.groupby(rows["_nodes"].map(lambda ns: "+".join(n[:8] for n in ns)))["_rate"].median()
        report.spreads.append(
            NodeSpread(
                int(index),
                config_label(rows.iloc[0], axes),
                tuple(sorted(rows["node_type"].unique())),
                by_node.to_dict(),
                len(rows),
            )
        )
    per_node: dict[tuple[str, str], list[float]] = defaultdict(list)
    for _, row in ok.iterrows():
        for node in row["_nodes"]:
            per_node[(row["node_type"], node)].append(float(row["_rel"]))
    for (kind, node), mine in sorted(per_node.items()):
        peers = [v for (k, other), vs in per_node.items() if k == kind and other != node for v in vs]
        if peers:
            report.checks.append(NodeCheck(node, kind, unpaired(peers, mine)))
    return report
