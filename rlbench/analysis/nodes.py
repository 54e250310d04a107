"""Analyze stage, per node: CPU allocated vs used per role on every node a trial ran on.

A trial's utilization rows come from one or more samplers: the sweep's own (``node_id`` null:
the driver's process tree, this machine's cores and GPUs; in local mode, the whole trial) and, in
cluster mode, one per Ray node (``node_id`` set). Each sampler has its own sample times, so a
role's mean cores busy is computed per sampler (sum of its processes' ``cpu_pct`` / 100, averaged
over that sampler's samples in the steady-state window) and then summed over samplers. Peak
memory is likewise taken per sampler and summed: an upper bound of the trial's true peak when the
nodes peak at different moments.

``node_roles.parquet`` holds one row per (trial, node, role); the totals stay in trials.parquet.
"""

from __future__ import annotations

from typing import Any

import pandas as pd
import pyarrow as pa

from rlbench.adapters import ALL_ROLES
from rlbench.analysis.trial_rows import cpus_allocated
from rlbench.analysis.windows import by_trial, steady_window
from rlbench.results.events_file import NodeSamplingEvent, TrialEvent, first
from rlbench.results.tables import NODE_ROLES_SCHEMA


def source_role_use(utilization: pd.DataFrame, window: tuple[float, float] | None) -> pd.DataFrame:
    """One trial's per (node_id, role) mean cores busy over ``window`` and peak summed RSS.

    Returns columns node_id (None for the sweep's own sampler), node_ip, role, cpus_used (None
    without samples in the window), peak_rss_bytes.
    """
    procs = utilization[utilization["kind"] == "process"]
    if "node_id" not in procs:
        procs = procs.assign(node_id=None, node_ip=None)
    out = []
    for source, rows in procs.groupby(procs["node_id"].fillna(""), sort=True):
        ip = rows["node_ip"].dropna()
        inside = rows if window is None else rows[(rows["t_s"] >= window[0]) & (rows["t_s"] <= window[1])]
        stamps = inside["t_s"].nunique() if window is not None else 0
        used = inside.groupby("role")["cpu_pct"].sum() / 100.0 / stamps if stamps else pd.Series(dtype=float)
        peak = rows.groupby(["t_s", "role"])["rss_bytes"].sum().groupby("role").max()
        for role in sorted(set(rows["role"].dropna())):
            out.append(
                {
                    "node_id": source or None,
                    "node_ip": ip.iloc[0] if len(ip) else None,
                    "role": role,
                    "cpus_used": float(used.get(role, 0.0)) if stamps else None,
                    "peak_rss_bytes": int(peak.get(role, 0)),
                }
            )
    return pd.DataFrame(out, columns=["node_id", "node_ip", "role", "cpus_used", "peak_rss_bytes"])


def allocated_by_node(plan, events: list[TrialEvent]) -> dict[tuple[str | None, str], float]:
    """(node_id, role) -> CPUs the config gives the role's processes on that node.

    Local mode: everything on the one machine (node None), as :func:`rlbench.analysis.trial_rows.cpus_allocated`.
    Cluster mode: the driver's CPUs on node None (it runs in the sweep's machine, outside the
    cluster), each env runner / learner actor's CPUs on the node the node samplers found it on; a
    ``--parallel`` trial's driver (its trial actor) likewise on its node.
    """
    allocated = cpus_allocated(plan)
    sampling = first(events, NodeSamplingEvent)
    if not plan.ray_address or sampling is None:
        return {(None, role): cpus for role, cpus in allocated.items() if cpus}
    per_actor = plan.demand().cpus_per_actor()
    out: dict[tuple[str | None, str], float] = {}
    if getattr(plan, "placement", None) is not None:
        per_actor["driver"] = allocated["driver"]
    elif allocated["driver"]:
        out[(None, "driver")] = allocated["driver"]
    for node in sampling.nodes:
        for actor in node.get("actors", []):
            key = (node["node_id"], actor["role"])
            out[key] = out.get(key, 0.0) + per_actor.get(actor["role"], 0.0)
    return out


def trial_node_roles(
    plan, events: list[TrialEvent], utilization: pd.DataFrame, window: tuple[float, float] | None
) -> list[dict[str, Any]]:
    """node_roles rows of one trial: every (node, role) with CPUs allocated or samples."""
    used = source_role_use(utilization, window)
    allocated = allocated_by_node(plan, events)
    ips = {n["node_id"]: n["node_ip"] for e in events if isinstance(e, NodeSamplingEvent) for n in e.nodes}
    rows: dict[tuple[str | None, str], dict[str, Any]] = {}
    for r in used.to_dict("records"):
        r = {k: (None if isinstance(v, float) and v != v else v) for k, v in r.items()}  # NaN -> None
        rows[(r["node_id"], r["role"])] = {"trial_id": plan.trial_id, **r, "cpus_allocated": 0.0}
    for (node, role), cpus in allocated.items():
        row = rows.setdefault(
            (node, role),
            {
                "trial_id": plan.trial_id,
                "node_id": node,
                "node_ip": ips.get(node),
                "role": role,
                "cpus_used": None,
                "peak_rss_bytes": None,
            },
        )
        row["cpus_allocated"] = cpus
    order = {role: i for i, role in enumerate(ALL_ROLES)}
    return sorted(rows.values(), key=lambda r: (r["node_id"] or "", order.get(r["role"], len(order))))


def node_roles_frame(
    plans: list, events_by_trial: dict[str, list[TrialEvent]], iterations: pd.DataFrame, utilization: pd.DataFrame
) -> pd.DataFrame:
    """node_roles.parquet as a DataFrame (every finished trial)."""
    rows: list[dict[str, Any]] = []
    util_by, its_by = by_trial(utilization), by_trial(iterations)  # one split, not one scan per trial
    for plan in plans:
        util = util_by.get(plan.trial_id, utilization.iloc[:0])
        its = its_by.get(plan.trial_id, iterations.iloc[:0])
        window = steady_window(its) if len(its) else None
        rows.extend(trial_node_roles(plan, events_by_trial.get(plan.trial_id, []), util, window))
    return pa.Table.from_pylist(rows, schema=NODE_ROLES_SCHEMA).to_pandas()


def multi_source_role_stats(
    iterations: pd.DataFrame,
    utilization: pd.DataFrame,
    cpu_use: dict[str, dict[str, float]],
    peak_rss: dict[str, dict[str, int]],
) -> None:
    """Replace, for trials sampled on cluster nodes, the per-role totals with sums over samplers (in place)."""
    if utilization.empty or "node_id" not in utilization or not utilization["node_id"].notna().any():
        return
    for trial in utilization.loc[utilization["node_id"].notna(), "trial_id"].unique():
        util = utilization[utilization["trial_id"] == trial]
        its = iterations[iterations["trial_id"] == trial]
        window = steady_window(its) if len(its) else None
        per = source_role_use(util, window)
        if window is not None and per["cpus_used"].notna().any():
            sums = per.groupby("role")["cpus_used"].sum()
            cpu_use[trial] = {role: float(sums.get(role, 0.0)) for role in ALL_ROLES}
        peaks = per.groupby("role")["peak_rss_bytes"].sum()
        peak_rss[trial] = {role: int(peaks.get(role, 0)) for role in ALL_ROLES}
