"""Writing and reading a results folder's files safely (standard library only).

Every file rlbench writes is written to a temporary file, fsynced and renamed into place, and the
folder fsynced, so a reader sees the old file or the whole new one and a machine crash loses at
most the file being written. ``events.jsonl`` is the one file appended to (by the trial, a line
at a time, fsynced); readers drop a torn last line. No write ever goes through a symbolic link: a
results folder may come from someone else, and a link planted in it must not make rlbench
overwrite the file it points to.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import secrets
from collections.abc import Iterable
from pathlib import Path
from typing import Any

#: Mode of every file rlbench writes, before the process's umask (so 0644 with the usual umask 022,
#: 0600 with 077): a result set is meant to be read and shared, and holds nothing secret. The same
#: for every writer (atomic writes, the lock, events.jsonl, trial.log); folders get 0777 less the umask.
FILE_MODE = 0o644

#: Flags of every file rlbench opens for writing: never through a symbolic link.
_NO_LINK = os.O_NOFOLLOW | os.O_CLOEXEC


class LinkRefused(OSError):
    """A symbolic link (or something else than a plain file or folder) where rlbench writes."""


def _open_dir(directory: Path) -> int:
    """An fd of ``directory`` itself; LinkRefused when it is a symbolic link (a planted link to a
    folder elsewhere would make every write land there)."""
    try:
        return os.open(directory, os.O_RDONLY | os.O_DIRECTORY | _NO_LINK)
    except OSError as e:
        if e.errno in (errno.ELOOP, errno.ENOTDIR) and os.path.islink(directory):
            raise LinkRefused(
                e.errno,
                f"{directory} is a symbolic link: rlbench never writes through one (remove it, or name its target)",
            ) from None
        raise


def write_atomic(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` so readers see the old file or the whole new one, never a part.

    The data goes to a new temporary file in the same folder (created exclusively, never through a
    link) that is then renamed over ``path``: a symbolic link planted at ``path`` is replaced, its
    target untouched; a link in place of the folder itself is refused (:class:`LinkRefused`).
    The file gets :data:`FILE_MODE` less the umask.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    dir_fd = _open_dir(path.parent)
    try:
        while True:
            tmp = f".{path.name[:200]}.{secrets.token_hex(6)}.tmp"
            try:
                fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NO_LINK, FILE_MODE, dir_fd=dir_fd)
                break
            except FileExistsError:
                continue
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(data)
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, path.name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
        except BaseException:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp, dir_fd=dir_fd)
            raise
        os.fsync(dir_fd)  # the rename itself survives a crash of the machine only once its folder is synced
    finally:
        os.close(dir_fd)


def open_append(path: Path) -> int:
    """An fd appending to ``path`` (created with :data:`FILE_MODE` less the umask); OSError (ELOOP)
    rather than following a symbolic link there."""
    return os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND | _NO_LINK, FILE_MODE)


def append_line(path: Path, line: bytes) -> None:
    """Append one line to ``path`` (created if missing; a link is never followed) in one ``write``
    with ``O_APPEND``, fsynced: a line another process appends to the same file at the same time
    (the trial writing ``events.jsonl``) lands before or after it, never inside it."""
    data = line if line.endswith(b"\n") else line + b"\n"
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW, 0o644)
    try:
        os.write(fd, data)
        os.fsync(fd)
    finally:
        os.close(fd)


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
    return json.loads(path.read_text()) if path.exists() else default


def read_events(path: Path) -> list[dict[str, Any]]:
    """A trial's events as raw JSON objects; a torn last line (the process died mid-write) is dropped. rlbench reads
    them typed, through :func:`rlbench.results.events_file.read_events`; this is its one raw reader."""
    return event_objects(path.read_text(errors="replace").splitlines()) if path.exists() else []


def event_objects(lines: Iterable[str | bytes]) -> list[dict[str, Any]]:
    """The lines of an events file that are JSON objects."""
    events = []
    for line in lines:
        try:
            event = json.loads(line)
        except (ValueError, RecursionError):  # a torn line; or a damaged or forged one
            continue
        if isinstance(event, dict):  # anything else is not an event (a damaged or forged file)
            events.append(event)
    return events


def remove_if_empty(folder: str | Path) -> bool:
    """Remove ``folder`` if it is an empty directory; never a link, never anything in it. True if removed."""
    try:
        os.rmdir(folder)  # refuses a non-empty folder, and a link (ENOTDIR)
    except (OSError, TypeError, ValueError):
        return False
    return True
