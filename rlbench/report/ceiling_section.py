"""The report's "What its env and learner allow" section: how far each configuration runs from its ceiling.

A line per configuration (:func:`rlbench.analysis.sampling.ceiling_text`: the share of what its env and learner allow
here, and the lever) and a figure of each configuration's throughput against that ceiling, its env's own rate and its
learner's (docs/ANALYSIS.md, "Why sampling is slow"). Configurations without an env ceiling (``env_ceiling_s: 0``, a
cluster) are said so, never drawn against a guess.
"""

from __future__ import annotations

from typing import Any

import matplotlib.ticker
import numpy as np
import pandas as pd

from rlbench.analysis.configs import config_label
from rlbench.analysis.sampling import ceiling_text
from rlbench.report.blocks import Block, Heading, Paragraph, Verdicts
from rlbench.report.style import MAX_BARS, PHASE_COLORS, legend_right, new_axes

#: What the section says of the ceiling before the lines.
ABOUT = (
    "The ceiling is what the env and the learner allow on this machine: the env stepping alone with random actions "
    "in as many processes as the trial samples in, on its cores (rlbench's env ceiling, env_ceilings.json), and the "
    "learner's own rate (env steps over its learn time), composed one after the other for a synchronous algorithm "
    "(PPO: sample, then learn), the slower of the two for an asynchronous one. The lever is the part furthest from "
    "its own: sampling against the env alone, or the rest of the iteration (weight sync, the driver's other work). "
    'Rules: docs/ANALYSIS.md, "Why sampling is slow".'
)


#: Values this many times apart (the env alone against the trial) are drawn on a log scale.
LOG_SPREAD = 20


def _ordered(configs: pd.DataFrame) -> pd.DataFrame:
    return configs[configs["env_steps_per_s"].notna()].sort_values("env_steps_per_s", ascending=False)


def ceiling_blocks(configs: pd.DataFrame, axes: list[str]) -> list[Block]:
    """The section: its note and one line per measured configuration (fastest first); nothing without one."""
    if configs.empty or "ceiling_env_steps_per_s" not in configs:
        return []
    rows = _ordered(configs)
    texts = [(config_label(r, axes), ceiling_text(r.to_dict())) for _, r in rows.iterrows()]
    lines = [(label, text) for label, text in texts if text]
    if not lines:
        return []
    return [Heading("What its env and learner allow", 2), Paragraph(ABOUT, muted=True), Verdicts(lines)]


def plot_ceiling(configs: pd.DataFrame, axes: list[str], ax=None) -> tuple[Any, str] | None:
    """Per configuration (fastest first, at most :data:`~rlbench.report.style.MAX_BARS`): its throughput (bar) within
    what its env and learner allow (the pale bar), the env's own rate and the learner's (ticks), its share beside its
    name; a log scale when the values lie more than :data:`LOG_SPREAD` times apart; (axes, caption), or None when no
    configuration has a ceiling."""
    if configs.empty or "ceiling_env_steps_per_s" not in configs:
        return None
    measured = _ordered(configs)
    data = measured[measured["ceiling_env_steps_per_s"].notna()]
    if data.empty:
        return None
    left_out = len(measured) - len(data)
    capped = len(data) > MAX_BARS
    data = data.head(MAX_BARS)
    ceiling = data["ceiling_env_steps_per_s"].astype(float).to_numpy()
    rate = data["env_steps_per_s"].astype(float).to_numpy()
    labels = [f"{config_label(r, axes)} ({v / c:.0%})" for (_, r), v, c in zip(data.iterrows(), rate, ceiling)]
    y = np.arange(len(data))
    ax = ax or new_axes(8.0, 0.42 * len(data) + 1.4)
    ticks = {
        name: pd.to_numeric(data.get(column), errors="coerce").to_numpy(dtype=float)
        for column, name in (("env_ceiling_steps_per_s", "the env alone"), ("learner_steps_per_s", "the learner alone"))
    }
    values = np.concatenate([ceiling, rate, *ticks.values()])
    values = values[np.isfinite(values) & (values > 0)]
    log = values.max() / values.min() > LOG_SPREAD  # an env alone 100x the trial would squash every bar
    left = values.min() / 2 if log else 0.0
    ax.barh(y, ceiling - left, left=left, height=0.7, color="#d9d9d9", label="what its env and learner allow")
    ax.barh(y, rate - left, left=left, height=0.4, color=PHASE_COLORS["sample"], label="env steps/s (median)")
    for (name, x), color in zip(ticks.items(), (PHASE_COLORS["sample"], PHASE_COLORS["learn"])):
        shown = np.isfinite(x)
        if shown.any():
            ax.scatter(x[shown], y[shown], marker="|", s=220, linewidths=2.2, color=color, zorder=3, label=name)
    if log:
        ax.set_xscale("log")
        ax.xaxis.set_major_formatter(matplotlib.ticker.FuncFormatter(lambda v, _: f"{v:,.0f}"))
    ax.set_yticks(y, labels, fontsize=8)
    ax.invert_yaxis()
    ax.set_xlim(left=left if log else 0)
    ax.margins(x=0.05, y=0.05)
    ax.set_xlabel(f"env steps / s (steady state, median over repeats{'; log scale' if log else ''})")
    ax.set_title("Each configuration against what its env and learner allow here (its share)", fontsize=10)
    legend_right(ax)
    caption = (
        "Blue: the configuration's throughput; grey: what its env and learner allow composed (its share beside its "
        "name); ticks: the env stepping alone in as many processes (rlbench's env ceiling) and the learner's own rate "
        "(env steps over its learn time). A tick may lie past the grey bar: one after the other, the two allow less "
        "than either."
    )
    if capped:
        caption += f" Showing the {MAX_BARS} fastest configurations with a ceiling."
    if left_out:
        caption += f" {left_out} measured configuration{'s' if left_out != 1 else ''} without an env ceiling left out."
    return ax, caption
