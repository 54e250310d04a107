"""Which results format a folder holds, and whether this rlbench can read it (checked on every read).

A folder states its format in ``manifest.json`` (``software.schema_version``, with the rlbench that
wrote it in ``software.rlbench``); its derived tables state theirs in ``trials.parquet``'s metadata
(``rlbench_schema_version``). ``report``, ``compare``, ``reproduce`` and ``--resume`` check it
before anything else: a folder from a newer rlbench is refused, saying which one wrote it; one from
an older format this rlbench can still read is migrated on read (its per-trial files are read with
the older defaults, its tables are rebuilt from them); anything else is refused. ``--resume`` takes
the current format only: a resumed sweep would write trials of two formats into one folder.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from rlbench import SCHEMA_VERSION

#: Every results format, and what it changed (docs/SCHEMA.md, "Format history").
HISTORY: dict[int, str] = {
    1: "the first written format (rlbench 0.1.0, 2026-11)",
    2: "record.json and trials.parquet gain exit_signal; plan.json's config and trials.parquet gain framework",
    3: "plan.json and trials.parquet gain variant and round (a format-2 trial: variant null, round its repeat); "
    "plan.json's config and trials.parquet gain execution (tune before); "
    "plan.json packages, trials.parquet versions; "
    "rlbench autoconfig's trials: phase and rung (null in a sweep)",
}

#: The oldest format this rlbench migrates on read: every older per-trial file still parses (fields
#: added since have defaults: exit_signal from exit_code, framework rllib).
OLDEST_READABLE = 1


class FormatError(ValueError):
    """The folder's format cannot be read by this rlbench (the message says why and what to do)."""


@dataclass(frozen=True)
class FolderFormat:
    """A results folder's format, as its manifest states it."""

    version: int
    """``software.schema_version`` of its manifest."""
    written_by: str
    """``rlbench X`` that wrote it (``an unknown rlbench`` when the manifest does not say)."""

    @property
    def migrated(self) -> bool:
        """Whether it is read through the migration (an older format than this rlbench writes)."""
        return self.version < SCHEMA_VERSION

    def note(self, where: str) -> str | None:
        """What a reader is told about a migrated folder, or None."""
        if not self.migrated:
            return None
        return (
            f"{where} holds results format {self.version} (written by {self.written_by}); read as format "
            f"{SCHEMA_VERSION}: its tables are rebuilt from its per-trial files, which are not changed"
        )


def folder_format(manifest: Any, where: str) -> FolderFormat:
    """The format a manifest states; :class:`FormatError` when this rlbench cannot read it."""
    software = manifest.get("software") if isinstance(manifest, dict) else None
    if not isinstance(software, dict) or "schema_version" not in software:
        raise FormatError(
            f"{where} states no results format (manifest.json has no software.schema_version): it "
            "was not written by rlbench, or its manifest is damaged"
        )
    raw, by = software.get("schema_version"), software.get("rlbench")
    written_by = (
        f"rlbench {by}"
        if isinstance(by, str) and by.replace(".", "").isalnum() and len(by) < 40
        else "an unknown rlbench"
    )
    try:
        version = int(str(raw))
    except ValueError:
        raise FormatError(
            f"{where}: manifest.json's software.schema_version is {str(raw)[:40]!r}, not a "
            "format number: the manifest is damaged"
        ) from None
    if version > SCHEMA_VERSION:
        raise FormatError(
            f"{where} holds results format {version}, written by {written_by}; this rlbench reads "
            f"formats {OLDEST_READABLE} to {SCHEMA_VERSION}: read it with that rlbench or a newer one"
        )
    if version < OLDEST_READABLE:
        raise FormatError(
            f"{where} holds results format {version}, written by {written_by}; this rlbench reads "
            f"formats {OLDEST_READABLE} to {SCHEMA_VERSION}: read it with the rlbench that wrote it"
        )
    return FolderFormat(version, written_by)
