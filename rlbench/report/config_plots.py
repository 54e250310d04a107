"""Per-configuration figures of the report (``plots/report_*.png``), with their captions.

They aggregate per configuration (never one figure per trial) and cap how many configurations or
lines they draw (:mod:`rlbench.report.style`), so a 1,000-trial result set still gives a readable
report; every cap is stated in the caption. Each ``plot_*`` draws on the ``ax`` it is given (or a
new figure sized to the data) and returns (axes, caption), or None when there is nothing to show.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import matplotlib.ticker
import numpy as np
import pandas as pd

from rlbench.analysis.configs import axis_order, axis_pairs_text, axis_slot, axis_value_text, config_label
from rlbench.analysis.findings import CONFIDENCE
from rlbench.analysis.trial_rows import CPU_ROLES
from rlbench.report.blocks import Figure
from rlbench.report.ceiling_section import plot_ceiling
from rlbench.report.style import MAX_BARS, MAX_LINES, PHASE_COLORS, ROLE_COLORS, file_stem, new_axes, save_figures
from rlbench.results.layout import ResultsFolder


def _yerr(frame: pd.DataFrame, column: str) -> np.ndarray:
    med = frame[column].astype(float).to_numpy()
    low = frame[f"{column}_ci_low"].astype(float).to_numpy()
    high = frame[f"{column}_ci_high"].astype(float).to_numpy()
    return np.vstack([np.nan_to_num(med - low), np.nan_to_num(high - med)])


def plot_throughput_ci(configs: pd.DataFrame, axis: str, axes: list[str], ax=None) -> tuple[Any, str] | None:
    """Median throughput vs one axis with 95% CI bars, one line per combination of the other axes;
    (axes, caption), or None when fewer than two of the axis's values were measured."""
    data = configs[configs["env_steps_per_s"].notna()]
    # an axis value the configuration leaves unset (an off-grid baseline: NaN) is a value of its own, drawn last
    # as the spec's default (issue 42: keyed by value, NaN raised KeyError and the report was never written)
    values = axis_order(data[axis])
    if len(values) < 2:  # one measured value (a one-value axis, or the rest skipped) compares nothing
        return None
    others = [a for a in axes if a != axis]
    groups = list(data.groupby(others, dropna=False, sort=False)) if others else [((), data)]
    groups.sort(key=lambda kg: -kg[1]["env_steps_per_s"].max())
    shown = groups[:MAX_LINES]
    ax = ax or new_axes(7.2, 4.6)
    width = 0.16 if len(shown) > 1 else 0.0
    for g, (key, group) in enumerate(shown):
        key = key if isinstance(key, tuple) else (key,)
        slots = np.array([axis_slot(values, v) for v in group[axis]])
        group = group.iloc[np.argsort(slots, kind="stable")]
        offset = (g - (len(shown) - 1) / 2) * width / max(1, len(shown) - 1) if len(shown) > 1 else 0.0
        x = np.sort(slots, kind="stable") + offset
        label = axis_pairs_text(zip(others, key)) or "median"
        line = ax.errorbar(
            x, group["env_steps_per_s"], yerr=_yerr(group, "env_steps_per_s"), marker="o", capsize=4, label=label
        )
        noisy = group["noisy"].to_numpy(dtype=bool)
        if noisy.any():
            ax.scatter(
                x[noisy],
                group["env_steps_per_s"][noisy],
                s=110,
                facecolors="none",
                edgecolors=line[0].get_color(),
                linewidths=1.5,
                zorder=3,
            )
    step = max(1, math.ceil(len(values) / 16))  # at most ~16 tick labels, so they never overlap
    ax.set_xticks(range(0, len(values), step), [axis_value_text(v) for v in values[::step]])
    ax.set_xlabel(axis)
    ax.set_ylabel("steady-state env steps / s (median)")
    n = int(data["n"].max())
    ax.set_title(
        f"Throughput vs {axis}\n(median of up to {n} repeat{'s' if n != 1 else ''}; bars: {CONFIDENCE:.0%} CI; "
        "ring: too noisy to rank)",
        fontsize=10,
    )
    ax.set_ylim(bottom=0)
    ax.grid(alpha=0.3)
    if others:
        ax.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.15), ncol=2, frameon=False)
    capped = (
        f" Showing the {MAX_LINES} lines with the highest throughput of {len(groups)}."
        if len(groups) > MAX_LINES
        else ""
    )
    return ax, (
        f"Each point is the median over the configuration's repeats; bars span the {CONFIDENCE:.0%} percentile "
        f"bootstrap interval (none with a single repeat).{capped}"
    )


