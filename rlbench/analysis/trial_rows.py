"""Per trial: one trials.parquet row from the trial's plan, record, events, iterations and samples.

Every steady-state figure is computed over the steady window alone (:mod:`rlbench.analysis.windows`).
Nothing is smoothed or dropped: a trial without steady-state iterations gets nulls, not a guess.
"""

from __future__ import annotations

import json
import signal
from collections.abc import Mapping
from typing import Any

import pandas as pd

from rlbench.adapters import ALL_ROLES, get_adapter
from rlbench.analysis.config_row import num
from rlbench.analysis.energy import cpu_energy_j, gpu_energy_j, total_energy_j
from rlbench.analysis.isolation import node_set_columns
from rlbench.analysis.learner import learner_columns
from rlbench.analysis.learning import COUNT_COLUMNS, learning_outcome
from rlbench.analysis.overlap import overlap_columns
from rlbench.analysis.sampling import compose_ceiling
from rlbench.analysis.windows import by_trial, in_steady_window, steady, steady_window, steady_windows
from rlbench.planning.plan import TrialPlan
from rlbench.results.ceilings_file import CeilingEntry
from rlbench.results.events_file import BuildEvent, RayInitEvent, ShutdownEvent, TrialEvent, VersionsEvent, first
from rlbench.results.records import TEARDOWN_CRASH, TrialRecord
from rlbench.studies.envbench import trial_ceiling_key

#: Roles whose CPU allocation and use are reported per trial (rows of other roles, such as rlbench's
#: own ``harness``, never count as the trial's).
CPU_ROLES: tuple[str, ...] = ALL_ROLES


def cpus_allocated(plan: TrialPlan) -> dict[str, float]:
    """CPUs the config gives each role (the learner inside the driver counts as the driver's)."""
    return plan.demand().role_cpus(CPU_ROLES)


def steady_throughput(steady_its: pd.DataFrame) -> float | None:
    """A trial's throughput: the median env steps/s of its steady iterations (None without one). The one
    definition: a sweep's trials.parquet row and an autoconfig reading (rlbench.autoconfig.readings) both
    use it, so a trial read back by autoconfig is the number the report shows for it."""
    rates = steady_its["env_steps_per_s"].dropna()
    return float(rates.median()) if len(rates) else None


def _trained_with(config, key: str) -> int | None:
    """A ``training:`` number the trial ran with: the spec's, else its framework's default (None when the adapter
    states none: RLlib states PPO's)."""
    value = getattr(config.training, key)
    if value is None:
        value = get_adapter(config.framework).hyperparameter_defaults(config).get(("training", key))
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _frac(part: pd.Series, whole: pd.Series) -> float | None:
    total = float(whole.sum())
    return float(part.sum()) / total if total > 0 else None


