"""Result-folder guard: who may write a folder, what a resume reruns, and when it must refuse.

- :func:`check_writable` proves the output folder can be written without leaving anything.
- :class:`SweepLock` (``DIR/.rlbench.lock``, ``flock``) keeps a second sweep out of a folder; the
  kernel drops the lock when its owner dies, so a ``kill -9`` leaves no stale lock.
- :func:`plan_resume` decides, from the per-trial files, which trials a resume runs again and
  refuses (:class:`OutDirError`) when the old results would not be comparable with new ones.

Every refusal is an :class:`OutDirError` raised before anything is written (CLI exit code 2).
"""

from __future__ import annotations

import fcntl
import json
import os
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from rlbench.machine import MachineInfo, machine_dict
from rlbench.plan import TrialPlan
from rlbench.spec import LoadedSpec
from rlbench.store import MANIFEST_FILE, TRIALS_DIR, read_record, trial_dirs
from rlbench.trial import PLAN_FILE

LOCK_FILE = ".rlbench.lock"
#: Earlier attempts of re-run trials are moved to ``attempts/<trial_id>/<n>/`` (never in the tables).
ATTEMPTS_DIR = "attempts"
#: Spec keys a resume may change: they add trials or only affect trials not yet finished.
RESUMABLE_SPEC_KEYS = ("grid", "repeats", "trial_timeout_s")
#: Machine fields that must match for old and new trials to be comparable.
MACHINE_KEYS = ("cpu_model", "logical_cores", "usable_cores", "memory_bytes")
#: Software versions that must match.
SOFTWARE_KEYS = ("rlbench", "schema_version", "python", "ray", "torch", "gymnasium", "numpy")


class OutDirError(Exception):
    """The output folder cannot be used as asked; the message says why and what to do."""


# ---------------------------------------------------------------------------------------------
# Writability and the lock


def check_writable(out_dir: Path) -> None:
    """Raise OutDirError unless ``out_dir`` (or the folder it would be created in) is writable.

    Probes by creating and removing a temporary entry, so nothing is left behind.
    """
    target = out_dir
    while not target.exists():
        if target.parent == target:
            break
        target = target.parent
    if not target.is_dir():
        what = "it" if target == out_dir else f"{target}"
        raise OutDirError(f"cannot write to output folder {out_dir}: {what} is not a folder; choose another "
                          "with --out")
    try:
        os.rmdir(tempfile.mkdtemp(dir=target, prefix=".rlbench-write-test-"))
    except OSError as e:
        where = "" if target == out_dir else f" (in {target})"
        raise OutDirError(f"cannot write to output folder {out_dir}{where}: {e.strerror}; choose another "
                          "with --out") from None


def holds_sweep(out_dir: Path) -> bool:
    """Whether ``out_dir`` already holds (part of) a sweep's results."""
    return (out_dir / MANIFEST_FILE).exists() or (out_dir / TRIALS_DIR).is_dir()


