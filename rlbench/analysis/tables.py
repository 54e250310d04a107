"""The derived tables: rebuilt from the per-trial files, the truth, by the analysis.

``trials.parquet`` (one row per finished trial), ``iterations.parquet``, ``utilization.parquet``,
``node_roles.parquet``, ``runner_iterations.parquet``, ``profiles.parquet`` and ``summary.csv`` are
derived from ``trials/*/`` and can be rebuilt at any
time (``rlbench report DIR --rebuild``); a trial without a verdict (the sweep died during it) is
left to a resume, never reported as a number. Schemas: :mod:`rlbench.results.tables`.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pyarrow as pa

from rlbench import SCHEMA_VERSION
from rlbench.analysis.configs import sm_count
from rlbench.analysis.learner import WINDOW_COLUMNS, learn_window_columns
from rlbench.analysis.nodes import multi_source_role_stats, node_roles_frame
from rlbench.analysis.profiles import add_profile_columns, profiles_frame
from rlbench.analysis.runners import add_inside_columns, driver_idle, runner_iteration_rows, runner_iterations_frame
from rlbench.analysis.trial_rows import (
    add_ceiling_columns,
    add_cpu_threads_per_gpu_sm,
    add_sampling_efficiency,
    ceiling_keys,
    role_stats_by_trial,
    summarize_trials,
)
from rlbench.planning.plan import TRIAL_ID, PlanError, TrialPlan, read_plan
from rlbench.results.ceilings_file import read_env_ceilings
from rlbench.results.events_file import IterationEvent
from rlbench.results.files import write_atomic
from rlbench.results.layout import (
    ITERATIONS_TABLE,
    NODE_ROLES_TABLE,
    PROFILES_TABLE,
    RUNNER_ITERATIONS_TABLE,
    SUMMARY_CSV,
    TRIALS_TABLE,
    UTILIZATION_TABLE,
    ResultsFolder,
)
from rlbench.results.records import read_record
from rlbench.results.tables import (
    ITERATION_SCHEMA,
    NODE_ROLES_SCHEMA,
    PROFILE_SCHEMA,
    RUNNER_ITERATION_SCHEMA,
    UTILIZATION_SCHEMA,
    csv_bytes,
    iteration_rows,
    iterations_frame,
    read_utilization,
    tables_version,
    write_table,
)

#: The ``status`` of a trials row whose plan.json this rlbench cannot read (written by another version, or
#: damaged): its configuration is unknown, so it is left out of every figure, count and comparison; the row keeps
#: its id, its grid point and repeat (from the id), and in ``reason`` why, with the verdict its record gave.
UNREADABLE = "unreadable"


def unreadable_row(trial_id: str, problem: str, record) -> dict:
    """The trials row of a finished trial whose plan cannot be read (:data:`UNREADABLE`)."""
    parsed = TRIAL_ID.fullmatch(trial_id)
    index, repeat = (int(trial_id[1:].split("r")[0]), int(trial_id.split("r")[-1])) if parsed else (None, None)
    said = record.reason and problem not in record.reason  # a trial that failed on it says the same already
    verdict = record.status + (f": {record.reason}" if said else "")
    return {
        "trial_id": trial_id,
        "status": UNREADABLE,
        "index": index,
        "repeat": repeat,
        "reason": f"{problem}; left out of every figure and count (its record says {verdict})"[:2000],
    }


def measured_rows(trials: pd.DataFrame) -> pd.DataFrame:
    """The rows the analysis counts: every trial whose plan was read (:data:`UNREADABLE` rows left out)."""
    return trials[trials["status"] != UNREADABLE] if "status" in trials and len(trials) else trials


def _add_machine_relative_columns(
    folder: ResultsFolder, trials: pd.DataFrame, iterations: pd.DataFrame, plans: list[TrialPlan]
) -> None:
    """Columns that need more than the trial's own files: the env ceilings (and what the env and the learner allow
    together) and the GPUs' SM count."""
    add_sampling_efficiency(trials, iterations, read_env_ceilings(folder.ceilings), ceiling_keys(plans))
    add_ceiling_columns(trials, iterations)
    add_cpu_threads_per_gpu_sm(trials, sm_count(folder.read_manifest()))


