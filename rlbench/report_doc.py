"""Report stage, the document: ``report.html`` (self-contained) and ``report.md`` of a result set.

Reads the tables and manifest only; the numbers come from :mod:`rlbench.insights`. Figures made
here aggregate per configuration (never one figure per trial) and cap how many configurations or
lines they draw, so a 1,000-trial result set still gives a readable report; every cap is stated
under the figure. Every other PNG already in ``plots/`` is embedded too (per-trial heat maps capped
at :data:`MAX_HEATMAPS`).
"""

from __future__ import annotations

import base64
import html
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import matplotlib
import matplotlib.ticker

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from rlbench.analyze import CPU_ROLES  # noqa: E402
from rlbench.insights import (MAX_SCALING_GROUPS, Recommendation, ScalingCurve, config_label,  # noqa: E402
                              configurations, learner_cpu_findings, load_manifest, recommendations, result_axes,
                              scaling_curves, sm_count)
from rlbench.report import fmt, pct  # noqa: E402
from rlbench.stats import CONFIDENCE, KNEE_MARGIN, NOISY_CV  # noqa: E402

#: Lines (combinations of the other axes) drawn per throughput figure.
MAX_LINES = 8
#: Configurations drawn in the per-configuration bar figures.
MAX_BARS = 40
#: Per-trial heat maps embedded in the report.
MAX_HEATMAPS = 8
#: Per-trial rows listed in report.md (report.html lists all).
MAX_MD_TRIALS = 200

PHASE_COLORS = {"sample": "#4C72B0", "learn": "#DD8452", "sync": "#55A868", "other": "#8C8C8C"}
ROLE_COLORS = {"driver": "#C44E52", "learner": "#DD8452", "env_runner": "#4C72B0", "ray_system": "#8172B3",
               "other": "#8C8C8C"}


@dataclass
class Figure:
    """One figure of the report."""

    path: Path
    """The PNG file."""
    title: str
    """Heading above it."""
    caption: str = ""
    """What it shows, caps included."""


@dataclass
class Analysis:
    """Everything the report shows, computed once."""

    out_dir: Path
    manifest: dict[str, Any]
    axes: list[str]
    trials: pd.DataFrame
    configs: pd.DataFrame
    curves: list[ScalingCurve]
    recs: list[Recommendation]
    findings: list[str] = field(default_factory=list)
    """Plain-words answers for learner-CPU axes (the forum question)."""
    figures: list[Figure] = field(default_factory=list)


def analyze(out_dir: Path, tables: dict[str, pd.DataFrame]) -> Analysis:
    """Per-configuration figures, scaling curves and recommendations of a result set."""
    manifest = load_manifest(out_dir)
    trials = tables["trials"]
    axes = result_axes(manifest, trials)
    configs = configurations(trials, axes, tables.get("iterations"), tables.get("utilization"), sm_count(manifest))
    curves = scaling_curves(configs, axes)
    findings = learner_cpu_findings(configs, trials, tables.get("iterations"), axes)
    return Analysis(out_dir, manifest, axes, trials, configs, curves, recommendations(configs, axes), findings)


# ---------------------------------------------------------------------------------------------
# Figures


def _save(fig, path: Path) -> Path:
    fig.tight_layout()
    fig.savefig(path, dpi=110, bbox_inches="tight")
    plt.close(fig)
    return path


def _yerr(frame: pd.DataFrame, column: str) -> np.ndarray:
    med = frame[column].astype(float).to_numpy()
    low = frame[f"{column}_ci_low"].astype(float).to_numpy()
    high = frame[f"{column}_ci_high"].astype(float).to_numpy()
    return np.vstack([np.nan_to_num(med - low), np.nan_to_num(high - med)])


