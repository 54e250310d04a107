"""The report document: ``report.html`` (self-contained) and ``report.md`` of a result set.

Reads the tables and manifest only; the numbers come from :mod:`rlbench.analysis`, the figures
from :mod:`rlbench.report.config_plots` (and every other PNG already in ``plots/``, per-trial heat
maps capped at :data:`~rlbench.report.style.MAX_HEATMAPS`).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pandas as pd

from rlbench.analysis.configs import axis_value_text, config_label
from rlbench.analysis.findings import CONFIDENCE, KNEE_MARGIN, NOISY_CV
from rlbench.analysis.result_set import Analysis, analyze
from rlbench.analysis.scaling import MAX_SCALING_GROUPS
from rlbench.analysis.tables import UNREADABLE
from rlbench.report import async_section
from rlbench.report import runners_section as inside
from rlbench.report.autoconfig_section import autoconfig_blocks
from rlbench.report.blocks import (
    Block,
    Break,
    Bullets,
    Fields,
    Figure,
    Heading,
    Paragraph,
    Table,
    Verdicts,
    to_html,
    to_markdown,
)
from rlbench.report.ceiling_section import ceiling_blocks
from rlbench.report.config_plots import write_figures
from rlbench.report.embed import other_figures
from rlbench.report.learning_plots import write_learning_figures
from rlbench.report.learning_section import learning_blocks, target_text
from rlbench.report.next_spec import NextSpec, write_next_spec
from rlbench.report.nodes_section import node_blocks
from rlbench.report.style import MAX_MD_TRIALS, fmt, pct
from rlbench.report.variants_section import variant_blocks
from rlbench.results.files import write_atomic
from rlbench.results.layout import REPORT_HTML, REPORT_MD
from rlbench.spec.model import SpecError


def ci_text(row, column: str, digits: int = 0) -> str:
    """``median [low, high]`` or the median alone."""
    med, lo, hi = row.get(column), row.get(f"{column}_ci_low"), row.get(f"{column}_ci_high")
    if fmt(lo) == "-":
        return fmt(med, digits)
    return f"{fmt(med, digits)} [{fmt(lo, digits)}, {fmt(hi, digits)}]"


def config_rows(analysis: Analysis) -> tuple[list[str], list[list[str]]]:
    """The configurations table: header and rows (ranked first, then noisy, then unmeasured)."""
    c = analysis.configs
    per_w = "env_steps_per_s_per_w" in c and c["env_steps_per_s_per_w"].notna().any()
    header = [
        "rank",
        *analysis.axes,
        f"env steps/s [{CONFIDENCE:.0%} CI]",
        "CV",
        "n",
        "sample",
        "learn",
        "sync",
        *async_section.async_header(c),
        "cores used / cpus",
        "steps/s per CPU",
        *(["steps/s per W"] if per_w else []),
        "bottleneck",
    ]
    if c.empty:  # no trial could be counted (every plan unreadable): the header alone
        return header, []
    order = c.assign(_k=c["rank"].fillna(10**9).astype(float), _m=-c["env_steps_per_s"].fillna(-1)).sort_values(
        ["_k", "_m"]
    )
    rows = []
    for _, r in order.iterrows():
        rank = str(int(r["rank"])) if not pd.isna(r["rank"]) else ("noisy" if r["noisy"] else "-")
        rows.append(
            [
                rank,
                *[axis_value_text(r[a]) for a in analysis.axes],
                ci_text(r, "env_steps_per_s"),
                pct(r["env_steps_per_s_cv"]),
                str(r["n"]),
                pct(r["sample_frac"]),
                pct(r["learn_frac"]),
                pct(r["sync_frac"]),
                *async_section.async_cells(c, r),
                f"{fmt(r['cpus_used'], 2)} / {fmt(r['cpus'])}",
                fmt(r["env_steps_per_s_per_cpu"]),
                *([fmt(r.get("env_steps_per_s_per_w"), 1)] if per_w else []),
                r["bottleneck"],
            ]
        )
    return header, rows


def scaling_rows(analysis: Analysis) -> dict[str, tuple[list[str], list[list[str]], str]]:
    """Per axis: header, rows and a note on capped groups."""
    out = {}
    for axis in analysis.axes:
        curves = [c for c in analysis.curves if c.axis == axis]
        if not curves:
            continue
        curves.sort(key=lambda c: -max((t for t in c.env_steps_per_s if t is not None), default=0))
        note = (
            f"Showing the {MAX_SCALING_GROUPS} fastest of {len(curves)} groups."
            if len(curves) > MAX_SCALING_GROUPS
            else ""
        )
        header = [
            "other axes",
            f"{axis}",
            "env steps/s",
            "speedup",
            "efficiency",
            "Amdahl serial frac",
            "R²",
            "max speedup",
            f"knee ({KNEE_MARGIN:.0%})",
            "best",
        ]
        rows = []
        for c in curves[:MAX_SCALING_GROUPS]:
            unmeasured = all(t is None for t in c.env_steps_per_s)  # no knee nor best: none measured
            rows.append(
                [
                    c.fixed or "-",
                    " / ".join(map(axis_value_text, c.values)),
                    " / ".join(fmt(t) for t in c.env_steps_per_s),
                    " / ".join(fmt(s, 2) for s in c.speedup),
                    " / ".join(fmt(e, 2) for e in c.efficiency),
                    fmt(c.serial_frac, 3),
                    fmt(c.r2, 3),
                    fmt(c.max_speedup, 2),
                    *(("-", "-") if unmeasured else (axis_value_text(c.knee), axis_value_text(c.best))),
                ]
            )
        out[axis] = (header, rows, note)
    return out


def rec_lines(analysis: Analysis) -> list[str]:
    """One sentence per recommendation (those on reaching the target first, when there is one)."""
    units = {
        "env_steps_per_s": "env steps/s",
        "env_steps_per_s_per_cpu": "env steps/s per CPU",
        "env_steps_per_s_per_w": "env steps/s per W",
    }
    lines = []
    lrn = analysis.learning
    for r in analysis.recs:
        if r.column in units:
            row = analysis.configs[analysis.configs["index"] == r.index].iloc[0]
            ci = (
                f" ({CONFIDENCE:.0%} CI {fmt(row['env_steps_per_s_ci_low'])}-{fmt(row['env_steps_per_s_ci_high'])})"
                if r.column == "env_steps_per_s" and fmt(row["env_steps_per_s_ci_low"]) != "-"
                else ""
            )
            lines.append(
                f"For {r.goal}: {r.label} at {fmt(r.value, 1 if r.value < 100 else 0)} {units[r.column]}{ci}; "
                f"{row['bottleneck']}." + (f" Note: {r.note}." if r.note else "")
            )
            continue
        target = target_text(lrn.target) if lrn is not None and lrn.target else "the target"
        if r.index is None:
            lines.append(f"Reaching {target}: {r.note}.")
            continue
        row = lrn.ttt[lrn.ttt["index"] == r.index].iloc[0]
        reached = f"{int(row['reached'])}/{int(row['repeats'])} repeats reached it"
        if r.column == "time_to_target_s":
            ci = (
                f" ({CONFIDENCE:.0%} CI {fmt(row['time_to_target_s_ci_low'], 1)}-"
                f"{fmt(row['time_to_target_s_ci_high'], 1)})"
                if fmt(row["time_to_target_s_ci_low"]) != "-"
                else ""
            )
            what = (
                f"{fmt(r.value, 1)} s of training{ci}, {fmt(row['time_to_target_total_s'], 1)} s with the "
                f"runtime's start and the build, {fmt(row['env_steps_to_target'])} env steps"
            )
        elif r.column == "cpu_s_to_target":
            what = (
                f"{fmt(r.value, 1)} CPU-seconds ({fmt(row['cpus_given'], 1)} CPUs x "
                f"{fmt(row['time_to_target_s'], 1)} s)"
            )
        else:
            what = f"{fmt(r.value, 0)} J"
        lines.append(
            f"{r.goal[0].upper() + r.goal[1:]} ({target}): {r.label} at {what}; {reached}."
            + (f" Note: {r.note}." if r.note else "")
        )
    return lines


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


def _method_text(analysis: Analysis | None = None) -> str:
    return (
        f"Each trial's throughput is the median of its steady-state iterations. Per configuration the "
        f"headline is the median over its ok repeats with a {CONFIDENCE:.0%} percentile-bootstrap interval "
        f"(scipy.stats.bootstrap, resampling repeats; none with one repeat) and the coefficient of variation "
        f"across repeats; a configuration with CV above {NOISY_CV:.0%} is flagged too noisy and not ranked. "
        f"Scaling: speedup against the smallest value of the axis; efficiency and an Amdahl fit over the "
        f"positive values; the knee is the smallest value within {KNEE_MARGIN:.0%} of the best. "
        + async_section.async_text(None if analysis is None else analysis.configs)
        + "Rules and thresholds: docs/ANALYSIS.md."
    )


def next_blocks(analysis: Analysis, written: NextSpec | None) -> list[Block]:
    """What to run next, when a learner verdict names a knob (``next.yaml``): why, and the command."""
    step = analysis.next
    if step is None and analysis.next_stop:  # a verdict with no knob that fits: why there is no next.yaml
        return [
            Heading("Next sweep", 2),
            Bullets([f"No next.yaml, as this machine's cores are the limit. Why: {analysis.next_stop}."], boxed=True),
        ]
    if step is None or written is None:
        return []
    label = config_label(analysis.configs[analysis.configs["index"] == step.index].iloc[0], analysis.axes)
    return [
        Heading("Next sweep", 2),
        Bullets(
            [
                f"{label}: {step.verdict.text}.",
                f"next.yaml sweeps {written.knob} over {', '.join(map(str, written.values))} "
                f"from trial {written.trial_id}: "
                f"{written.command}"
                + (
                    " (a larger minibatch changes learning as well as speed: time to a target settles it)"
                    if written.knob == "minibatch_size"
                    else ""
                ),
            ],
            boxed=True,
        ),
    ]


def document_blocks(
    analysis: Analysis,
    section: inside.InsideReport | None,
    figures: list[Figure],
    notes: list[str],
    written: NextSpec | None = None,
) -> list[Block]:
    """The whole document, built once: every backend draws these blocks."""
    name = str((analysis.manifest.get("spec") or {}).get("name", analysis.out_dir.name))
    axes, n_axes = analysis.axes, len(analysis.axes)
    out: list[Block] = [Heading(f"rlbench report: {name}", 1)]
    answer = autoconfig_blocks(analysis.autoconfig, analysis.trials, axes)  # [] unless rlbench autoconfig wrote it
    out += answer  # autoconfig's raced answer first: the recommendations pool every trial, probes included
    out += (
        [Heading("Recommendations", 2)]
        + (
            [
                Paragraph(
                    "Over every trial of the run by configuration (probes, search and race pooled, some read once): "
                    "the answer is the Autoconfig section's.",
                    muted=True,
                )
            ]
            if answer
            else []
        )
        + [Bullets(rec_lines(analysis) or [analysis.no_recommendations or "no configuration was measured"], boxed=True)]
    )
    out += next_blocks(analysis, written)
    out += variant_blocks(analysis.variants)
    if analysis.findings:
        out += [Heading("What more learner CPUs bought", 2), Bullets(analysis.findings)]
    out += [Heading("Learning", 2)]
    if analysis.learning is not None:
        out += learning_blocks(analysis.learning, analysis.configs, axes, analysis.energy)
    header, rows = config_rows(analysis)
    out += [
        Break(),
        Heading("Configurations", 2),
        Paragraph(_method_text(analysis), muted=True),
        Table(header, rows, frozenset({len(header) - 1, *range(1, 1 + n_axes)})),
        Heading("Verdicts", 2),
        Verdicts([(config_label(r, axes), r["verdict"]) for _, r in analysis.configs.iterrows()]),
        *ceiling_blocks(analysis.configs, axes),
        Heading("Scaling", 2),
    ]
    for axis, (h, rs, note) in scaling_rows(analysis).items():
        out += [Heading(axis, 3), Table(h, rs, frozenset({0, 1, 2, 3, 4}))] + (
            [Paragraph(note, muted=True)] if note else []
        )
    out += node_blocks(analysis.nodes, analysis.trials)
    out += inside.section_blocks(section)
    out += [Heading("Figures", 2), *figures]
    out += [Paragraph(n, muted=True) for n in notes if n] or [Break()]
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
    out += [
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
        Heading("Provenance", 2),
        Fields(provenance(analysis)),
    ]
    return out


def render_md(
    analysis: Analysis,
    section: inside.InsideReport | None,
    figures: list[Figure],
    notes: list[str],
    written: NextSpec | None = None,
) -> str:
    """report.md: the same content as the HTML, figures linked from plots/."""
    return to_markdown(document_blocks(analysis, section, figures, notes, written))


_CSS = (  # a line of the page a rule, as before the lines were held to 120 columns (the report's bytes unchanged)
    "\nbody{font-family:system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:2rem auto;max-width:1200px;"
    "color:#222;padding:0 1rem}\n"
    "h1{font-size:1.6rem}h2{border-bottom:1px solid #ddd;padding-bottom:.2rem;margin-top:2rem}\n"
    "table{border-collapse:collapse;font-size:.85rem;margin:.5rem 0}"
    "th,td{border:1px solid #ddd;padding:.25rem .5rem;text-align:right}\n"
    "th{background:#f3f3f3}td.l,th.l{text-align:left}.noisy{color:#a60}"
    ".rec{background:#eef6ee;padding:.6rem 1rem;border-radius:6px}\n"
    "figure{margin:1rem 0}figcaption{font-size:.85rem;color:#555;max-width:900px}img{max-width:100%}\n"
    ".muted{color:#666;font-size:.85rem}code{background:#f5f5f5;padding:0 .2rem}\n"
)


def render_html(
    analysis: Analysis,
    section: inside.InsideReport | None,
    figures: list[Figure],
    notes: list[str],
    written: NextSpec | None = None,
) -> str:
    """report.html: one file, figures embedded as base64 PNG, no external CSS or scripts."""
    name = str((analysis.manifest.get("spec") or {}).get("name", analysis.out_dir.name))
    return to_html(document_blocks(analysis, section, figures, notes, written), f"rlbench report: {name}", _CSS)


def write_report(
    out_dir: Path, tables: dict[str, pd.DataFrame], others_written: Callable[[], None] = lambda: None
) -> tuple[Path, Path, Analysis]:
    """Write ``report.html`` and ``report.md`` into ``out_dir``, and ``next.yaml`` when a verdict asks for a sweep
    (:mod:`rlbench.report.next_spec`); returns the report's paths and the analysis.
    ``others_written`` waits for the figures drawn meanwhile elsewhere that it embeds from ``plots/``."""
    out_dir = Path(out_dir)
    analysis = analyze(out_dir, tables)
    try:
        written, unwritten = write_next_spec(out_dir, analysis.next, analysis.trials), ""
    except (RuntimeError, SpecError) as e:  # a spec that would not rerun the configuration: said, never written
        written, unwritten = None, f"next.yaml was not written: {str(e)[:300]}"
    mine = write_figures(out_dir, analysis.configs, analysis.axes)
    lrn = analysis.learning
    if lrn is not None:
        labels = {
            int(r["index"]): config_label(r, analysis.axes)
            for _, r in analysis.trials.drop_duplicates("index").iterrows()
        }
        mine += write_learning_figures(out_dir, lrn.curves, labels, lrn.ttt, analysis.axes, lrn.target)
    others_written()
    others, note = other_figures(out_dir, mine)
    figures = mine + others
    section = inside.inside_report(analysis, tables.get("profiles"))
    html_path, md_path = out_dir / REPORT_HTML, out_dir / REPORT_MD
    write_atomic(html_path, render_html(analysis, section, figures, [note, unwritten], written).encode())
    write_atomic(md_path, render_md(analysis, section, figures, [note, unwritten], written).encode())
    return html_path, md_path, analysis
