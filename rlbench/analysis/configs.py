"""Per configuration (a grid point; its repeats are its independent measurements): headline medians
with 95% CIs, spread, CPU use per role, and a plain-words verdict.

Input: the tables of one result set (``trials``, ``iterations``, ``utilization``) and its
manifest. Output: DataFrames the report renders. Rules and thresholds: docs/ANALYSIS.md.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from rlbench.analysis.config_row import ConfigRow
from rlbench.analysis.findings import NOISY_CV, verdict
from rlbench.analysis.learner import LEARNER_COLUMNS, cpu_twins
from rlbench.analysis.runners import SPLIT_COLUMNS, inside_by_config
from rlbench.analysis.sampling import sampler_verdicts
from rlbench.analysis.stats import median_cis
from rlbench.analysis.trial_rows import CEILING_COLUMNS, CPU_ROLES, learner_gpus
from rlbench.analysis.windows import steady_windows
from rlbench.planning.skips import DUPLICATE
from rlbench.spec.load import axis_column

#: Per-trial columns summarized per configuration with a median and a bootstrap interval.
HEADLINE_COLUMNS: tuple[str, ...] = ("env_steps_per_s", "sample_frac", "learn_frac", "sync_frac", "other_frac")


#: Optional per-trial energy columns (added by the measurement layer when a GPU reports power).
ENERGY_COLUMNS: tuple[str, ...] = ("env_steps_per_s_per_w", "j_per_env_step")


#: Per-trial columns about overlap, learners and policy lag (analysis/overlap.py), and the off-policy replay share
#: and training intensity (analysis/trial_rows.py): their median over the ok repeats (no interval) per configuration.
OVERLAP_COLUMNS: tuple[str, ...] = (
    "sampler_busy_frac",
    "learner_busy_frac",
    "busy_overlap_frac",
    "policy_lag_mean",
    "policy_lag_max",
    "learn_s_per_iteration",
    "learner_busy_s_per_iteration",
    "learner_updates_per_s",
    "cpus_used_per_learner",
    "replay_frac",
    "updates_per_env_step",
)


#: Per-trial settings a configuration row carries (its first repeat's): the knobs a learner or sampler verdict names
#: and their context (the learner's place, its torch threads, the batch a minibatch or the envs divide).
CONFIG_KNOBS: tuple[str, ...] = (
    "num_env_runners",
    "num_envs_per_env_runner",
    "num_cpus_per_env_runner",
    "num_gpus_per_env_runner",
    "total_train_batch_size",
    "num_learners",
    "num_cpus_for_main_process",
    "num_cpus_per_learner",
    "minibatch_size",
    "num_epochs",
    "train_batch_size_per_learner",
    "driver_torch_threads",
    "learner_torch_threads",
)


def result_axes(manifest: dict[str, Any], trials: pd.DataFrame | None = None) -> list[str]:
    """The grid axes' table columns, in spec order, then ``variant`` when the sweep had variants (a
    configuration is a grid point and a variant)."""
    axes = []
    for key in (manifest.get("spec") or {}).get("grid") or {}:
        try:
            axes.append(axis_column(key))
        except KeyError:
            axes.append(key)
    if (manifest.get("spec") or {}).get("variants"):
        axes.append("variant")
    return [a for a in axes if trials is None or a in trials.columns]


#: How a configuration's label shows an axis its config leaves unset (an autoconfig baseline off the grid
#: whose base config never names the axis, a knob one framework of the sweep lacks): the spec's default, never
#: ``nan`` (issues 34, 42).
SPEC_DEFAULT = "(the spec's default)"


def is_missing(value) -> bool:
    """Whether an axis value is absent (None, NaN, pandas' NA): the trial ran with the spec's default there."""
    try:
        return value is None or bool(pd.isna(value))
    except (TypeError, ValueError):  # a list or dict value: present
        return False


def axis_value_text(value) -> str:
    """The one way an axis value is printed or drawn (labels, ticks, legends, tables, sentences): missing
    (None, NaN) as :data:`SPEC_DEFAULT`, a whole float as the int the user wrote (a row of mixed columns turns
    4 into 4.0), anything else as its text."""
    if is_missing(value):
        return SPEC_DEFAULT
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def axis_pairs_text(pairs) -> str:
    """``a=1, b=(the spec's default)`` of (axis, value) pairs, each value by :func:`axis_value_text`."""
    return ", ".join(f"{a}={axis_value_text(v)}" for a, v in pairs)


def axis_order(values) -> list:
    """The distinct values of an axis in drawing order: numbers ascending, then text, then one missing value
    (None) last when any is missing; :func:`axis_slot` finds a value's place in it."""
    values = list(values)
    present: list = []
    for v in values:
        if not is_missing(v) and v not in present:  # a list value (fcnet_hiddens) is unhashable: no set
            present.append(v)
    numbers = sorted(v for v in present if isinstance(v, (int, float, np.number)) and not isinstance(v, bool))
    rest = sorted((v for v in present if not any(v is n for n in numbers)), key=str)
    return numbers + rest + [None] * any(is_missing(v) for v in values)


def axis_slot(order: list, value) -> int:
    """The position of ``value`` in :func:`axis_order`'s list (a missing value: the missing slot)."""
    return order.index(None if is_missing(value) else value)


def config_label(row: pd.Series | dict, axes: list[str]) -> str:
    """``axis=value, ...`` of a configuration; without axes, a sweep of one configuration's ``the one configuration``
    (its grid index, ``point 1``, were there ever more)."""
    if axes:
        return axis_pairs_text((a, row[a]) for a in axes)
    return "the one configuration" if int(row["index"]) == 0 else f"point {int(row['index'])}"


def gpu_util_by_trial(iterations: pd.DataFrame, utilization: pd.DataFrame) -> pd.Series:
    """Mean GPU utilization (%) over each trial's steady-state window (trials without GPU rows absent)."""
    if utilization is None or utilization.empty or "kind" not in utilization:
        return pd.Series(dtype=float)
    gpu = utilization[utilization["kind"] == "gpu"]
    if gpu.empty or gpu["gpu_util_pct"].isna().all():
        return pd.Series(dtype=float)
    windows = steady_windows(iterations)
    gpu = gpu.join(windows, on="trial_id", how="inner")
    gpu = gpu[(gpu["t_s"] >= gpu["t0"]) & (gpu["t_s"] <= gpu["t1"])]
    return gpu.groupby("trial_id")["gpu_util_pct"].mean()


def configurations(
    trials: pd.DataFrame,
    axes: list[str],
    iterations: pd.DataFrame | None = None,
    utilization: pd.DataFrame | None = None,
    sm_count: int | None = None,
) -> pd.DataFrame:
    """One row per configuration (grid point): headline medians over its ok repeats with 95% CIs.

    Columns: ``index``, the axes, ``cpus``, ``learner_gpus``, ``trials``, ``ok``, ``n`` (repeats
    with a throughput), for each headline column ``X``: ``X`` (median over repeats), ``X_ci_low``,
    ``X_ci_high`` (NaN with n < 2); ``env_steps_per_s_min``/``_max`` (its slowest and fastest repeat),
    ``env_steps_per_s_cv``, ``noisy``, ``rank`` (1 = fastest; NA
    when noisy or unmeasured); per role ``<role>_cpus_allocated``/``_cpus_used`` (median);
    ``cpus_used``; ``env_steps_per_s_per_cpu``; ``gpu_util_pct``; ``cpu_threads_per_gpu_sm``; energy
    columns when measured; ``bottleneck`` and ``verdict`` (plain words).
    """
    # a grid point skipped because it resolves like an earlier one (``cpus-1`` is 1 on 2 cores) is that
    # configuration again, not one of its own: leaving it in repeated axis values in every table
    trials = trials[~trials["reason"].map(lambda r: isinstance(r, str) and r.startswith(DUPLICATE))]
    if trials.empty:
        return pd.DataFrame()
    gpu_util = gpu_util_by_trial(iterations, utilization) if iterations is not None else pd.Series(dtype=float)
    extra = [c for c in ENERGY_COLUMNS if c in trials.columns]
    metrics = list(HEADLINE_COLUMNS) + extra
    # Vectorized over configurations (a per-group pandas loop costs seconds at 1,000 trials).
    first = trials.sort_values(["index", "repeat"]).drop_duplicates("index").set_index("index")
    index = first.index
    ok = trials[(trials["status"] == "ok") & trials["env_steps_per_s"].notna()].sort_values(["index", "repeat"])
    g = ok.groupby("index")
    frame = pd.DataFrame({"index": index.astype(int)}, index=index)
    for a in axes:
        frame[a] = first[a]
    frame["cpus"] = first["cpus"]
    frame["learner_gpus"] = learner_gpus(first)
    frame["trials"] = trials.groupby("index").size().reindex(index).astype(int)
    frame["ok"] = g.size().reindex(index).fillna(0).astype(int)
    statuses = trials.groupby(["index", "status"]).size()
    frame["statuses"] = [
        ", ".join(f"{n} {st}" for st, n in statuses.loc[i].sort_values(ascending=False).items()) for i in index
    ]
    reasons = trials[trials["reason"].map(lambda r: isinstance(r, str) and bool(r))].drop_duplicates("index")
    frame["reason"] = reasons.set_index("index")["reason"].reindex(index).astype(object)
    frame["reason"] = frame["reason"].where(frame["reason"].notna(), None)
    frame["n"] = frame["ok"]
    samples, where = [], []
    codes = ok["index"].to_numpy()
    bounds: np.ndarray = np.flatnonzero(np.diff(codes)) + 1
    keys = codes[np.concatenate([[0], bounds])] if len(codes) else np.array([], dtype=int)
    for m in metrics:
        values = pd.to_numeric(ok[m], errors="coerce").to_numpy(dtype=float) if m in ok else np.full(len(ok), np.nan)
        frame[m] = g[m].median().reindex(index).astype(float) if m in ok else np.nan
        frame[f"{m}_ci_low"] = frame[f"{m}_ci_high"] = np.nan
        for key, part in zip(keys, np.split(values, bounds)):
            samples.append(part[np.isfinite(part)])
            where.append((key, m))
    # the slowest and fastest repeat: a noisy configuration every repeat of which beat every repeat of the pick still
    # competes for the recommendation (analysis/advice.py)
    frame["env_steps_per_s_min"] = g["env_steps_per_s"].min().reindex(index).astype(float)
    frame["env_steps_per_s_max"] = g["env_steps_per_s"].max().reindex(index).astype(float)
    std, mean = g["env_steps_per_s"].std(ddof=1), g["env_steps_per_s"].mean()
    frame["env_steps_per_s_cv"] = (std / mean.abs()).where((g.size() >= 2) & (mean != 0)).reindex(index)
    medians = {  # added at once: one column at a time fragments the frame (pandas warns past 100 blocks)
        m: g[m].median().reindex(index).astype(float) if m in ok else pd.Series(np.nan, index=index)
        for m in OVERLAP_COLUMNS + LEARNER_COLUMNS + SPLIT_COLUMNS + CEILING_COLUMNS
    }
    frame = pd.concat([frame, pd.DataFrame(medians, index=index)], axis=1)
    frame["ceiling_frac"] = frame["env_steps_per_s"] / frame["ceiling_env_steps_per_s"]  # of the medians shown
    # what the learner verdicts name as the knobs' current values and the learner's threads (the first repeat's)
    for m in CONFIG_KNOBS:
        frame[m] = first[m] if m in first else np.nan
    # the worst repeat: one slowed by the host is enough to doubt the configuration's figures
    for m in ("host_steal_pct", "foreign_cpu_pct"):
        frame[m] = g[m].max().reindex(index).astype(float) if m in ok else np.nan
    # --parallel: its repeats' node types (more than one: its figures mix hardware, and the verdict says so)
    frame["node_types"] = g["node_type"].nunique().reindex(index) if "node_type" in ok else np.nan
    frame["asynchronous"] = first["asynchronous"].fillna(False).astype(bool) if "asynchronous" in first else False
    for role in CPU_ROLES:
        frame[f"{role}_cpus_allocated"] = first.get(f"{role}_cpus_allocated")
        frame[f"{role}_cpus_used"] = (
            g[f"{role}_cpus_used"].median().reindex(index) if f"{role}_cpus_used" in ok else np.nan
        )
    used = frame[[f"{r}_cpus_used" for r in CPU_ROLES]]
    frame["cpus_used"] = used.sum(axis=1, min_count=1)
    cpus = pd.to_numeric(frame["cpus"], errors="coerce")
    frame["env_steps_per_s_per_cpu"] = frame["env_steps_per_s"] / cpus.where(cpus > 0)
    util = ok.assign(_u=ok["trial_id"].map(gpu_util)).groupby("index")["_u"].mean() if len(gpu_util) else None
    frame["gpu_util_pct"] = util.reindex(index) if util is not None else np.nan
    frame["cpu_threads_per_gpu_sm"] = (
        (cpus / (frame["learner_gpus"] * sm_count)).where(frame["learner_gpus"] > 0) if sm_count else np.nan
    )
    position = {key: i for i, key in enumerate(index)}
    lows = {m: np.full(len(index), np.nan) for m in metrics}
    highs = {m: np.full(len(index), np.nan) for m in metrics}
    for (key, m), (lo, hi) in zip(where, median_cis(samples)):
        if lo is not None:
            lows[m][position[key]], highs[m][position[key]] = lo, hi
    for m in metrics:
        frame[f"{m}_ci_low"], frame[f"{m}_ci_high"] = lows[m], highs[m]
    frame = frame.join(inside_by_config(ok))  # stragglers, driver idle, weight sync (analysis/runners.py)
    frame = frame.reset_index(drop=True)
    frame["noisy"] = frame["env_steps_per_s_cv"].map(lambda v: v is not None and not pd.isna(v) and v > NOISY_CV)
    rankable = frame["env_steps_per_s"].notna() & ~frame["noisy"]
    frame["rank"] = pd.array([pd.NA] * len(frame), dtype="Int64")
    frame.loc[rankable, "rank"] = frame.loc[rankable, "env_steps_per_s"].rank(ascending=False, method="min").astype(int)
    frame = frame.join(cpu_twins(frame, trials, axes))
    verdicts = [verdict(r, sampler_verdicts(r)) for r in map(ConfigRow.of, frame.to_dict("records"))]
    frame["bottleneck"] = [v[0] for v in verdicts]
    frame["verdict"] = ["; ".join(v[1]) for v in verdicts]
    return frame


def sm_count(manifest: dict[str, Any]) -> int | None:
    """SMs of the machine's first GPU, when the manifest knows it."""
    gpus = (manifest.get("machine") or {}).get("gpus") or []
    return int(gpus[0]["sm_count"]) if gpus and gpus[0].get("sm_count") else None
