"""The report's learning figures: return against env steps and against training seconds per
configuration (median across repeats with a band), and the Pareto figure of hardware given against
time to target. Each ``plot_*`` draws on the ``ax`` it is given (or a new one) and returns
(axes, caption), or None when there is nothing to show."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from rlbench.analysis.configs import config_label
from rlbench.analysis.curves import CURVE_X
from rlbench.analysis.findings import CONFIDENCE
from rlbench.report.blocks import Figure
from rlbench.report.style import MAX_LINES, new_axes, save_figures
from rlbench.results.layout import ResultsFolder


def plot_learning_curves(
    curves: pd.DataFrame, labels: dict[int, str], x: str, target: dict[str, Any] | None = None, ax=None
) -> tuple[Any, str] | None:
    """Median return per configuration against ``x`` (a key of CURVE_X), band from the lowest to the
    highest repeat; the target as a dashed line when its metric is this column (``target["column"]``:
    :func:`rlbench.analysis.result_set.target_of`)."""
    if curves.empty:
        return None
    finals = curves.groupby("index")["median"].last().sort_values(ascending=False)
    shown = list(finals.index[:MAX_LINES])
    ax = ax or new_axes(7.6, 4.8)
    for index in shown:
        c = curves[curves["index"] == index]
        (line,) = ax.plot(
            c["x"],
            c["median"],
            label=labels.get(index, str(index)),
            linewidth=1.6,
            marker="o" if len(c) <= 40 else None,
            markersize=3,
        )
        ax.fill_between(c["x"], c["low"], c["high"], color=line.get_color(), alpha=0.15, linewidth=0)
    if target and target.get("column") == "episode_return_mean":  # the target's metric is the curves' column
        ax.axhline(
            target["threshold"], color="black", linestyle="--", linewidth=1, label=f"target {target['threshold']:g}"
        )
    ax.set_xlabel(CURVE_X[x])
    ax.set_ylabel("episode_return_mean")
    ax.set_title(
        f"Learning curve: return vs {CURVE_X[x]}\n(median across repeats; band: lowest to highest repeat)", fontsize=10
    )
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.16), ncol=2, frameon=False)
    capped = (
        f" Showing the {MAX_LINES} configurations with the highest final median return of {len(finals)}."
        if len(finals) > MAX_LINES
        else ""
    )
    return ax, (
        "Each line is a configuration's median return over its ok repeats at each point (repeats "
        "interpolated linearly between their iterations, never beyond their ends; iterations in which no "
        "episode ended are left out); the band spans the lowest and highest repeat. RLlib's "
        f"episode_return_mean is the mean over the episodes that ended in that iteration.{capped}"
    )


def plot_time_to_target_pareto(ttt: pd.DataFrame, axes: list[str], ax=None) -> tuple[Any, str] | None:
    """Median time to target (95% CI bars) against the CPUs each configuration is given; the Pareto
    frontier joined and filled, the rest hollow."""
    data = ttt[ttt["reached"] > 0].sort_values(["cpus_given", "time_to_target_s"])
    if data.empty:
        return None
    ax = ax or new_axes(7.2, 4.6)
    med = data["time_to_target_s"].to_numpy(dtype=float)
    low = np.nan_to_num(med - data["time_to_target_s_ci_low"].to_numpy(dtype=float))
    high = np.nan_to_num(data["time_to_target_s_ci_high"].to_numpy(dtype=float) - med)
    xs = data["cpus_given"].to_numpy(dtype=float)
    front = data["pareto"].to_numpy(dtype=bool)
    ax.errorbar(xs, med, yerr=np.vstack([low, high]), fmt="none", ecolor="#888888", capsize=3, zorder=1)
    ax.scatter(xs[~front], med[~front], s=50, facecolors="none", edgecolors="#4C72B0", zorder=2, label="dominated")
    ax.scatter(xs[front], med[front], s=60, color="#C44E52", zorder=3, label="Pareto frontier")
    if front.any():
        order = np.argsort(xs[front])
        ax.step(xs[front][order], med[front][order], where="post", color="#C44E52", linewidth=1, alpha=0.7)
    gpus = data["learner_gpus"].to_numpy(dtype=float)
    for (_, r), g in zip(data.iterrows(), gpus):
        share = f" {int(r['reached'])}/{int(r['repeats'])}" if r["reached"] < r["repeats"] else ""
        ax.annotate(
            config_label(r, axes) + (f", {g:g} GPU" if g else "") + share,
            (r["cpus_given"], r["time_to_target_s"]),
            textcoords="offset points",
            xytext=(4, 5),
            fontsize=6,
        )
    ax.set_xlabel("CPUs given (driver + learners + env runners)")
    ax.set_ylabel("time to target, s (median of repeats that reached it)")
    ax.set_ylim(bottom=0)
    ax.margins(x=0.15)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    ax.set_title(f"Hardware given vs time to target (bars: {CONFIDENCE:.0%} CI)", fontsize=10)
    missed = ttt[ttt["reached"] == 0]
    note = (
        f" {len(missed)} configuration{'s' if len(missed) != 1 else ''} never reached the target and are not drawn."
        if len(missed)
        else ""
    )
    return ax, (
        "A configuration is on the frontier when no other gives no more CPUs and GPUs, reaches the target no "
        "later and in no fewer repeats, and is better in one of these. A label ending k/n reached the target "
        f"in k of its n repeats.{note}"
    )


def write_learning_figures(
    out_dir: Path,
    curves: dict[str, pd.DataFrame],
    labels: dict[int, str],
    ttt: pd.DataFrame,
    axes: list[str],
    target: dict[str, Any] | None,
) -> list[Figure]:
    """The learning figures into ``plots/`` (``report_learning_*.png``, ``report_time_to_target_pareto.png``)."""
    plots = ResultsFolder(Path(out_dir)).plots
    plots.mkdir(exist_ok=True)
    wanted = [
        (
            f"report_learning_{x}.png",
            f"Learning curve: return vs {CURVE_X[x]}",
            plot_learning_curves(curves.get(x, pd.DataFrame()), labels, x, target),
        )
        for x in CURVE_X
    ]
    if not ttt.empty:
        pareto = plot_time_to_target_pareto(ttt, axes)
        wanted.append(("report_time_to_target_pareto.png", "Time to target vs CPUs given (Pareto)", pareto))
    return save_figures(plots, wanted)
