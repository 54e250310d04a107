"""A results folder's ``manifest.json``, typed: what ran, where, with what, and how it went.

One model (:class:`Manifest`) and one reading (:func:`read_manifest`) for every part of rlbench: the
sweep and autoconfig write it through it, a resume and every reader read it through it. The folder may
come from elsewhere, so the reading is careful: a plain file (never through a link, never a FIFO), JSON,
an object, a results format this rlbench reads (checked before the types: a newer format may shape its
fields otherwise, and is then named as newer, not as damaged), then the types. A key this rlbench does not
know is kept as it is (a newer manifest's, or one added by hand), and a key the file does not have stays
absent when it is written again (:meth:`Manifest.as_json`): a reader can tell "not recorded" from "none".

The results room knows no spec, machine probe or software probe: ``spec`` is the spec as JSON data, and
``machine``/``software`` are what the sweep's probes (:mod:`rlbench.measure.machine`) returned.
"""

from __future__ import annotations

import errno
import json
import os
import stat
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, ValidationError

from rlbench import SCHEMA_VERSION, __version__
from rlbench.results.files import write_json
from rlbench.results.format import FolderFormat, folder_format

#: A manifest larger than this is not read (a sweep of 10,000 trials writes about 1 MB).
MAX_MANIFEST_BYTES = 256 * 2**20


class ManifestError(ValueError):
    """A manifest.json cannot be read: missing, not a plain file, not JSON, not an object, or a field of the
    wrong type (the message says which and where)."""


class _Part(BaseModel):
    """A part of the manifest: typed fields, unknown keys kept as they are."""

    model_config = ConfigDict(extra="allow", use_attribute_docstrings=True)


class Software(_Part):
    """The versions the numbers depend on (``rlbench.measure.machine.software_versions``)."""

    model_config = ConfigDict(coerce_numbers_to_str=True)

    rlbench: str | None = None
    """rlbench's version."""
    schema_version: str | None = None
    """The results format the folder holds (:mod:`rlbench.results.format`), a number as text."""
    python: str | None = None
    """Python's version."""
    ray: str | None = None
    """Ray's version (None when not installed)."""
    torch: str | None = None
    """torch's version."""
    gymnasium: str | None = None
    """gymnasium's version."""
    numpy: str | None = None
    """numpy's version."""
    platform: str | None = None
    """``platform.platform()``: the kernel and libc, in words."""


class Machine(_Part):
    """The machine the sweep and its trials ran on (``rlbench.measure.machine.MachineInfo``)."""

    hostname: str | None = None
    """Network name."""
    cpu_model: str | None = None
    """CPU model string from /proc/cpuinfo."""
    logical_cores: int | None = None
    """Hardware threads on the machine."""
    physical_cores: int | None = None
    """Physical cores."""
    usable_cores: list[int] = []
    """Cores the sweep could run on (its affinity mask)."""
    memory_bytes: int | None = None
    """Total RAM."""
    gpus: list[dict[str, Any]] = []
    """One entry per NVML GPU (name, memory_bytes, driver, sm_count); empty without a GPU."""


class Resume(_Part):
    """One later run of the folder (``--resume``)."""

    command: list[str] = []
    """Its command line."""
    started_at: str | None = None
    """When it started (UTC, ISO 8601)."""
    ended_at: str | None = None
    """When it ended; None while it runs (or when it died)."""
    rerun: dict[str, str] | None = None
    """A sweep's resume: trial id -> why it ran again (autoconfig's leave it out)."""
    kept: int | None = None
    """A sweep's resume: trials kept as they were."""


