"""Report stage: figures in ``plots/`` and the terminal table, from the tables alone."""

from __future__ import annotations

import math
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
from rich.table import Table  # noqa: E402

from rlbench.analyze import CPU_ROLES  # noqa: E402

PHASES = ("sample", "learn", "sync", "other")
PHASE_COLORS = {"sample": "#4C72B0", "learn": "#DD8452", "sync": "#55A868", "other": "#8C8C8C"}
ROLE_COLORS = {"driver": "#C44E52", "learner": "#DD8452", "env_runner": "#4C72B0", "ray_system": "#8172B3",
               "other": "#8C8C8C"}


def axis_columns(trials: pd.DataFrame, axes: list[str]) -> list[str]:
    """The grid axes present in the table, in spec order."""
    return [a for a in axes if a in trials.columns]


def trial_label(row: pd.Series, axes: list[str]) -> str:
    """Short label of a trial: its axis values, then the repeat."""
    parts = [f"{a}={row[a]}" for a in axes]
    label = ", ".join(parts) if parts else row["trial_id"]
    return f"{label} #{int(row['repeat'])}" if "repeat" in row and row["repeat"] else label


def plot_throughput(trials: pd.DataFrame, axis: str, axes: list[str], path: Path) -> None:
    """Steady-state env steps/s against one grid axis, a line per combination of the other axes."""
    ok = trials[(trials["status"] == "ok") & trials["env_steps_per_s"].notna()]
    others = [a for a in axes if a != axis]
    fig, ax = plt.subplots(figsize=(6.4, 4.2))
    groups = ok.groupby(others, dropna=False) if others else [((), ok)]
    for key, group in groups:
        key = key if isinstance(key, tuple) else (key,)
        med = group.groupby(axis)["env_steps_per_s"].median().sort_index()
        label = ", ".join(f"{o}={v}" for o, v in zip(others, key)) or "median"
        x = [str(v) for v in med.index]
        ax.plot(x, med.values, marker="o", label=label)
        ax.scatter([str(v) for v in group[axis]], group["env_steps_per_s"], s=12, alpha=0.4, color="black")
    ax.set_xlabel(axis)
    ax.set_ylabel("steady-state env steps / s")
    ax.set_title(f"Throughput vs {axis}")
    ax.set_ylim(bottom=0)
    if others:
        ax.legend(fontsize=7, loc="best")
    ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def plot_time_breakdown(trials: pd.DataFrame, iterations: pd.DataFrame, axes: list[str], path: Path) -> None:
    """Stacked bar per trial: mean steady-state seconds per iteration in each phase."""
    steady = iterations[~iterations["warmup"]]
    means = steady.groupby("trial_id")[[f"{p}_s" for p in PHASES]].mean()
    ok = trials[trials["trial_id"].isin(means.index)]
    if ok.empty:
        return
    labels = [trial_label(r, axes) for _, r in ok.iterrows()]
    fig, ax = plt.subplots(figsize=(7.0, 0.45 * len(ok) + 1.6))
    left = pd.Series(0.0, index=ok["trial_id"])
    for phase in PHASES:
        values = means.loc[ok["trial_id"], f"{phase}_s"].clip(lower=0)
        ax.barh(labels, values.values, left=left.values, color=PHASE_COLORS[phase], label=phase)
        left += values.values
    ax.set_xlabel("seconds per steady-state iteration (mean)")
    ax.set_title("Where an iteration's time goes")
    ax.invert_yaxis()
    ax.legend(ncol=4, fontsize=8, loc="lower center", bbox_to_anchor=(0.5, 1.06))
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def plot_cpu_by_role(trials: pd.DataFrame, axes: list[str], path: Path) -> None:
    """Stacked bar per trial: cores used by each role in steady state, with the trial's cpus marked."""
    used_cols = [f"{r}_cpus_used" for r in CPU_ROLES]
    ok = trials[(trials["status"] == "ok") & trials[used_cols].notna().any(axis=1)]
    if ok.empty:
        return
    labels = [trial_label(r, axes) for _, r in ok.iterrows()]
    fig, ax = plt.subplots(figsize=(7.0, 0.45 * len(ok) + 1.6))
    left = [0.0] * len(ok)
    for role in CPU_ROLES:
        values = ok[f"{role}_cpus_used"].fillna(0).values
        ax.barh(labels, values, left=left, color=ROLE_COLORS[role], label=role)
        left = [a + b for a, b in zip(left, values)]
    ax.scatter(ok["cpus"].values, labels, marker="|", s=300, color="black", label="trial cpus", zorder=3)
    ax.set_xlabel("cores busy (steady-state mean; 1 = one core)")
    ax.set_title("CPU used per role")
    ax.invert_yaxis()
    ax.legend(ncol=3, fontsize=8, loc="lower center", bbox_to_anchor=(0.5, 1.06))
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def core_grid(utilization: pd.DataFrame, trial_id: str) -> pd.DataFrame:
    """One trial's per-core busy %: a row per core (sorted), a column per sample time."""
    cores = utilization[(utilization["trial_id"] == trial_id) & (utilization["kind"] == "core")]
    if "node_id" in cores:  # the sweep machine's cores only; cluster nodes' cores are in node rows
        cores = cores[cores["node_id"].isna()]
    if cores.empty:
        return pd.DataFrame()
    return cores.pivot_table(index="core", columns="t_s", values="cpu_pct", aggfunc="mean").sort_index()


