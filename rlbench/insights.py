"""Analysis stage, across trials: per-configuration figures with intervals, scaling, verdicts, advice.

Input: the tables of one result set (``trials``, ``iterations``, ``utilization``) and its
manifest. Output: DataFrames and dataclasses the report renders. A configuration is a grid point
(``index``); its repeats are its independent measurements. Rules and thresholds: docs/ANALYSIS.md.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats as sps

from rlbench.analyze import CPU_ROLES
from rlbench.stats import (BOOTSTRAP_RESAMPLES, BOOTSTRAP_SEED, CONFIDENCE, KNEE_MARGIN, NOISY_CV, fit_amdahl,
                           knee)

#: Per-trial columns summarized per configuration with a median and a bootstrap interval.
HEADLINE_COLUMNS: tuple[str, ...] = ("env_steps_per_s", "sample_frac", "learn_frac", "sync_frac", "other_frac")
#: Optional per-trial energy columns (added by the measurement layer when a GPU reports power).
ENERGY_COLUMNS: tuple[str, ...] = ("env_steps_per_s_per_w", "j_per_env_step")
#: A phase taking at least this share of an iteration makes the configuration bound by it.
BOUND_FRAC = 0.5
#: Weight sync taking at least this share is called out.
SYNC_HEAVY_FRAC = 0.2
#: A role using at least this share of its allocated CPUs is at its allocation (CPU-starved).
STARVED_FRAC = 0.85
#: All roles together using at least this share of the trial's cpus: every core is busy.
ALL_BUSY_FRAC = 0.9
#: A role given >= 1 CPU and using less than this share of it leaves its allocation idle.
IDLE_FRAC = 0.5
#: A learner GPU below this mean utilization (%) in steady state is idle.
GPU_IDLE_PCT = 20.0
#: Scaling groups (combinations of the other axes) shown per axis in the report.
MAX_SCALING_GROUPS = 12


def result_axes(manifest: dict[str, Any], trials: pd.DataFrame | None = None) -> list[str]:
    """The grid axes' table columns, in spec order."""
    from rlbench.spec import axis_column

    axes = []
    for key in (manifest.get("spec") or {}).get("grid") or {}:
        try:
            axes.append(axis_column(key))
        except KeyError:
            axes.append(key)
    return [a for a in axes if trials is None or a in trials.columns]


def config_label(row: pd.Series | dict, axes: list[str]) -> str:
    """``axis=value, ...`` of a configuration (or its grid index without axes)."""
    parts = [f"{a}={row[a]}" for a in axes]
    return ", ".join(parts) if parts else f"point {int(row['index'])}"


