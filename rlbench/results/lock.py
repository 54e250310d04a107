"""Who may write a results folder: the writability probe and the sweep's lock.

- :func:`check_writable` proves the output folder can be written without leaving anything.
- :class:`SweepLock` (``DIR/.rlbench.lock``, ``flock``) keeps a second sweep out of a folder; the
  kernel drops the lock when its owner dies, so a ``kill -9`` leaves no stale lock.

Every refusal is an :class:`OutDirError` raised before anything is written (CLI exit code 2).
Standard library only.
"""

from __future__ import annotations

import errno
import fcntl
import os
import stat
import tempfile
from pathlib import Path

from rlbench.results.files import FILE_MODE
from rlbench.results.layout import LOCK_FILE, ResultsFolder


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
        raise OutDirError(f"cannot write to output folder {out_dir}: {what} is not a folder; choose another with --out")
    try:
        os.rmdir(tempfile.mkdtemp(dir=target, prefix=".rlbench-write-test-"))
    except OSError as e:
        where = "" if target == out_dir else f" (in {target})"
        raise OutDirError(
            f"cannot write to output folder {out_dir}{where}: {e.strerror}; choose another with --out"
        ) from None


def check_plain_folder(folder: Path, *, what: str = "results folder") -> None:
    """Raise OutDirError if ``folder`` holds a symbolic link, FIFO, socket or device anywhere.

    A results folder may come from someone else: a link in it would make rlbench read (and
    embed in a report) or write a file elsewhere, a FIFO would hang a reader. rlbench writes
    only plain files and folders, so anything else was planted. Checked before rlbench reads or
    writes a folder it did not just create (resume, report, compare, reproduce).
    """
    odd = ResultsFolder(folder).unsafe_entries()
    if odd:
        shown = ", ".join(str(p) for p in odd[:3]) + (f" and {len(odd) - 3} more" if len(odd) > 3 else "")
        raise OutDirError(
            f"{what} {folder} holds {shown}: rlbench writes only plain files and folders and never "
            "follows a symbolic link in a results folder (one from elsewhere may point it at your "
            "files); remove them, or copy the folder without them"
        )


def check_new_sweep_folder(out_dir: Path) -> None:
    """Raise OutDirError if ``out_dir`` is a folder holding files but no rlbench sweep: a sweep
    writes manifest.json, trials/, plots/, tables and a report there and would overwrite a
    user's files of those names (only rlbench's own lock file may be there already)."""
    if not out_dir.is_dir() or ResultsFolder(out_dir).holds_sweep():
        return
    refuse_foreign_files(out_dir, "sweep", "rlbench would overwrite files of its own names there; ")


def refuse_foreign_files(out_dir: Path, kind: str, why: str = "") -> None:
    """Raise OutDirError if ``out_dir`` holds anything but rlbench's lock file, naming the first three: it is not an
    rlbench ``kind`` (a sweep's folder, a history's), and ``why`` says what writing there would do."""
    names = sorted(p.name for p in out_dir.iterdir() if p.name != LOCK_FILE)
    if names:
        shown = ", ".join(names[:3]) + (f" and {len(names) - 3} more" if len(names) > 3 else "")
        raise OutDirError(
            f"output folder {out_dir} already holds files ({shown}) and is not an rlbench {kind}: "
            f"{why}choose a new or empty folder with --out"
        )


class SweepLock:
    """An exclusive ``flock`` on ``DIR/.rlbench.lock`` holding the owner's pid, for one sweep's life."""

    def __init__(self, out_dir: Path):
        self.path = out_dir / LOCK_FILE
        self._fd: int | None = None

    def acquire(self) -> SweepLock:
        """Create the folder if needed and take the lock; OutDirError if another sweep holds it, or
        if the lock's name is a symbolic link or anything but a plain file of its own (it is opened
        with ``O_NOFOLLOW`` and truncated only once it is known to be that)."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        try:
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC | os.O_NOFOLLOW, FILE_MODE)
        except OSError as e:
            if e.errno == errno.ELOOP:
                raise OutDirError(
                    f"{self.path} is a symbolic link: rlbench never writes through one (a folder "
                    "from elsewhere may point it at one of your files); remove it"
                ) from None
            raise
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_nlink != 1:
            os.close(fd)
            raise OutDirError(
                f"{self.path} is not a plain file of its own (a FIFO, device or hard link): remove "
                "it, or choose another folder with --out"
            )
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            owner = os.pread(fd, 64, 0).decode(errors="replace").strip() or "unknown"
            os.close(fd)
            raise OutDirError(
                f"another rlbench sweep (pid {owner}) is writing to {self.path.parent}: wait for it "
                "to finish, or choose another folder with --out"
            ) from None
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

    def __enter__(self) -> SweepLock:
        return self.acquire()

    def __exit__(self, *exc) -> None:
        self.release()