def plot_throughput_ci(configs: pd.DataFrame, axis: str, axes: list[str], path: Path) -> Figure | None:
    """Median throughput vs one axis with 95% CI bars, one line per combination of the other axes."""
    data = configs[configs["env_steps_per_s"].notna()]
    if data.empty:
        return None
    others = [a for a in axes if a != axis]
    groups = list(data.groupby(others, dropna=False, sort=False)) if others else [((), data)]
    groups.sort(key=lambda kg: -kg[1]["env_steps_per_s"].max())
    shown = groups[:MAX_LINES]
    values = sorted(data[axis].unique(), key=lambda v: (isinstance(v, str), v))
    pos = {v: i for i, v in enumerate(values)}
    fig, ax = plt.subplots(figsize=(7.2, 4.6))
    width = 0.16 if len(shown) > 1 else 0.0
    for g, (key, group) in enumerate(shown):
        key = key if isinstance(key, tuple) else (key,)
        group = group.sort_values(axis, key=lambda s: s.map(pos))
        offset = (g - (len(shown) - 1) / 2) * width / max(1, len(shown) - 1) if len(shown) > 1 else 0.0
        x = np.array([pos[v] for v in group[axis]]) + offset
        label = ", ".join(f"{o}={v}" for o, v in zip(others, key)) or "median"
        line = ax.errorbar(x, group["env_steps_per_s"], yerr=_yerr(group, "env_steps_per_s"), marker="o", capsize=4,
                           label=label)
        noisy = group["noisy"].to_numpy(dtype=bool)
        if noisy.any():
            ax.scatter(x[noisy], group["env_steps_per_s"][noisy], s=110, facecolors="none",
                       edgecolors=line[0].get_color(), linewidths=1.5, zorder=3)
    step = max(1, math.ceil(len(values) / 16))  # at most ~16 tick labels, so they never overlap
    ax.set_xticks(range(0, len(values), step), [str(v) for v in values[::step]])
    ax.set_xlabel(axis)
    ax.set_ylabel("steady-state env steps / s (median)")
    n = int(data["n"].max())
    ax.set_title(f"Throughput vs {axis}\n(median of up to {n} repeat{'s' if n != 1 else ''}; bars: 95% CI; "
                 "ring: too noisy to rank)", fontsize=10)
    ax.set_ylim(bottom=0)
    ax.grid(alpha=0.3)
    if others:
        ax.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.15), ncol=2, frameon=False)
    _save(fig, path)
    capped = f" Showing the {MAX_LINES} lines with the highest throughput of {len(groups)}." \
        if len(groups) > MAX_LINES else ""
    return Figure(path, f"Throughput vs {axis} with 95% CI",
                  "Each point is the median over the configuration's repeats; bars span the 95% percentile "
                  f"bootstrap interval (none with a single repeat).{capped}")


def _below(fig, inches: float = 0.55) -> float:
    """Axes-fraction y that lies ``inches`` below the axes (under the x label) whatever the figure height."""
    return -inches / max(0.5, fig.get_figheight() - 1.2)


def _top_configs(configs: pd.DataFrame) -> tuple[pd.DataFrame, str]:
    data = configs[configs["env_steps_per_s"].notna()].sort_values("env_steps_per_s", ascending=False)
    if len(data) > MAX_BARS:
        return data.head(MAX_BARS), f" Showing the {MAX_BARS} fastest of {len(data)} measured configurations."
    return data, ""


def plot_time_shares(configs: pd.DataFrame, axes: list[str], path: Path) -> Figure | None:
    """Stacked bar per configuration: median share of an iteration in each phase."""
    data, capped = _top_configs(configs)
    if data.empty:
        return None
    labels = [config_label(r, axes) for _, r in data.iterrows()]
    fig, ax = plt.subplots(figsize=(8.0, 0.38 * len(data) + 1.8))
    left = np.zeros(len(data))
    for phase, color in PHASE_COLORS.items():
        values = data[f"{phase}_frac"].astype(float).fillna(0).clip(lower=0).to_numpy() * 100
        ax.barh(labels, values, left=left, color=color, label=phase)
        left += values
    ax.set_xlabel("share of a steady-state iteration (%, median over repeats)")
    ax.set_xlim(0, max(100, float(left.max()) + 2))
    ax.set_title("Where an iteration's time goes, per configuration (fastest first)", fontsize=10)
    ax.invert_yaxis()
    ax.tick_params(axis="y", labelsize=8)
    ax.margins(y=0.01)
    ax.legend(ncol=4, fontsize=8, loc="upper center", bbox_to_anchor=(0.5, _below(fig)), frameon=False)
    _save(fig, path)
    return Figure(path, "Time breakdown per configuration",
                  f"Median share of each phase (sample, learn, weight sync, other) of a steady-state iteration.{capped}")