def summarize_trial(
    plan: TrialPlan,
    record: TrialRecord,
    events: list[TrialEvent],
    iterations: pd.DataFrame,
    utilization: pd.DataFrame,
    cpu_use: dict[str, float | None],
    peak_rss: dict[str, int | None],
) -> dict[str, Any]:
    """The trials.parquet row of one trial, from that trial's own rows of ``iterations`` and
    ``utilization`` and its per-role CPU use and peak memory (:func:`role_stats_by_trial`)."""
    c = plan.config
    build, ray_init, shutdown = first(events, BuildEvent), first(events, RayInitEvent), first(events, ShutdownEvent)
    threads = (build.torch_threads if build else None) or plan.torch_threads
    row: dict[str, Any] = {
        "trial_id": plan.trial_id,
        "status": record.status,
        "reason": record.reason,
        "index": plan.index,
        "repeat": plan.repeat,
        "variant": plan.variant,
        "round": plan.repeat if plan.round is None else plan.round,  # format 2's plans: its repeat
    }
    row.update(plan.axes)
    if plan.phase is not None:  # an autoconfig trial: which stage asked for it (docs/AUTOCONFIG.md)
        row.update({"phase": plan.phase, "rung": plan.rung, "round": plan.round})
    row.update(
        {
            "framework": c.framework,
            "execution": c.execution,
            "algo": c.algo,
            "env": c.environment.env,
            "env_config": json.dumps(c.environment.env_config, sort_keys=True),
            "cpus": plan.cpus,
            "num_env_runners": c.env_runners.num_env_runners,
            "num_envs_per_env_runner": c.env_runners.num_envs_per_env_runner,
            "num_cpus_per_env_runner": c.env_runners.num_cpus_per_env_runner,
            "num_learners": c.learners.num_learners,
            "num_cpus_per_learner": float(c.learners.num_cpus_per_learner),
            "num_gpus_per_learner": c.learners.num_gpus_per_learner,
            "learner_gpus_allocated": plan.demand().learner_gpus,
            "num_cpus_for_main_process": c.resources.num_cpus_for_main_process,
            "pin_driver": c.resources.pin_driver,
            "train_batch_size_per_learner": c.training.train_batch_size_per_learner,
            "minibatch_size": _trained_with(c, "minibatch_size"),
            "num_epochs": _trained_with(c, "num_epochs"),
            "total_train_batch_size": (
                get_adapter(c.framework).train_batch(c).env_steps if c.training.train_batch_size_per_learner else None
            ),
            "num_aggregator_actors_per_learner": c.learners.num_aggregator_actors_per_learner,
            "driver_torch_threads": threads.get("driver"),
            "learner_torch_threads": threads.get("learner"),
            "env_runner_torch_threads": threads.get("env_runner"),
            "ray_init_s": ray_init.ray_init_s if ray_init else None,
            "overlap_s": record.overlap_s,
            "build_s": build.build_s if build else None,
            "shutdown_s": shutdown.shutdown_s if shutdown else None,
            "trial_wall_s": record.trial_wall_s,
        }
    )
    its = iterations.sort_values("iteration")
    steady_its = steady(its)
    row["iterations"] = len(its)
    row["steady_iterations"] = len(steady_its)
    row["first_iteration_s"] = float(its["wall_s"].iloc[0]) if len(its) else None
    row["env_steps_per_s"] = steady_throughput(steady_its)
    for phase in ("sample", "learn", "sync", "other"):
        row[f"{phase}_frac"] = _frac(steady_its[f"{phase}_s"], steady_its["wall_s"]) if len(steady_its) else None
    # off-policy only (null columns otherwise): the replay buffer's share, inside other_frac, and the training intensity
    replay, intensity = steady_its.get("replay_s"), steady_its.get("updates_per_env_step")  # absent: older results
    row["replay_frac"] = (
        _frac(replay.fillna(0.0), steady_its["wall_s"]) if replay is not None and replay.notna().any() else None
    )
    row["updates_per_env_step"] = (
        float(intensity.median()) if intensity is not None and intensity.notna().any() else None
    )

    allocated = cpus_allocated(plan)
    for role in CPU_ROLES:
        row[f"{role}_cpus_allocated"] = allocated[role]
        row[f"{role}_cpus_used"] = cpu_use[role]
        row[f"{role}_peak_rss_bytes"] = peak_rss[role]
    row.update(overlap_columns(plan.asynchronous, c.learners.num_learners, steady_its, cpu_use.get("learner")))
    row.update(learner_columns(steady_its))
    row["sampler_cpu_pct"] = (
        100.0 * record.sampler_cpu_s / record.trial_wall_s
        if record.sampler_cpu_s is not None and record.trial_wall_s
        else None
    )
    row["host_steal_pct"] = record.host_steal_pct
    row.update(node_set_columns(plan, record, events))
    versions = (
        v.versions if (v := first(events, VersionsEvent)) else None
    )  # format 3: what the trial's process imported
    row["versions"] = json.dumps(versions, sort_keys=True) if versions else None
    row["exit_signal"] = record.exit_signal
    window = steady_window(its) if len(its) else None
    row["gpu_energy_j"] = gpu_energy_j(utilization, window)
    row["cpu_energy_j"] = cpu_energy_j(utilization, window)
    energy_j, row["energy_parts"] = total_energy_j(utilization, window)
    row["energy_j"] = energy_j
    steady_steps = float(steady_its["env_steps_sampled"].sum()) if len(steady_its) else 0.0
    window_s = window[1] - window[0] if window else 0.0
    row["j_per_env_step"] = energy_j / steady_steps if energy_j is not None and steady_steps > 0 else None
    row["env_steps_per_s_per_w"] = (
        row["env_steps_per_s"] / (energy_j / window_s)
        if energy_j and window_s > 0 and row["env_steps_per_s"] is not None
        else None
    )
    row.update(learning_outcome(plan, record.status, row, its, utilization))
    return row


