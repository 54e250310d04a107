"""Inside an iteration: each env runner's figures, stragglers, the driver's idle share, weight-sync cost.

- ``runner_iterations.parquet``: per trial, iteration and env runner (RLlib's worker index) the
  runner's own env steps, ``env_step_s``, ``inference_s``, the wall time of its ``sample()`` calls
  (``sample_s``) and their CPU time (``sample_cpu_s``), from the ``runners`` list of each
  iteration event.
- A **straggler** is an env runner whose time per env step (``sample_s / env_steps``) or CPU per
  env step (``sample_cpu_s / env_steps``) over the steady iterations is at least
  :data:`STRAGGLER_RATIO` times the median of the other runners'. The CPU figure is measured on the
  runner's sampling thread (``time.thread_time``), so a runner that only waited for a core does
  not look slow by it, and one that does more work per step does, however busy the machine.
  The driver's **wait** on it, per iteration: how much longer its ``sample_s`` ran than the
  slowest other runner's (the others were done; the synchronous sample waits for the last).
- **Driver idle**: per iteration, ``1 - min(1, cores the driver kept busy)`` from the utilization
  samples of role ``driver`` taken inside the iteration (``t_start_s < t_s <= t_end_s``; each
  sample's ``cpu_pct`` covers the interval since the previous one). Exact for a single-threaded
  driver; with several of its threads busy at once it is a lower bound of the off-CPU share.
- **Weight sync**: bytes broadcast per iteration (``sync_bytes``: the inference-only module's
  bytes x remote env runners, from the adapter) over ``weight_sync_s`` is the effective bandwidth.

Rules and thresholds: docs/ANALYSIS.md.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from rlbench.analysis.findings import STRAGGLER_RATIO
from rlbench.analysis.windows import by_trial, steady
from rlbench.results.events_file import BuildEvent, IterationEvent, TrialEvent, first
from rlbench.results.tables import RUNNER_ITERATION_SCHEMA

#: Fewest utilization samples of the driver inside an iteration for its idle share.
MIN_IDLE_SAMPLES = 2


def runner_iteration_rows(trial_id: str, events: list[TrialEvent]) -> list[dict[str, Any]]:
    """runner_iterations.parquet rows of one trial, from its iteration events."""
    names = [f.name for f in RUNNER_ITERATION_SCHEMA]
    rows = []
    for e in events:
        if not isinstance(e, IterationEvent):
            continue
        for runner in e.runners or []:
            row = {k: runner.get(k) for k in names}
            row.update(trial_id=trial_id, iteration=e.iteration, warmup=e.warmup)
            rows.append(row)
    return rows


def runner_iterations_frame(rows: list[dict[str, Any]]) -> pd.DataFrame:
    """Rows -> DataFrame with the runner_iterations schema's columns and types."""
    import pyarrow as pa

    return pa.Table.from_pylist(rows, schema=RUNNER_ITERATION_SCHEMA).to_pandas()


@dataclass(frozen=True)
class Straggler:
    """The env runner that held a trial's synchronous sampling back."""

    env_runner: int
    """RLlib's worker index of the runner."""
    step_ratio: float | None
    """Its wall time per env step over the median of the other runners'."""
    cpu_ratio: float | None
    """Its CPU time per env step over the median of the other runners'."""
    wait_s: float | None
    """Mean seconds per steady iteration the driver waited on it after the other runners were done."""
    wait_frac: float | None
    """That wait as a share of the iteration (mean over steady iterations)."""


def _ratio(values: pd.Series, key) -> float | None:
    mine, others = values.get(key), values.drop(key).dropna()
    if mine is None or pd.isna(mine) or others.empty:
        return None
    reference = float(others.median())
    return float(mine) / reference if reference > 0 else None


def find_straggler(runner_its: pd.DataFrame, iterations: pd.DataFrame) -> Straggler | None:
    """The straggler among one trial's env runners over its steady iterations, or None (fewer than
    two runners, or none at :data:`STRAGGLER_RATIO` or more)."""
    its = runner_its[~runner_its["warmup"].astype(bool)]
    totals = its.groupby("env_runner")[["env_steps", "sample_s", "sample_cpu_s"]].sum(min_count=1)
    totals = totals[totals["env_steps"] > 0]
    if len(totals) < 2:
        return None
    per_step = totals["sample_s"] / totals["env_steps"]
    cpu_per_step = totals["sample_cpu_s"] / totals["env_steps"]
    scores = {}
    for runner in totals.index:
        ratios = [r for r in (_ratio(per_step, runner), _ratio(cpu_per_step, runner)) if r is not None]
        if ratios:
            scores[runner] = max(ratios)
    if not scores:
        return None
    worst = max(scores, key=lambda r: scores[r])
    if scores[worst] < STRAGGLER_RATIO:
        return None
    by_iteration = its.pivot_table(index="iteration", columns="env_runner", values="sample_s", aggfunc="sum")
    waits, fracs = [], []
    walls = steady(iterations).set_index("iteration")["wall_s"] if len(iterations) else pd.Series(dtype=float)
    for iteration, row in by_iteration.iterrows():
        others = row.drop(worst).dropna()
        if pd.isna(row.get(worst)) or others.empty:
            continue
        wait = max(0.0, float(row[worst]) - float(others.max()))
        waits.append(wait)
        wall = walls.get(iteration)
        if wall is not None and wall > 0:
            fracs.append(wait / float(wall))
    return Straggler(
        int(worst),
        _ratio(per_step, worst),
        _ratio(cpu_per_step, worst),
        float(np.mean(waits)) if waits else None,
        float(np.mean(fracs)) if fracs else None,
    )