def plot_cpu_alloc_by_config(configs: pd.DataFrame, axes: list[str], path: Path) -> Figure | None:
    """Per configuration and role: cores used (bar) against cores allocated (tick)."""
    data, capped = _top_configs(configs)
    roles = [r for r in CPU_ROLES if data.get(f"{r}_cpus_used") is not None
             and (data[f"{r}_cpus_used"].fillna(0).max() > 0.05 or data[f"{r}_cpus_allocated"].fillna(0).max() > 0)]
    if data.empty or not roles:
        return None
    labels = [config_label(r, axes) for _, r in data.iterrows()]
    fig, ax = plt.subplots(figsize=(8.0, 0.5 * len(data) + 1.8))
    height = 0.8 / len(roles)
    y = np.arange(len(data))
    for k, role in enumerate(roles):
        yy = y - 0.4 + height * (k + 0.5)
        ax.barh(yy, data[f"{role}_cpus_used"].astype(float).fillna(0), height=height * 0.9,
                color=ROLE_COLORS[role], label=f"{role} used")
        alloc = data[f"{role}_cpus_allocated"].astype(float).fillna(0).to_numpy()
        has = alloc > 0
        ax.scatter(alloc[has], yy[has], marker="|", s=160, color="black", zorder=3,
                   label="allocated" if k == 0 or not ax.get_legend_handles_labels()[1].count("allocated") else None)
    ax.set_yticks(y, labels, fontsize=8)
    ax.set_xlabel("cores (steady-state mean busy; 1 = one core)")
    ax.set_title("CPU used vs allocated per role, per configuration", fontsize=10)
    ax.invert_yaxis()
    handles, names = ax.get_legend_handles_labels()
    uniq = dict(zip(names, handles))
    ax.margins(y=0.01)
    ax.legend(uniq.values(), uniq.keys(), ncol=3, fontsize=8, loc="upper center", bbox_to_anchor=(0.5, _below(fig)),
              frameon=False)
    _save(fig, path)
    return Figure(path, "CPU used vs allocated per role",
                  "Bars: cores each role kept busy (median over repeats); black ticks: CPUs the config allocates to "
                  f"that role (roles with no allocation, e.g. Ray's own processes, have no tick).{capped}")


def plot_cpu_gpu_ratio(configs: pd.DataFrame, axes: list[str], path: Path) -> Figure | None:
    """Throughput against CPU threads per GPU SM, when learner GPUs were swept."""
    data = configs[configs["cpu_threads_per_sm"].notna() & configs["env_steps_per_s"].notna()]
    if data.empty or configs["learner_gpus"].nunique() < 2 and data["cpu_threads_per_sm"].nunique() < 2:
        return None
    data = data.sort_values("cpu_threads_per_sm")
    fig, ax = plt.subplots(figsize=(7.2, 4.4))
    ax.errorbar(data["cpu_threads_per_sm"], data["env_steps_per_s"], yerr=_yerr(data, "env_steps_per_s"),
                fmt="o", capsize=4)
    for _, r in data.iterrows():
        ax.annotate(f"{r['cpus']:g} CPU / {r['learner_gpus']:g} GPU", (r["cpu_threads_per_sm"], r["env_steps_per_s"]),
                    textcoords="offset points", xytext=(4, 6), fontsize=7)
    ax.set_xscale("log")
    plain = matplotlib.ticker.FuncFormatter(lambda v, _: f"{v:.3g}")
    ax.xaxis.set_major_formatter(plain)
    ax.xaxis.set_minor_formatter(plain)
    ax.tick_params(axis="x", which="both", labelsize=8)
    ax.margins(x=0.12)
    ax.set_xlabel("CPU threads per GPU SM  (trial cpus / (learner GPUs x SMs per GPU))")
    ax.set_ylabel("steady-state env steps / s (median)")
    ax.set_ylim(bottom=0)
    ax.set_title("Throughput vs CPU/GPU ratio (bars: 95% CI)", fontsize=10)
    ax.grid(alpha=0.3, which="both")
    _save(fig, path)
    return Figure(path, "Throughput vs CPU/GPU ratio",
                  "CPU-only configurations are left out (no GPU SMs to divide by).")