def role_stats_by_trial(
    iterations: pd.DataFrame, utilization: pd.DataFrame
) -> tuple[dict[str, dict[str, float]], dict[str, dict[str, int]]]:
    """Per trial and role: mean cores busy over the steady window (100 cpu_pct = 1 core) and the
    largest summed resident memory at any one sample, for every trial in one pass over the tables.

    Trials missing from a result have no samples (in their steady window): their values are None.
    """
    if utilization.empty or iterations.empty:
        return {}, {}
    procs = utilization.loc[utilization["kind"] == "process", ["trial_id", "t_s", "role", "cpu_pct", "rss_bytes"]]
    procs = procs.assign(trial_id=procs["trial_id"].astype("category"), role=procs["role"].astype("category"))
    totals = procs.groupby(["trial_id", "t_s", "role"], sort=False, observed=True)["rss_bytes"].sum()
    peak = totals.groupby(level=["trial_id", "role"], sort=False, observed=True).max()
    peak_rss: dict[str, dict[str, int]] = {}
    for (trial, role), value in peak.items():
        peak_rss.setdefault(trial, {r: 0 for r in CPU_ROLES})[role] = int(value)
    inside = procs[in_steady_window(procs, steady_windows(iterations))]
    stamps = inside.groupby("trial_id", sort=False, observed=True)["t_s"].nunique()
    sums = inside.groupby(["trial_id", "role"], sort=False, observed=True)["cpu_pct"].sum()
    cpu_use: dict[str, dict[str, float]] = {t: {r: 0.0 for r in CPU_ROLES} for t in stamps.index if stamps[t] > 0}
    for (trial, role), value in sums.items():
        if trial in cpu_use and role in cpu_use[trial]:
            cpu_use[trial][role] = float(value / 100.0 / stamps[trial])
    return cpu_use, peak_rss


def summarize_trials(
    plans: list[TrialPlan],
    records: list[TrialRecord],
    events_by_trial: dict[str, list[TrialEvent]],
    iterations: pd.DataFrame,
    utilization: pd.DataFrame,
    cpu_use: dict[str, dict[str, float]],
    peak_rss: dict[str, dict[str, int]],
) -> pd.DataFrame:
    """trials.parquet as a DataFrame, one row per finished trial in plan order; ``cpu_use`` and
    ``peak_rss`` per trial and role from :func:`role_stats_by_trial` (on a cluster, summed over the
    node samplers by :func:`rlbench.analysis.nodes.multi_source_role_stats`)."""
    # Split the big tables by trial once (O(rows)), not once per trial (O(trials x rows)).
    its_by, util_by = by_trial(iterations), by_trial(utilization)
    none: dict[str, Any] = {role: None for role in CPU_ROLES}
    rows = [
        summarize_trial(
            p,
            r,
            events_by_trial.get(p.trial_id, []),
            its_by.get(p.trial_id, iterations.iloc[:0]),
            util_by.get(p.trial_id, utilization.iloc[:0]),
            cpu_use.get(p.trial_id, none),
            peak_rss.get(p.trial_id, none),
        )
        for p, r in zip(plans, records)
    ]
    frame = pd.DataFrame(rows)
    for column in frame.columns:  # keep numeric (and boolean) columns so when some trials have None
        if frame[column].dtype != object:
            continue
        if frame[column].map(lambda v: v is None or isinstance(v, bool)).all() and frame[column].notna().any():
            frame[column] = frame[column].astype("boolean")
        elif frame[column].map(lambda v: v is None or isinstance(v, (int, float))).all():
            frame[column] = pd.to_numeric(frame[column])
    for column in (*COUNT_COLUMNS, "rung", "round"):  # whole numbers stay whole where some trials have none
        if column in frame and frame[column].dtype != object:
            frame[column] = frame[column].astype("Int64")
    return frame