def _below(fig, inches: float = 0.55) -> float:
    """Axes-fraction y that lies ``inches`` below the axes (under the x label) whatever the figure height."""
    return -inches / max(0.5, fig.get_figheight() - 1.2)


def _top_configs(configs: pd.DataFrame) -> tuple[pd.DataFrame, str]:
    data = configs[configs["env_steps_per_s"].notna()].sort_values("env_steps_per_s", ascending=False)
    if len(data) > MAX_BARS:
        return data.head(MAX_BARS), f" Showing the {MAX_BARS} fastest of {len(data)} measured configurations."
    return data, ""


def plot_time_shares(configs: pd.DataFrame, axes: list[str], ax=None) -> tuple[Any, str] | None:
    """Stacked bar per configuration: median share of an iteration in each phase; (axes, caption) or None."""
    data, capped = _top_configs(configs)
    if data.empty:
        return None
    labels = [config_label(r, axes) for _, r in data.iterrows()]
    ax = ax or new_axes(8.0, 0.38 * len(data) + 1.8)
    left = np.zeros(len(data))
    for phase, color in PHASE_COLORS.items():
        values = data[f"{phase}_frac"].astype(float).fillna(0).clip(lower=0).to_numpy() * 100
        ax.barh(labels, values, left=left, color=color, label=phase)
        left += values
    overlapping = _busy_markers(ax, data, labels)
    ax.set_xlabel("share of a steady-state iteration (%, median over repeats)")
    ax.set_xlim(0, max(100, float(left.max()) + 2))
    ax.set_title("Where an iteration's time goes, per configuration (fastest first)", fontsize=10)
    ax.invert_yaxis()
    ax.tick_params(axis="y", labelsize=8)
    ax.margins(y=0.01)
    ax.legend(
        ncol=6 if overlapping else 4,
        fontsize=8,
        loc="upper center",
        bbox_to_anchor=(0.5, _below(ax.figure)),
        frameon=False,
    )
    caption = f"Median share of each phase (sample, learn, weight sync, other) of a steady-state iteration.{capped}"
    if overlapping:
        caption += (
            " Bars are the driver's time. For asynchronous configurations (APPO, IMPALA; marked) the env "
            "runners and learners work while the driver loops, so the bars there are the driver's waits "
            "for samples and for learner results; the markers show the share of the iteration the env "
            "runners (sampler busy) and the learners (learner busy) actually worked, which overlap."
        )
    return ax, caption


def _busy_markers(ax, data: pd.DataFrame, labels: list[str]) -> bool:
    """Markers at the env runners' and learners' busy shares of asynchronous configurations; whether any."""
    if "asynchronous" not in data or not data["asynchronous"].fillna(False).astype(bool).any():
        return False
    rows = data["asynchronous"].fillna(False).astype(bool).to_numpy()
    y = np.arange(len(data))[rows]
    for column, marker, color, name in (
        ("sampler_busy_frac", "D", PHASE_COLORS["sample"], "sampler busy"),
        ("learner_busy_frac", "o", PHASE_COLORS["learn"], "learner busy"),
    ):
        if column in data:
            x = data[column].astype(float).to_numpy()[rows] * 100
            shown = np.isfinite(x)  # a NaN point is masked, and a masked y cannot go on the label axis (it raised)
            if not shown.any():
                continue
            ax.scatter(
                x[shown],
                y[shown],
                marker=marker,
                s=46,
                facecolor="white",
                edgecolor=color,
                linewidths=1.8,
                zorder=3,
                label=name,
            )
    ax.set_yticks(
        np.arange(len(data)),
        [f"{lab} (async)" if a else lab for lab, a in zip(labels, data["asynchronous"].fillna(False).astype(bool))],
    )
    return True


