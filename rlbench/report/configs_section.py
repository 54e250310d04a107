"""The report's Configurations, Verdicts and Scaling sections: one row per configuration, ranked, with the method
that made its figures; each configuration's verdict in words; each grid axis's scaling per group of the others."""

from __future__ import annotations

import pandas as pd

from rlbench.analysis.configs import axis_value_text, config_label
from rlbench.analysis.findings import CONFIDENCE, KNEE_MARGIN, NOISY_CV
from rlbench.analysis.labels import label_meanings
from rlbench.analysis.result_set import Analysis
from rlbench.analysis.scaling import MAX_SCALING_GROUPS
from rlbench.report import async_section
from rlbench.report.blocks import Block, Break, Heading, Paragraph, Table, Verdicts
from rlbench.report.section_input import SectionInput
from rlbench.report.style import ci_text, fmt, pct


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


def method_text(analysis: Analysis | None = None) -> str:
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


def configurations(given: SectionInput) -> list[Block]:
    """The Configurations section: the method, then the table."""
    header, rows = config_rows(given.analysis)
    n_axes = len(given.analysis.axes)
    return [
        Break(),
        Heading("Configurations", 2),
        Paragraph(method_text(given.analysis), muted=True),
        Table(header, rows, frozenset({len(header) - 1, *range(1, 1 + n_axes)})),
        *([Paragraph(words, muted=True)] if (words := words_text(given.analysis.configs)) else []),
    ]


def words_text(configs: pd.DataFrame) -> str:
    """What the bottleneck column's words mean, each once (empty when none is known)."""
    seen = dict(pair for b in configs.get("bottleneck", []) for pair in label_meanings(b))
    return ("What its words mean: " + "; ".join(f"{w}: {m}" for w, m in seen.items()) + ".") if seen else ""


def verdicts(given: SectionInput) -> list[Block]:
    """The Verdicts section: one line per configuration ([] when none was counted)."""
    analysis = given.analysis
    if analysis.configs.empty:
        return []
    return [
        Heading("Verdicts", 2),
        Verdicts([(config_label(r, analysis.axes), r["verdict"]) for _, r in analysis.configs.iterrows()]),
    ]


def scaling(given: SectionInput) -> list[Block]:
    """The Scaling section: a table per grid axis ([] when no axis has two values to scale along)."""
    tables = scaling_rows(given.analysis)
    out: list[Block] = [Heading("Scaling", 2)] if tables else []
    for axis, (h, rs, note) in tables.items():
        out += [Heading(axis, 3), Table(h, rs, frozenset({0, 1, 2, 3, 4}))]
        out += [Paragraph(note, muted=True)] if note else []
    return out
