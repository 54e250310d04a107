"""Opening a results folder, the one way: to read it (:func:`open_for_read`) or to write it
(:func:`open_for_write`), as asv's ``Results.load`` and pytest-benchmark's ``FileStorage`` own their storage.

Every command opens its folders here, and the checks run here, once, in this order, each refusal an
:class:`~rlbench.results.lock.OutDirError` (what, where, how to fix; the CLI's exit code 2) raised before
anything is written:

1. **foreign files** (writing): a folder of someone else's files is never written into;
2. **links**: a folder that holds results may come from elsewhere; it must hold only plain files and
   folders (no link is followed, no FIFO read);
3. **already holds results** (writing a new run): refused, naming the command that continues it;
4. **the manifest** (:func:`~rlbench.results.manifest.read_manifest`): a plain file, JSON, an object, of a
   results format this rlbench reads (a resume: the format it writes), typed;
5. **comparable** (a resume): the same spec but for the keys the caller says a resume may change, the same
   machine (:data:`MACHINE_KEYS`, the GPUs' names) and software (:data:`SOFTWARE_KEYS`); the facts of the
   run about to write come from the caller as plain data (:class:`RunFacts`): this room knows no spec and
   probes no machine;
6. **writable**, then **the lock** (:class:`~rlbench.results.lock.SweepLock`), when the handle is entered;
   the checks run again under it (another run may have written the folder in between).

What a resume does with each trial (its plan against the folder's) is the sweep's: ``rlbench.run.resume``.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, TypeVar

from rlbench import SCHEMA_VERSION
from rlbench.results.format import FolderFormat, FormatError
from rlbench.results.layout import HistoryFolder, ResultsFolder
from rlbench.results.lock import (
    OutDirError,
    SweepLock,
    check_new_sweep_folder,
    check_plain_folder,
    check_writable,
    refuse_foreign_files,
)
from rlbench.results.manifest import Machine, Manifest, ManifestError, Software, read_manifest

#: Machine fields that must match for old and new trials to be comparable (and the GPUs' names).
MACHINE_KEYS = ("cpu_model", "logical_cores", "usable_cores", "memory_bytes")

#: Software versions that must match, whatever the frameworks; each framework's own distributions (its adapter's
#: ``requires``: ``stable-baselines3``) must match too where the run uses it (:attr:`RunFacts.packages`).
SOFTWARE_KEYS = ("rlbench", "schema_version", "python", "ray", "torch", "gymnasium", "numpy")

#: ``new``: the folder must hold no results yet; ``resume``: results there are continued (an empty folder
#: is begun). A run that takes trials in batches (autoconfig's ``TrialBatches``) opens it either way.
Mode = Literal["new", "resume"]

L = TypeVar("L", bound="_HoldsLock")


@dataclass(frozen=True)
class RunFacts:
    """What the run about to write says of itself, as plain data: what a folder's trials must match to be
    continued by it."""

    spec: dict[str, Any]
    """The run's spec as JSON data (as its manifest would hold it)."""
    machine: dict[str, Any]
    """The machine it runs on (``rlbench.measure.machine.machine_dict``)."""
    software: dict[str, Any]
    """Its versions (``rlbench.measure.machine.software_versions``)."""
    spec_may_change: tuple[str, ...] = ()
    """Top-level spec keys a resume may change (they add trials, or only affect trials not yet run)."""
    packages: tuple[str, ...] = ()
    """The distributions of the frameworks the run's trials use (their adapters' ``requires``, as the caller asked
    them): their versions decide the numbers too, so they must match beside :data:`SOFTWARE_KEYS`."""
    quick: bool = False
    """The run is ``--quick``: it continues only a quick folder, and a full run only a full one."""


def _flat(value: Any, prefix: str = "") -> dict[str, Any]:
    if isinstance(value, dict):
        out: dict[str, Any] = {}
        for k, v in value.items():
            out.update(_flat(v, f"{prefix}{k}."))
        return out or {prefix.rstrip("."): {}}
    return {prefix.rstrip("."): value}


def differences(old: dict, new: dict, skip: tuple[str, ...] = ()) -> list[str]:
    """``key: old -> new`` for every leaf that differs, leaves under top-level ``skip`` keys ignored."""
    a, b = _flat(old), _flat(new)
    out = []
    for key in sorted(set(a) | set(b)):
        if key.split(".")[0] in skip or a.get(key) == b.get(key):
            continue
        out.append(f"{key}: {a.get(key, '(absent)')!r} -> {b.get(key, '(absent)')!r}")
    return out