def write_figures(analysis: Analysis) -> list[Figure]:
    """This module's figures into ``plots/`` (names start with ``report_``)."""
    plots = analysis.out_dir / "plots"
    plots.mkdir(exist_ok=True)
    configs, axes = analysis.configs, analysis.axes
    figures: list[Figure | None] = []
    if configs.empty:
        return []
    for axis in axes:
        figures.append(plot_throughput_ci(configs, axis, axes, plots / f"report_throughput_ci_{_safe(axis)}.png"))
    if configs["learner_gpus"].max() > 0:
        figures.append(plot_cpu_gpu_ratio(configs, axes, plots / "report_cpu_gpu_ratio.png"))
    figures.append(plot_time_shares(configs, axes, plots / "report_time_shares.png"))
    figures.append(plot_cpu_alloc_by_config(configs, axes, plots / "report_cpu_alloc_by_config.png"))
    return [f for f in figures if f is not None]


def _safe(text: str) -> str:
    return "".join(c if c.isalnum() or c in "-_" else "_" for c in text)


def other_figures(out_dir: Path, mine: list[Figure]) -> tuple[list[Figure], str]:
    """The PNGs already in ``plots/`` that this module did not make (heat maps capped)."""
    own = {f.path.name for f in mine}
    found = sorted(p for p in (out_dir / "plots").glob("*.png") if p.name not in own and not p.name.startswith("report_"))
    heatmaps = [p for p in found if p.name.startswith("cpu_heatmap")]
    rest = [p for p in found if not p.name.startswith("cpu_heatmap")]
    note = ""
    if len(heatmaps) > MAX_HEATMAPS:
        note = f"{len(heatmaps)} per-trial heat maps are in plots/; the first {MAX_HEATMAPS} are shown."
        heatmaps = heatmaps[:MAX_HEATMAPS]
    titles = {"time_breakdown.png": "Time breakdown per trial", "cpu_by_role.png": "CPU used per role, per trial",
              "cpu_alloc_vs_used.png": "CPU allocated vs used per role, per trial"}
    figs = [Figure(p, titles.get(p.name, p.stem.replace("_", " ").capitalize())) for p in rest + heatmaps]
    return figs, note


# ---------------------------------------------------------------------------------------------
# Text


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
    header = ["rank", *analysis.axes, f"env steps/s [{CONFIDENCE:.0%} CI]", "CV", "n", "sample", "learn", "sync",
              "cores used / cpus", "steps/s per CPU", *(["steps/s per W"] if per_w else []), "bottleneck"]
    order = c.assign(_k=c["rank"].fillna(10**9).astype(float), _m=-c["env_steps_per_s"].fillna(-1)).sort_values(["_k", "_m"])
    rows = []
    for _, r in order.iterrows():
        rank = str(int(r["rank"])) if not pd.isna(r["rank"]) else ("noisy" if r["noisy"] else "-")
        rows.append([rank, *[str(r[a]) for a in analysis.axes], ci_text(r, "env_steps_per_s"),
                     pct(r["env_steps_per_s_cv"]), str(r["n"]), pct(r["sample_frac"]), pct(r["learn_frac"]),
                     pct(r["sync_frac"]), f"{fmt(r['cpus_used'], 2)} / {fmt(r['cpus'])}",
                     fmt(r["env_steps_per_s_per_cpu"]), *([fmt(r.get("env_steps_per_s_per_w"), 1)] if per_w else []),
                     r["bottleneck"]])
    return header, rows


