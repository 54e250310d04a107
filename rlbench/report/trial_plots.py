"""Per-trial figures in ``plots/``: raw throughput per axis, time per phase, CPU per role, per-core heat maps.

Each ``plot_*`` draws on the ``ax`` it is given (or on a new figure sized to the data when None)
and returns the axes, rliable's shape; :func:`write_plots` saves them. From the tables alone.
"""

from __future__ import annotations

import multiprocessing
import os
from collections.abc import Callable
from pathlib import Path

import matplotlib.pyplot as plt
import pandas as pd

from rlbench.analysis.configs import axis_order, axis_pairs_text, axis_slot, axis_value_text
from rlbench.analysis.trial_rows import CPU_ROLES
from rlbench.analysis.windows import steady
from rlbench.report.style import (
    MAX_BAR_TRIALS,
    MAX_HEATMAPS,
    PHASE_COLORS,
    PHASES,
    ROLE_COLORS,
    file_stem,
    legend_right,
    new_axes,
    save,
)
from rlbench.results.layout import ResultsFolder


def axis_columns(trials: pd.DataFrame, axes: list[str]) -> list[str]:
    """The grid axes present in the table, in spec order."""
    return [a for a in axes if a in trials.columns]


def trial_label(row: pd.Series, axes: list[str]) -> str:
    """Short label of a trial: its axis values, then the repeat."""
    label = axis_pairs_text((a, row[a]) for a in axes) if axes else row["trial_id"]
    return f"{label} #{int(row['repeat'])}" if "repeat" in row and row["repeat"] else label


def plot_throughput(trials: pd.DataFrame, axis: str, axes: list[str], ax=None):
    """Steady-state env steps/s against one grid axis, a line per combination of the other axes;
    None when fewer than two of the axis's values were measured (one point compares nothing)."""
    ok = trials[(trials["status"] == "ok") & trials["env_steps_per_s"].notna()]
    values = axis_order(ok[axis])  # a missing value (an off-grid baseline) is drawn last, as the spec's default
    if len(values) < 2:
        return None
    others = [a for a in axes if a != axis]
    ax = ax or new_axes(6.4, 4.2)
    groups = ok.groupby(others, dropna=False) if others else [((), ok)]
    for key, group in groups:
        key = key if isinstance(key, tuple) else (key,)
        slots = pd.Series([axis_slot(values, v) for v in group[axis]], index=group.index)
        med = group["env_steps_per_s"].groupby(slots).median().sort_index()
        label = axis_pairs_text(zip(others, key)) or "median"
        ax.plot(med.index, med.values, marker="o", label=label)
        ax.scatter(slots, group["env_steps_per_s"], s=12, alpha=0.4, color="black")
    ax.set_xticks(range(len(values)), [axis_value_text(v) for v in values])
    ax.set_xlabel(axis)
    ax.set_ylabel("steady-state env steps / s")
    ax.set_title(f"Throughput vs {axis}")
    ax.set_ylim(bottom=0)
    if others:
        ax.legend(fontsize=7, loc="best")
    ax.grid(alpha=0.3)
    return ax


def _bar_width_in(labels: list[str]) -> float:
    """Figure width for a horizontal bar chart: the bars keep about 4 inches beside long trial labels
    and the legend (at a fixed 7 in, 45-character labels left the bars 2 in)."""
    return 5.5 + 0.075 * max((len(label) for label in labels), default=0)


def plot_time_breakdown(trials: pd.DataFrame, iterations: pd.DataFrame, axes: list[str], ax=None):
    """Stacked bar per trial: mean steady-state seconds per iteration in each phase (None without data)."""
    means = steady(iterations).groupby("trial_id")[[f"{p}_s" for p in PHASES]].mean()
    ok = trials[trials["trial_id"].isin(means.index)]
    if ok.empty:
        return None
    labels = [trial_label(r, axes) for _, r in ok.iterrows()]
    ax = ax or new_axes(_bar_width_in(labels), 0.45 * len(ok) + 1.6)
    left = pd.Series(0.0, index=ok["trial_id"])
    for phase in PHASES:
        values = means.loc[ok["trial_id"], f"{phase}_s"].clip(lower=0)
        ax.barh(labels, values.values, left=left.values, color=PHASE_COLORS[phase], label=phase)
        left += values.values
    ax.set_xlabel("seconds per steady-state iteration (mean)")
    ax.set_title("Where an iteration's time goes")
    ax.invert_yaxis()
    legend_right(ax)
    return ax


def roles_in(trials: pd.DataFrame) -> list[str]:
    """The roles a trials table has columns for (a table written before a role existed lacks it)."""
    return [r for r in CPU_ROLES if f"{r}_cpus_used" in trials and f"{r}_cpus_allocated" in trials]


