"""``rlbench servebench``'s report: ``servebench.html`` and ``servebench.md`` from ``servebench.json``, and the
terminal's tables, built once as blocks (:mod:`rlbench.report.blocks`: the escaping is there, shared).

It shows the paper's Table 3 beside this machine's figures at batch 64, the verdicts on the paper's order
(a Ray actor above REST, the gap growing with the state size), the figures, every row, the calibration and
how the run was set up. Everything read from the JSON file is data: it is drawn as text, never markup.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rlbench.analysis.evidence import change_evidence
from rlbench.analysis.findings import CONFIDENCE
from rlbench.analysis.servebench_rows import (
    PAPER_BATCH,
    PAPER_TABLE3,
    PATHS,
    PathComparison,
    ServeRow,
    compare_paths,
    gap_change,
    paper_rows,
    summarize_rows,
)
from rlbench.report.blocks import (
    Block,
    Bullets,
    Fields,
    Heading,
    Paragraph,
    Table,
    Verdicts,
    to_html,
    to_markdown,
    to_rich,
)
from rlbench.report.document import _CSS
from rlbench.report.servebench_plots import size_text, write_servebench_figures
from rlbench.report.style import fmt
from rlbench.results.files import write_atomic
from rlbench.results.layout import PLOTS_DIR, SERVEBENCH_HTML, SERVEBENCH_MD

#: Roles whose CPU per 1,000 states the rows table shows (the rest are in servebench.json).
TABLE_ROLES = ("client", "server", "proxy", "controller")


def _num(value, digits: int = 0) -> str:
    return fmt(value, digits) if value is None or abs(value) >= 10 or digits else fmt(value, 1)


def row_cells(r: ServeRow) -> list[str]:
    ci = "-" if r.states_per_s_ci_low is None else f"{fmt(r.states_per_s_ci_low)}-{fmt(r.states_per_s_ci_high)}"
    cpu = [fmt(r.cpu_s_per_1000_states.get(role), 3) for role in TABLE_ROLES]
    note = r.error or ("ran short (max run time)" if r.short_runs else "")
    return [
        r.path,
        str(r.batch),
        size_text(r.input_bytes),
        str(r.clients),
        fmt(r.states_per_s),
        ci,
        _num(r.p50_ms, 2),
        _num(r.p99_ms, 2),
        _num(r.overhead_ms, 2),
        fmt(r.bytes_per_request),
        *cpu,
        f"{r.runs}",
        note,
    ]


ROW_HEADER = [
    "path",
    "batch",
    "state",
    "clients",
    "states/s",
    f"{CONFIDENCE:.0%} CI",
    "p50 ms",
    "p99 ms",
    "overhead ms",
    "bytes/request",
    *(f"CPU-s/1k states: {role}" for role in TABLE_ROLES),
    "repeats",
    "note",
]


def rows_table(rows: list[ServeRow], **kw) -> Table:
    return Table(ROW_HEADER, [row_cells(r) for r in rows], frozenset({0, 2, len(ROW_HEADER) - 1}), **kw)


def paper_table(rows: list[ServeRow], clients: int) -> Table:
    """Per workload of the paper: its Clipper and Ray states/s, and here (batch 64) rest_json, actor, their ratio
    and every other path that ran."""
    ran = {r.path for r in rows}
    others = [p for p in PATHS if p in ran and p not in ("actor", "rest_json")]
    header = [
        "workload (paper)",
        "paper: Clipper",
        "paper: Ray",
        "paper: Ray/Clipper",
        "here: model",
        "here: rest_json",
        "here: actor",
        "here: actor/rest_json",
        *(f"here: {p}" for p in others),
    ]
    out = [
        [
            p["workload"],
            fmt(p["paper_clipper"]),
            fmt(p["paper_ray"]),
            f"{p['paper_ratio']:.1f}x",
            p["model"],
            fmt(p["rest_json"]),
            fmt(p["actor"]),
            "-" if p["ratio"] is None else f"{p['ratio']:.1f}x",
            *(fmt(p["paths"].get(q)) for q in others),
        ]
        for p in paper_rows(rows, clients)
    ]
    return Table(
        header,
        out,
        frozenset({0, 4}),
        title=f"states/s at batch {PAPER_BATCH}, {clients} client(s): the paper beside this machine",
    )


def _cell_text(c: PathComparison) -> str:
    return f"{c.path} vs {c.reference}, batch {c.batch}, {size_text(c.input_bytes)}, {c.clients} client(s)"


def paper_verdicts(records: list[dict[str, Any]], comparisons: list[PathComparison]) -> list[tuple[str, str]]:
    """Whether the paper's order holds here: the actor above REST (JSON) at batch 64 per state size and client
    count, and whether that gap grows with the state size (the one rule on each repeat's actor/REST ratio)."""
    pairs = [c for c in comparisons if (c.path, c.reference, c.batch) == ("actor", "rest_json", PAPER_BATCH)]
    out = [(f"actor above REST? {size_text(c.input_bytes)}, {c.clients} client(s)", c.verdict) for c in pairs]
    paper = [p["ray_states_per_s"] / p["clipper_states_per_s"] for p in PAPER_TABLE3["rows"]]
    for clients in sorted({c.clients for c in pairs}):
        sizes = sorted({c.input_bytes for c in pairs if c.clients == clients})
        if len(sizes) < 2:
            continue
        change = gap_change(records, "actor", "rest_json", PAPER_BATCH, clients, (sizes[0], sizes[-1]))
        if change is None or change.ratio is None:
            continue
        trend = (
            "the gap grows with the state size"
            if change.differs and change.ratio > 1
            else "the gap shrinks with the state size"
            if change.differs
            else "no evidence that the gap changes with the state size"
        )
        words = (
            f"{trend}: each repeat's actor/rest_json at {size_text(sizes[-1])} over that at {size_text(sizes[0])} "
            f"({change_evidence(change)}); the paper: {paper[0]:.1f}x and {paper[1]:.1f}x"
        )
        out.append((f"gap grows with the state size? {clients} client(s)", words))
    return out


def calibration_table(doc: dict[str, Any]) -> Table:
    rows = []
    for c in doc.get("calibration") or []:
        probes = ", ".join(f"{p.get('width')}: {fmt(p.get('forward_ms'), 2)} ms" for p in c.get("probes") or [])
        rows.append(
            [
                str(c.get("model")),
                size_text(int(c.get("input_bytes") or 0)),
                fmt(c.get("target_ms"), 1),
                "residual" if c.get("residual") else "plain",
                str(c.get("depth")),
                str(c.get("width")),
                fmt(c.get("forward_ms"), 2),
                fmt(c.get("parameters")),
                probes,
            ]
        )
    return Table(
        [
            "model",
            "state",
            "target ms / 64",
            "kind",
            "depth",
            "width",
            "measured ms / 64",
            "parameters",
            "probes (width: ms)",
        ],
        rows,
        frozenset({0, 1, 3, 8}),
    )


def servebench_blocks(
    doc: dict[str, Any], figures: list, rows: list[ServeRow], comparisons: list[PathComparison]
) -> list[Block]:
    """The whole document."""
    cfg = doc.get("config") or {}
    clients = sorted({r.clients for r in rows}) or [1]
    blocks: list[Block] = [
        Heading("rlbench servebench: serving a trained policy", 1),
        Paragraph(
            f"Measured {doc.get('started', '?')} to {doc.get('finished', '?')} with the command "
            f"{doc.get('command', '')} "
            f"on {(doc.get('machine') or {}).get('cpu_model', 'this machine')} "
            f"({(doc.get('machine') or {}).get('cores', '?')} usable cores). Ray OSDI'18, Table 3, asked today: "
            "the same trained policy served in-process, from a Ray actor, from Ray Serve (handle and HTTP) "
            "and from a plain ASGI server without Ray, to closed-loop clients on this machine."
        ),
    ]
    if doc.get("interrupted"):
        blocks.append(Paragraph("Interrupted: the rows below hold what was measured before the stop.", lead="Note"))
    policy = doc.get("policy") or {}
    setup = doc.get("setup_s") or {}
    blocks += [
        Heading("Against the paper (Table 3)", 2),
        *(paper_table(rows, c) for c in clients),
        Paragraph("What differs between the paper's setup and this one:"),
        Bullets(list(PAPER_TABLE3["differences"])),
        Heading("Does the paper's order hold here?", 3),
        Verdicts(paper_verdicts(doc.get("runs") or [], comparisons)),
        Heading("Figures", 2),
        *figures,
        Heading("Every row", 2),
        Paragraph(
            "states/s: median over repeats, all clients together; p50/p99: medians over repeats of each "
            "repeat's percentiles; overhead: p50 less the in-process path's p50 in the same cell; CPU: "
            "CPU-seconds per 1,000 states of each role's processes (servebench.json has every role).",
            muted=True,
        ),
        rows_table(rows, md_max_rows=400),
        Heading("Comparisons", 2),
        Paragraph(
            "Each pair in every cell, by the one rule of rlbench compare: the ratio of median states/s "
            f"with its {CONFIDENCE:.0%} bootstrap interval and an exact rank test over the repeats.",
            muted=True,
        ),
        Table(
            ["cell", "verdict"],
            [[_cell_text(c), c.verdict] for c in comparisons],
            frozenset({0, 1}),
            collapsed=f"{len(comparisons)} comparisons",
            md_max_rows=60,
        ),
        Heading("Calibration", 2),
        Paragraph(
            "Widths tried until a batch of 64 took the paper's time on this CPU (one torch thread); the "
            "model served is the probe closest to the target.",
            muted=True,
        ),
        calibration_table(doc),
        Heading("How it ran", 2),
        Fields(
            [
                ("paths", ", ".join(cfg.get("paths") or [])),
                ("batches", str(cfg.get("batches"))),
                ("state bytes", str(cfg.get("inputs"))),
                ("clients", str(cfg.get("clients"))),
                ("seconds per run", str(cfg.get("seconds"))),
                ("repeats", str(cfg.get("repeats"))),
                ("in flight (actor_inflight)", str(cfg.get("in_flight"))),
                (
                    "trained policy",
                    f"{policy.get('model', '-')} on {policy.get('env', '-')}, "
                    f"{policy.get('env_steps', '-')} env steps, return "
                    f"{fmt(policy.get('episode_return_mean'), 1)}",
                ),
                ("set-up seconds", ", ".join(f"{k} {v:.1f}" for k, v in setup.items() if isinstance(v, (int, float)))),
                ("servers", str(doc.get("servers") or {})),
                ("wall seconds", fmt(doc.get("wall_s"), 0)),
            ]
        ),
    ]
    return blocks


def write_servebench_report(
    out_dir: Path, doc: dict[str, Any]
) -> tuple[Path, Path, list[ServeRow], list[PathComparison]]:
    """``servebench.html``, ``servebench.md`` and the figures in ``plots/`` from the document of servebench.json."""
    records = doc.get("runs") or []
    rows, comparisons = summarize_rows(records), compare_paths(records)
    figures = write_servebench_figures(rows, Path(out_dir) / PLOTS_DIR)
    blocks = servebench_blocks(doc, figures, rows, comparisons)
    html_path, md_path = Path(out_dir) / SERVEBENCH_HTML, Path(out_dir) / SERVEBENCH_MD
    write_atomic(html_path, to_html(blocks, "rlbench servebench", _CSS).encode())
    write_atomic(md_path, to_markdown(blocks).encode())
    return html_path, md_path, rows, comparisons


def terminal_tables(
    records: list[dict[str, Any]], rows: list[ServeRow], comparisons: list[PathComparison], max_rows: int = 60
) -> list:
    """The paper table, the verdicts and the rows (those of batch 64 when there are more than ``max_rows``), of
    servebench.json's runs (``records``)."""
    clients = sorted({r.clients for r in rows}) or [1]
    shown = rows if len(rows) <= max_rows else [r for r in rows if r.batch == PAPER_BATCH] or rows[:max_rows]
    caption = "" if shown is rows else f"batch {PAPER_BATCH} only: {len(rows)} rows in servebench.md"
    verdicts = [list(v) for v in paper_verdicts(records, comparisons)]
    order = Table(["question", "answer"], verdicts, frozenset({0, 1}), title="the paper's order, here")
    return [
        *(to_rich(paper_table(rows, c)) for c in clients),
        to_rich(order),
        to_rich(rows_table(shown, title="servebench", caption=caption)),
    ]
