"""``rlbench servebench``'s figures: per path, against the batch, one column per state size.

Each ``plot_*`` draws on the axes it is given and returns them; :func:`write_servebench_figures` lays them out
and saves them in ``plots/`` (:func:`~rlbench.report.style.save`).
"""

from __future__ import annotations

from pathlib import Path

import matplotlib.ticker
import numpy as np

from rlbench.analysis.findings import CONFIDENCE
from rlbench.analysis.servebench_rows import MODELS, PAPER_BATCH, PAPER_TABLE3, PATHS, ServeRow
from rlbench.report.blocks import Figure
from rlbench.report.style import ROLE_COLORS, plt, save

#: One colour per path, the same in every figure.
PATH_COLORS = {p: plt.get_cmap("tab10")(i % 10) for i, p in enumerate(PATHS)}
#: The process roles shown in the CPU figure, in stacking order (their colours: the one role table, style.py's).
CPU_ROLES = {
    role: ROLE_COLORS[role] for role in ("client", "server", "proxy", "controller", "driver", "ray_system", "other")
}


def size_text(size: int) -> str:
    """A state size in bytes as words: ``512 B``, ``4 KiB``."""
    return f"{size // 1024} KiB" if size >= 1024 else f"{size} B"


def _plain_number(value: float, _pos=None) -> str:
    """A tick label as a plain number (rlbench's figures parse no mathtext: ``text.parse_math`` is off)."""
    if value >= 1e6:
        return f"{value / 1e6:g}M"
    if value >= 1e3:
        return f"{value / 1e3:g}k"
    return f"{value:g}"


def _log_axes(ax, batches: list[int], log_y: bool) -> None:
    """Batches on a base-2 log axis, ticked at the batches run; y on a log axis labelled in plain numbers."""
    ax.set_xscale("log", base=2)
    ax.set_xticks(batches, [str(b) for b in batches])
    ax.xaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
    if log_y:
        ax.set_yscale("log")
        ax.yaxis.set_major_locator(matplotlib.ticker.LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
        ax.yaxis.set_major_formatter(matplotlib.ticker.FuncFormatter(_plain_number))
        ax.yaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())


def _series(rows: list[ServeRow], path: str, size: int, clients: int, column: str):
    got = sorted(
        (r for r in rows if (r.path, r.input_bytes, r.clients) == (path, size, clients)), key=lambda r: r.batch
    )
    x = np.array([r.batch for r in got], dtype=float)
    y = np.array([np.nan if getattr(r, column) is None else getattr(r, column) for r in got], dtype=float)
    return got, x, y


def plot_metric(
    rows: list[ServeRow], size: int, clients: int, column: str, label: str, ax=None, *, log_y=True, with_ci=False
):
    """``column`` per path against the batch at one state size and client count (intervals with ``with_ci``)."""
    ax = ax or plt.subplots(figsize=(5, 3.6))[1]
    for path in PATHS:
        got, x, y = _series(rows, path, size, clients, column)
        if not np.isfinite(y).any():
            continue
        if with_ci:
            low = np.array([np.nan if r.states_per_s_ci_low is None else r.states_per_s_ci_low for r in got])
            high = np.array([np.nan if r.states_per_s_ci_high is None else r.states_per_s_ci_high for r in got])
            err = np.vstack([np.nan_to_num(np.clip(y - low, 0, None)), np.nan_to_num(np.clip(high - y, 0, None))])
            ax.errorbar(x, y, yerr=err, marker="o", ms=3, capsize=3, lw=1.2, color=PATH_COLORS[path], label=path)
        else:
            ax.plot(x, y, marker="o", ms=3, lw=1.2, color=PATH_COLORS[path], label=path)
    _log_axes(ax, sorted({r.batch for r in rows}), log_y)
    ax.set_xlabel("states per request (batch)")
    ax.set_ylabel(label)
    ax.set_title(f"{size_text(size)} states ({MODELS[size].name}), {clients} client{'s' * (clients > 1)}", fontsize=9)
    ax.grid(alpha=0.3, which="both")
    return ax


def plot_paper_points(size: int, ax) -> None:
    """The paper's Ray and Clipper states/s at batch 64 as stars, where the paper measured this state size."""
    for p in PAPER_TABLE3["rows"]:
        if int(p["input_bytes"]) == size:
            for column, color, label in (
                ("ray_states_per_s", "black", "paper: Ray actor"),
                ("clipper_states_per_s", "#999999", "paper: Clipper (REST)"),
            ):
                ax.scatter([PAPER_BATCH], [p[column]], marker="*", s=90, color=color, zorder=5, label=label)


