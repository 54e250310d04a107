"""The report's "Learning" section: the target and who reached it how soon, or (without a target) the
return every configuration reached at equal env steps; the seeds; what energy was measurable.

Built once as typed blocks (:mod:`rlbench.report.blocks`) that every backend draws.
"""

from __future__ import annotations

from typing import Any

import pandas as pd

from rlbench.analysis.configs import axis_value_text, config_label
from rlbench.analysis.findings import CLEARLY_BELOW_FRAC, CONFIDENCE, REPEATS_FOR_EVIDENCE, SIGNIFICANCE
from rlbench.analysis.result_set import Learning
from rlbench.report.blocks import Block, Bullets, Paragraph, Table
from rlbench.report.style import ci_text, fmt


def target_text(target: dict[str, Any]) -> str:
    """``episode_return_mean >= 150``."""
    sign = ">=" if target["mode"] == "at_least" else "<="
    return f"{target['metric']} {sign} {target['threshold']:g}"


def _target_blocks(lrn: Learning, target: dict[str, Any], axes: list[str]) -> list[Block]:
    t = lrn.ttt
    blocks: list[Block] = [
        Paragraph(
            f"Target: {target_text(target)}. Each trial stopped at the first iteration "
            "that reached it (warm-up iterations count: learning starts at the first), or at "
            "its iteration or time limit. Time to target is the sum of the iterations' wall_s up "
            "to and including that one; the next column adds the runtime's start (Ray's, for RLlib; "
            "none for a framework that starts none) and the algorithm's build, what a user "
            "waits. Medians over the repeats that reached it, "
            f"{CONFIDENCE:.0%} bootstrap CI across repeats (each its own seed)."
        )
    ]
    energy = "energy_to_target_j" in t and t["energy_to_target_j"].notna().any()
    header = [
        "rank",
        *axes,
        "reached",
        f"time to target s [{CONFIDENCE:.0%} CI]",
        "incl. start-up s",
        "env steps",
        "iterations",
        "CPUs given",
        "CPU-s",
        *(["energy J"] if energy else []),
        "final return",
        "Pareto",
    ]
    order = t.assign(_k=t["target_rank"].fillna(10**9).astype(float)).sort_values(["_k", "index"])
    rows = []
    for _, r in order.iterrows():
        rank = "-" if pd.isna(r["target_rank"]) else str(int(r["target_rank"]))
        rows.append(
            [
                rank,
                *[axis_value_text(r[a]) for a in axes],
                f"{int(r['reached'])}/{int(r['repeats'])}",
                ci_text(r, "time_to_target_s", 1),
                fmt(r["time_to_target_total_s"], 1),
                fmt(r["env_steps_to_target"]),
                fmt(r["iterations_to_target"]),
                fmt(r["cpus_given"], 1),
                fmt(r["cpu_s_to_target"], 1),
                *([fmt(r.get("energy_to_target_j"), 0)] if energy else []),
                fmt(r["final_episode_return_mean"], 1),
                "yes" if r["pareto"] else "",
            ]
        )
    blocks.append(Table(header, rows, frozenset(range(1 + len(axes)))))
    missed = t[t["reached"] < t["repeats"]]
    lines = []
    for _, r in missed.iterrows():
        how = (
            f"did not reach the target in any of its {int(r['repeats'])} repeats"
            if r["reached"] == 0
            else f"missed the target in {int(r['repeats'] - r['reached'])} of its {int(r['repeats'])} repeats"
        )
        lines.append(
            f"{config_label(r, axes)}: {how} "
            f"(final return, median: {fmt(r['final_episode_return_mean'], 1)}); its missed repeats count as "
            "not reached, never as a time."
        )
    if len(t) and (t["reached"] == 0).all():
        lines.insert(0, "No configuration reached the target.")
    if lines:
        blocks.append(Bullets(lines))
    return blocks


def _equal_steps_blocks(lrn: Learning, configs: pd.DataFrame, axes: list[str]) -> list[Block]:
    steps = lrn.equal.env_steps
    if steps is None:
        return [Paragraph("No iteration reported a return (no episode ended), so there is no learning curve.")]
    below = {b.index: "clearly below" if b.clear else "lower, no evidence yet" for b in lrn.below}
    blocks: list[Block] = [
        Paragraph(
            f"No target: learning is compared at equal env steps, {steps:,.0f} (the most "
            "every ok repeat of every configuration sampled). A configuration is clearly below "
            f"when its median is at least {CLEARLY_BELOW_FRAC:.0%} lower than the best one's "
            "there and a one-sided Mann-Whitney U test of its repeats against the best one's "
            f"gives p at most {SIGNIFICANCE:g} (every repeat below every one of the best's: "
            f"{REPEATS_FOR_EVIDENCE} repeats a side); with fewer repeats such a gap is shown as "
            "lower, with no evidence yet (docs/ANALYSIS.md)."
        )
    ]
    header = [*axes, f"return at {steps:,.0f} env steps (median; repeats)", "final return (median)", "learning"]
    rows = []
    for _, c in configs.iterrows():
        index = int(c["index"])
        values = lrn.equal.returns.get(index, [])
        median = lrn.equal.median(index)
        rows.append(
            [
                *[axis_value_text(c[a]) for a in axes],
                f"{fmt(median, 1)} ({', '.join(fmt(v, 1) for v in values)})" if values else "-",
                fmt(_final(lrn, index), 1),
                below.get(index, ""),
            ]
        )
    blocks.append(Table(header, rows, frozenset(range(1 + len(axes)))))
    return blocks


def _final(lrn: Learning, index: int) -> float | None:
    curve = lrn.curves.get("env_steps")
    if curve is None or curve.empty:
        return None
    mine = curve[curve["index"] == index]
    return float(mine["median"].dropna().iloc[-1]) if mine["median"].notna().any() else None


def learning_blocks(lrn: Learning, configs: pd.DataFrame, axes: list[str], energy: str) -> list[Block]:
    """The section's blocks."""
    blocks = (
        _target_blocks(lrn, lrn.target, axes)
        if lrn.target and not lrn.ttt.empty
        else _equal_steps_blocks(lrn, configs, axes)
    )
    if lrn.seeds:
        blocks.append(
            Paragraph(
                f"Seeds (one per repeat index, shared by every configuration; trials.parquet seed): "
                f"{', '.join(map(str, lrn.seeds))}."
            )
        )
    if energy:
        blocks.append(Paragraph(energy))
    return blocks
