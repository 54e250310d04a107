"""The sweep's fork server, stopped once, by one owner: this module.

multiprocessing's fork server listens on a Unix socket inside this process's multiprocessing temp
folder (``/tmp/pymp-*/listener-*``). Two cleanups remove that path: ``ForkServer._stop`` unlinks it
after it has waited for the server to exit, and the exit finalizer ``util._remove_temp_dir``
(``shutil.rmtree`` of the whole folder, at interpreter exit) removes it with the folder. Neither
expects the other. rlbench stopped the server with ``ForkServer._stop`` in a daemon thread, because
with torch and Ray loaded the server takes about 1.4 s to exit and the command had its tables to
write meanwhile; an interrupted command reaches its exit within those 1.4 s, so the thread's
``os.unlink`` ran after, or during, the finalizer's ``rmtree``: ``Exception in thread
rlbench-forkserver-stop ... FileNotFoundError: ... listener-...``, or the same error from
``_remove_temp_dir`` (4 of 8 SIGTERMs of ``rlbench autoconfig configs/autoconfig_cpu.yaml``, issue 39).

So here the stop is split by what it touches. What touches files and the server's state happens at
once, in the caller's thread, under the server's own lock: the state is cleared first (an interrupt
in the middle leaves no half-stopped server for a later ``ensure_running``), the keep-alive pipe is
closed (the server's cue to exit) and the socket is unlinked, a socket already gone being no error.
Only the wait for the server's exit, which touches no file, runs in a daemon thread, so it can race
nothing at exit. Stopping twice, or a server never started, is nothing.
"""

from __future__ import annotations

import contextlib
import os
import sys
import threading

#: The thread that reaps a released server (multiprocessing's own name for it was rlbench-forkserver-stop).
REAPER_NAME = "rlbench-forkserver-reap"


def _server():
    """multiprocessing's fork server object, or None when nothing in this process imported its module."""
    forkserver = sys.modules.get("multiprocessing.forkserver")
    return getattr(forkserver, "_forkserver", None)


def _detach() -> int | None:
    """Tell this process's fork server to exit and forget it; returns its pid to reap, or None when none runs.

    ``_forkserver_pid``, ``_forkserver_alive_fd`` and ``_forkserver_address`` are multiprocessing's private
    state (the fields its ``_stop`` clears; Python 3.10-3.13 have them): a later ``ensure_running`` starts a
    new server."""
    from multiprocessing import util

    server = _server()
    lock = getattr(server, "_lock", None)
    if lock is None:
        return None
    with lock:
        pid, fd, address = server._forkserver_pid, server._forkserver_alive_fd, server._forkserver_address
        if pid is None:
            return None
        server._forkserver_pid = server._forkserver_alive_fd = server._forkserver_address = None
        if fd is not None:
            os.close(fd)  # EOF on the server's keep-alive pipe: it exits
        if address and not util.is_abstract_socket_namespace(address):
            with contextlib.suppress(FileNotFoundError):  # removed already (the temp folder's finalizer, or by hand)
                os.unlink(address)
    return pid


def _reap(pid: int) -> None:
    with contextlib.suppress(ChildProcessError):  # reaped elsewhere
        os.waitpid(pid, 0)


def release_fork_server() -> None:
    """Let the fork server go once the command's last trial has ended: it exits while the command writes its
    tables and report. Left to the command's own exit, it held the command's stdout and stderr about 1.4 s
    after the command ended, and whoever reads them through a pipe (a CI log, ``| tee``) waited for it.
    A later trial in this process starts a new server."""
    pid = _detach()
    if pid is not None:
        threading.Thread(target=_reap, args=(pid,), name=REAPER_NAME, daemon=True).start()


def stop_fork_server() -> None:
    """Stop the fork server and wait for it to exit (a new one with another preload follows)."""
    pid = _detach()
    if pid is not None:
        _reap(pid)


def stop_fork_server_unless(preload: list[str]) -> None:
    """Stop this process's fork server if it runs with another preload. multiprocessing keeps one per
    process and ignores a new preload while it runs, so a second sweep in one process (run_sweep called
    twice, as the tests do) forked its rllib trials from a plain sweep's server, without torch."""
    server = _server()
    if (
        getattr(server, "_forkserver_pid", None) is not None
        and list(getattr(server, "_preload_modules", None) or []) != preload
    ):
        stop_fork_server()
