"""The report's view inside the iteration: stragglers, driver idle, weight-sync cost, and per role
where the time goes (top functions by self and total time, a flame graph, a verdict).

Flame graphs are written per trial and role into ``trials/<id>/profiles/flame-<role>.svg``
(:mod:`rlbench.report.flamegraph`); the report embeds, per configuration and role, the first ok
repeat's (at most :data:`MAX_EMBEDDED_FLAMEGRAPHS` in report.html, as ``<img>``: an SVG shown that
way runs nothing) and links the file. Every text from the profiled code is escaped. Numbers and
rules: :mod:`rlbench.analysis.runners`, :mod:`rlbench.analysis.profiles`, docs/ANALYSIS.md.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from rlbench.analysis.configs import config_label
from rlbench.analysis.findings import TRUNK_FRAC
from rlbench.analysis.profiles import RoleProfile, no_dominance_text, role_stacks, short_file
from rlbench.analysis.result_set import Analysis
from rlbench.report.blocks import Block, FlameGraph, Heading, Paragraph, Table
from rlbench.report.embed import embeddable_svg
from rlbench.report.flamegraph import flamegraph_svg
from rlbench.report.style import fmt, pct
from rlbench.results.files import write_atomic
from rlbench.results.layout import ResultsFolder

#: Flame graphs embedded in report.html (the rest are linked).
MAX_EMBEDDED_FLAMEGRAPHS = 12
TRUNK_NOTE = (
    f"functions on {TRUNK_FRAC:.0%} or more of the stacks with no time of their own, such as the "
    "worker's main loop, are left out; the flame graph shows them"
)
#: A flame graph rlbench writes, relative to the sweep folder (trial ids and roles are plain names);
#: only such a path becomes a link, and only such a regular file is embedded.
_FLAME_PATH = re.compile(r"trials/[A-Za-z0-9_-]{1,120}/profiles/flame-[a-z_]{1,40}\.svg")
SECTION_NOTE = (
    "Driver idle: share of each steady iteration the driver process was off-CPU. Weight sync: the "
    "driver's side of RLlib's broadcast (one copy into the object store, calls sent without waiting), "
    "so the bandwidth is not a link speed. Rules: docs/ANALYSIS.md."
)
ROLE_TITLES = {
    "driver": "driver (holds the learner when num_learners is 0)",
    "learner": "learners",
    "env_runner": "env runners",
}


@dataclass
class RoleView:
    """One role of one configuration: its profile and its flame graph."""

    profile: RoleProfile
    flamegraph: Path | None
    """The first ok repeat's flame graph of the role."""
    cores_used: float | None
    """Median cores the role kept busy (trials.parquet ``<role>_cpus_used``)."""


@dataclass
class ConfigView:
    label: str
    roles: list[RoleView] = field(default_factory=list)


@dataclass
class InsideReport:
    """What the report shows inside the iteration."""

    out_dir: Path
    header: list[str]
    rows: list[list[str]]
    """The per-configuration table: driver idle, straggler, weight sync."""
    configs: list[ConfigView]
    note: str = ""


def write_flamegraphs(out_dir: Path) -> dict[tuple[str, str], Path]:
    """One flame graph per trial and profiled role; (trial_id, role) -> its file."""
    written = {}
    for trial in ResultsFolder(Path(out_dir)).trials():
        for role in sorted({r for r, _, _ in trial.profile_files()}):
            stacks = role_stacks(trial, role)
            if not stacks:
                continue
            processes = sum(r == role for r, _, _ in trial.profile_files())
            title = f"{trial.trial_id}: {role} ({processes} process{'es' if processes != 1 else ''}), steady state"
            path = trial.flamegraph(role)
            write_atomic(path, flamegraph_svg(stacks, title).encode())
            written[(trial.trial_id, role)] = path
    return written


def _inside_rows(configs: pd.DataFrame, axes: list[str]) -> tuple[list[str], list[list[str]]]:
    header = [
        "configuration",
        "driver idle",
        "straggler",
        "its time / step",
        "its CPU / step",
        "driver waited on it",
        "weights (per runner)",
        "receivers",
        "broadcast / iteration",
        "weight sync",
        "bandwidth",
    ]
    rows = []
    for _, r in configs.iterrows():
        runner = r.get("straggler_env_runner")
        has = runner is not None and not pd.isna(runner)
        mib = lambda v: "-" if fmt(v) == "-" else f"{float(v) / 2**20:,.2f} MiB"  # noqa: E731
        rows.append(
            [
                config_label(r, axes),
                pct(r.get("driver_idle_frac")),
                f"env runner {int(runner)}" if has else "none",
                f"{fmt(r.get('straggler_step_ratio'), 1)}x" if has else "-",
                f"{fmt(r.get('straggler_cpu_ratio'), 1)}x" if has else "-",
                f"{fmt(r.get('straggler_wait_s'), 2)} s ({pct(r.get('straggler_wait_frac'))})" if has else "-",
                mib(r.get("weight_bytes")),
                fmt(r.get("weight_receivers")),
                mib(r.get("sync_bytes_per_iter")),
                "-" if fmt(r.get("weight_sync_s")) == "-" else f"{1000 * float(r['weight_sync_s']):,.1f} ms",
                "-" if fmt(r.get("sync_bytes_per_s")) == "-" else f"{float(r['sync_bytes_per_s']) / 2**20:,.0f} MiB/s",
            ]
        )
    return header, rows