def ceiling_keys(plans: list[TrialPlan]) -> dict[str, str]:
    """trial_id -> the env ceiling its sampling is measured against
    (:func:`rlbench.studies.envbench.trial_ceiling_key`)."""
    return {p.trial_id: trial_ceiling_key(p.config, p.cpus) for p in plans}


def add_sampling_efficiency(
    trials: pd.DataFrame, iterations: pd.DataFrame, ceilings: Mapping[str, CeilingEntry], keys: dict[str, str]
) -> None:
    """Add ``sample_steps_per_s`` (median over steady iterations of env_steps_sampled / sample_s),
    ``env_ceiling_steps_per_s`` (the env stepping alone in as many processes as the trial samples in,
    on as many cores: ``keys``, trial_id -> its ceiling's key, :func:`ceiling_keys`) and ``sampling_efficiency``
    (their ratio: how much of the env's own speed survives the framework's sampling). Null where not measured."""
    if trials.empty:
        return
    its = steady(iterations)
    its = its[its["sample_s"] > 0]
    rate = (its["env_steps_sampled"] / its["sample_s"]).groupby(its["trial_id"]).median()
    trials["sample_steps_per_s"] = trials["trial_id"].map(rate).astype(float)
    ceiling = [c.steps_per_s if (c := ceilings.get(keys.get(trial, ""))) else None for trial in trials["trial_id"]]
    trials["env_ceiling_steps_per_s"] = pd.to_numeric(pd.Series(ceiling, index=trials.index, dtype=object))
    trials["sampling_efficiency"] = trials["sample_steps_per_s"] / trials["env_ceiling_steps_per_s"]


#: The ceiling's per-trial columns (docs/SCHEMA.md), summarized per configuration by their median over the ok repeats
#: (``ceiling_frac`` there is the configuration's median throughput over its median ceiling).
CEILING_COLUMNS: tuple[str, ...] = (
    "sample_steps_per_s",
    "env_ceiling_steps_per_s",
    "sampling_efficiency",
    "learner_steps_per_s",
    "ceiling_env_steps_per_s",
)