def plot_cpu_by_role(trials: pd.DataFrame, axes: list[str], ax=None):
    """Stacked bar per trial: cores used by each role in steady state, the trial's cpus marked (None without data)."""
    used_cols = [f"{r}_cpus_used" for r in roles_in(trials)]
    ok = trials[(trials["status"] == "ok") & trials[used_cols].notna().any(axis=1)]
    if ok.empty:
        return None
    labels = [trial_label(r, axes) for _, r in ok.iterrows()]
    ax = ax or new_axes(_bar_width_in(labels), 0.45 * len(ok) + 1.6)
    left = [0.0] * len(ok)
    # roles only some algorithms have (APPO/IMPALA's aggregators and state server) only where present
    for role in [
        r
        for r in roles_in(trials)
        if r not in ("aggregator", "state_server") or (ok[f"{r}_cpus_used"].fillna(0) > 0).any()
    ]:
        values = ok[f"{role}_cpus_used"].fillna(0).values
        ax.barh(labels, values, left=left, color=ROLE_COLORS[role], label=role)
        left = [a + b for a, b in zip(left, values)]
    ax.scatter(ok["cpus"].values, labels, marker="|", s=300, color="black", label="trial cpus", zorder=3)
    ax.set_xlabel("cores busy (steady-state mean; 1 = one core)")
    ax.set_title("CPU used per role")
    ax.invert_yaxis()
    legend_right(ax)
    return ax


def core_grid(utilization: pd.DataFrame, trial_id: str) -> pd.DataFrame:
    """One trial's per-core busy %: a row per core (sorted), a column per sample time."""
    cores = utilization[(utilization["trial_id"] == trial_id) & (utilization["kind"] == "core")]
    if "node_id" in cores:  # the sweep machine's cores only; cluster nodes' cores are in node rows
        cores = cores[cores["node_id"].isna()]
    if cores.empty:
        return pd.DataFrame()
    return cores.pivot_table(index="core", columns="t_s", values="cpu_pct", aggfunc="mean").sort_index()


def plot_cpu_heatmap(utilization: pd.DataFrame, iterations: pd.DataFrame, trial_id: str, title: str, ax=None):
    """Per-core busy % over one trial's time as a heat map (cores x time); None without core samples.

    One bright row over a dark block is a scaling collapse (one core busy, the rest idle). Dashed
    lines mark the steady-state window; the samples are machine-wide (every core, not only the
    trial's).
    """
    grid = core_grid(utilization, trial_id)
    if grid.empty:
        return None
    times = grid.columns.to_numpy(dtype=float)
    step = float(pd.Series(times).diff().median()) if len(times) > 1 else 0.1
    ax = ax or new_axes(8.0, 0.35 * len(grid) + 1.8)
    image = ax.imshow(
        grid.to_numpy(dtype=float),
        aspect="auto",
        cmap="magma",
        vmin=0,
        vmax=100,
        interpolation="nearest",
        origin="lower",
        extent=(times[0] - step / 2, times[-1] + step / 2, -0.5, len(grid) - 0.5),
    )
    ax.set_yticks(range(len(grid)), [str(int(c)) for c in grid.index])
    its = steady(iterations[iterations["trial_id"] == trial_id])
    if len(its):
        for t in (its["t_start_s"].min(), its["t_end_s"].max()):
            ax.axvline(t, color="white", linestyle="--", linewidth=1)
    ax.set_xlabel("seconds since the trial started (dashed: steady-state window)")
    ax.set_ylabel("core")
    ax.set_title(title, fontsize=9)
    ax.figure.colorbar(image, ax=ax, label="busy %", pad=0.01)
    return ax


def alloc_vs_used_roles(trials: pd.DataFrame) -> tuple[pd.DataFrame, list[str]]:
    """The ok trials with CPU samples, and the roles worth a panel (allocated or used anywhere)."""
    ok = trials[trials["status"] == "ok"]
    used_cols = [f"{r}_cpus_used" for r in roles_in(trials)]
    ok = ok[ok[used_cols].notna().any(axis=1)]
    roles = [
        r
        for r in roles_in(trials)
        if (ok[f"{r}_cpus_allocated"].fillna(0) > 0.005).any() or (ok[f"{r}_cpus_used"].fillna(0) > 0.005).any()
    ]
    return ok, roles