def incomparable(path: Path, what: str, details: list[str], verb: str = "resume") -> OutDirError:
    """The one refusal of a resume (or a history's new run: ``verb``) whose old and new trials could not be compared:
    what differs, where."""
    shown = "; ".join(details[:5]) + (f"; and {len(details) - 5} more" if len(details) > 5 else "")
    return OutDirError(
        f"cannot {verb} {path}: {what} ({shown}); old and new trials would not be comparable. "
        "Run this spec into a new folder (another --out) instead"
    )


def check_comparable(path: Path, manifest: Manifest, facts: RunFacts, verb: str = "resume") -> None:
    """Refuse (:func:`incomparable`, with ``verb``) when the folder's spec, machine or software is not the run's, or
    one of the two is ``--quick`` and the other not."""
    if bool(manifest.quick) != facts.quick:
        raise incomparable(
            path,
            "it holds a --quick run" if manifest.quick else "it holds a full run, not a --quick one",
            ["resume it with --quick" if manifest.quick else "resume it without --quick"],
            verb,
        )
    diffs = differences(manifest.spec, facts.spec, skip=facts.spec_may_change)
    if diffs:
        raise incomparable(path, "the spec changed", [f"spec.{d}" for d in diffs], verb)
    old, now = manifest.machine, Machine.model_validate(facts.machine)
    diffs = [
        f"{k}: {getattr(old, k)!r} -> {getattr(now, k)!r}" for k in MACHINE_KEYS if getattr(old, k) != getattr(now, k)
    ]
    old_gpus, new_gpus = [g.get("name") for g in old.gpus], [g.get("name") for g in now.gpus]
    if old_gpus != new_gpus:
        diffs.append(f"gpus: {old_gpus} -> {new_gpus}")
    if diffs:
        raise incomparable(path, "this is a different machine", diffs, verb)
    old_sw, new_sw = manifest.software, Software.model_validate(facts.software)
    keys = dict.fromkeys([*SOFTWARE_KEYS, *facts.packages])
    diffs = [
        f"{k}: {_version(old_sw, k)!r} -> {_version(new_sw, k)!r}"
        for k in keys
        if _version(old_sw, k) != _version(new_sw, k)
    ]
    if diffs:
        raise incomparable(path, "the software changed", diffs, verb)


def _version(software: Software, dist: str) -> str | None:
    """A version the manifest records: a typed field, or a framework's distribution kept as an extra key."""
    value = getattr(software, dist, None) if dist in Software.model_fields else (software.model_extra or {}).get(dist)
    return None if value is None else str(value)


def _manifest_to_continue(folder: ResultsFolder) -> Manifest:
    """The manifest of a folder a run continues: readable, of the format this rlbench writes."""
    path = folder.path
    try:
        manifest = read_manifest(folder.manifest)
    except ManifestError as e:
        raise OutDirError(
            f"cannot resume {path}: {e}; it is not an rlbench result folder, or it was damaged: choose another --out"
        ) from None
    except FormatError as e:
        raise OutDirError(f"cannot resume: {e}") from None
    fmt = manifest.format
    if fmt.migrated:
        raise OutDirError(
            f"cannot resume {path}: it holds results format {fmt.version} (written by {fmt.written_by})"
            f" and this rlbench writes format {SCHEMA_VERSION}; a resume would mix the two in one folder. "
            "Run this spec into a new folder (another --out); rlbench report still reads the old one"
        )
    return manifest


class _HoldsLock:
    """A folder's lock, taken by :meth:`lock` or on entering a ``with`` block and dropped by :meth:`close` or on
    leaving it (a sweep's folder, a history's); the folder checked again under it (:meth:`_check`)."""

    _lock: SweepLock | None
    folder: ResultsFolder | HistoryFolder

    @property
    def path(self) -> Path:
        """The folder."""
        return self.folder.path

    def _check(self) -> None:
        raise NotImplementedError

    def lock(self: L) -> L:
        """Take the lock (creating the folder), then check again under it; nothing when it is held already."""
        if self._lock is None:
            self._lock = SweepLock(self.path).acquire()
            try:
                self._check()
            except BaseException:
                self.close()
                raise
        return self

    def __enter__(self: L) -> L:
        return self.lock()

    def close(self) -> None:
        """Drop the lock."""
        if self._lock is not None:
            self._lock.release()
            self._lock = None

    def __exit__(self, *exc) -> None:
        self.close()