def scaling_rows(analysis: Analysis) -> dict[str, tuple[list[str], list[list[str]], str]]:
    """Per axis: header, rows and a note on capped groups."""
    out = {}
    for axis in analysis.axes:
        curves = [c for c in analysis.curves if c.axis == axis]
        if not curves:
            continue
        curves.sort(key=lambda c: -max((t for t in c.env_steps_per_s if t is not None), default=0))
        note = f"Showing the {MAX_SCALING_GROUPS} fastest of {len(curves)} groups." if len(curves) > MAX_SCALING_GROUPS else ""
        header = ["other axes", f"{axis}", "env steps/s", "speedup", "efficiency", "Amdahl serial frac", "R²",
                  "max speedup", f"knee ({KNEE_MARGIN:.0%})", "best"]
        rows = []
        for c in curves[:MAX_SCALING_GROUPS]:
            rows.append([c.fixed or "-", " / ".join(map(str, c.values)),
                         " / ".join(fmt(t) for t in c.env_steps_per_s),
                         " / ".join(fmt(s, 2) for s in c.speedup),
                         " / ".join(fmt(e, 2) for e in c.efficiency),
                         fmt(c.serial_frac, 3), fmt(c.r2, 3), fmt(c.max_speedup, 2), str(c.knee), str(c.best)])
        out[axis] = (header, rows, note)
    return out


def rec_lines(analysis: Analysis) -> list[str]:
    """One sentence per recommendation."""
    units = {"env_steps_per_s": "env steps/s", "env_steps_per_s_per_cpu": "env steps/s per CPU",
             "env_steps_per_s_per_w": "env steps/s per W"}
    lines = []
    for r in analysis.recs:
        row = analysis.configs[analysis.configs["index"] == r.index].iloc[0]
        ci = f" (95% CI {fmt(row['env_steps_per_s_ci_low'])}-{fmt(row['env_steps_per_s_ci_high'])})" \
            if r.column == "env_steps_per_s" and fmt(row["env_steps_per_s_ci_low"]) != "-" else ""
        lines.append(f"For {r.goal}: {r.label} at {fmt(r.value, 1 if r.value < 100 else 0)} {units[r.column]}{ci}; "
                     f"{row['bottleneck']}." + (f" Note: {r.note}." if r.note else ""))
    return lines


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
        ("machine", f"{machine.get('cpu_model')}, {machine.get('logical_cores')} logical cores, "
                    f"{fmt((machine.get('memory_bytes') or 0) / 2**30, 1)} GiB, GPUs: {gpu_text}"),
        ("software", ", ".join(f"{k} {v}" for k, v in sw.items())),
        ("rlbench git commit", str(m.get("git_commit"))),
        ("trials", f"{len(analysis.trials)} ({', '.join(f'{n} {s}' for s, n in analysis.trials['status'].value_counts().items())}); "
                   f"repeats per configuration: {spec.get('repeats', '?')}"),
        ("rerun one trial", f"rlbench reproduce {analysis.out_dir} TRIAL_ID"),
    ]


def _method_text() -> str:
    return (f"Each trial's throughput is the median of its steady-state iterations. Per configuration the "
            f"headline is the median over its ok repeats with a {CONFIDENCE:.0%} percentile-bootstrap interval "
            f"(scipy.stats.bootstrap, resampling repeats; none with one repeat) and the coefficient of variation "
            f"across repeats; a configuration with CV above {NOISY_CV:.0%} is flagged too noisy and not ranked. "
            f"Scaling: speedup against the smallest value of the axis; efficiency and an Amdahl fit over the "
            f"positive values; the knee is the smallest value within {KNEE_MARGIN:.0%} of the best. "
            "Rules and thresholds: docs/ANALYSIS.md.")


