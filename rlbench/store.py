"""Store stage: the on-disk layout of a result set, written atomically, read back as tables.

Layout of ``--out DIR`` (schema in docs/SCHEMA.md)::

    manifest.json                 spec, software, machine, start/end
    trials/<trial_id>/plan.json   what the trial was to run
    trials/<trial_id>/events.jsonl   the trial's own log of phases and iterations (append-only)
    trials/<trial_id>/record.json    the sweep's verdict on the trial (status, reason, timings)
    trials/<trial_id>/utilization.parquet   the sampler's rows for the trial
    trials/<trial_id>/trial.log   the trial's stdout/stderr (Ray's chatter, tracebacks)
    trials.parquet, iterations.parquet, utilization.parquet, summary.csv   rebuilt from the above

The per-trial files are the truth; the tables at the top are derived and can be rebuilt with
:func:`build_tables` at any time.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any, Union

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
from pydantic import BaseModel, ConfigDict

from rlbench import SCHEMA_VERSION
from rlbench.plan import TrialPlan
from rlbench.sample import UTILIZATION_COLUMNS
from rlbench.trial import EVENTS_FILE, PLAN_FILE

TRIALS_DIR = "trials"
RECORD_FILE = "record.json"
TRIAL_UTILIZATION_FILE = "utilization.parquet"
MANIFEST_FILE = "manifest.json"

#: iterations.parquet columns, in order.
ITERATION_SCHEMA = pa.schema([
    ("trial_id", pa.string()),
    ("iteration", pa.int64()),
    ("warmup", pa.bool_()),
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
    ("sync_s", pa.float64()),
    ("other_s", pa.float64()),
    ("env_steps_sampled", pa.int64()),
    ("env_steps_trained", pa.int64()),
    ("env_steps_per_s", pa.float64()),
    ("episode_return_mean", pa.float64()),
    ("trial_status", pa.string()),
])

#: utilization.parquet columns, in order.
UTILIZATION_SCHEMA = pa.schema([("trial_id", pa.string())] + [
    (name, {
        "t_s": pa.float64(), "kind": pa.string(), "role": pa.string(), "pid": pa.int64(), "core": pa.int64(),
        "cpu_pct": pa.float64(), "rss_bytes": pa.int64(), "gpu_index": pa.int64(), "gpu_util_pct": pa.float64(),
        "gpu_mem_used_bytes": pa.int64(), "gpu_power_w": pa.float64(), "gpu_sm_clock_mhz": pa.int64(),
        "gpu_energy_mj": pa.int64(),
    }[name]) for name in UTILIZATION_COLUMNS
] + [("node_id", pa.string()), ("node_ip", pa.string())])  # set on rows of cluster node samplers, else null
#: Per-trial file of the cluster node samplers' rows (see rlbench/node_sampler.py).
TRIAL_NODE_UTILIZATION_FILE = "utilization_nodes.parquet"


class TrialRecord(BaseModel):
    """The sweep's account of one trial, written once the trial process is gone."""

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)

    trial_id: str
    """Trial id."""
    status: str
    """ok, failed, skipped or timeout."""
    reason: Union[str, None] = None
    """Why the trial is not ok (error, skip reason, timeout); None when ok."""
    exit_code: Union[int, None] = None
    """Exit code of the trial process (None when it never started)."""
    started_epoch: Union[float, None] = None
    """Unix time the trial process was launched; ``t_s`` columns count from here."""
    trial_wall_s: Union[float, None] = None
    """Launch to exit of the trial process."""
    sampler_cpu_s: Union[float, None] = None
    """CPU time the sampler thread spent on this trial."""
    sampler_samples: int = 0
    """Samples the sampler took."""
    leftover_processes_killed: int = 0
    """Processes of the trial still alive after its process group was killed (killed then); 0 normally."""


# ---------------------------------------------------------------------------------------------
# Writing