def plot_cpu(rows: list[ServeRow], size: int, clients: int, batch: int, ax=None):
    """CPU-seconds per 1,000 states per process role, one stacked bar per path, in one cell."""
    ax = ax or plt.subplots(figsize=(5, 3.6))[1]
    got = {r.path: r for r in rows if (r.input_bytes, r.clients, r.batch) == (size, clients, batch)}
    paths = [p for p in PATHS if p in got and got[p].cpu_s_per_1000_states]
    bottom = np.zeros(len(paths))
    for role, colour in CPU_ROLES.items():
        values = np.array([got[p].cpu_s_per_1000_states.get(role) or 0.0 for p in paths])
        if values.any():
            ax.bar(range(len(paths)), values, bottom=bottom, color=colour, label=role)
            bottom += values
    ax.set_xticks(range(len(paths)), paths, rotation=60, ha="right", fontsize=7)
    ax.set_ylabel("CPU-s per 1,000 states")
    ax.set_title(f"{size_text(size)} states, batch {batch}, {clients} client{'s' * (clients > 1)}", fontsize=9)
    ax.grid(alpha=0.3, axis="y")
    return ax


def _grid(n_rows: int, n_cols: int):
    return plt.subplots(n_rows, n_cols, figsize=(4.8 * n_cols + 1.6, 3.5 * n_rows), squeeze=False)


def _saved(fig, axes, path: Path, title: str, caption: str) -> Figure:
    """The figure with one legend of every panel's lines, saved to ``path``."""
    handles: dict[str, object] = {}  # label -> its first handle, in the order the labels first appear
    for ax in axes.flat:
        for h, label in zip(*ax.get_legend_handles_labels()):
            handles.setdefault(label, h)
    fig.legend(
        list(handles.values()), list(handles), loc="upper left", bbox_to_anchor=(1.0, 0.98), fontsize=8, frameon=False
    )
    return Figure(save(fig, path, tight_bbox=True), title, caption)


def _two_rows(
    rows: list[ServeRow],
    sizes: list[int],
    clients: int,
    path: Path,
    title: str,
    caption: str,
    metrics: tuple[tuple[str, str, bool], ...],
) -> Figure:
    """One figure: a row per (column, label, log scale) metric, a column per state size."""
    fig, axes = _grid(len(metrics), len(sizes))
    for i, (column, label, log_y) in enumerate(metrics):
        for j, size in enumerate(sizes):
            plot_metric(rows, size, clients, column, label, axes[i][j], log_y=log_y)
            if not log_y:
                axes[i][j].axhline(0, color="#888888", lw=0.8)
    return _saved(fig, axes, path, title, caption)


def write_servebench_figures(rows: list[ServeRow], plots: Path) -> list[Figure]:
    """The throughput, latency, overhead-and-bytes and CPU figures (those the rows can draw)."""
    sizes = sorted({r.input_bytes for r in rows})
    clients = sorted({r.clients for r in rows})
    if not sizes or not any(r.states_per_s for r in rows):
        return []
    fig, axes = _grid(len(clients), len(sizes))
    for i, c in enumerate(clients):
        for j, size in enumerate(sizes):
            plot_metric(rows, size, c, "states_per_s", "states/s", axes[i][j], with_ci=True)
            plot_paper_points(size, axes[i][j])
    figures = [
        _saved(
            fig,
            axes,
            plots / "servebench_throughput.png",
            "States per second",
            f"Median over repeats, bars: {CONFIDENCE:.0%} bootstrap interval; stars: the paper's Table 3 "
            "(batch 64, its own machine and models). Log scales.",
        )
    ]
    one = f"{clients[0]} client{'s' * (clients[0] > 1)}"
    figures += [
        _two_rows(
            rows=rows,
            sizes=sizes,
            clients=clients[0],
            path=plots / "servebench_latency.png",
            title="Latency per request",
            caption=f"{one}; medians over repeats of each repeat's p50 and p99 (every counted request). Log scales.",
            metrics=(("p50_ms", "p50 latency, ms", True), ("p99_ms", "p99 latency, ms", True)),
        ),
        _two_rows(
            rows=rows,
            sizes=sizes,
            clients=clients[0],
            path=plots / "servebench_overhead.png",
            title="Overhead over the in-process forward, and bytes per request",
            caption=f"{one}. Overhead: p50 less the in-process path's p50 in the same cell. Bytes: request and "
            "answer payloads (HTTP bodies; Ray calls' pickled arguments and result); in-process paths "
            "move none.",
            metrics=(
                ("overhead_ms", "overhead over in-process, ms", False),
                ("bytes_per_request", "bytes per request", True),
            ),
        ),
    ]
    batches = sorted({r.batch for r in rows})
    batch = PAPER_BATCH if PAPER_BATCH in batches else batches[-1]
    fig, axes = _grid(1, len(sizes))
    for j, size in enumerate(sizes):
        plot_cpu(rows, size, clients[0], batch, axes[0][j])
    return [
        *figures,
        _saved(
            fig,
            axes,
            plots / "servebench_cpu.png",
            "CPU-seconds per 1,000 states, per process role",
            f"Batch {batch}, {one}; each role's processes' CPU time "
            "over the run's window (the utilization sampler), median over repeats. In-process paths "
            "compute in the client.",
        ),
    ]
