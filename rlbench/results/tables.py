"""The derived tables' schemas, and writing and reading parquet files.

Column meanings: docs/SCHEMA.md. The utilization columns are named once, in
:data:`rlbench.results.layout.UTILIZATION_COLUMNS` (both samplers make rows of that shape); their
types are here. Tables are written atomically (a temporary file renamed into place).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from rlbench.results.events_file import IterationEvent, TrialEvent
from rlbench.results.files import write_atomic
from rlbench.results.layout import UTILIZATION_COLUMNS, TrialFolder
from rlbench.results.text import csv_cell

#: iterations.parquet columns, in order.
ITERATION_SCHEMA = pa.schema(
    [
        ("trial_id", pa.string()),
        ("iteration", pa.int64()),
        ("warmup", pa.bool_()),
        ("window", pa.int64()),
        ("t_start_s", pa.float64()),
        ("t_end_s", pa.float64()),
        ("wall_s", pa.float64()),
        ("sample_s", pa.float64()),
        ("env_step_s", pa.float64()),
        ("inference_s", pa.float64()),
        ("sample_other_s", pa.float64()),
        ("learn_s", pa.float64()),
        ("learner_connector_s", pa.float64()),
        ("sgd_s", pa.float64()),
        ("learn_batch_s", pa.float64()),
        ("learn_update_s", pa.float64()),
        ("learn_other_s", pa.float64()),
        ("learn_batches", pa.float64()),
        ("learn_copy_s", pa.float64()),
        ("learn_device_s", pa.float64()),
        ("gpu_busy_pct", pa.float64()),
        ("learn_cpus_used", pa.float64()),
        ("sync_s", pa.float64()),
        ("weight_sync_s", pa.float64()),
        ("sync_bytes", pa.int64()),
        ("sync_bytes_per_s", pa.float64()),
        ("driver_idle_frac", pa.float64()),
        ("other_s", pa.float64()),
        ("env_steps_sampled", pa.int64()),
        ("env_steps_trained", pa.int64()),
        ("env_steps_per_s", pa.float64()),
        ("episode_return_mean", pa.float64()),
        ("target_value", pa.float64()),
        ("trial_status", pa.string()),
        ("training_steps", pa.int64()),
        ("sampler_busy_s", pa.float64()),
        ("learner_busy_s", pa.float64()),
        ("busy_overlap_s", pa.float64()),
        ("learner_updates", pa.float64()),
        ("sgd_steps", pa.float64()),
        ("policy_lag_mean", pa.float64()),
        ("policy_lag_max", pa.float64()),
        ("replay_s", pa.float64()),
        ("replay_add_s", pa.float64()),
        ("replay_sample_s", pa.float64()),
        ("replay_update_s", pa.float64()),
        ("target_update_s", pa.float64()),
        ("target_updates", pa.float64()),
        ("updates_per_env_step", pa.float64()),
    ]
)


#: runner_iterations.parquet columns, in order: one row per trial, iteration and env runner.
RUNNER_ITERATION_SCHEMA = pa.schema(
    [
        ("trial_id", pa.string()),
        ("iteration", pa.int64()),
        ("warmup", pa.bool_()),
        ("env_runner", pa.int64()),
        ("pid", pa.int64()),
        ("env_steps", pa.int64()),
        ("env_step_s", pa.float64()),
        ("env_step_cpu_s", pa.float64()),
        ("inference_s", pa.float64()),
        ("sample_s", pa.float64()),
        ("sample_cpu_s", pa.float64()),
    ]
)


#: profiles.parquet columns, in order: one row per trial, process and function seen in its stacks.
PROFILE_SCHEMA = pa.schema(
    [
        ("trial_id", pa.string()),
        ("role", pa.string()),
        ("pid", pa.int64()),
        ("function", pa.string()),
        ("file", pa.string()),
        ("line", pa.int64()),
        ("self_samples", pa.int64()),
        ("total_samples", pa.int64()),
        ("self_frac", pa.float64()),
        ("total_frac", pa.float64()),
    ]
)


#: Types of the utilization columns (names and order: UTILIZATION_COLUMNS).
UTILIZATION_TYPES: dict[str, pa.DataType] = {
    "t_s": pa.float64(),
    "kind": pa.string(),
    "role": pa.string(),
    "pid": pa.int64(),
    "core": pa.int64(),
    "cpu_pct": pa.float64(),
    "rss_bytes": pa.int64(),
    "gpu_index": pa.int64(),
    "gpu_util_pct": pa.float64(),
    "gpu_mem_used_bytes": pa.int64(),
    "gpu_power_w": pa.float64(),
    "gpu_sm_clock_mhz": pa.int64(),
    "gpu_energy_mj": pa.int64(),
    "node_id": pa.string(),
    "node_ip": pa.string(),
    "cpu_package": pa.int64(),
    "cpu_energy_uj": pa.int64(),
}
#: utilization.parquet columns, in order.
UTILIZATION_SCHEMA = pa.schema(
    [("trial_id", pa.string())] + [(name, UTILIZATION_TYPES[name]) for name in UTILIZATION_COLUMNS]
)
#: node_roles.parquet columns, in order.
NODE_ROLES_SCHEMA = pa.schema(
    [
        ("trial_id", pa.string()),
        ("node_id", pa.string()),
        ("node_ip", pa.string()),
        ("role", pa.string()),
        ("cpus_allocated", pa.float64()),
        ("cpus_used", pa.float64()),
        ("peak_rss_bytes", pa.int64()),
    ]
)


def csv_bytes(frame: pd.DataFrame) -> bytes:
    """``frame`` as CSV for a spreadsheet: a text cell starting with ``= + - @``, tab or CR gets a
    leading ``'`` (:func:`~rlbench.results.text.csv_cell`), so opening summary.csv or compare.csv
    runs no formula a value from elsewhere (an env's error text, an axis value) carries. Number
    columns are untouched."""
    out = frame.copy()
    for column in out.columns:
        if out[column].dtype == object or pd.api.types.is_string_dtype(out[column]):
            out[column] = out[column].map(csv_cell)
    return out.to_csv(index=False).encode()


def write_table(path: Path, table: pa.Table) -> None:
    """Atomically write a parquet table."""
    sink = pa.BufferOutputStream()
    pq.write_table(table, sink)
    write_atomic(path, sink.getvalue().to_pybytes())


def iteration_rows(trial_id: str, events: list[TrialEvent], trial_status: str | None = None) -> list[dict[str, Any]]:
    """iterations.parquet rows of one trial, from its events; ``trial_status`` marks the rows of a
    trial that did not finish ok (its iterations are kept, but the trial was cut short)."""
    names = [f.name for f in ITERATION_SCHEMA]
    return [
        {
            "trial_id": trial_id,
            **{k: e.column(k) for k in names if k not in ("trial_id", "trial_status")},
            "trial_status": trial_status,
        }
        for e in events
        if isinstance(e, IterationEvent)
    ]


def iterations_frame(rows: list[dict[str, Any]]) -> pd.DataFrame:
    """Rows -> DataFrame with the iterations schema's columns and types."""
    return pa.Table.from_pylist(rows, schema=ITERATION_SCHEMA).to_pandas()


def _conform(table: pa.Table, schema: pa.Schema) -> pa.Table:
    """``table`` with ``schema``'s columns in order; a column it lacks (an older file) is all null."""
    columns = [
        table.column(f.name).cast(f.type) if f.name in table.column_names else pa.nulls(table.num_rows, f.type)
        for f in schema
    ]
    return pa.table(columns, schema=schema)


def write_utilization(path: Path, trial_id: str, columns: dict[str, list[Any]]) -> int:
    """Write one trial's sampler rows (a column missing from ``columns`` is all null); returns the row count."""
    n = len(columns.get("t_s", []))
    data = {"trial_id": [trial_id] * n}
    for name in UTILIZATION_COLUMNS:
        data[name] = columns.get(name, [None] * n)
    write_table(path, pa.table(data, schema=UTILIZATION_SCHEMA))
    return n


def read_utilization(trials: list[TrialFolder]) -> pd.DataFrame:
    """All trials' sampler rows (the sweep's and the node samplers') as one DataFrame, empty with
    the right columns if none."""
    tables = [
        _conform(pq.read_table(path), UTILIZATION_SCHEMA)
        for t in trials
        for path in (t.utilization, t.node_utilization)
        if path.exists()
    ]
    if not tables:
        return UTILIZATION_SCHEMA.empty_table().to_pandas()
    return pa.concat_tables(tables).to_pandas()


def tables_version(trials_table: Path) -> int | None:
    """The results format the derived tables were written in (``trials.parquet``'s metadata), or None."""
    try:
        metadata = pq.read_schema(trials_table).metadata or {}
        return int(metadata.get(b"rlbench_schema_version", b""))
    except (OSError, ValueError):
        return None
