"""Wake as soon as a name appears in a folder: Linux inotify through ctypes (standard library only, so the trial
imports it before Ray), a plain sleep where inotify is missing.

A paused warm trial looked for its next gate with a stat() every 0.1 s, so a window began 0-0.1 s after the pool
opened its gate: most of a handover between two trials' windows (median 0.101 s in shared_cores_limit's walk, 29 of
them in its 91 s, 2 cores, 2026-11-30). A watch wakes it when the gate's name is made (the pool writes it by rename:
``IN_MOVED_TO``; ``IN_CREATE`` for a plain create), and the timeout stays as the fallback. Only this process's own
trial folder is watched, and only for names: nothing in it is opened or read.
"""

from __future__ import annotations

import ctypes
import os
import select
import time
from contextlib import suppress
from pathlib import Path
from types import TracebackType

#: inotify's flags (linux/inotify.h; IN_NONBLOCK and IN_CLOEXEC are O_NONBLOCK and O_CLOEXEC on every Linux arch
#: Python runs on but alpha/parisc/sparc, where the watch's open fails with EINVAL and the sleep is used).
IN_MOVED_TO = 0x080
IN_CREATE = 0x100
IN_NONBLOCK = os.O_NONBLOCK
IN_CLOEXEC = getattr(os, "O_CLOEXEC", 0o2000000)


def _libc() -> ctypes.CDLL | None:
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.inotify_init1  # noqa: B018 - an AttributeError where the C library has none (not Linux)
        libc.inotify_add_watch  # noqa: B018
    except (OSError, AttributeError):
        return None
    return libc


class FolderWatch:
    """A context manager: :meth:`wait` returns once a name is made in ``folder`` or after its timeout, whichever
    comes first. ``active`` says whether inotify is behind it (False: every wait is the whole timeout). Make it
    before the first look for the name, so a name made between that look and the wait still wakes it."""

    def __init__(self, folder: Path, libc: ctypes.CDLL | None = None) -> None:
        self._fd: int | None = None
        lib = libc if libc is not None else _libc()
        if lib is None:
            return
        fd = lib.inotify_init1(IN_NONBLOCK | IN_CLOEXEC)
        if fd < 0:  # out of inotify instances (fs.inotify.max_user_instances): sleep instead
            return
        if lib.inotify_add_watch(fd, os.fsencode(folder), IN_CREATE | IN_MOVED_TO) < 0:
            os.close(fd)
            return
        self._fd = fd

    @property
    def active(self) -> bool:
        """Whether inotify watches the folder (else :meth:`wait` sleeps its whole timeout)."""
        return self._fd is not None

    def wait(self, timeout_s: float) -> bool:
        """Block until a name is made in the folder (True) or ``timeout_s`` passes (False); the events read are
        dropped (the caller looks for the names it wants itself). A name made since the last wait wakes it at once:
        the kernel queues the event in the create or rename itself."""
        if self._fd is None:
            time.sleep(timeout_s)
            return False
        ready, _, _ = select.select([self._fd], [], [], timeout_s)
        if ready:
            with suppress(BlockingIOError, InterruptedError):
                while os.read(self._fd, 4096):
                    pass
        return bool(ready)

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    def __enter__(self) -> FolderWatch:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()