def driver_idle(iterations: pd.DataFrame, utilization: pd.DataFrame) -> pd.Series:
    """Per iteration (same index as ``iterations``): the share of it the driver process was off-CPU,
    ``1 - min(1, mean driver cores busy)`` over its samples inside the iteration; NaN with fewer
    than :data:`MIN_IDLE_SAMPLES` samples there."""
    out = pd.Series(np.nan, index=iterations.index, dtype=float)
    if iterations.empty or utilization.empty:
        return out
    driver = utilization[
        (utilization["kind"] == "process") & (utilization["role"] == "driver") & utilization["node_id"].isna()
    ]
    samples = by_trial(driver.sort_values(["trial_id", "t_s"], kind="stable"))
    for trial_id, its in by_trial(iterations).items():
        rows = samples.get(trial_id)
        if rows is None or rows.empty:
            continue
        busy = rows.groupby("t_s", sort=True)["cpu_pct"].sum()  # one driver process; a sum guards repeats
        t = busy.index.to_numpy(dtype=float)
        csum = np.concatenate([[0.0], np.cumsum(busy.to_numpy(dtype=float))])
        lo = np.searchsorted(t, its["t_start_s"].to_numpy(dtype=float), side="right")
        hi = np.searchsorted(t, its["t_end_s"].to_numpy(dtype=float), side="right")
        n = hi - lo
        with np.errstate(invalid="ignore", divide="ignore"):
            cores = (csum[hi] - csum[lo]) / n / 100.0
        idle = np.where(n >= MIN_IDLE_SAMPLES, 1.0 - np.minimum(1.0, cores), np.nan)
        out.loc[its.index] = idle
    return out


def _median(values: pd.Series) -> float | None:
    values = pd.to_numeric(values, errors="coerce").dropna()
    return float(values.median()) if len(values) else None


#: A trial's sampler split (docs/SCHEMA.md; the sampler verdicts, :mod:`rlbench.analysis.sampling`): per steady
#: iteration, the median of a runner's ``sample()`` seconds, its CPU seconds in them, its env seconds and the CPU
#: seconds of those, its forward-pass and other seconds, and the driver's wait beyond them.
SPLIT_COLUMNS: tuple[str, ...] = (
    "runner_sample_s",
    "runner_sample_cpu_s",
    "runner_env_s",
    "runner_env_cpu_s",
    "runner_inference_s",
    "runner_other_s",
    "sample_wait_s",
)


def split_columns(steady_its: pd.DataFrame, runner_its: pd.DataFrame, asynchronous: bool) -> dict[str, Any]:
    """One trial's :data:`SPLIT_COLUMNS` from its steady iterations (their ``sampler_busy_s``: a runner's own
    ``sample()`` seconds, wall-equivalent as ``env_step_s`` and ``inference_s``) and its runners' rows of those
    iterations (``sample_cpu_s``, averaged over the runners that sampled). ``sample_wait_s``: the driver's
    ``sample_s`` less a runner's, null for an asynchronous algorithm (its ``sample_s`` is a fetch, not a wait for
    the batch). Null without the runners' own figures (another framework, an older folder)."""
    out: dict[str, Any] = dict.fromkeys(SPLIT_COLUMNS)
    if steady_its.empty or "sampler_busy_s" not in steady_its:
        return out
    its = steady_its[steady_its["sampler_busy_s"].fillna(0.0) > 0]
    if its.empty:
        return out
    busy = its["sampler_busy_s"].astype(float)
    env, inference = its["env_step_s"].astype(float), its["inference_s"].astype(float)
    out.update(
        runner_sample_s=float(busy.median()),
        runner_env_s=_median(env),
        runner_inference_s=_median(inference),
        runner_other_s=_median(busy - env.fillna(0.0) - inference.fillna(0.0)),
        sample_wait_s=None if asynchronous else _median(its["sample_s"].astype(float) - busy),
    )
    if len(runner_its):
        mine = runner_its[runner_its["iteration"].isin(its["iteration"])].groupby("iteration")
        for column, name in (("sample_cpu_s", "runner_sample_cpu_s"), ("env_step_cpu_s", "runner_env_cpu_s")):
            if column in runner_its:
                out[name] = _median(mine[column].mean())
    return out