def _md_table(header: list[str], rows: list[list[str]]) -> str:
    esc = lambda s: str(s).replace("|", "\\|")  # noqa: E731
    lines = ["| " + " | ".join(map(esc, header)) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(map(esc, r)) + " |" for r in rows]
    return "\n".join(lines)


def render_md(analysis: Analysis, figures: list[Figure], notes: list[str]) -> str:
    """report.md: the same content as the HTML, figures linked from plots/."""
    name = (analysis.manifest.get("spec") or {}).get("name", analysis.out_dir.name)
    out = [f"# rlbench report: {name}", "", "## Recommendations", ""]
    out += [f"- {line}" for line in rec_lines(analysis)] or ["- no configuration was measured"]
    if analysis.findings:
        out += ["", "## What more learner CPUs bought", ""] + [f"- {line}" for line in analysis.findings]
    header, rows = config_rows(analysis)
    out += ["", "## Configurations", "", _method_text(), "", _md_table(header, rows), "", "## Verdicts", ""]
    for _, r in analysis.configs.iterrows():
        out.append(f"- **{config_label(r, analysis.axes)}**: {r['verdict']}")
    out += ["", "## Scaling", ""]
    for axis, (h, rs, note) in scaling_rows(analysis).items():
        out += [f"### {axis}", "", _md_table(h, rs), ""] + ([note, ""] if note else [])
    out += ["## Figures", ""]
    for f in figures:
        out += [f"### {f.title}", "", f"![{f.title}](plots/{f.path.name})", ""] + ([f.caption, ""] if f.caption else [])
    out += [n for n in notes if n]
    t = analysis.trials
    cols = ["trial_id", "status", *analysis.axes, "env_steps_per_s", "reason"]
    trial_rows = [[str(r.get(c)) if c != "env_steps_per_s" else fmt(r.get(c)) for c in cols]
                  for _, r in t.head(MAX_MD_TRIALS).iterrows()]
    out += ["", "## Trials", "", _md_table(cols, [[x if x not in ("None", "nan") else "" for x in r] for r in trial_rows])]
    if len(t) > MAX_MD_TRIALS:
        out.append(f"\n{len(t) - MAX_MD_TRIALS} more trials in trials.parquet / summary.csv.")
    out += ["", "## Provenance", ""] + [f"- {k}: `{v}`" for k, v in provenance(analysis)]
    return "\n".join(out) + "\n"


_CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:2rem auto;max-width:1200px;color:#222;padding:0 1rem}
h1{font-size:1.6rem}h2{border-bottom:1px solid #ddd;padding-bottom:.2rem;margin-top:2rem}
table{border-collapse:collapse;font-size:.85rem;margin:.5rem 0}th,td{border:1px solid #ddd;padding:.25rem .5rem;text-align:right}
th{background:#f3f3f3}td.l,th.l{text-align:left}.noisy{color:#a60}.rec{background:#eef6ee;padding:.6rem 1rem;border-radius:6px}
figure{margin:1rem 0}figcaption{font-size:.85rem;color:#555;max-width:900px}img{max-width:100%}
.muted{color:#666;font-size:.85rem}code{background:#f5f5f5;padding:0 .2rem}
"""


def _html_table(header: list[str], rows: list[list[str]], left: set[int]) -> str:
    h = "".join(f"<th class='{'l' if i in left else ''}'>{html.escape(c)}</th>" for i, c in enumerate(header))
    body = []
    for r in rows:
        cls = " class='noisy'" if r and r[0] == "noisy" else ""
        body.append(f"<tr{cls}>" + "".join(f"<td class='{'l' if i in left else ''}'>{html.escape(str(c))}</td>"
                                           for i, c in enumerate(r)) + "</tr>")
    return f"<table><thead><tr>{h}</tr></thead><tbody>{''.join(body)}</tbody></table>"


def render_html(analysis: Analysis, figures: list[Figure], notes: list[str]) -> str:
    """report.html: one file, figures embedded as base64 PNG, no external CSS or scripts."""
    name = (analysis.manifest.get("spec") or {}).get("name", analysis.out_dir.name)
    e = html.escape
    parts = [f"<!doctype html><html lang='en'><head><meta charset='utf-8'><title>rlbench report: {e(str(name))}</title>"
             f"<style>{_CSS}</style></head><body>", f"<h1>rlbench report: {e(str(name))}</h1>",
             "<h2>Recommendations</h2><div class='rec'><ul>"]
    parts += [f"<li>{e(line)}</li>" for line in rec_lines(analysis)] or ["<li>no configuration was measured</li>"]
    parts.append("</ul></div>")
    if analysis.findings:
        parts += ["<h2>What more learner CPUs bought</h2><ul>"] + [f"<li>{e(x)}</li>" for x in analysis.findings]
        parts.append("</ul>")
    header, rows = config_rows(analysis)
    n_axes = len(analysis.axes)
    parts += ["<h2>Configurations</h2>", f"<p class='muted'>{e(_method_text())}</p>",
              _html_table(header, rows, {len(header) - 1, *range(1, 1 + n_axes)}), "<h2>Verdicts</h2><ul>"]
    parts += [f"<li><b>{e(config_label(r, analysis.axes))}</b>: {e(r['verdict'])}</li>" for _, r in analysis.configs.iterrows()]
    parts += ["</ul><h2>Scaling</h2>"]
    for axis, (h, rs, note) in scaling_rows(analysis).items():
        parts += [f"<h3>{e(axis)}</h3>", _html_table(h, rs, {0, 1, 2, 3, 4}), f"<p class='muted'>{e(note)}</p>" if note else ""]
    parts.append("<h2>Figures</h2>")
    for f in figures:
        data = base64.b64encode(f.path.read_bytes()).decode()
        parts.append(f"<figure><h3>{e(f.title)}</h3><img alt='{e(f.title)}' src='data:image/png;base64,{data}'>"
                     f"<figcaption>{e(f.caption)}</figcaption></figure>")
    parts += [f"<p class='muted'>{e(n)}</p>" for n in notes if n]
    t = analysis.trials
    cols = ["trial_id", "status", *analysis.axes, "env_steps_per_s", "reason"]
    trial_rows = [[("" if pd.isna(r.get(c)) else (fmt(r.get(c)) if c == "env_steps_per_s" else str(r.get(c))))
                   for c in cols] for _, r in t.iterrows()]
    parts += [f"<h2>Trials</h2><details><summary>{len(t)} trials</summary>",
              _html_table(cols, trial_rows, {0, 1, len(cols) - 1}), "</details>", "<h2>Provenance</h2><table>"]
    parts += [f"<tr><th class='l'>{e(k)}</th><td class='l'><code>{e(v)}</code></td></tr>" for k, v in provenance(analysis)]
    parts.append("</table></body></html>")
    return "\n".join(parts)


def write_report(out_dir: Path, tables: dict[str, pd.DataFrame]) -> tuple[Path, Path, Analysis]:
    """Write ``report.html`` and ``report.md`` into ``out_dir``; returns their paths and the analysis."""
    from rlbench.store import write_atomic

    out_dir = Path(out_dir)
    analysis = analyze(out_dir, tables)
    mine = write_figures(analysis)
    others, note = other_figures(out_dir, mine)
    figures = mine + others
    analysis.figures = figures
    html_path, md_path = out_dir / "report.html", out_dir / "report.md"
    write_atomic(html_path, render_html(analysis, figures, [note]).encode())
    write_atomic(md_path, render_md(analysis, figures, [note]).encode())
    return html_path, md_path, analysis


def read_tables(out_dir: Path) -> dict[str, pd.DataFrame]:
    """The tables of a result set: read from its parquet files, or rebuilt when they are missing."""
    out_dir = Path(out_dir)
    names = ("trials", "iterations", "utilization")
    if all((out_dir / f"{n}.parquet").exists() for n in names):
        return {n: pd.read_parquet(out_dir / f"{n}.parquet") for n in names}
    from rlbench.store import build_tables

    return build_tables(out_dir)