def plot_cpu_alloc_by_config(configs: pd.DataFrame, axes: list[str], ax=None) -> tuple[Any, str] | None:
    """Per configuration and role: cores used (bar) against cores allocated (tick); (axes, caption) or None."""
    data, capped = _top_configs(configs)
    roles = [
        r
        for r in CPU_ROLES
        if data.get(f"{r}_cpus_used") is not None
        and (data[f"{r}_cpus_used"].fillna(0).max() > 0.05 or data[f"{r}_cpus_allocated"].fillna(0).max() > 0)
    ]
    if data.empty or not roles:
        return None
    labels = [config_label(r, axes) for _, r in data.iterrows()]
    ax = ax or new_axes(8.0, 0.5 * len(data) + 1.8)
    height = 0.8 / len(roles)
    y = np.arange(len(data))
    for k, role in enumerate(roles):
        yy = y - 0.4 + height * (k + 0.5)
        ax.barh(
            yy,
            data[f"{role}_cpus_used"].astype(float).fillna(0),
            height=height * 0.9,
            color=ROLE_COLORS[role],
            label=f"{role} used",
        )
        alloc = data[f"{role}_cpus_allocated"].astype(float).fillna(0).to_numpy()
        has = alloc > 0
        ax.scatter(
            alloc[has],
            yy[has],
            marker="|",
            s=160,
            color="black",
            zorder=3,
            label="allocated" if k == 0 or not ax.get_legend_handles_labels()[1].count("allocated") else None,
        )
    ax.set_yticks(y, labels, fontsize=8)
    ax.set_xlabel("cores (steady-state mean busy; 1 = one core)")
    ax.set_title("CPU used vs allocated per role, per configuration", fontsize=10)
    ax.invert_yaxis()
    handles, names = ax.get_legend_handles_labels()
    uniq = dict(zip(names, handles))
    ax.margins(y=0.01)
    ax.legend(
        uniq.values(),
        uniq.keys(),
        ncol=3,
        fontsize=8,
        loc="upper center",
        bbox_to_anchor=(0.5, _below(ax.figure)),
        frameon=False,
    )
    return ax, (
        "Bars: cores each role kept busy (median over repeats); black ticks: CPUs the config allocates to "
        f"that role (roles with no allocation, e.g. Ray's own processes, have no tick).{capped}"
    )


def plot_cpu_gpu_ratio(configs: pd.DataFrame, axes: list[str], ax=None) -> tuple[Any, str] | None:
    """Throughput against CPU threads per GPU SM, when learner GPUs were swept; (axes, caption) or None."""
    data = configs[configs["cpu_threads_per_gpu_sm"].notna() & configs["env_steps_per_s"].notna()]
    if data.empty or configs["learner_gpus"].nunique() < 2 and data["cpu_threads_per_gpu_sm"].nunique() < 2:
        return None
    data = data.sort_values("cpu_threads_per_gpu_sm")
    ax = ax or new_axes(7.2, 4.4)
    ax.errorbar(
        data["cpu_threads_per_gpu_sm"], data["env_steps_per_s"], yerr=_yerr(data, "env_steps_per_s"), fmt="o", capsize=4
    )
    for _, r in data.iterrows():
        ax.annotate(
            f"{r['cpus']:g} CPU / {r['learner_gpus']:g} GPU",
            (r["cpu_threads_per_gpu_sm"], r["env_steps_per_s"]),
            textcoords="offset points",
            xytext=(4, 6),
            fontsize=7,
        )
    ax.set_xscale("log")
    plain = matplotlib.ticker.FuncFormatter(lambda v, _: f"{v:.3g}")
    ax.xaxis.set_major_formatter(plain)
    ax.xaxis.set_minor_formatter(plain)
    ax.tick_params(axis="x", which="both", labelsize=8)
    ax.margins(x=0.12)
    ax.set_xlabel("CPU threads per GPU SM  (trial cpus / (learner GPUs x SMs per GPU))")
    ax.set_ylabel("steady-state env steps / s (median)")
    ax.set_ylim(bottom=0)
    ax.set_title(f"Throughput vs CPU/GPU ratio (bars: {CONFIDENCE:.0%} CI)", fontsize=10)
    ax.grid(alpha=0.3, which="both")
    return ax, "CPU-only configurations are left out (no GPU SMs to divide by)."