class WriteSession(_HoldsLock):
    """A results folder opened to be written: checked when made (nothing written), locked while entered.

    ``manifest`` is the folder's own when it held results (a resume), else None until :meth:`save`.
    """

    folder: ResultsFolder

    def __init__(self, path: Path, mode: Mode, facts: RunFacts | None, resume_with: str | None):
        if mode == "resume" and facts is None:
            raise ValueError("a resume needs the run's facts to check the folder's trials against")
        self.folder = ResultsFolder(Path(path))
        self.mode, self.facts, self.resume_with = mode, facts, resume_with
        self._lock: SweepLock | None = None
        self.manifest: Manifest | None = None
        self._check()

    def _check(self) -> None:
        """The checks 1-6 of the module's docstring but the lock; the folder's manifest kept, or None (no results)."""
        path = self.path
        check_new_sweep_folder(path)
        manifest = None
        if self.folder.holds_sweep():
            check_plain_folder(path)  # from elsewhere, maybe: no link in it is ever followed
            if self.mode == "new":
                how = (
                    f"to continue them, keeping every finished trial: {self.resume_with}; or "
                    if self.resume_with
                    else ""
                )
                raise OutDirError(f"{path} already holds results; {how}choose another --out")
            manifest = _manifest_to_continue(self.folder)
            assert self.facts is not None  # a resume is opened with its facts (__init__ refuses one without)
            check_comparable(path, manifest, self.facts)
        check_writable(path)
        self.manifest = manifest

    def save(self, manifest: Manifest) -> None:
        """Write the folder's manifest (atomically; only while the lock is held)."""
        if self._lock is None:
            raise RuntimeError(f"{self.path}: the manifest is written only while the folder is locked")
        manifest.write(self.folder.manifest)
        self.manifest = manifest


def open_for_write(
    path: Path, mode: Mode, *, facts: RunFacts | None = None, resume_with: str | None = None
) -> WriteSession:
    """Open ``path`` to write a run into: checked now (nothing written), locked with ``with``.

    ``facts``: the run's, which a resumed folder's trials must match (needed with ``resume``);
    ``resume_with``: the command that continues the folder's run, named when a new run finds results there.
    """
    return WriteSession(path, mode, facts, resume_with)


@dataclass(frozen=True)
class ReadFolder:
    """A result set opened to be read (``report``, ``compare``, ``reproduce``): no lock is taken (its files
    are written atomically, so a running sweep's folder reads whole)."""

    folder: ResultsFolder
    """The folder."""
    manifest: Manifest
    """Its manifest, typed."""

    @property
    def format(self) -> FolderFormat:
        """Its results format."""
        return self.manifest.format

    @property
    def note(self) -> str | None:
        """What a reader is told about an older format read through the migration, or None."""
        return self.format.note(str(self.folder.path))


def open_for_read(path: Path) -> ReadFolder:
    """Open a result set to read: a result set, no link in it, its manifest readable and of a format this
    rlbench reads (an older one is migrated on read: :attr:`ReadFolder.note`); OutDirError says why not."""
    folder = ResultsFolder(Path(path))
    if not folder.is_result_set():
        raise OutDirError(f"{path} is not an rlbench result folder (no trials.parquet or trials/)")
    check_plain_folder(path)
    try:
        manifest = read_manifest(folder.manifest)
    except FormatError as e:
        raise OutDirError(str(e)) from None
    except ManifestError as e:
        raise OutDirError(f"{e}: the folder is damaged, or it was not written by rlbench") from None
    return ReadFolder(folder, manifest)


class HistorySession(_HoldsLock):
    """A history folder (:class:`~rlbench.results.layout.HistoryFolder`) opened to add a run to and rewrite its
    page: checked when made (nothing written), locked while entered. Its runs are sweep folders, each opened by
    its own sweep (:func:`open_for_write`) inside this one's lock."""

    folder: HistoryFolder

    def __init__(self, path: Path):
        self.folder = HistoryFolder(Path(path))
        self._lock: SweepLock | None = None
        self._check()

    def _check(self) -> None:
        path = self.path
        if path.is_dir():
            check_plain_folder(path, what="history folder")
            if not self.folder.holds_history():
                if ResultsFolder(path).holds_sweep():
                    raise OutDirError(
                        f"{path} holds one sweep's results, not a history (runs/): a history this "
                        "rlbench adds to keeps each run in runs/; give a new --out (rlbench report "
                        "still reads that folder)"
                    )
                refuse_foreign_files(path, "history")
        check_writable(path)

    def check_run(self, facts: RunFacts) -> None:
        """Refuse (OutDirError) a run whose spec (but ``facts.spec_may_change``), machine or software differ from the
        history's first run: the history's releases would not have been measured alike."""
        for run in self.folder.runs("history"):
            folder = ResultsFolder(run)
            if folder.manifest.exists():
                check_plain_folder(run)
                check_comparable(run, _manifest_to_continue(folder), facts, "add a run to the history in")
                return


def open_history(path: Path) -> HistorySession:
    """Open a history folder to add a run to (new, empty, or holding a history): checked now, locked with ``with``."""
    return HistorySession(path)