class Manifest(_Part):
    """``manifest.json``: written when a run starts (its fixed part), again when it ends (statuses, end
    time) and by each resume. docs/SCHEMA.md, "manifest.json"."""

    spec_file: str | None = None
    """The spec's path as given."""
    spec: dict[str, Any] = {}
    """The resolved spec (new key names; relative grid values as written), as JSON data. A resume writes
    its own."""
    alias_notes: list[str] = []
    """Old key names the spec used, each with where it was first seen."""
    command: list[str] = []
    """The first run's command line."""
    trial_ids: list[str] | None = None
    """Every trial planned (autoconfig: run so far), in plan order; None in a manifest that lists none."""
    software: Software = Field(default_factory=Software)
    """The versions the numbers depend on; ``schema_version`` is the folder's results format."""
    git_commit: str | None = None
    """rlbench's own checkout's commit (``-dirty`` when modified), or None outside a checkout."""
    spec_git_commit: str | None = None
    """The commit checked out in the spec's folder, read from its .git files without running git."""
    machine: Machine = Field(default_factory=Machine)
    """The machine the sweep ran on (on a cluster: the one its drivers ran on; the nodes are in ``cluster``)."""
    differs_from_tune: list[str] = []
    """How the trials differ from the same configurations under Ray Tune, in words, each once."""
    execution: list[str] = []
    """The executions its trials ran with (``tune``, ``script``)."""
    started_at: str | None = None
    """When the first run started (UTC, ISO 8601)."""
    ended_at: str | None = None
    """When the first run ended; None while it runs (a resume's end is in ``resumes``)."""
    relative_values: dict[str, Any] | None = None
    """Grid values written relative to the machine: ``machine_cpus`` and what each ``resolved`` to per grid
    point; absent when the spec has none."""
    repeat_seeds: list[int | None] = []
    """The seed of each repeat index, drawn or derived when the sweep was planned (a resume reuses them)."""
    switched_off: list[str] | None = None
    """A fidelity diagnosis only: rlbench's own choices some trial left out; absent normally."""
    cluster: dict[str, Any] | None = None
    """``--address``: the cluster as probed (``rlbench.measure.machine.cluster_dict``); absent locally."""
    parallel: str | None = None
    """``--parallel``: ``N`` or ``auto`` (trials at once, each on a node set of its own); absent: one at a time."""
    cpu_energy_zones: list[dict[str, Any]] | None = None
    """The RAPL package zones read (``[]``: none readable); absent until a trial ran."""
    interrupted: bool | None = None
    """Whether the last run was stopped by Ctrl-C or a signal; absent until one ended."""
    statuses: dict[str, str] = {}
    """Trial id -> status, every trial with a verdict."""
    quick: bool | None = None
    """True: a ``--quick`` run (``rlbench.spec.quick``: one repeat, no warm-up, one iteration, a cut train batch),
    which checks that its configurations run and measures nothing to rank or compare; absent for a full run."""
    resumes: list[Resume] = []
    """One entry per later run (``--resume``); absent before the first."""

    _format: FolderFormat = PrivateAttr(default_factory=lambda: FolderFormat(SCHEMA_VERSION, f"rlbench {__version__}"))

    @property
    def format(self) -> FolderFormat:
        """The results format the folder holds, as :func:`read_manifest` checked it (this rlbench's for a
        manifest made here)."""
        return self._format

    def as_json(self) -> dict[str, Any]:
        """The manifest as JSON data: every key it was read or made with (unknown ones included), no other."""
        return self.model_dump(mode="json", exclude_unset=True)

    def write(self, path: Path) -> None:
        """Write it to ``path`` atomically (never through a link)."""
        write_json(path, self.as_json())

    def begin_resume(
        self, command: list[str], started_at: str, *, rerun: dict[str, str] | None = None, kept: int | None = None
    ) -> None:
        """Record a later run of the folder (its end: :meth:`end`)."""
        resume = Resume(command=command, started_at=started_at, ended_at=None)
        if rerun is not None:
            resume.rerun, resume.kept = rerun, kept
        self.resumes = [*self.resumes, resume]  # assigned, never appended: only assigned fields are written

    def end(self, ended_at: str, *, interrupted: bool, statuses: dict[str, str]) -> None:
        """Record how the run that is writing ended: the first run's ``ended_at``, or its resume's."""
        if self.resumes:
            self.resumes[-1].ended_at = ended_at
        else:
            self.ended_at = ended_at
        self.interrupted, self.statuses = interrupted, statuses


def _load(path: Path) -> Any:
    """The JSON in ``path``: a plain file of at most :data:`MAX_MANIFEST_BYTES`, opened without following a link."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except FileNotFoundError:
        raise ManifestError(f"{path} is missing") from None
    except OSError as e:
        what = "a symbolic link" if e.errno == errno.ELOOP else f"unreadable ({e.strerror})"
        raise ManifestError(f"{path} is {what}") from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise ManifestError(f"{path} is not a plain file")
        if info.st_size > MAX_MANIFEST_BYTES:
            raise ManifestError(f"{path} is {info.st_size} bytes, more than any manifest rlbench writes")
        with os.fdopen(os.dup(fd), "rb") as f:
            text = f.read()
    finally:
        os.close(fd)
    try:
        return json.loads(text)
    except (ValueError, RecursionError) as e:  # a UnicodeDecodeError is a ValueError
        raise ManifestError(f"{path} is not JSON ({str(e)[:200]})") from None


def read_manifest(path: Path) -> Manifest:
    """The one reading of a ``manifest.json`` (see the module's docstring): a :class:`ManifestError`, or the
    format's :class:`~rlbench.results.format.FormatError`, says what is wrong; both are ValueErrors."""
    data = _load(path)
    if not isinstance(data, dict):
        raise ManifestError(f"{path} is not a JSON object")
    fmt = folder_format(data, str(path.parent))
    try:
        manifest = Manifest.model_validate(data)
    except ValidationError as e:  # the first three fields of the wrong type, each with its path in the manifest
        wrong = "; ".join(f"{'.'.join(map(str, err['loc']))}: {err['msg'][:200]}" for err in e.errors()[:3])
        more = f"; and {e.error_count() - 3} more" if e.error_count() > 3 else ""
        raise ManifestError(f"{path}: {wrong}{more}") from None
    manifest._format = fmt
    return manifest
