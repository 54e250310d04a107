"""Writing and reading a results folder's files safely (standard library only).

Every file rlbench writes is written to a temporary file, fsynced and renamed into place, and the
folder fsynced, so a reader sees the old file or the whole new one and a machine crash loses at
most the file being written. ``events.jsonl`` is the one file appended to (by the trial, a line
at a time, fsynced); readers drop a torn last line.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any


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


def read_json(path: Path, default: Any = None) -> Any:
    """A JSON file's content, or ``default`` when it does not exist."""
    if not path.exists():
        return default
    return json.loads(path.read_text())


def read_events(path: Path) -> list[dict[str, Any]]:
    """A trial's events; a torn last line (the process died mid-write) is dropped."""
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

    def __init__(self, path: Path):
        self.path = path
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