def add_ceiling_columns(trials: pd.DataFrame, iterations: pd.DataFrame) -> None:
    """Add ``learner_steps_per_s`` (the env steps the steady iterations sampled over their learn time: ``learn_s``
    for a synchronous algorithm, the learners' own busy seconds, ``learner_busy_s``, for an asynchronous one, whose
    ``learn_s`` is the driver's wait; null where nothing was learned), ``ceiling_env_steps_per_s`` (that and the env's
    own rate, ``env_ceiling_steps_per_s``, composed: :func:`rlbench.analysis.sampling.compose_ceiling`; null without
    an env ceiling) and ``ceiling_frac`` (``env_steps_per_s`` over it). Call after :func:`add_sampling_efficiency`."""
    if trials.empty:
        return
    its = steady(iterations)
    asynchronous = (
        trials.set_index("trial_id")["asynchronous"].astype("boolean").fillna(False)
        if "asynchronous" in trials
        else pd.Series(False, index=trials["trial_id"])
    )
    learn = its["learn_s"].where(
        ~its["trial_id"].map(asynchronous).fillna(False).astype(bool), its.get("learner_busy_s")
    )
    sums = (
        pd.DataFrame({"trial_id": its["trial_id"], "steps": its["env_steps_sampled"], "learn": learn})
        .groupby("trial_id")[["steps", "learn"]]
        .sum(min_count=1)
    )
    rate = (sums["steps"] / sums["learn"].where(sums["learn"] > 0)).astype(float)
    trials["learner_steps_per_s"] = trials["trial_id"].map(rate).astype(float)
    trials["ceiling_env_steps_per_s"] = [
        compose_ceiling(num(env), num(learner), bool(asynchronous.get(trial, False)))
        for trial, env, learner in zip(
            trials["trial_id"], trials["env_ceiling_steps_per_s"], trials["learner_steps_per_s"]
        )
    ]
    trials["ceiling_env_steps_per_s"] = pd.to_numeric(trials["ceiling_env_steps_per_s"]).astype(float)
    trials["ceiling_frac"] = trials["env_steps_per_s"].astype(float) / trials["ceiling_env_steps_per_s"]


def add_cpu_threads_per_gpu_sm(trials: pd.DataFrame, sm_count: int | None) -> None:
    """Add ``cpu_threads_per_gpu_sm``: the trial's CPU threads (its cpus) per SM of the learner GPUs it
    used (its ``learner_gpus_allocated``; Inci et al.'s CPU/GPU balance); null without learner GPUs or a known
    SM count."""
    if trials.empty:
        return
    gpus = learner_gpus(trials)
    ratio = trials["cpus"].astype(float) / (gpus * sm_count) if sm_count else pd.Series(float("nan"), trials.index)
    trials["cpu_threads_per_gpu_sm"] = ratio.where(gpus > 0)


def learner_gpus(trials: pd.DataFrame) -> pd.Series:
    """Each row's ``learner_gpus_allocated`` (GPUs its learners reserve, its framework's ``ResourceDemand``), 0
    where a table has no such column (a hand-made one; a trials.parquet written before the column has it filled
    from the plans by ``read_tables``)."""
    if "learner_gpus_allocated" not in trials:
        return pd.Series(0.0, index=trials.index)
    return pd.to_numeric(trials["learner_gpus_allocated"], errors="coerce").fillna(0.0).astype(float)


def teardown_text(trials: pd.DataFrame) -> str:
    """The ok trials whose process ended in their teardown (a reason that starts with
    :data:`~rlbench.results.records.TEARDOWN_CRASH`), each with its signal, in words; empty when none."""
    if trials.empty or "reason" not in trials:
        return ""
    crashed = trials[
        (trials["status"] == "ok") & trials["reason"].map(lambda r: isinstance(r, str) and r.startswith(TEARDOWN_CRASH))
    ]
    if crashed.empty:
        return ""
    named = [
        f"{t} ({_signal_text(s)})"
        for t, s in zip(crashed["trial_id"], crashed.get("exit_signal", [None] * len(crashed)))
    ]
    n = len(named)
    return (
        f"{n} trial{'s' if n != 1 else ''} ended in {'their' if n != 1 else 'its'} teardown, after training: "
        f"{', '.join(named)}. Every figure {'they' if n != 1 else 'it'} measured is in these tables and counted as "
        "ok; shutdown_s is null where the process died before its runtime had shut down. How each ended: its "
        'reason in the Trials table (docs/RUNNING.md, "How a trial ends").'
    )


def _signal_text(number: Any) -> str:
    """``signal 11, SIGSEGV``; ``no signal`` for a null (it raised, or exited)."""
    if number is None or pd.isna(number):
        return "no signal"
    try:
        return f"signal {int(number)}, {signal.Signals(int(number)).name}"
    except ValueError:
        return f"signal {int(number)}"