def plot_learner_scaling(configs: pd.DataFrame, axes: list[str], ax=None) -> tuple[Any, str] | None:
    """Learn time per iteration against ``num_learners``: the driver's wait for the update (``learn_s``,
    solid) and each learner's own busy time (dashed), one colour per group of the other axes;
    (axes, caption) or None unless num_learners is an axis with two values or more."""
    if "num_learners" not in axes or "learn_s_per_iteration" not in configs:
        return None
    data = configs[configs["learn_s_per_iteration"].notna()]
    if data["num_learners"].nunique() < 2:
        return None
    others = [a for a in axes if a != "num_learners"]
    groups = list(data.groupby(others, dropna=False, sort=False)) if others else [((), data)]
    groups.sort(key=lambda kg: kg[1]["learn_s_per_iteration"].min())
    capped = (
        f" Showing {MAX_LINES} of {len(groups)} groups (fastest learning first)." if len(groups) > MAX_LINES else ""
    )
    ax = ax or new_axes(7.2, 4.4)
    for k, (_key, group) in enumerate(groups[:MAX_LINES]):
        group = group.sort_values("num_learners")
        color = f"C{k % 10}"
        label = config_label(group.iloc[0], others) if others else "learn_s"
        ax.plot(group["num_learners"], group["learn_s_per_iteration"], "o-", color=color, label=label)
        if group["learner_busy_s_per_iteration"].notna().any():
            ax.plot(group["num_learners"], group["learner_busy_s_per_iteration"], "s--", color=color, alpha=0.7)
    ax.set_xticks(sorted(data["num_learners"].unique()))
    ax.set_xlabel("num_learners (0: the learner runs in the driver)")
    ax.set_ylabel("seconds per steady-state iteration (median)")
    ax.set_ylim(bottom=0)
    ax.set_title("Learning time vs learners (solid: driver waits; dashed: each learner busy)", fontsize=10)
    ax.grid(alpha=0.3)
    if others:
        ax.legend(fontsize=7)
    return ax, (
        "Solid: learn_s, the driver's time in the learner update per iteration; dashed: learner_busy_s, "
        "the seconds each learner spent building its train batch and on its minibatch updates. The gap is "
        f"shipping episodes to remote learners, waiting, and (APPO/IMPALA) queueing.{capped}"
    )


def write_figures(out_dir: Path, configs: pd.DataFrame, axes: list[str]) -> list[Figure]:
    """This module's figures into ``plots/`` (names start with ``report_``)."""
    plots = ResultsFolder(Path(out_dir)).plots
    plots.mkdir(exist_ok=True)
    if configs.empty:
        return []
    wanted: list[tuple[str, str, Any]] = []
    for axis in axes:
        title = f"Throughput vs {axis} with {CONFIDENCE:.0%} CI"
        wanted.append((f"report_throughput_ci_{file_stem(axis)}.png", title, plot_throughput_ci(configs, axis, axes)))
    if configs["learner_gpus"].max() > 0:
        wanted.append(("report_cpu_gpu_ratio.png", "Throughput vs CPU/GPU ratio", plot_cpu_gpu_ratio(configs, axes)))
    wanted.append(("report_time_shares.png", "Time breakdown per configuration", plot_time_shares(configs, axes)))
    wanted.append(("report_learner_scaling.png", "Learning time vs learners", plot_learner_scaling(configs, axes)))
    cpu_alloc = plot_cpu_alloc_by_config(configs, axes)
    wanted.append(("report_cpu_alloc_by_config.png", "CPU used vs allocated per role", cpu_alloc))
    wanted.append(("report_ceiling.png", "Against what the env and the learner allow", plot_ceiling(configs, axes)))
    return save_figures(plots, wanted)
