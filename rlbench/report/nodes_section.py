"""The report's "Nodes" section: where a ``--parallel`` sweep's trials ran, node to node
(:mod:`rlbench.analysis.node_spread`), and what else ran on their nodes (``foreign_cpu_s``).

Built once as typed blocks (:mod:`rlbench.report.blocks`) that every backend draws; nothing when the
trials recorded no node set (a sweep without ``--parallel``).
"""

from __future__ import annotations

import pandas as pd

from rlbench.analysis.config_row import num
from rlbench.analysis.findings import FOREIGN_CPU_PCT
from rlbench.analysis.node_spread import NodeReport
from rlbench.report.blocks import Block, Bullets, Heading, Paragraph, Table
from rlbench.report.style import fmt


def node_blocks(report: NodeReport | None, trials: pd.DataFrame) -> list[Block]:
    """The section's blocks, or none without node sets."""
    if report is None:
        return []
    kinds = "; ".join(f"{kind} ({n} ok trial{'s' * (n != 1)})" for kind, n in report.types.items())
    out: list[Block] = [
        Heading("Nodes", 2),
        Paragraph(
            f"Each trial ran on whole nodes of one type that no other trial of the sweep held meanwhile (--parallel), "
            f"its driver an actor there; repeats rotated over the nodes. Node types: {kinds or 'none'}.",
            muted=True,
        ),
    ]
    if len(report.types) > 1:
        mixed = ", ".join(s.label for s in report.mixed)
        out.append(
            Paragraph(
                "This sweep ran on more than one node type: a configuration compared with another that ran on another "
                "type is compared across hardware, and the Configurations table does so wherever their types differ "
                "(each configuration's types below)"
                + (f"; these configurations mix types within their own repeats: {mixed}" if mixed else "")
                + "."
            )
        )
    rows = [
        [
            s.label,
            " / ".join(s.node_types),
            str(s.trials),
            ", ".join(f"{node}: {fmt(v)}" for node, v in sorted(s.by_node.items())),
            "-" if s.spread is None else f"{s.spread:.2f}x",
        ]
        for s in report.spreads
    ]
    header = ["configuration", "node type", "ok trials", "median env steps/s by node set", "fastest / slowest"]
    out.append(Table(header, rows, frozenset({0, 1, 3}), title="Node to node, per configuration"))
    if report.checks:
        slow = report.slow
        verdict = (
            f"{len(slow)} node{'s' * (len(slow) != 1)} slower than {'their' if len(slow) != 1 else 'its'} peers "
            "beyond doubt."
            if slow
            else "no node is slower than its peers beyond doubt."
        )
        out += [
            Paragraph(
                "A node's trials against its peers' of the same type, each trial's throughput relative to its "
                f"configuration's median on that type, by the one change rule (docs/ANALYSIS.md): {verdict}"
            ),
            Bullets([c.sentence() for c in report.checks]),
        ]
    foreign = [
        (r["trial_id"], cpu_s, num(r.get("foreign_cpu_pct")))
        for _, r in trials.iterrows()
        if "foreign_cpu_s" in trials and (cpu_s := num(r.get("foreign_cpu_s"))) is not None
    ]
    if foreign:
        busy = [
            f"{t} ({s:.2f} CPU-s, {p:.1f}% of its CPUs)"
            for t, s, p in foreign
            if p is not None and p >= FOREIGN_CPU_PCT
        ]
        share = (
            f"at least {FOREIGN_CPU_PCT:g}% of a trial's CPUs: {', '.join(busy)}."
            if busy
            else f"no trial's share reached {FOREIGN_CPU_PCT:g}%."
        )
        out.append(
            Paragraph(
                f"Isolation, measured: processes that were neither a trial's nor Ray's own used "
                f"{sum(s for _, s, _ in foreign):.2f} CPU-s on the trials' nodes while they ran "
                f"(foreign_cpu_s, trials.parquet); {share}"
            )
        )
    return out