def build_tables(out_dir: Path) -> dict[str, pd.DataFrame]:
    """Rebuild the trials/iterations/utilization/node_roles tables and summary.csv from the per-trial
    files (the truth); returns them."""
    folder = ResultsFolder(Path(out_dir))
    trial_folders = folder.trials()
    plans, records, rows, runner_rows, events_by_trial = [], [], [], [], {}
    unreadable: list[dict] = []  # trials whose plan this rlbench cannot read: listed, never counted
    for t in trial_folders:
        record = read_record(t)
        if record is None:
            continue  # never finished: left to a resume, not reported as a number
        try:
            plan = read_plan(t)
        except PlanError as e:
            unreadable.append(unreadable_row(t.trial_id, str(e), record))
            continue
        events = t.events()
        plans.append(plan)
        records.append(record)
        rows.extend(iteration_rows(plan.trial_id, events, record.status))
        runner_rows.extend(runner_iteration_rows(plan.trial_id, events))
        # The iteration events live on as iterations rows; keeping them too doubles memory at scale.
        events_by_trial[plan.trial_id] = [e for e in events if not isinstance(e, IterationEvent)]
    iterations = iterations_frame(rows)
    runner_its = runner_iterations_frame(runner_rows)
    del rows, runner_rows
    finished = {p.trial_id for p in plans}  # an unreadable plan's trial: none of its rows either
    utilization = read_utilization([t for t in trial_folders if t.trial_id in finished])
    iterations["driver_idle_frac"] = driver_idle(iterations, utilization)
    learners = {p.trial_id: (p.config.learners.num_learners, p.demand().learner_gpus, p.asynchronous) for p in plans}
    iterations[list(WINDOW_COLUMNS)] = learn_window_columns(iterations, utilization, learners)
    cpu_use, peak_rss = role_stats_by_trial(iterations, utilization)
    multi_source_role_stats(iterations, utilization, cpu_use, peak_rss)  # cluster trials: summed per node sampler
    trials = summarize_trials(plans, records, events_by_trial, iterations, utilization, cpu_use, peak_rss)
    _add_machine_relative_columns(folder, trials, iterations, plans)
    add_inside_columns(trials, iterations, runner_its, events_by_trial)
    trials = trials.copy()  # a block per dtype again: columns added one at a time fragment it (pandas warns)
    add_profile_columns(trials, events_by_trial)
    if unreadable:
        trials = (
            pd.concat([trials, pd.DataFrame(unreadable)], ignore_index=True)
            if len(trials)
            else pd.DataFrame(unreadable)
        )
    profiles = profiles_frame([t for t in trial_folders if t.trial_id in finished])
    write_table(
        folder.table(ITERATIONS_TABLE), pa.Table.from_pandas(iterations, schema=ITERATION_SCHEMA, preserve_index=False)
    )
    write_table(
        folder.table(UTILIZATION_TABLE),
        pa.Table.from_pandas(utilization, schema=UTILIZATION_SCHEMA, preserve_index=False),
    )
    trials_table = pa.Table.from_pandas(trials, preserve_index=False)
    trials_table = trials_table.replace_schema_metadata({"rlbench_schema_version": str(SCHEMA_VERSION)})
    write_table(folder.table(TRIALS_TABLE), trials_table)
    write_atomic(folder.table(SUMMARY_CSV), csv_bytes(trials))
    node_roles = node_roles_frame(plans, events_by_trial, iterations, utilization)
    write_table(
        folder.table(NODE_ROLES_TABLE), pa.Table.from_pandas(node_roles, schema=NODE_ROLES_SCHEMA, preserve_index=False)
    )
    write_table(
        folder.table(RUNNER_ITERATIONS_TABLE),
        pa.Table.from_pandas(runner_its, schema=RUNNER_ITERATION_SCHEMA, preserve_index=False),
    )
    write_table(
        folder.table(PROFILES_TABLE), pa.Table.from_pandas(profiles, schema=PROFILE_SCHEMA, preserve_index=False)
    )
    return {
        "trials": trials,
        "iterations": iterations,
        "utilization": utilization,
        "node_roles": node_roles,
        "runner_iterations": runner_its,
        "profiles": profiles,
    }


def _fill_added_columns(folder: ResultsFolder, trials: pd.DataFrame) -> None:
    """Columns added to this results format after a folder's tables were written, filled from the trials'
    plans (the truth) rather than left to read as zero: ``learner_gpus_allocated``."""
    if "learner_gpus_allocated" in trials or trials.empty:
        return
    gpus = {}
    for t in folder.trials():
        try:
            gpus[t.trial_id] = read_plan(t).demand().learner_gpus
        except PlanError:
            continue  # its row is an unreadable one, or it is left to a resume: null
    trials["learner_gpus_allocated"] = trials["trial_id"].map(gpus).astype(float)


def read_tables(out_dir: Path) -> dict[str, pd.DataFrame]:
    """The tables of a result set: read from its parquet files, or rebuilt from the per-trial files when
    they are missing or of another results format than this rlbench's (the migration on read:
    :mod:`rlbench.results.format`)."""
    folder = ResultsFolder(Path(out_dir))
    names = {"trials": TRIALS_TABLE, "iterations": ITERATIONS_TABLE, "utilization": UTILIZATION_TABLE}
    if (
        all(folder.table(f).exists() for f in names.values())
        and tables_version(folder.table(TRIALS_TABLE)) == SCHEMA_VERSION
    ):
        tables = {n: pd.read_parquet(folder.table(f)) for n, f in names.items()}
        _fill_added_columns(folder, tables["trials"])
        # tables of older result sets may be missing: empty, with their columns
        for name, file, schema in (
            ("runner_iterations", RUNNER_ITERATIONS_TABLE, RUNNER_ITERATION_SCHEMA),
            ("profiles", PROFILES_TABLE, PROFILE_SCHEMA),
        ):
            path = folder.table(file)
            tables[name] = pd.read_parquet(path) if path.exists() else schema.empty_table().to_pandas()
        return tables
    return build_tables(out_dir)
