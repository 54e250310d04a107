"""What of a results folder, which may come from elsewhere, a report embeds: rlbench's own figures and flame graphs.

Only regular files (a symbolic link planted in a folder from elsewhere would embed, and so leak, the file it points
to), named as rlbench names them, starting as rlbench's files start, within a size cap.
"""

from __future__ import annotations

import re
import stat
from pathlib import Path

from rlbench.report.blocks import Figure
from rlbench.report.style import MAX_HEATMAPS
from rlbench.results.layout import ResultsFolder

#: A figure rlbench writes: its name is a :func:`~rlbench.report.style.file_stem` plus ``.png``.
_FIGURE_NAME = re.compile(r"[A-Za-z0-9_-]{1,120}\.png")
#: Largest figure embedded (bytes); rlbench's own are under 1 MiB.
MAX_FIGURE_BYTES = 16 << 20
_PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def embeddable(path: Path) -> bool:
    """Whether ``path`` can be a figure of ours: a regular file (not a symbolic link: one planted
    in a folder from elsewhere would embed, and so leak, the file it points to), named as rlbench
    names figures, a PNG by its first bytes, at most :data:`MAX_FIGURE_BYTES`."""
    return bool(_FIGURE_NAME.fullmatch(path.name)) and _regular_and_starts(path, MAX_FIGURE_BYTES, _PNG_MAGIC)


def _regular_and_starts(path: Path, max_bytes: int, magic: bytes) -> bool:
    """A regular file (never a link's target) of at most ``max_bytes`` whose first bytes are ``magic``."""
    try:
        st = path.lstat()
        if not stat.S_ISREG(st.st_mode) or st.st_size > max_bytes:
            return False
        with open(path, "rb") as f:
            return f.read(len(magic)) == magic
    except OSError:
        return False


def other_figures(out_dir: Path, mine: list[Figure]) -> tuple[list[Figure], str]:
    """The PNGs already in ``plots/`` that the report's own figures are not (heat maps capped);
    only those :func:`embeddable` says are figures of ours.

    The per-trial ``throughput_vs_*`` plots stay in ``plots/`` but not in the report: the
    per-configuration ``report_throughput_ci_*`` figure shows the same medians with their CIs.
    """
    own = {f.path.name for f in mine}
    found = sorted(
        p
        for p in ResultsFolder(Path(out_dir)).plots.glob("*.png")
        if p.name not in own and not p.name.startswith(("report_", "throughput_vs_")) and embeddable(p)
    )
    heatmaps = [p for p in found if p.name.startswith("cpu_heatmap")]
    rest = [p for p in found if not p.name.startswith("cpu_heatmap")]
    note = ""
    if len(heatmaps) > MAX_HEATMAPS:
        note = f"{len(heatmaps)} per-trial heat maps are in plots/; the first {MAX_HEATMAPS} are shown."
        heatmaps = heatmaps[:MAX_HEATMAPS]
    titles = {
        "time_breakdown.png": "Time breakdown per trial",
        "cpu_by_role.png": "CPU used per role, per trial",
        "cpu_alloc_vs_used.png": "CPU allocated vs used per role, per trial",
    }
    for p in heatmaps:
        titles[p.name] = f"Busy % per core over time, trial {p.stem.removeprefix('cpu_heatmap_')}"
    figs = [Figure(p, titles.get(p.name, p.stem.replace("_", " ").capitalize())) for p in rest + heatmaps]
    return figs, note


#: Largest flame graph embedded (bytes); rlbench's own stay under 1 MiB (MAX_BOXES boxes).
MAX_FLAMEGRAPH_BYTES = 4 << 20


def embeddable_svg(path: Path) -> bool:
    """Whether ``path`` can be embedded: a regular file (a link planted in a folder from elsewhere
    would embed, and so leak, what it points to) of at most :data:`MAX_FLAMEGRAPH_BYTES` that
    starts as rlbench's SVGs do."""
    return _regular_and_starts(path, MAX_FLAMEGRAPH_BYTES, b"<svg ")