def median_cis(samples: list[np.ndarray], confidence: float = CONFIDENCE, resamples: int = BOOTSTRAP_RESAMPLES,
               seed: int = BOOTSTRAP_SEED, max_elements: int = 1_000_000) -> list[tuple[float | None, float | None]]:
    """Percentile-bootstrap CI of the median for many samples at once (scipy.stats.bootstrap, batched).

    Samples of the same size go through one vectorized call (chunked to ``max_elements`` values in
    flight); the result equals calling :func:`rlbench.stats.median_ci` on each, up to resampling.
    Returns (low, high) per sample; (None, None) with fewer than 2 values.
    """
    out: list[tuple[float | None, float | None]] = [(None, None)] * len(samples)
    by_n: dict[int, list[int]] = {}
    for i, s in enumerate(samples):
        if len(s) >= 2:
            by_n.setdefault(len(s), []).append(i)
    for n, idx in by_n.items():
        chunk = max(1, max_elements // (n * resamples))
        for start in range(0, len(idx), chunk):
            part = idx[start:start + chunk]
            data = np.vstack([samples[i] for i in part])
            medians = np.median(data, axis=1)
            res = sps.bootstrap((data,), np.median, confidence_level=confidence, n_resamples=resamples,
                                method="percentile", vectorized=True, axis=-1,
                                random_state=np.random.default_rng(seed))
            lows, highs = np.atleast_1d(res.confidence_interval.low), np.atleast_1d(res.confidence_interval.high)
            for j, i in enumerate(part):
                m = float(medians[j])
                lo, hi = float(lows[j]), float(highs[j])
                if np.all(data[j] == data[j][0]) or not math.isfinite(lo):
                    lo = hi = m
                out[i] = (min(lo, m), max(hi, m))
    return out


def _steady_windows(iterations: pd.DataFrame) -> pd.DataFrame:
    steady = iterations[~iterations["warmup"].astype(bool)]
    return steady.groupby("trial_id").agg(t0=("t_start_s", "min"), t1=("t_end_s", "max"))


def gpu_util_by_trial(iterations: pd.DataFrame, utilization: pd.DataFrame) -> pd.Series:
    """Mean GPU utilization (%) over each trial's steady-state window (trials without GPU rows absent)."""
    if utilization is None or utilization.empty or "kind" not in utilization:
        return pd.Series(dtype=float)
    gpu = utilization[utilization["kind"] == "gpu"]
    if gpu.empty or gpu["gpu_util_pct"].isna().all():
        return pd.Series(dtype=float)
    windows = _steady_windows(iterations)
    gpu = gpu.join(windows, on="trial_id", how="inner")
    gpu = gpu[(gpu["t_s"] >= gpu["t0"]) & (gpu["t_s"] <= gpu["t1"])]
    return gpu.groupby("trial_id")["gpu_util_pct"].mean()


def configurations(trials: pd.DataFrame, axes: list[str], iterations: pd.DataFrame | None = None,
                   utilization: pd.DataFrame | None = None, sm_count: int | None = None) -> pd.DataFrame:
    """One row per configuration (grid point): headline medians over its ok repeats with 95% CIs.

    Columns: ``index``, the axes, ``cpus``, ``learner_gpus``, ``trials``, ``ok``, ``n`` (repeats
    with a throughput), for each headline column ``X``: ``X`` (median over repeats), ``X_ci_low``,
    ``X_ci_high`` (NaN with n < 2); ``env_steps_per_s_cv``, ``noisy``, ``rank`` (1 = fastest; NA
    when noisy or unmeasured); per role ``<role>_cpus_allocated``/``_cpus_used`` (median);
    ``cpus_used``; ``env_steps_per_s_per_cpu``; ``gpu_util_pct``; ``cpu_threads_per_sm``; energy
    columns when measured; ``bottleneck`` and ``verdict`` (plain words).
    """
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
    gpus = pd.to_numeric(first.get("num_gpus_per_learner", 0), errors="coerce").fillna(0) * \
        pd.to_numeric(first.get("num_learners", 0), errors="coerce").fillna(0).clip(lower=1)
    frame["cpus"] = first["cpus"]
    frame["learner_gpus"] = gpus.astype(float)
    frame["trials"] = trials.groupby("index").size().reindex(index).astype(int)
    frame["ok"] = g.size().reindex(index).fillna(0).astype(int)
    statuses = trials.groupby(["index", "status"]).size()
    frame["statuses"] = [", ".join(f"{n} {st}" for st, n in statuses.loc[i].sort_values(ascending=False).items())
                         for i in index]
    reasons = trials[trials["reason"].map(lambda r: isinstance(r, str) and bool(r))].drop_duplicates("index")
    frame["reason"] = reasons.set_index("index")["reason"].reindex(index).astype(object)
    frame["reason"] = frame["reason"].where(frame["reason"].notna(), None)
    frame["n"] = frame["ok"]
    samples, where = [], []
    codes = ok["index"].to_numpy()
    bounds = np.flatnonzero(np.diff(codes)) + 1
    keys = codes[np.concatenate([[0], bounds])] if len(codes) else np.array([], dtype=int)
    for m in metrics:
        values = pd.to_numeric(ok[m], errors="coerce").to_numpy(dtype=float) if m in ok else np.full(len(ok), np.nan)
        frame[m] = g[m].median().reindex(index).astype(float) if m in ok else np.nan
        frame[f"{m}_ci_low"] = frame[f"{m}_ci_high"] = np.nan
        for key, part in zip(keys, np.split(values, bounds)):
            samples.append(part[np.isfinite(part)])
            where.append((key, m))
    std, mean = g["env_steps_per_s"].std(ddof=1), g["env_steps_per_s"].mean()
    frame["env_steps_per_s_cv"] = (std / mean.abs()).where((g.size() >= 2) & (mean != 0)).reindex(index)
    for role in CPU_ROLES:
        frame[f"{role}_cpus_allocated"] = first.get(f"{role}_cpus_allocated")
        frame[f"{role}_cpus_used"] = g[f"{role}_cpus_used"].median().reindex(index) if f"{role}_cpus_used" in ok \
            else np.nan
    used = frame[[f"{r}_cpus_used" for r in CPU_ROLES]]
    frame["cpus_used"] = used.sum(axis=1, min_count=1)
    cpus = pd.to_numeric(frame["cpus"], errors="coerce")
    frame["env_steps_per_s_per_cpu"] = frame["env_steps_per_s"] / cpus.where(cpus > 0)
    util = ok.assign(_u=ok["trial_id"].map(gpu_util)).groupby("index")["_u"].mean() if len(gpu_util) else None
    frame["gpu_util_pct"] = util.reindex(index) if util is not None else np.nan
    frame["cpu_threads_per_sm"] = (cpus / (frame["learner_gpus"] * sm_count)).where(frame["learner_gpus"] > 0) \
        if sm_count else np.nan
    position = {key: i for i, key in enumerate(index)}
    lows = {m: np.full(len(index), np.nan) for m in metrics}
    highs = {m: np.full(len(index), np.nan) for m in metrics}
    for (key, m), (lo, hi) in zip(where, median_cis(samples)):
        if lo is not None:
            lows[m][position[key]], highs[m][position[key]] = lo, hi
    for m in metrics:
        frame[f"{m}_ci_low"], frame[f"{m}_ci_high"] = lows[m], highs[m]
    frame = frame.reset_index(drop=True)
    frame["noisy"] = frame["env_steps_per_s_cv"].map(lambda v: v is not None and not pd.isna(v) and v > NOISY_CV)
    rankable = frame["env_steps_per_s"].notna() & ~frame["noisy"]
    frame["rank"] = pd.array([pd.NA] * len(frame), dtype="Int64")
    frame.loc[rankable, "rank"] = frame.loc[rankable, "env_steps_per_s"].rank(ascending=False, method="min").astype(int)
    verdicts = [verdict(r) for r in frame.to_dict("records")]
    frame["bottleneck"] = [v[0] for v in verdicts]
    frame["verdict"] = ["; ".join(v[1]) for v in verdicts]
    return frame


def _num(value) -> float | None:
    if value is None:
        return None
    try:
        f = float(value)
    except (TypeError, ValueError):
        return None
    return None if math.isnan(f) else f


def verdict(row: dict[str, Any]) -> tuple[str, list[str]]:
    """(short bottleneck label, plain-words findings) for one configuration row."""
    if _num(row.get("env_steps_per_s")) is None:
        return "no data", [f"no steady-state measurement ({row.get('statuses') or 'no trials'})"
                           + (f": {row['reason'][:200]}" if row.get("reason") else "")]
    findings: list[str] = []
    sample, learn, sync = (_num(row.get(f"{p}_frac")) or 0.0 for p in ("sample", "learn", "sync"))
    if sample >= BOUND_FRAC:
        label = "sampling-bound"
        findings.append(f"sampling-bound: {sample:.0%} of each iteration collects samples ({learn:.0%} learning)")
    elif learn >= BOUND_FRAC:
        label = "learning-bound"
        findings.append(f"learning-bound: {learn:.0%} of each iteration is the learner update ({sample:.0%} sampling)")
    else:
        label = "mixed"
        findings.append(f"no single phase dominates: sampling {sample:.0%}, learning {learn:.0%}, sync {sync:.0%}")
    if sync >= SYNC_HEAVY_FRAC:
        findings.append(f"weight sync takes {sync:.0%} of each iteration")
    cpus, used_total = _num(row.get("cpus")), _num(row.get("cpus_used"))
    starved = []
    for role, name, keep, their, were in (("env_runner", "env runners", "keep", "their", "were"),
                                          ("learner", "remote learners", "keep", "their", "were"),
                                          ("driver", "the driver", "keeps", "its", "was")):
        alloc, used = _num(row.get(f"{role}_cpus_allocated")), _num(row.get(f"{role}_cpus_used"))
        if alloc is None or used is None or alloc <= 0:
            continue
        plural = "s" if alloc != 1 else ""
        if used >= STARVED_FRAC * alloc:
            starved.append(f"{name} {keep} {used:.2f} of {their} {alloc:g} allocated core{plural} busy")
        elif alloc >= 1 and used < IDLE_FRAC * alloc:
            findings.append(f"idle allocation: {name} {were} given {alloc:g} CPU{plural} and use{'s' if keep == 'keeps' else ''} "
                            f"{used:.2f}")
    if starved:
        findings.append("CPU-starved: " + "; ".join(starved))
    if cpus and used_total is not None and used_total >= ALL_BUSY_FRAC * cpus:
        findings.append(f"all cores busy: {used_total:.2f} of the trial's {cpus:g} cores in use")
        starved.append("all")
    if starved and label in ("sampling-bound", "learning-bound"):
        label += ", CPU-starved"
    gpus, util = _num(row.get("learner_gpus")) or 0.0, _num(row.get("gpu_util_pct"))
    if gpus > 0:
        if util is None:
            findings.append("GPU utilization not measured")
        elif util < GPU_IDLE_PCT:
            findings.append(f"GPU idle: {util:.0f}% mean utilization in steady state")
            label += ", GPU idle"
    if row.get("noisy"):
        findings.append(f"too noisy to rank: CV {row['env_steps_per_s_cv']:.0%} across repeats (> {NOISY_CV:.0%})")
    return label, findings


# ---------------------------------------------------------------------------------------------
# Scaling


def _is_number(v) -> bool:
    return isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, (bool, np.bool_)) \
        and math.isfinite(float(v))