def write_atomic(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` so readers see the old file or the whole new one, never a part."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    fsync_dir(path.parent)  # the rename itself survives a crash of the machine only once its folder is synced


def fsync_dir(directory: Path) -> None:
    """Flush a folder's entries (new names, renames) to disk."""
    fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def write_json(path: Path, obj: Any) -> None:
    """Atomically write ``obj`` as indented JSON."""
    write_atomic(path, (json.dumps(obj, indent=2, sort_keys=False, default=str) + "\n").encode())


def write_table(path: Path, table: pa.Table) -> None:
    """Atomically write a parquet table."""
    sink = pa.BufferOutputStream()
    pq.write_table(table, sink)
    write_atomic(path, sink.getvalue().to_pybytes())


def trial_dir(out_dir: Path, trial_id: str) -> Path:
    """Folder of one trial's files."""
    return out_dir / TRIALS_DIR / trial_id


def write_plan(out_dir: Path, plan: TrialPlan) -> Path:
    """Create the trial's folder with its plan; returns the folder."""
    directory = trial_dir(out_dir, plan.trial_id)
    directory.mkdir(parents=True, exist_ok=True)
    write_atomic(directory / PLAN_FILE, plan.model_dump_json(indent=2).encode())
    return directory


def write_trial_result(directory: Path, record: TrialRecord, utilization: dict[str, list] | None) -> None:
    """Store the sampler's rows, then the record (its presence marks the trial finished)."""
    if utilization is not None:
        n = len(utilization["t_s"])
        columns = {"trial_id": [record.trial_id] * n, **utilization}
        for name in UTILIZATION_SCHEMA.names:
            columns.setdefault(name, [None] * n)
        write_table(directory / TRIAL_UTILIZATION_FILE, pa.table(columns, schema=UTILIZATION_SCHEMA))
    write_atomic(directory / RECORD_FILE, record.model_dump_json(indent=2).encode())


# ---------------------------------------------------------------------------------------------
# Reading


def read_events(directory: Path) -> list[dict[str, Any]]:
    """The trial's events; a torn last line (the process died mid-write) is dropped."""
    path = directory / EVENTS_FILE
    if not path.exists():
        return []
    events = []
    for line in path.read_text().splitlines():
        try:
            events.append(json.loads(line))
        except json.JSONDecodeError:
            continue
    return events


class EventTail:
    """A running trial's events.jsonl, read as it grows: each :meth:`poll` parses only what was
    appended since the last one (the sweep polls five times a second while the trial runs)."""

    def __init__(self, directory: Path):
        self.path = directory / EVENTS_FILE
        self.events: list[dict[str, Any]] = []
        """Every complete event so far."""
        self._offset = 0
        self._partial = b""

    def poll(self) -> list[dict[str, Any]]:
        """Read the new lines; returns all events so far (a line still being written waits)."""
        try:
            with open(self.path, "rb") as f:
                f.seek(self._offset)
                data = f.read()
        except FileNotFoundError:
            return self.events
        self._offset += len(data)
        *lines, self._partial = (self._partial + data).split(b"\n")
        for line in lines:
            try:
                self.events.append(json.loads(line))
            except json.JSONDecodeError:
                continue
        return self.events


def read_plan(directory: Path) -> TrialPlan:
    """The trial's plan."""
    return TrialPlan.model_validate_json((directory / PLAN_FILE).read_text())


def read_record(directory: Path) -> TrialRecord | None:
    """The sweep's record of the trial, or None if the trial never finished."""
    path = directory / RECORD_FILE
    if not path.exists():
        return None
    return TrialRecord.model_validate_json(path.read_text())


def iteration_rows(trial_id: str, events: list[dict[str, Any]], trial_status: str | None = None) -> list[dict[str, Any]]:
    """iterations.parquet rows of one trial, from its events; ``trial_status`` marks the rows of a
    trial that did not finish ok (its iterations are kept, but the trial was cut short)."""
    names = [f.name for f in ITERATION_SCHEMA]
    return [
        {"trial_id": trial_id, **{k: e.get(k) for k in names if k not in ("trial_id", "trial_status")},
         "trial_status": trial_status}
        for e in events if e.get("event") == "iteration"
    ]


def trial_dirs(out_dir: Path) -> list[Path]:
    """Every trial folder, in trial-id order."""
    root = out_dir / TRIALS_DIR
    if not root.exists():
        return []
    return sorted(p for p in root.iterdir() if p.is_dir() and (p / PLAN_FILE).exists())


def iterations_frame(rows: list[dict[str, Any]]) -> pd.DataFrame:
    """Rows -> DataFrame with the iterations schema's columns and types."""
    return pa.Table.from_pylist(rows, schema=ITERATION_SCHEMA).to_pandas()


def read_utilization(directories: list[Path]) -> pd.DataFrame:
    """All trials' sampler rows as one DataFrame (empty with the right columns if none)."""
    tables = [_conform(pq.read_table(d / name), UTILIZATION_SCHEMA) for d in directories
              for name in (TRIAL_UTILIZATION_FILE, TRIAL_NODE_UTILIZATION_FILE) if (d / name).exists()]
    if not tables:
        return UTILIZATION_SCHEMA.empty_table().to_pandas()
    return pa.concat_tables(tables).to_pandas()


def _conform(table: pa.Table, schema: pa.Schema) -> pa.Table:
    """``table`` with ``schema``'s columns in order; a column it lacks (an older file) is all null."""
    columns = [table.column(f.name).cast(f.type) if f.name in table.column_names
               else pa.nulls(table.num_rows, f.type) for f in schema]
    return pa.table(columns, schema=schema)


def _add_machine_relative_columns(out_dir: Path, trials: pd.DataFrame, iterations: pd.DataFrame) -> None:
    """Columns that need more than the trial's own files: the env ceilings and the GPUs' SM count."""
    from rlbench.analyze import add_cpu_threads_per_gpu_sm, add_sampling_efficiency
    from rlbench.studies.envbench import CEILINGS_FILE

    ceilings_path = out_dir / CEILINGS_FILE
    add_sampling_efficiency(trials, iterations, json.loads(ceilings_path.read_text()) if ceilings_path.exists() else {})
    manifest_path = out_dir / MANIFEST_FILE
    gpus = (json.loads(manifest_path.read_text()).get("machine") or {}).get("gpus") if manifest_path.exists() else []
    add_cpu_threads_per_gpu_sm(trials, (gpus[0].get("sm_count") if gpus else None))


def build_tables(out_dir: Path) -> dict[str, pd.DataFrame]:
    """Rebuild trials/iterations/utilization parquet files and summary.csv from the per-trial files."""
    from rlbench.analyze import summarize_trials

    directories = trial_dirs(out_dir)
    plans, records, rows, events_by_trial = [], [], [], {}
    for d in directories:
        plan = read_plan(d)
        record = read_record(d)
        if record is None:
            continue  # never finished: left to a resume, not reported as a number
        events = read_events(d)
        plans.append(plan)
        records.append(record)
        rows.extend(iteration_rows(plan.trial_id, events, record.status))
        # The iteration events live on as iterations rows; keeping their dicts too doubles memory at scale.
        events_by_trial[plan.trial_id] = [e for e in events if e.get("event") != "iteration"]
    iterations = iterations_frame(rows)
    del rows
    utilization = read_utilization(directories)
    trials = summarize_trials(plans, records, events_by_trial, iterations, utilization)
    _add_machine_relative_columns(out_dir, trials, iterations)
    write_table(out_dir / "iterations.parquet", pa.Table.from_pandas(iterations, schema=ITERATION_SCHEMA,
                                                                     preserve_index=False))
    write_table(out_dir / "utilization.parquet", pa.Table.from_pandas(utilization, schema=UTILIZATION_SCHEMA,
                                                                      preserve_index=False))
    trials_table = pa.Table.from_pandas(trials, preserve_index=False)
    trials_table = trials_table.replace_schema_metadata({"rlbench_schema_version": str(SCHEMA_VERSION)})
    write_table(out_dir / "trials.parquet", trials_table)
    write_atomic(out_dir / "summary.csv", trials.to_csv(index=False).encode())
    from rlbench.analyze_nodes import NODE_ROLES_SCHEMA, node_roles_frame

    node_roles = node_roles_frame(plans, events_by_trial, iterations, utilization)
    write_table(out_dir / "node_roles.parquet", pa.Table.from_pandas(node_roles, schema=NODE_ROLES_SCHEMA,
                                                                     preserve_index=False))
    return {"trials": trials, "iterations": iterations, "utilization": utilization, "node_roles": node_roles}
