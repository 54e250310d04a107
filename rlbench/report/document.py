"""The report document: ``report.html`` (self-contained) and ``report.md`` of a result set.

Reads the tables and manifest only; the numbers come from :mod:`rlbench.analysis`, the figures
from :mod:`rlbench.report.config_plots` (and every other PNG already in ``plots/``, per-trial heat
maps capped at :data:`~rlbench.report.style.MAX_HEATMAPS`). The document is the sections of
:data:`rlbench.report.sections.SECTIONS`, in order, drawn by each backend.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pandas as pd

from rlbench.analysis.configs import config_label
from rlbench.analysis.result_set import Analysis, analyze
from rlbench.report import runners_section as inside
from rlbench.report.blocks import to_html, to_markdown
from rlbench.report.config_plots import write_figures
from rlbench.report.embed import other_figures
from rlbench.report.learning_plots import write_learning_figures
from rlbench.report.next_spec import write_next_spec
from rlbench.report.path_section import draw_path_figure
from rlbench.report.section_input import SectionInput
from rlbench.report.sections import section_blocks
from rlbench.results.files import write_atomic
from rlbench.results.layout import REPORT_HTML, REPORT_MD
from rlbench.spec.model import SpecError

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


def write_report(
    out_dir: Path, tables: dict[str, pd.DataFrame], others_written: Callable[[], None] = lambda: None
) -> tuple[Path, Path, Analysis]:
    """Write ``report.html`` and ``report.md`` into ``out_dir``, and ``next.yaml`` when a verdict asks for a sweep
    (:mod:`rlbench.report.next_spec`); returns the report's paths and the analysis.
    ``others_written`` waits for the figures drawn meanwhile elsewhere that it embeds from ``plots/``."""
    out_dir = Path(out_dir)
    analysis = analyze(out_dir, tables)
    try:
        label = (
            config_label(analysis.configs[analysis.configs["index"] == analysis.next.index].iloc[0], analysis.axes)
            if analysis.next is not None
            else ""
        )
        written, unwritten = write_next_spec(out_dir, analysis.next, analysis.trials, label), ""
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
    others_written()  # then a walk's figure drawn: its section shows it, Figures does not (a report_ file, as mine)
    others, note = other_figures(out_dir, mine + draw_path_figure(out_dir, analysis.autoconfig))
    figures = mine + others
    section = inside.inside_report(analysis, tables.get("profiles"))
    # the whole document, built once: each backend draws the same blocks (the sections, in order)
    blocks = section_blocks(SectionInput(analysis, section, figures, [note, unwritten], written))
    name = str((analysis.manifest.get("spec") or {}).get("name", analysis.out_dir.name))
    html_path, md_path = out_dir / REPORT_HTML, out_dir / REPORT_MD
    write_atomic(html_path, to_html(blocks, f"rlbench report: {name}", _CSS).encode())  # one file, PNGs embedded
    write_atomic(md_path, to_markdown(blocks).encode())  # the same content, figures linked from plots/
    return html_path, md_path, analysis
