"""The report's one style: colours, number formats, figure caps and how a figure is saved.

Every figure and table of rlbench (``plots/``, report.html/.md, the terminal) takes its colours,
its number formatting and its caps from here, so a phase or a role looks the same everywhere.
"""

from __future__ import annotations

import hashlib
import io
import math
import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
# Labels hold the spec's and a results folder's values: a "$" in one must print as a "$", not
# start mathtext (an unbalanced one made savefig raise and end the report).
matplotlib.rcParams["text.parse_math"] = False
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from rlbench.report.blocks import Figure  # noqa: E402
from rlbench.results.files import write_atomic  # noqa: E402

#: The phases of an iteration, in stacking order.
PHASES = ("sample", "learn", "sync", "other")
PHASE_COLORS = {"sample": "#4C72B0", "learn": "#DD8452", "sync": "#55A868", "other": "#8C8C8C"}
#: Every process role's colour, the same in every figure: a training trial's roles, then servebench's (its client,
#: server, proxy and controller; its driver, Ray's own processes and the rest as a trial's).
ROLE_COLORS = {
    "driver": "#C44E52",
    "learner": "#DD8452",
    "env_runner": "#4C72B0",
    "aggregator": "#937860",
    "state_server": "#64B5CD",
    "ray_system": "#8172B3",
    "other": "#8C8C8C",
    "client": "#4C72B0",
    "server": "#DD8452",
    "proxy": "#55A868",
    "controller": "#DA8BC3",
}
#: Figures stay readable and cheap on big sweeps: at most this many trials per per-trial bar chart
#: (first repeats first), per-core heat maps (drawn, and embedded in the report), configurations per
#: bar figure and lines per line figure. Every cap is stated under the figure it cuts.
MAX_BAR_TRIALS = 60
MAX_HEATMAPS = 24
MAX_BARS = 40
MAX_LINES = 8
#: Rows of the terminal's results table; the rest of a big sweep is in summary.csv and the report.
MAX_TABLE_ROWS = 60
#: Per-trial rows listed in report.md (report.html lists all).
MAX_MD_TRIALS = 200
#: Resolution of every saved figure.
DPI = 110


def new_axes(width_in: float, height_in: float):
    """A new figure with one axes of this size (inches)."""
    return plt.subplots(figsize=(width_in, height_in))[1]


def legend_right(ax) -> None:
    """The legend right of the axes, top-aligned: above them it covered the title ("CPU used per
    role"), below them it met the x label on short figures. Save with ``tight_bbox`` so it is kept."""
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)


def save(fig, path: Path, *, tight_bbox: bool = False) -> Path:
    """Lay out, save and close a figure; returns the path. Written like every other file
    (:func:`~rlbench.results.files.write_atomic`: temp + rename, never through a link)."""
    fig.tight_layout()
    buffer = io.BytesIO()
    try:
        fig.savefig(buffer, format="png", dpi=DPI, **({"bbox_inches": "tight"} if tight_bbox else {}))
    finally:
        plt.close(fig)
    write_atomic(path, buffer.getvalue())
    return path


def save_figures(plots: Path, wanted: Iterable[tuple[str, str, tuple[Any, str] | None]]) -> list[Figure]:
    """Save each drawn figure of ``wanted`` (file name in ``plots``, title, and (axes, caption) or None when there
    was nothing to draw) and return them as the report's figures, in order: the one save loop of every figure
    module."""
    return [
        Figure(save(drawn[0].figure, plots / name, tight_bbox=True), title, drawn[1])
        for name, title, drawn in wanted
        if drawn is not None
    ]


def file_stem(text: str, limit: int = 80) -> str:
    """A file-name part made of ``text``: letters, digits, ``_`` and ``-`` only (no ``/``, no
    ``..``), at most ``limit`` characters (a long one ends in a hash of the whole, so two stay apart)."""
    stem = re.sub(r"[^A-Za-z0-9_-]", "_", str(text))
    if len(stem) > limit:
        stem = stem[: limit - 9] + "_" + hashlib.sha256(str(text).encode()).hexdigest()[:8]
    return stem or "_"


def fmt(value, digits: int = 0) -> str:
    """A number for a table or a sentence, '-' when missing or not a number (a value read from a file may be
    anything): the report's one number format."""
    if (
        value is None
        or value is pd.NA
        or isinstance(value, bool)
        or not isinstance(value, (int, float, np.integer, np.floating))
        or math.isnan(value)
    ):
        return "-"
    if isinstance(value, (int, np.integer)) and not isinstance(value, bool):
        return f"{value:,}"
    return f"{float(value):,.{digits}f}"


def pct(value) -> str:
    """A share as a whole percentage."""
    return "-" if fmt(value) == "-" else f"{100 * float(value):.0f}%"


def ci_text(row, column: str, digits: int = 0) -> str:
    """``median [low, high]`` of a row's ``column`` and its ``_ci_low``/``_ci_high``, or the median alone."""
    med, lo, hi = row.get(column), row.get(f"{column}_ci_low"), row.get(f"{column}_ci_high")
    if fmt(lo) == "-":
        return fmt(med, digits)
    return f"{fmt(med, digits)} [{fmt(lo, digits)}, {fmt(hi, digits)}]"