@dataclass(frozen=True)
class ScalingCurve:
    """Throughput along one axis with the other axes held fixed."""

    axis: str
    """The axis varied."""
    fixed: str
    """The other axes' values (``a=1, b=2``), or empty."""
    values: list
    """Axis values in ascending (or grid) order."""
    env_steps_per_s: list
    """Median throughput at each value (None when unmeasured)."""
    speedup: list
    """Throughput over the throughput at the smallest value."""
    efficiency: list
    """Speedup over the smallest positive value, divided by value / that value (None for non-numeric or 0)."""
    serial_frac: float | None
    """Amdahl serial fraction fitted over the positive values (None when not numeric or < 2 points)."""
    r2: float | None
    """Goodness of that fit (None with < 3 points)."""
    rmse: float | None
    """Root mean square error of the fitted speedups."""
    max_speedup: float | None
    """Amdahl's ceiling over the smallest positive value."""
    knee: Any
    """The smallest value within :data:`KNEE_MARGIN` of the best throughput."""
    best: Any
    """The value with the best throughput."""


def scaling_curves(configs: pd.DataFrame, axes: list[str], margin: float = KNEE_MARGIN) -> list[ScalingCurve]:
    """Every axis with at least 2 values, for every combination of the other axes."""
    curves: list[ScalingCurve] = []
    if configs.empty:
        return curves
    for axis in axes:
        if configs[axis].nunique(dropna=False) < 2:
            continue
        others = [a for a in axes if a != axis]
        groups = configs.groupby(others, dropna=False, sort=False) if others else [((), configs)]
        for key, group in groups:
            key = key if isinstance(key, tuple) else (key,)
            numeric = all(_is_number(v) for v in group[axis])
            group = group.sort_values(axis) if numeric else group.sort_values("index")
            values = group[axis].tolist()
            tp = [_num(v) for v in group["env_steps_per_s"]]
            base = tp[0]
            speedup = [t / base if t is not None and base else None for t in tp]
            efficiency: list = [None] * len(values)
            fit = None
            if numeric:
                pos = [(i, float(v)) for i, v in enumerate(values) if float(v) > 0 and tp[i] is not None]
                if pos and tp[pos[0][0]]:
                    i0, x0 = pos[0]
                    rel = {i: tp[i] / tp[i0] for i, _ in pos}
                    for i, x in pos:
                        efficiency[i] = rel[i] / (x / x0)
                    fit = fit_amdahl([x for _, x in pos], [rel[i] for i, _ in pos], n0=x0)
            measured = [(v, t) for v, t in zip(values, tp) if t is not None]
            curves.append(ScalingCurve(
                axis=axis, fixed=", ".join(f"{o}={v}" for o, v in zip(others, key)), values=values,
                env_steps_per_s=tp, speedup=speedup, efficiency=efficiency,
                serial_frac=fit.serial_frac if fit else None, r2=fit.r2 if fit else None,
                rmse=fit.rmse if fit else None, max_speedup=fit.max_speedup if fit else None,
                knee=knee(values, tp, margin), best=max(measured, key=lambda p: p[1])[0] if measured else None,
            ))
    return curves


