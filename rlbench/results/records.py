"""The sweep's verdict on a trial: ``record.json``, written last, once the trial process is gone
(its presence marks the trial finished). A pydantic model, written atomically. (The trial's plan,
``plan.json``, belongs to the spec: :mod:`rlbench.planning.plan`.)
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, model_validator

from rlbench.results.files import write_atomic
from rlbench.results.layout import TrialFolder

#: How the ``reason`` of an ``ok`` trial starts when its process ended in its teardown: after it had
#: trained (and, on a cluster, fetched its node samplers' rows), while its framework and runtime shut
#: down or after, before its ``end`` event (a crash in ``ray.shutdown()``, a kill on a timeout or Ctrl-C
#: then). Every figure it measured is written; ``exit_signal`` names the signal, and ``shutdown_s`` is
#: null when it died before its runtime had shut down. docs/RUNNING.md, "How a trial ends".
TEARDOWN_CRASH = "teardown crash"


class TrialRecord(BaseModel):
    """The sweep's account of one trial, written once the trial process is gone."""

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)

    trial_id: str
    """Trial id."""
    status: str
    """ok, failed, skipped or timeout."""
    reason: str | None = None
    """Why the trial is not ok (error, skip reason, timeout); when ok, None, or how its process ended
    if that was not normal: :data:`TEARDOWN_CRASH` and how (a death after it had trained)."""
    exit_code: int | None = None
    """Exit code of the trial process (None when it never started; negative: the signal that ended it)."""
    exit_signal: int | None = None
    """The signal that ended the trial process, or None (it exited). A trial whose process died
    after it had trained stays ``ok`` (its reason starts with :data:`TEARDOWN_CRASH`): its
    measurements are complete."""
    started_epoch: float | None = None
    """Unix time the trial process was launched; ``t_s`` columns count from here."""
    trial_wall_s: float | None = None
    """Launch to exit of the trial process."""
    sampler_cpu_s: float | None = None
    """CPU time the sampler thread spent on this trial."""
    sampler_samples: int = 0
    """Samples the sampler took."""
    host_steal_pct: float | None = None
    """This machine's CPU time the hypervisor gave to others (steal, ``/proc/stat``) over the
    trial's wall, % of all cores' time; None on a cluster (the trial ran elsewhere) or without it."""
    leftover_processes_killed: int = 0
    """Processes of the trial still alive after its process group was killed (killed then); 0 normally."""

    @model_validator(mode="before")
    @classmethod
    def _from_format_1(cls, data):
        """Results format 1 had no ``exit_signal``: it follows from the exit code (rlbench.results.format)."""
        if isinstance(data, dict) and "exit_signal" not in data and isinstance(data.get("exit_code"), int):
            data = {**data, "exit_signal": -data["exit_code"] if data["exit_code"] < 0 else None}
        return data

    overlap_s: float = 0.0
    """Seconds this trial's process start and ``ray.init`` ran while the previous trial shut down
    (the sweep launched it early; it built nothing before the previous trial's processes were gone).
    0 when it started alone."""


def write_record(trial: TrialFolder, record: TrialRecord) -> None:
    """The sweep's verdict; written last (its presence marks the trial finished)."""
    write_atomic(trial.record, record.model_dump_json(indent=2).encode())


def read_record(trial: TrialFolder) -> TrialRecord | None:
    """The sweep's record of the trial, or None if the trial never finished."""
    return TrialRecord.model_validate_json(trial.record.read_text()) if trial.record.exists() else None
