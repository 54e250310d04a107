"""Ctrl-C, SIGTERM and SIGHUP as one clean stop of an rlbench command: a KeyboardInterrupt, raised
where it cannot be lost.

Standard library only, and here rather than in ``rlbench.commands`` (whose package imports every verb,
0.3-0.5 s): ``python -m rlbench`` installs it before anything else, so a SIGTERM during those imports
stops the command like one later, instead of killing it outright (exit -15, measured).

A Python signal handler runs between two bytecodes of the main thread, wherever that is. Raised inside
an import in progress, the KeyboardInterrupt was lost or turned into a signal death. Measured on
``python -m rlbench autoconfig`` with a SIGTERM 0.4-1.2 s in, while the driver lazily imported numpy
and scipy:

- inside numpy's import, something swallowed it: the run went on to its answer and exited 0;
- inside scipy's ``exec("from numpy import *")``: a KeyboardInterrupt leaving an exec'd string sets
  CPython's "unhandled KeyboardInterrupt" flag, and ``python -m`` ends the process with SIGINT at exit
  (-2, or 130 in a shell), though rlbench had caught it and returned 130: no resume line.

So while an import runs, the handler only notes the signal and delivers it again :data:`RETRY_S` later,
until no import is running: the import completes, then the command stops at its next bytecode.

The same holds while the main thread asks multiprocessing's fork server for a trial
(``ForkServer.connect_to_new_process``: connect, then send the file descriptors). Raised between the two,
the KeyboardInterrupt closed a connection the server had accepted: the server died on ``EOFError`` in
``recvfds`` and printed its traceback on the command's stderr (CI, SIGTERM at an autoconfig race's start,
once in 1,828 tests). The handshake takes well under a millisecond; the command stops right after it.
And while the garbage collector runs a finalizer (:data:`FINALIZER_FILES`), whose exceptions Python prints and
drops.
"""

from __future__ import annotations

import os
import signal
import threading
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Callable
    from types import CodeType, FrameType
    from typing import Any, TypeAlias

    #: What ``signal.signal`` takes and ``signal.getsignal`` gives back.
    Handler: TypeAlias = Callable[[int, FrameType | None], Any] | int | signal.Handlers | None

#: Seconds between deliveries of a signal deferred while an import runs.
RETRY_S = 0.02
#: What stops a command cleanly: Ctrl-C, ``kill`` or a batch scheduler, a closed terminal.
SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


#: (file name ending, function) of a step a KeyboardInterrupt must not cut: the fork server's handshake.
UNCUT_STEPS = (("multiprocessing/forkserver.py", "connect_to_new_process"),)
#: Where Python runs code whose exceptions it only prints ("Exception ignored in ...") and then drops: a ``__del__``,
#: or a weakref callback (the standard library's weak sets and dictionaries, ``weakref.finalize``), which the garbage
#: collector may call between any two bytecodes. A KeyboardInterrupt raised there printed its traceback on the
#: command's stderr and was lost (a SIGHUP as a sweep wrote its report, in ``_weakrefset``'s ``_remove``: 1 of 10 runs
#: of tests/e2e/test_interrupts_e2e.py, 2026-11-30); the command still exited 130 (:func:`received`). A bare
#: ``weakref.ref`` callback of third-party code is not seen (nothing on its stack says so).
FINALIZER_FILES = ("/_weakrefset.py", "/weakref.py")


def _on_stack(frame, hit: Callable[[CodeType], bool]) -> bool:
    """Whether ``hit`` holds for the code of ``frame`` or of any frame below it."""
    while frame is not None:
        if hit(frame.f_code):
            return True
        frame = frame.f_back
    return False


def importing(frame) -> bool:
    """Whether ``frame`` (a signal handler's) runs inside an import: importlib's frames are on its stack."""
    return _on_stack(frame, lambda code: code.co_filename.startswith("<frozen importlib"))


def in_uncut_step(frame) -> bool:
    """Whether ``frame`` runs inside one of :data:`UNCUT_STEPS` (a step of another process's protocol)."""
    return _on_stack(
        frame, lambda code: any(code.co_name == n and code.co_filename.endswith(f) for f, n in UNCUT_STEPS)
    )


def in_finalizer(frame) -> bool:
    """Whether ``frame`` runs inside a ``__del__`` or a weakref callback (:data:`FINALIZER_FILES`)."""
    return _on_stack(frame, lambda code: code.co_name == "__del__" or code.co_filename.endswith(FINALIZER_FILES))


_received = [0]
#: Set once the command has its exit code and the process is leaving (:func:`leaving`).
_leaving = [False]


def received() -> int:
    """Signals :func:`interrupt` has handled so far (a deferred one counts once it raises). A command compares
    it before and after its work: third-party code that catches everything (a report's plotting, a ``__del__``)
    can still swallow the KeyboardInterrupt, and the command must stop as interrupted all the same."""
    return _received[0]


def interrupt(signum: int, frame) -> None:
    """The handler: KeyboardInterrupt now, or, inside an import, an uncut step or a finalizer, the same signal again
    a moment later."""
    if importing(frame) or in_uncut_step(frame) or in_finalizer(frame):
        again = threading.Timer(RETRY_S, os.kill, (os.getpid(), signum))
        again.daemon = True
        again.start()
        return
    _received[0] += 1
    if not _leaving[0]:
        raise KeyboardInterrupt


def install(signals: tuple[int, ...] = SIGNALS) -> dict[int, Handler]:
    """Install :func:`interrupt` for ``signals`` (from the main thread); returns the handlers it replaced,
    for :func:`restore`. Nothing from another thread (Python allows handlers in the main thread only), and
    not over a signal ignored at start: ``nohup`` ignores SIGHUP, and a shell's background job SIGINT, so
    that closing the terminal or a Ctrl-C meant for the foreground leaves the run alone."""
    if threading.current_thread() is not threading.main_thread():
        return {}
    _leaving[0] = False
    return {sig: signal.signal(sig, interrupt) for sig in signals if signal.getsignal(sig) != signal.SIG_IGN}


def leaving() -> None:
    """The command has its exit code and the process exits next: from now on a signal is counted, not raised.
    Raised there, in ``sys.exit``'s caller or an exit handler (the fork server's, multiprocessing's), it
    printed a traceback after the command's last line; the command's own answer already stands."""
    _leaving[0] = True


def restore(previous: dict[int, Handler]) -> None:
    """Put back the handlers :func:`install` replaced."""
    for sig, handler in previous.items():
        if handler is not None:  # None: set from outside Python, nothing to put back
            signal.signal(sig, handler)