def inside_report(analysis: Analysis, profiles: pd.DataFrame | None) -> InsideReport | None:
    """The section's content for an :class:`~rlbench.analysis.result_set.Analysis` (flame graphs
    written on the way), or None when nothing was measured."""
    out_dir, configs, axes = analysis.out_dir, analysis.configs, analysis.axes
    if configs.empty or "straggler_env_runner" not in configs:
        return None
    header, rows = _inside_rows(configs, axes)
    flames = write_flamegraphs(out_dir) if profiles is not None and not profiles.empty else {}
    views = []
    for cp in analysis.profiles:
        view = ConfigView(cp.label)
        for rp in cp.roles:
            first = next((flames[(t, rp.role)] for t in cp.trial_ids if (t, rp.role) in flames), None)
            view.roles.append(RoleView(rp, first, cp.cores_used.get(rp.role)))
        views.append(view)
    if not views and not any(r[1] != "-" or r[2] != "none" or r[6] != "-" for r in rows):
        return None
    return InsideReport(Path(out_dir), header, rows, views, analysis.profiles_note)


def _verdict(view: RoleView) -> str:
    text = view.profile.verdict or no_dominance_text()
    if view.cores_used is not None:
        text += f"; the role's processes kept {view.cores_used:.2f} cores busy (steady-state mean)"
    return text


def _function_rows(frame: pd.DataFrame) -> list[list[str]]:
    return [
        [
            str(r["function"]),
            f"{short_file(r['file'])}:{int(r['line'])}" if r["file"] else "",
            pct(r["self_frac"]),
            pct(r["total_frac"]),
        ]
        for _, r in frame.iterrows()
    ]


def _relative(report: InsideReport, path: Path) -> str | None:
    """The flame graph's path relative to the sweep folder when it is one rlbench names, else None."""
    try:
        rel = path.relative_to(report.out_dir).as_posix()
    except ValueError:
        return None
    return rel if _FLAME_PATH.fullmatch(rel) else None


def section_blocks(report: InsideReport | None) -> list[Block]:
    """The section's blocks (none without one). A flame graph is embedded only when
    :func:`embeddable_svg` says it is ours, at most :data:`MAX_EMBEDDED_FLAMEGRAPHS`; the rest are linked."""
    if report is None:
        return []
    out: list[Block] = [
        Heading("Inside the iteration", 2),
        Paragraph(SECTION_NOTE, muted=True),
        Table(report.header, report.rows, frozenset({0, 2})),
    ]
    if report.configs:
        out += [
            Heading("Where the time goes inside each role", 2),
            Paragraph(
                "py-spy stack samples of the steady state; a function's self share is time in its own code, "
                "its total share time with it anywhere on the stack (shares of the role's active samples).",
                muted=True,
            ),
        ]
    embedded = 0
    head = ["function", "where", "self", "total"]
    for view in report.configs:
        out.append(Heading(view.label, 3))
        for rv in view.roles:
            title = ROLE_TITLES.get(rv.profile.role, rv.profile.role)
            out += [
                Heading(f"{title}: {rv.profile.samples:,} samples from {rv.profile.processes} process(es)", 4),
                Paragraph(f"{_verdict(rv)}.", lead="Verdict"),
                Paragraph("By self time:"),
                Table(head, _function_rows(rv.profile.top_self), frozenset({0, 1})),
                Paragraph(f"By total time ({TRUNK_NOTE}):"),
                Table(head, _function_rows(rv.profile.top_total), frozenset({0, 1})),
            ]
            rel = None if rv.flamegraph is None else _relative(report, rv.flamegraph)
            if rv.flamegraph is not None and rel is not None:
                ours = embeddable_svg(rv.flamegraph)  # else report.html leaves it out: only report.md links it
                html = "none" if not ours else "embed" if embedded < MAX_EMBEDDED_FLAMEGRAPHS else "link"
                embedded += html == "embed"
                out.append(FlameGraph(rv.flamegraph, rel, f"flame graph of the {title}", html))
    if report.note:
        out.append(Paragraph(report.note, muted=True))
    return out