# ---------------------------------------------------------------------------------------------
# Recommendations


@dataclass(frozen=True)
class Recommendation:
    """The configuration to pick for one goal."""

    goal: str
    """What it optimizes, in words."""
    column: str
    """The configurations column it maximizes."""
    index: int | None
    """Grid index of the pick (None when nothing was measured)."""
    label: str
    """The pick's axis values."""
    value: float | None
    """Its median value of ``column``."""
    note: str
    """Caveats: ties within the CI, noisy data, single runs."""


GOALS: tuple[tuple[str, str, str], ...] = (
    ("highest throughput", "env_steps_per_s", "env steps/s"),
    ("highest throughput per CPU", "env_steps_per_s_per_cpu", "env steps/s per CPU"),
    ("highest throughput per watt", "env_steps_per_s_per_w", "env steps/s per W"),
)


def recommendations(configs: pd.DataFrame, axes: list[str]) -> list[Recommendation]:
    """The best configuration for throughput, throughput per CPU and (when measured) per watt."""
    out: list[Recommendation] = []
    if configs.empty:
        return out
    for goal, column, unit in GOALS:
        if column not in configs or configs[column].isna().all():
            continue
        measured = configs[configs[column].notna()]
        rankable = measured[~measured["noisy"]]
        notes = []
        all_noisy = rankable.empty
        if all_noisy:
            rankable = measured
            notes.append(f"every configuration is too noisy to rank (CV > {NOISY_CV:.0%}); this is the highest "
                         "median, not a verified winner")
        ordered = rankable.sort_values(column, ascending=False)
        best = ordered.iloc[0]
        if len(ordered) > 1 and column == "env_steps_per_s":
            second = ordered.iloc[1]
            if _num(best.get("env_steps_per_s_ci_low")) is not None and _num(second.get("env_steps_per_s_ci_high")) \
                    is not None and best["env_steps_per_s_ci_low"] <= second["env_steps_per_s_ci_high"]:
                notes.append(f"tied within the 95% CIs with {config_label(second, axes)} "
                             f"({second[column]:,.0f} {unit})")
        if int(best["n"]) < 2:
            notes.append("single run: no confidence interval (set repeats: 2 or more)")
        skipped_noisy = int(measured["noisy"].sum())
        if skipped_noisy and not all_noisy:
            notes.append(f"{skipped_noisy} noisy configuration{'s' if skipped_noisy != 1 else ''} not ranked")
        out.append(Recommendation(goal, column, int(best["index"]), config_label(best, axes),
                                  float(best[column]), "; ".join(notes)))
    return out