def plot_cpu_heatmap(utilization: pd.DataFrame, iterations: pd.DataFrame, trial_id: str, title: str,
                     path: Path) -> bool:
    """Per-core busy % over one trial's time as a heat map (cores x time); False if no core samples.

    One bright row over a dark block is a scaling collapse (one core busy, the rest idle). Dashed
    lines mark the steady-state window; the samples are machine-wide (every core, not only the
    trial's).
    """
    grid = core_grid(utilization, trial_id)
    if grid.empty:
        return False
    times = grid.columns.to_numpy(dtype=float)
    step = float(pd.Series(times).diff().median()) if len(times) > 1 else 0.1
    fig, ax = plt.subplots(figsize=(8.0, 0.35 * len(grid) + 1.8))
    image = ax.imshow(grid.to_numpy(dtype=float), aspect="auto", cmap="magma", vmin=0, vmax=100,
                      interpolation="nearest", origin="lower",
                      extent=(times[0] - step / 2, times[-1] + step / 2, -0.5, len(grid) - 0.5))
    ax.set_yticks(range(len(grid)), [str(int(c)) for c in grid.index])
    its = iterations[(iterations["trial_id"] == trial_id) & ~iterations["warmup"]]
    if len(its):
        for t in (its["t_start_s"].min(), its["t_end_s"].max()):
            ax.axvline(t, color="white", linestyle="--", linewidth=1)
    ax.set_xlabel("seconds since the trial started (dashed: steady-state window)")
    ax.set_ylabel("core")
    ax.set_title(title, fontsize=9)
    fig.colorbar(image, ax=ax, label="busy %", pad=0.01)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return True


