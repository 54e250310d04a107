"""The report's Trials and Provenance sections: every trial of the result set (those whose plan cannot be read
listed, never dropped), and where the numbers come from."""

from __future__ import annotations

from typing import Any

import pandas as pd

from rlbench.analysis.configs import axis_value_text
from rlbench.analysis.result_set import Analysis
from rlbench.analysis.tables import UNREADABLE
from rlbench.report.blocks import Block, Fields, Heading, Paragraph, Table
from rlbench.report.section_input import SectionInput
from rlbench.report.style import MAX_MD_TRIALS, fmt


def all_trials(analysis: Analysis) -> pd.DataFrame:
    """Every trial of the result set: the measured ones, then those whose plan cannot be read (never dropped
    silently)."""
    if not len(analysis.unreadable):
        return analysis.trials
    return (
        pd.concat([analysis.trials, analysis.unreadable], ignore_index=True)
        if len(analysis.trials)
        else analysis.unreadable
    )


def left_out_text(unreadable: pd.DataFrame) -> str:
    """What the report says of trials left out because their plan.json cannot be read."""
    ids = ", ".join(map(str, unreadable["trial_id"].head(10))) + (", ..." if len(unreadable) > 10 else "")
    return (
        f"{len(unreadable)} trial{'s' if len(unreadable) != 1 else ''} left out of every figure and count: "
        f"{'their' if len(unreadable) != 1 else 'its'} plan.json cannot be read by this rlbench (status "
        f"{UNREADABLE}; {ids}; the reason is in the table)."
    )


def provenance(analysis: Analysis) -> list[tuple[str, str]]:
    """(field, value) pairs: where the numbers come from."""
    m = analysis.manifest
    machine = m.get("machine") or {}
    sw = m.get("software") or {}
    gpus = machine.get("gpus") or []
    gpu_text = ", ".join(f"{g.get('name')} ({g.get('sm_count') or '?'} SMs)" for g in gpus) or "none"
    spec = m.get("spec") or {}
    return [
        ("sweep", str(spec.get("name", "?"))),
        ("spec file", str(m.get("spec_file", "?"))),
        ("command", " ".join(m.get("command") or [])),
        ("started / ended", f"{m.get('started_at')} / {m.get('ended_at')}"),
        (
            "machine",
            f"{machine.get('cpu_model')}, {machine.get('logical_cores')} logical cores, "
            f"{fmt((machine.get('memory_bytes') or 0) / 2**30, 1)} GiB, GPUs: {gpu_text}",
        ),
        ("software", ", ".join(f"{k} {v}" for k, v in sw.items())),
        (
            "framework",
            ", ".join(dict.fromkeys(str(f) for f in analysis.trials.get("framework", ["rllib"]) if f == f)) or "?",
        ),
        ("rlbench git commit", str(m.get("git_commit"))),
        (
            "trials",
            f"{len(all_trials(analysis))} ("
            + ", ".join(f"{n} {s}" for s, n in all_trials(analysis)["status"].value_counts().items())
            + "); "
            f"repeats per configuration: {spec.get('repeats', '?')}",
        ),
        *relative_provenance(m),
        ("rerun one trial", f"rlbench reproduce {analysis.out_dir} TRIAL_ID"),
    ]


def relative_provenance(manifest: dict[str, Any]) -> list[tuple[str, str]]:
    """The grid values written relative to the machine and what they resolved to (none: no row)."""
    rel = manifest.get("relative_values") or {}
    if not rel.get("resolved"):
        return []
    seen = dict.fromkeys(f"{r['axis']}: {r['value']} = {r['resolved']}" for r in rel["resolved"])
    return [("values relative to the machine", f"{', '.join(seen)} (on {rel.get('machine_cpus')} usable cores)")]


def trials(given: SectionInput) -> list[Block]:
    """The Trials section: one row per trial, folded in HTML, capped in Markdown."""
    analysis = given.analysis
    axes = analysis.axes
    t = all_trials(analysis)
    cols = ["trial_id", "status", *axes, "env_steps_per_s", "reason"]
    trial_rows = [
        [
            ("?" if r.get("status") == UNREADABLE else axis_value_text(r.get(c)))
            if c in axes
            else ("" if pd.isna(r.get(c)) else (fmt(r.get(c)) if c == "env_steps_per_s" else str(r.get(c))))
            for c in cols
        ]
        for _, r in t.iterrows()
    ]
    return [
        Heading("Trials", 2),
        *([Paragraph(analysis.endings)] if analysis.endings else []),
        *([Paragraph(left_out_text(analysis.unreadable))] if len(analysis.unreadable) else []),
        Table(
            cols,
            trial_rows,
            frozenset({0, 1, len(cols) - 1}),
            md_max_rows=MAX_MD_TRIALS,
            md_more="{n} more trials in trials.parquet / summary.csv.",
            collapsed=f"{len(t)} trials",
        ),
    ]


def provenance_section(given: SectionInput) -> list[Block]:
    """The Provenance section."""
    return [Heading("Provenance", 2), Fields(provenance(given.analysis))]
