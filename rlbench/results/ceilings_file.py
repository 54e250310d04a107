"""``env_ceilings.json`` as it is read back: setting -> the env stepping alone there (envbench's ``CeilingResult``,
field for field; tests/studies/test_ceilings_file.py holds the lists equal), or the error that stopped its
measuring. Read by the analysis (``sampling_efficiency``) and autoconfig's driver (the cost model's env steps);
the sweep, its writer, adds the settings not yet measured to the file as it found it.

A damaged or hostile file reads as no ceiling, never an error: not a JSON object, no ceilings; an entry that is no
object is left out; a value not of its field's type reads as None (:class:`~rlbench.results.file_record.FileRecord`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

from pydantic import BeforeValidator, TypeAdapter, ValidationError

from rlbench.results.file_record import FileRecord, Number


class CeilingEntry(FileRecord):
    """One setting's env ceiling (``studies/envbench.py``'s ``CeilingResult``), or its ``error``."""

    env: str | None = None
    """The env, as in a spec."""
    env_config: dict[str, Any] | None = None
    """Its config."""
    procs: int | None = None
    """Processes stepping in parallel (one env each)."""
    steps: int | None = None
    """Env steps taken in the measured window, all processes together."""
    measured_s: Number | None = None
    """Length of the measured window."""
    steps_per_s: Number | None = None
    """Sum over processes of each one's steps / seconds."""
    steps_per_s_per_proc: Number | None = None
    """steps_per_s / procs."""
    cpu_s: Number | None = None
    """CPU seconds the processes used in the measured window, together."""
    peak_rss_bytes: int | None = None
    """The processes' peak resident memory, summed."""
    error: str | None = None
    """Why it could not be measured (then no other field)."""


def _object_values(value: Any) -> Any:
    """The entries whose value is a JSON object (a damaged entry is left out, not the file)."""
    return {k: v for k, v in value.items() if isinstance(v, dict)} if isinstance(value, dict) else value


_CEILINGS: TypeAdapter[dict[str, CeilingEntry]] = TypeAdapter(
    Annotated[dict[str, CeilingEntry], BeforeValidator(_object_values)]
)


def read_env_ceilings(path: Path) -> dict[str, CeilingEntry]:
    """``env_ceilings.json`` at ``path``, setting -> its ceiling; {} when there is none, or it is no JSON object."""
    try:
        return _CEILINGS.validate_json(Path(path).read_bytes())
    except (OSError, ValidationError):
        return {}