class SweepLock:
    """An exclusive ``flock`` on ``DIR/.rlbench.lock`` holding the owner's pid, for one sweep's life."""

    def __init__(self, out_dir: Path):
        self.path = out_dir / LOCK_FILE
        self._fd: int | None = None

    def acquire(self) -> "SweepLock":
        """Create the folder if needed and take the lock; OutDirError if another sweep holds it."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            owner = os.pread(fd, 64, 0).decode(errors="replace").strip() or "unknown"
            os.close(fd)
            raise OutDirError(f"another rlbench sweep (pid {owner}) is writing to {self.path.parent}: wait for it "
                              "to finish, or choose another folder with --out") from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        self._fd = fd
        return self

    def release(self) -> None:
        """Drop the lock (the file stays; only the kernel lock means anything)."""
        if self._fd is not None:
            fcntl.flock(self._fd, fcntl.LOCK_UN)
            os.close(self._fd)
            self._fd = None

    def __enter__(self) -> "SweepLock":
        return self.acquire()

    def __exit__(self, *exc) -> None:
        self.release()


# ---------------------------------------------------------------------------------------------
# Resume


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


def _refuse(out_dir: Path, what: str, details: list[str]) -> OutDirError:
    shown = "; ".join(details[:5]) + (f"; and {len(details) - 5} more" if len(details) > 5 else "")
    return OutDirError(f"cannot resume {out_dir}: {what} ({shown}); old and new trials would not be comparable. "
                       "Run this spec into a new folder (another --out) instead")


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
    manifest_path = out_dir / MANIFEST_FILE
    try:
        manifest = json.loads(manifest_path.read_text())
    except (OSError, ValueError) as e:
        raise OutDirError(f"cannot resume {out_dir}: its {MANIFEST_FILE} is missing or unreadable ({e}); it is not "
                          "an rlbench result folder, or it was damaged: choose another --out") from None
    new_spec = loaded.spec.model_dump(mode="json", by_alias=True)
    diffs = _differences(manifest.get("spec", {}), new_spec, skip=RESUMABLE_SPEC_KEYS)
    if diffs:
        raise _refuse(out_dir, "the spec changed", [f"spec.{d}" for d in diffs])
    old_machine = manifest.get("machine", {})
    now = machine_dict(machine)
    diffs = [f"{k}: {old_machine.get(k)!r} -> {now.get(k)!r}" for k in MACHINE_KEYS if old_machine.get(k) != now.get(k)]
    old_gpus = [g.get("name") for g in old_machine.get("gpus", [])]
    new_gpus = [g.get("name") for g in now.get("gpus", [])]
    if old_gpus != new_gpus:
        diffs.append(f"gpus: {old_gpus} -> {new_gpus}")
    if diffs:
        raise _refuse(out_dir, "this is a different machine", diffs)
    old_sw = manifest.get("software", {})
    diffs = [f"{k}: {old_sw.get(k)!r} -> {software.get(k)!r}" for k in SOFTWARE_KEYS if old_sw.get(k) != software.get(k)]
    if diffs:
        raise _refuse(out_dir, "the software changed", diffs)

    by_id = {p.trial_id: p for p in plans}
    decision = ResumePlan()
    for directory in trial_dirs(out_dir):
        trial_id = directory.name
        new = by_id.get(trial_id)
        if new is None:
            raise _refuse(out_dir, f"the spec no longer plans trial {trial_id}, which the folder holds",
                          ["lowering repeats or removing grid values drops trials"])
        try:
            old = TrialPlan.model_validate_json((directory / PLAN_FILE).read_text())
        except (OSError, ValidationError) as e:
            raise OutDirError(f"cannot resume {out_dir}: {directory / PLAN_FILE} is unreadable ({str(e)[:200]}); "
                              "choose another --out") from None
        diffs = _differences(old.model_dump(mode="json"), new.model_dump(mode="json"), skip=("timeout_s",))
        if diffs:
            raise _refuse(out_dir, f"trial {trial_id} would now run differently (inserting grid values anywhere but "
                          "at the end of the first axis renumbers trials)", diffs)
        record = read_record(directory)
        if record is None:
            decision.rerun[trial_id] = "no verdict: the sweep stopped during this trial"
        elif record.status == "interrupted":
            decision.rerun[trial_id] = "interrupted"
        elif record.status in ("failed", "timeout") and retry_failed:
            decision.rerun[trial_id] = f"{record.status}, retried (--retry-failed)"
        else:
            decision.keep[trial_id] = record.status
    return decision


def next_attempt_dir(out_dir: Path, trial_id: str) -> Path:
    """``attempts/<trial_id>/<n>``: the first free attempt number, from 1."""
    root = out_dir / ATTEMPTS_DIR / trial_id
    n = 1
    while (root / str(n)).exists():
        n += 1
    return root / str(n)