def inside_columns(
    trial_id: str,
    build: BuildEvent | None,
    iterations: pd.DataFrame,
    runner_its: pd.DataFrame,
    asynchronous: bool = False,
) -> dict[str, Any]:
    """One trial's trials.parquet columns from this module (see docs/SCHEMA.md); ``build``: its ``build`` event."""
    steady_its = steady(iterations) if len(iterations) else iterations
    straggler = find_straggler(runner_its, iterations) if len(runner_its) else None
    walls = steady_its["wall_s"] if len(steady_its) else pd.Series(dtype=float)
    idle = steady_its["driver_idle_frac"] if "driver_idle_frac" in steady_its else pd.Series(dtype=float)
    has_idle = idle.notna()
    build = build or BuildEvent()
    weight_bytes, receivers = build.weight_bytes, build.weight_receivers
    return {
        "trial_id": trial_id,
        "straggler_env_runner": straggler.env_runner if straggler else None,
        **{c: getattr(straggler, c.removeprefix("straggler_")) if straggler else None for c in _STRAGGLER},
        "driver_idle_frac": (
            float((idle[has_idle] * walls[has_idle]).sum() / walls[has_idle].sum())
            if has_idle.any() and walls[has_idle].sum() > 0
            else None
        ),
        "weight_params": build.weight_params,
        "weight_bytes": weight_bytes,
        "weight_receivers": receivers,
        "sync_bytes_per_iter": weight_bytes * receivers if weight_bytes is not None and receivers is not None else None,
        "weight_sync_s": _median(steady_its["weight_sync_s"]) if "weight_sync_s" in steady_its else None,
        "sync_bytes_per_s": _median(steady_its["sync_bytes_per_s"]) if "sync_bytes_per_s" in steady_its else None,
        **split_columns(steady_its, runner_its, asynchronous),
    }


def add_inside_columns(
    trials: pd.DataFrame,
    iterations: pd.DataFrame,
    runner_its: pd.DataFrame,
    events_by_trial: dict[str, list[TrialEvent]],
) -> None:
    """Add the straggler, driver-idle, weight-sync and sampler-split columns to ``trials`` (in place)."""
    if trials.empty:
        return
    its_by, runners_by = by_trial(iterations), by_trial(runner_its)
    rows = []
    asynchronous = trials["asynchronous"] if "asynchronous" in trials else pd.Series(False, index=trials.index)
    for trial_id, is_async in zip(trials["trial_id"], asynchronous):
        rows.append(
            inside_columns(
                trial_id,
                first(events_by_trial.get(trial_id, []), BuildEvent),
                its_by.get(trial_id, iterations.iloc[:0]),
                runners_by.get(trial_id, runner_its.iloc[:0]),
                bool(is_async) if is_async is not None and not pd.isna(is_async) else False,
            )
        )
    extra = pd.DataFrame(rows).set_index("trial_id")
    for column in extra.columns:
        values = trials["trial_id"].map(extra[column])
        trials[column] = (
            pd.to_numeric(values, errors="coerce") if column != "straggler_env_runner" else values.astype("Int64")
        )


#: Per-configuration medians (over ok repeats) of these trials.parquet columns.
CONFIG_MEDIANS = (
    "driver_idle_frac",
    "weight_bytes",
    "weight_receivers",
    "sync_bytes_per_iter",
    "weight_sync_s",
    "sync_bytes_per_s",
)
_STRAGGLER = ("straggler_step_ratio", "straggler_cpu_ratio", "straggler_wait_s", "straggler_wait_frac")


def inside_by_config(ok: pd.DataFrame) -> pd.DataFrame:
    """Per configuration (``index``) of its ok trials: the medians of :data:`CONFIG_MEDIANS`; the
    env runner named straggler in most repeats (``straggler_env_runner``), in how many
    (``straggler_repeats``), and the medians of its ratios and waits over those repeats."""
    columns = [*CONFIG_MEDIANS, "straggler_env_runner", "straggler_repeats", *_STRAGGLER]
    if ok.empty or "straggler_env_runner" not in ok:
        return pd.DataFrame(columns=columns, index=pd.Index([], name="index"))
    out = ok.groupby("index")[[c for c in CONFIG_MEDIANS if c in ok]].median()
    named = ok[ok["straggler_env_runner"].notna()]
    if not named.empty:
        most = named.groupby("index")["straggler_env_runner"].agg(lambda s: int(s.mode().iloc[0]))
        mine = named[named["straggler_env_runner"] == named["index"].map(most)]
        out["straggler_env_runner"] = most
        out["straggler_repeats"] = mine.groupby("index").size()
        for column in _STRAGGLER:
            out[column] = mine.groupby("index")[column].median()
    return out.reindex(columns=columns)
