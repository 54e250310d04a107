"""Who may write a results folder: the writability probe and the sweep's lock.

- :func:`check_writable` proves the output folder can be written without leaving anything.
- :class:`SweepLock` (``DIR/.rlbench.lock``, ``flock``) keeps a second sweep out of a folder; the
  kernel drops the lock when its owner dies, so a ``kill -9`` leaves no stale lock.

Every refusal is an :class:`OutDirError` raised before anything is written (CLI exit code 2).
Standard library only.
"""

from __future__ import annotations

import fcntl
import os
import tempfile
from pathlib import Path

from rlbench.results.layout import LOCK_FILE


class OutDirError(Exception):
    """The output folder cannot be used as asked; the message says why and what to do."""


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