def load_manifest(out_dir) -> dict[str, Any]:
    """manifest.json of a result set ({} when missing)."""
    from pathlib import Path

    path = Path(out_dir) / "manifest.json"
    return json.loads(path.read_text()) if path.exists() else {}


def sm_count(manifest: dict[str, Any]) -> int | None:
    """SMs of the machine's first GPU, when the manifest knows it."""
    gpus = (manifest.get("machine") or {}).get("gpus") or []
    return int(gpus[0]["sm_count"]) if gpus and gpus[0].get("sm_count") else None


# ---------------------------------------------------------------------------------------------
# The forum question: what more CPUs / threads for the learner bought

#: Axes that change the learner's CPU budget or torch threads.
LEARNER_CPU_AXES: tuple[str, ...] = ("num_cpus_for_main_process", "driver_torch_threads", "learner_torch_threads",
                                     "num_cpus_per_learner")
#: Learning speeding up by less than this share of the thread increase is "sub-linear".
SUBLINEAR_FRAC = 0.5


def _phase_seconds(trials: pd.DataFrame, iterations: pd.DataFrame) -> pd.DataFrame:
    """Per grid point: median over ok repeats of each trial's mean steady-state seconds per phase."""
    steady = iterations[~iterations["warmup"].astype(bool)]
    per_trial = steady.groupby("trial_id")[["wall_s", "sample_s", "learn_s"]].mean()
    ok = trials[trials["status"] == "ok"][["trial_id", "index"]].set_index("trial_id")
    return per_trial.join(ok, how="inner").groupby("index").median()