def plot_cpu_alloc_vs_used(trials: pd.DataFrame, axes: list[str], path: Path) -> None:
    """Per role, a panel: CPUs the config allocated vs cores actually busy in steady state, per trial."""
    ok = trials[trials["status"] == "ok"]
    used_cols = [f"{r}_cpus_used" for r in CPU_ROLES]
    ok = ok[ok[used_cols].notna().any(axis=1)]
    if ok.empty:
        return
    # A role with nothing allocated and nothing used anywhere gets no panel.
    roles = [r for r in CPU_ROLES
             if (ok[f"{r}_cpus_allocated"].fillna(0) > 0.005).any() or (ok[f"{r}_cpus_used"].fillna(0) > 0.005).any()]
    if not roles:
        return
    labels = [trial_label(r, axes) for _, r in ok.iterrows()]
    x = range(len(ok))
    fig, panels = plt.subplots(len(roles), 1, sharex=True, squeeze=False,
                               figsize=(max(6.0, 0.6 * len(ok) + 2.5), 1.5 * len(roles) + 1.5))
    panels = panels[:, 0]
    for ax, role in zip(panels, roles):
        allocated = ok[f"{role}_cpus_allocated"].fillna(0).to_numpy(dtype=float)
        used = ok[f"{role}_cpus_used"].fillna(0).to_numpy(dtype=float)
        ax.bar([i - 0.2 for i in x], allocated, width=0.4, color="white", edgecolor=ROLE_COLORS[role],
               hatch="//", label="allocated")
        ax.bar([i + 0.2 for i in x], used, width=0.4, color=ROLE_COLORS[role], label="used")
        ax.set_ylabel(role, fontsize=8)
        ax.grid(axis="y", alpha=0.3)
        ax.set_ylim(bottom=0, top=max(1.0, allocated.max(initial=0), used.max(initial=0)) * 1.15)
    panels[0].legend(fontsize=7, ncol=2, loc="upper right")
    panels[0].set_title("CPUs allocated vs used per role (steady state; 1 = one core)")
    panels[-1].set_xticks(list(x), labels, rotation=30, ha="right", fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


#: Per-trial figures stay readable and cheap on big sweeps: at most this many trials per bar chart
#: (first repeats first) and this many per-core heat maps.
MAX_BAR_TRIALS = 60
MAX_HEATMAPS = 24


def shown_trials(trials: pd.DataFrame, limit: int) -> pd.DataFrame:
    """At most ``limit`` trials for a per-trial figure: every trial when they fit, else the first
    repeat of each grid point first, in grid order."""
    if len(trials) <= limit:
        return trials
    return trials.sort_values(["repeat", "index"], kind="stable").head(limit).sort_values(["index", "repeat"])


def write_plots(out_dir: Path, tables: dict[str, pd.DataFrame], axes: list[str]) -> list[Path]:
    """All figures of a result set into ``out_dir/plots``; returns the files written.

    Per-trial bar charts show at most :data:`MAX_BAR_TRIALS` trials and at most
    :data:`MAX_HEATMAPS` heat maps are drawn (see :func:`shown_trials`); every trial stays in the tables.
    """
    all_trials, iterations = tables["trials"], tables["iterations"]
    trials = shown_trials(all_trials, MAX_BAR_TRIALS) if not all_trials.empty else all_trials
    plots = out_dir / "plots"
    plots.mkdir(exist_ok=True)
    written = []
    axes = axis_columns(all_trials, axes)
    if all_trials.empty or "env_steps_per_s" not in all_trials:
        return written
    for axis in axes:
        path = plots / f"throughput_vs_{axis.replace('.', '_')}.png"
        plot_throughput(all_trials, axis, axes, path)
        written.append(path)
    for name, fn in (("time_breakdown.png", lambda p: plot_time_breakdown(trials, iterations, axes, p)),
                     ("cpu_by_role.png", lambda p: plot_cpu_by_role(trials, axes, p))):
        fn(plots / name)
        if (plots / name).exists():
            written.append(plots / name)
    plot_cpu_alloc_vs_used(trials, axes, plots / "cpu_alloc_vs_used.png")
    if (plots / "cpu_alloc_vs_used.png").exists():
        written.append(plots / "cpu_alloc_vs_used.png")
    utilization = tables.get("utilization")
    if utilization is not None and not utilization.empty:
        for _, row in shown_trials(all_trials[all_trials["status"] == "ok"], MAX_HEATMAPS).iterrows():
            path = plots / f"cpu_heatmap_{row['trial_id']}.png"
            title = f"{row['trial_id']}: {trial_label(row, axes)}, cpus={row['cpus']}: busy % per core"
            if plot_cpu_heatmap(utilization, iterations, row["trial_id"], title, path):
                written.append(path)
    return written


def fmt(value, digits: int = 0) -> str:
    """A number for a table, '-' when missing."""
    if value is None or (isinstance(value, float) and math.isnan(value)) or value is pd.NA:
        return "-"
    if isinstance(value, (int, np.integer)) and not isinstance(value, bool):
        return f"{value:,}"
    return f"{float(value):,.{digits}f}"


def pct(value) -> str:
    """A share as a whole percentage."""
    return "-" if fmt(value) == "-" else f"{100 * float(value):.0f}%"


#: Rows of the terminal table; the rest of a big sweep is in summary.csv and the report.
MAX_TABLE_ROWS = 60


def results_table(trials: pd.DataFrame, axes: list[str]) -> Table:
    """The final terminal table: one row per trial (at most :data:`MAX_TABLE_ROWS`, said in its caption)."""
    axes = axis_columns(trials, axes)
    table = Table(title="rlbench sweep results", show_lines=False)
    if len(trials) > MAX_TABLE_ROWS:
        table.caption = f"first {MAX_TABLE_ROWS} of {len(trials)} trials; all are in summary.csv and report.html"
        trials = trials.head(MAX_TABLE_ROWS)
    for column in ["trial", "status", *axes, "env steps/s", "sample", "learn", "sync", "other", "note"]:
        table.add_column(column, justify="right" if column not in ("trial", "status", "note") else "left",
                         overflow="fold")
    for _, r in trials.iterrows():
        status_style = {"ok": "green", "skipped": "yellow"}.get(r["status"], "red")
        table.add_row(
            r["trial_id"], f"[{status_style}]{r['status']}[/]", *[str(r[a]) for a in axes],
            fmt(r.get("env_steps_per_s")), *[pct(r.get(f"{p}_frac")) for p in PHASES],
            (r["reason"] or "")[:160] if isinstance(r.get("reason"), str) else "",
        )
    return table
