"""What a resume reruns, and when it must refuse.

:func:`plan_resume` decides, from the per-trial files, which trials a resume runs again and
refuses (:class:`~rlbench.results.lock.OutDirError`) when the old results would not be comparable
with new ones. Every refusal is raised before anything is written (CLI exit code 2).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rlbench import SCHEMA_VERSION
from rlbench.measure.machine import MachineInfo, machine_dict
from rlbench.results.format import FormatError, folder_format
from rlbench.results.layout import MANIFEST_FILE, ResultsFolder
from rlbench.results.lock import OutDirError
from rlbench.results.records import read_record
from rlbench.spec.limits import MAX_SEED
from rlbench.spec.model import LoadedSpec
from rlbench.spec.plan import TrialPlan

#: Spec keys a resume may change: they add trials or only affect trials not yet finished.
RESUMABLE_SPEC_KEYS = ("grid", "repeats", "trial_timeout_s")


#: Machine fields that must match for old and new trials to be comparable.
MACHINE_KEYS = ("cpu_model", "logical_cores", "usable_cores", "memory_bytes")


#: Software versions that must match.
SOFTWARE_KEYS = ("rlbench", "schema_version", "python", "ray", "torch", "gymnasium", "numpy")


@dataclass
class ResumePlan:
    """What a sweep into an existing folder does with each planned trial."""

    keep: dict[str, str] = field(default_factory=dict)
    """Trial id -> status of a finished trial that stays as it is (not run again)."""
    rerun: dict[str, str] = field(default_factory=dict)
    """Trial id -> why it runs again (its old files are moved to ``attempts/`` first)."""

    def runs(self, trial_id: str) -> bool:
        """Whether the trial runs in this sweep (new, or run again)."""
        return trial_id not in self.keep


def _flat(value: Any, prefix: str = "") -> dict[str, Any]:
    if isinstance(value, dict):
        out: dict[str, Any] = {}
        for k, v in value.items():
            out.update(_flat(v, f"{prefix}{k}."))
        return out or {prefix.rstrip("."): {}}
    return {prefix.rstrip("."): value}


def _differences(old: dict, new: dict, skip: tuple[str, ...] = ()) -> list[str]:
    """``key: old -> new`` for every leaf that differs, leaves under ``skip`` keys ignored."""
    a, b = _flat(old), _flat(new)
    out = []
    for key in sorted(set(a) | set(b)):
        if key.split(".")[0] in skip or a.get(key) == b.get(key):
            continue
        out.append(f"{key}: {a.get(key, '(absent)')!r} -> {b.get(key, '(absent)')!r}")
    return out


def _dict(value: Any) -> dict:
    """``value`` if it is a mapping, else {} (a damaged or forged manifest)."""
    return value if isinstance(value, dict) else {}


def _refuse(out_dir: Path, what: str, details: list[str]) -> OutDirError:
    shown = "; ".join(details[:5]) + (f"; and {len(details) - 5} more" if len(details) > 5 else "")
    return OutDirError(f"cannot resume {out_dir}: {what} ({shown}); old and new trials would not be comparable. "
                       "Run this spec into a new folder (another --out) instead")


def recorded_seeds(out_dir: Path) -> dict[int, int | None]:
    """Repeat index -> the seed a result folder's trials of that repeat ran with: the manifest's
    ``repeat_seeds`` (drawn when the sweep was planned), overridden by the trials' own plans (the
    truth; a folder from before every trial was seeded records None there). {} for a new folder."""
    folder = ResultsFolder(out_dir)
    try:
        recorded = _dict(folder.read_manifest()).get("repeat_seeds")
    except (OSError, ValueError, RecursionError):
        recorded = None  # plan_resume refuses such a folder with the reason
    # the folder may come from elsewhere: only seeds a spec could hold are taken from it
    seeds: dict[int, int | None] = {i: s for i, s in enumerate(recorded if isinstance(recorded, list) else [])
                                    if s is None or (type(s) is int and 0 <= s <= MAX_SEED)}
    for trial in folder.trials():
        try:
            plan = TrialPlan.model_validate_json(trial.plan.read_text())
        except (OSError, ValueError, RecursionError):  # a pydantic ValidationError is a ValueError
            continue  # plan_resume refuses such a folder with the reason
        seeds[plan.repeat] = plan.seed
    return seeds


def plan_resume(out_dir: Path, loaded: LoadedSpec, plans: list[TrialPlan], machine: MachineInfo,
                software: dict[str, Any], *, retry_failed: bool) -> ResumePlan:
    """Decide what a resume reruns; raise OutDirError when the folder's trials are incomparable.

    Comparable means: the same spec except for the keys in :data:`RESUMABLE_SPEC_KEYS`, every
    trial already in the folder planned identically now (same id, config, cores, limits; only its
    timeout may change), the same machine (:data:`MACHINE_KEYS`, GPU names) and software
    (:data:`SOFTWARE_KEYS`). Runs again: trials with no verdict (the sweep died), ``interrupted``
    ones, and with ``retry_failed`` the ``failed`` and ``timeout`` ones. ``ok`` and ``skipped``
    trials are kept (same machine and plan, so a skip would be decided the same way).
    """
    folder = ResultsFolder(out_dir)
    try:
        manifest = json.loads(folder.manifest.read_text())
    except (OSError, ValueError, RecursionError) as e:
        raise OutDirError(f"cannot resume {out_dir}: its {MANIFEST_FILE} is missing or unreadable ({e}); it is not "
                          "an rlbench result folder, or it was damaged: choose another --out") from None
    if not isinstance(manifest, dict):
        raise OutDirError(f"cannot resume {out_dir}: its {MANIFEST_FILE} is not a JSON object; choose another --out")
    try:
        fmt = folder_format(manifest, str(out_dir))
    except FormatError as e:
        raise OutDirError(f"cannot resume: {e}") from None
    if fmt.migrated:
        raise OutDirError(f"cannot resume {out_dir}: it holds results format {fmt.version} (written by {fmt.written_by})"
                          f" and this rlbench writes format {SCHEMA_VERSION}; a resume would mix the two in one folder. "
                          "Run this spec into a new folder (another --out); rlbench report still reads the old one")
    new_spec = loaded.spec.model_dump(mode="json", by_alias=True)
    diffs = _differences(_dict(manifest.get("spec")), new_spec, skip=RESUMABLE_SPEC_KEYS)
    if diffs:
        raise _refuse(out_dir, "the spec changed", [f"spec.{d}" for d in diffs])
    old_machine = _dict(manifest.get("machine"))
    now = machine_dict(machine)
    diffs = [f"{k}: {old_machine.get(k)!r} -> {now.get(k)!r}" for k in MACHINE_KEYS if old_machine.get(k) != now.get(k)]
    gpus = old_machine.get("gpus")
    old_gpus = [_dict(g).get("name") for g in (gpus if isinstance(gpus, list) else [])]
    new_gpus = [g.get("name") for g in now.get("gpus", [])]
    if old_gpus != new_gpus:
        diffs.append(f"gpus: {old_gpus} -> {new_gpus}")
    if diffs:
        raise _refuse(out_dir, "this is a different machine", diffs)
    old_sw = _dict(manifest.get("software"))
    diffs = [f"{k}: {old_sw.get(k)!r} -> {software.get(k)!r}" for k in SOFTWARE_KEYS if old_sw.get(k) != software.get(k)]
    if diffs:
        raise _refuse(out_dir, "the software changed", diffs)

    by_id = {p.trial_id: p for p in plans}
    decision = ResumePlan()
    for trial in folder.trials():
        trial_id = trial.trial_id
        new = by_id.get(trial_id)
        if new is None:
            raise _refuse(out_dir, f"the spec no longer plans trial {trial_id}, which the folder holds",
                          ["lowering repeats or removing grid values drops trials"])
        try:
            old = TrialPlan.model_validate_json(trial.plan.read_text())
        except (OSError, ValueError, RecursionError) as e:  # ValidationError is a ValueError
            raise OutDirError(f"cannot resume {out_dir}: {trial.plan} is unreadable ({str(e)[:200]}); "
                              "choose another --out") from None
        diffs = _differences(old.model_dump(mode="json"), new.model_dump(mode="json"), skip=("timeout_s",))
        if diffs:
            raise _refuse(out_dir, f"trial {trial_id} would now run differently (inserting grid values anywhere but "
                          "at the end of the first axis renumbers trials)", diffs)
        try:
            record = read_record(trial)
        except (OSError, ValueError, RecursionError) as e:
            raise OutDirError(f"cannot resume {out_dir}: {trial.record} is unreadable ({str(e)[:200]}); "
                              "choose another --out") from None
        if record is None:
            decision.rerun[trial_id] = "no verdict: the sweep stopped during this trial"
        elif record.status == "interrupted":
            decision.rerun[trial_id] = "interrupted"
        elif record.status in ("failed", "timeout") and retry_failed:
            decision.rerun[trial_id] = f"{record.status}, retried (--retry-failed)"
        else:
            decision.keep[trial_id] = record.status
    return decision