def learner_cpu_findings(configs: pd.DataFrame, trials: pd.DataFrame, iterations: pd.DataFrame,
                         axes: list[str]) -> list[str]:
    """Plain words per learner-CPU axis: throughput, learning time and learner CPU use at its lowest
    and highest setting (the other axes at the lowest setting's values), and what that means."""
    if configs.empty or iterations is None or iterations.empty:
        return []
    seconds = _phase_seconds(trials, iterations)
    first = trials.sort_values(["index", "repeat"]).drop_duplicates("index").set_index("index")
    out = []
    for axis in [a for a in axes if a in LEARNER_CPU_AXES]:
        measured = configs[configs["env_steps_per_s"].notna() & configs["index"].isin(seconds.index)]
        measured = measured[measured[axis].map(_is_number)]
        if measured[axis].nunique() < 2:
            continue
        others = [a for a in axes if a != axis]
        lo = measured.sort_values(axis).iloc[0]
        same = measured[(measured[others] == lo[others]).all(axis=1)] if others else measured
        hi = same.sort_values(axis).iloc[-1]
        if hi[axis] == lo[axis]:
            continue
        text = _finding(axis, lo, hi, seconds, first, others)
        best = same.sort_values("env_steps_per_s").iloc[-1]
        if best[axis] not in (lo[axis], hi[axis]):
            text += (f" The fastest setting was in between: {axis}={_value_text(best[axis])} at "
                     f"{best['env_steps_per_s']:,.0f} env steps/s ({best['env_steps_per_s'] / lo['env_steps_per_s']:.2f}x "
                     "the lowest); past it, more threads cost more than they bring.")
        out.append(text)
    return out


def _value_text(value) -> str:
    """An axis value as the user wrote it (a row of mixed columns turns 4 into 4.0)."""
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def _finding(axis: str, lo: pd.Series, hi: pd.Series, seconds: pd.DataFrame, first: pd.DataFrame,
             others: list[str]) -> str:
    s_lo, s_hi = seconds.loc[lo["index"]], seconds.loc[hi["index"]]
    t_lo, t_hi = first.loc[lo["index"]], first.loc[hi["index"]]
    in_driver = int(t_lo.get("num_learners", 0) or 0) == 0
    role = "driver" if in_driver else "learner"
    where = "the driver, which holds the learner" if in_driver else "the learner actors"
    threads_col = "driver_torch_threads" if in_driver else "learner_torch_threads"
    th_lo, th_hi = _num(t_lo.get(threads_col)), _num(t_hi.get(threads_col))
    used_lo, used_hi = _num(lo.get(f"{role}_cpus_used")), _num(hi.get(f"{role}_cpus_used"))
    speed = hi["env_steps_per_s"] / lo["env_steps_per_s"]
    learn_speedup = s_lo["learn_s"] / s_hi["learn_s"] if s_hi["learn_s"] > 0 else float("nan")
    context = f" (with {', '.join(f'{o}={_value_text(lo[o])}' for o in others)})" if others else ""
    text = (f"{axis} {_value_text(lo[axis])} -> {_value_text(hi[axis])}{context}: throughput {lo['env_steps_per_s']:,.0f} -> "
            f"{hi['env_steps_per_s']:,.0f} env steps/s ({speed:.2f}x). An iteration took {s_lo['wall_s']:.2f} -> "
            f"{s_hi['wall_s']:.2f} s: learning {s_lo['learn_s']:.2f} -> {s_hi['learn_s']:.2f} s "
            f"(speed-up {learn_speedup:.2f}x), sampling {s_lo['sample_s']:.2f} -> {s_hi['sample_s']:.2f} s.")
    if th_lo and th_hi:
        text += f" torch threads in {where}: {th_lo:.0f} -> {th_hi:.0f}"
        if used_lo is not None and used_hi is not None:
            text += f"; it kept {used_lo:.2f} -> {used_hi:.2f} cores busy"
        text += "."
        thread_gain = th_hi / th_lo
        if thread_gain > 1 and learn_speedup < 1 + SUBLINEAR_FRAC * (thread_gain - 1):
            text += (f" Only the SGD step uses the extra threads, and it scaled sub-linearly ({learn_speedup:.2f}x "
                     f"for {thread_gain:.0f}x the threads): the small network's matrix products are too small to "
                     "split well.")
    sample_share = s_hi["sample_s"] / s_hi["wall_s"] if s_hi["wall_s"] > 0 else 0.0
    if sample_share >= BOUND_FRAC:
        text += (f" Sampling now takes {sample_share:.0%} of an iteration and more learner CPUs cannot shorten it: "
                 "give CPUs to env runners instead.")
    elif speed < 1.1:
        text += (f" The extra CPUs bought nothing worth having ({speed:.2f}x the throughput): leave them to env "
                 "runners or other work.")
    return text