def plot_cpu_alloc_vs_used(trials: pd.DataFrame, axes: list[str], panels=None):
    """Per role a panel: CPUs the config allocated vs cores actually busy in steady state, per trial.

    ``panels``: one axes per role of :func:`alloc_vs_used_roles` (sharing x), or None for a new
    figure. Returns the panels, or None without data.
    """
    ok, roles = alloc_vs_used_roles(trials)
    if ok.empty or not roles:
        return None
    labels = [trial_label(r, axes) for _, r in ok.iterrows()]
    x = range(len(ok))
    if panels is None:
        panels = plt.subplots(
            len(roles), 1, sharex=True, squeeze=False, figsize=(max(6.0, 0.6 * len(ok) + 2.5), 1.5 * len(roles) + 1.5)
        )[1][:, 0]
    for ax, role in zip(panels, roles):
        allocated = ok[f"{role}_cpus_allocated"].fillna(0).to_numpy(dtype=float)
        used = ok[f"{role}_cpus_used"].fillna(0).to_numpy(dtype=float)
        ax.bar(
            [i - 0.2 for i in x],
            allocated,
            width=0.4,
            color="white",
            edgecolor=ROLE_COLORS[role],
            hatch="//",
            label="allocated",
        )
        ax.bar([i + 0.2 for i in x], used, width=0.4, color=ROLE_COLORS[role], label="used")
        ax.set_ylabel(role, fontsize=8)
        ax.grid(axis="y", alpha=0.3)
        ax.set_ylim(bottom=0, top=max(1.0, allocated.max(initial=0), used.max(initial=0)) * 1.15)
    panels[0].legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)  # inside, it hid bars
    panels[0].set_title("CPUs allocated vs used per role (steady state; 1 = one core)")
    panels[-1].set_xticks(list(x), labels, rotation=30, ha="right", fontsize=7)
    return panels


def shown_trials(trials: pd.DataFrame, limit: int) -> pd.DataFrame:
    """At most ``limit`` trials for a per-trial figure: every trial when they fit, else the first
    repeat of each grid point first, in grid order."""
    if len(trials) <= limit:
        return trials
    return trials.sort_values(["repeat", "index"], kind="stable").head(limit).sort_values(["index", "repeat"])


def write_plots(out_dir: Path, tables: dict[str, pd.DataFrame], axes: list[str]) -> list[Path]:
    """All per-trial figures of a result set into ``out_dir/plots``; returns the files written.

    Per-trial bar charts show at most :data:`MAX_BAR_TRIALS` trials and at most
    :data:`MAX_HEATMAPS` heat maps are drawn (see :func:`shown_trials`); every trial stays in the tables.
    """
    all_trials, iterations = tables["trials"], tables["iterations"]
    trials = shown_trials(all_trials, MAX_BAR_TRIALS) if not all_trials.empty else all_trials
    plots = ResultsFolder(Path(out_dir)).plots
    plots.mkdir(exist_ok=True)
    written: list[Path] = []
    axes = axis_columns(all_trials, axes)
    if all_trials.empty or "env_steps_per_s" not in all_trials:
        return written

    def keep(drawn, name: str) -> None:
        if drawn is not None:
            figure = drawn[0].figure if hasattr(drawn, "__len__") else drawn.figure
            written.append(save(figure, plots / name, tight_bbox=True))  # nothing cut: long labels, legends below

    for axis in axes:
        keep(plot_throughput(all_trials, axis, axes), f"throughput_vs_{file_stem(axis)}.png")
    keep(plot_time_breakdown(trials, iterations, axes), "time_breakdown.png")
    keep(plot_cpu_by_role(trials, axes), "cpu_by_role.png")
    keep(plot_cpu_alloc_vs_used(trials, axes), "cpu_alloc_vs_used.png")
    utilization = tables.get("utilization")
    if utilization is not None and not utilization.empty:
        for _, row in shown_trials(all_trials[all_trials["status"] == "ok"], MAX_HEATMAPS).iterrows():
            title = f"{row['trial_id']}: {trial_label(row, axes)}, cpus={row['cpus']}: busy % per core"
            keep(
                plot_cpu_heatmap(utilization, iterations, row["trial_id"], title),
                f"cpu_heatmap_{file_stem(row['trial_id'])}.png",
            )  # the id comes from a table: no path in it
    return written


def _plots_child(out_dir: Path, tables: dict[str, pd.DataFrame], axes: list[str]) -> None:
    """:func:`write_plots` in the forked child. A Ctrl-C that reaches it (the interrupts e2e, 2026-11-30: inside
    matplotlib's tight layout) ends it with 130 and no traceback on the command's stderr: the command stops, or its
    wait draws the figures itself."""
    try:
        write_plots(out_dir, tables, axes)
    except KeyboardInterrupt:
        os._exit(130)


def write_plots_beside(out_dir: Path, tables: dict[str, pd.DataFrame], axes: list[str]) -> Callable[[], None]:
    """Start :func:`write_plots` in a forked child, so the per-trial figures are drawn while this
    process draws the report's own (in a row they took 1.2 and 1.3 s on 2 cores, measured); returns
    the call that waits for them. When the child fails, the wait draws them here, so an error is
    raised here as before. One CPU, or no ``fork``: drawn here at once."""
    usable = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    if usable < 2 or not hasattr(os, "fork"):
        write_plots(out_dir, tables, axes)
        return lambda: None
    child = multiprocessing.get_context("fork").Process(
        target=_plots_child, args=(out_dir, tables, axes), name="rlbench-trial-plots", daemon=True
    )
    child.start()

    def wait() -> None:
        child.join()
        if child.exitcode != 0:
            write_plots(out_dir, tables, axes)

    return wait
