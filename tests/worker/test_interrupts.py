"""A signal that lands inside an import waits for the import to finish, then stops the program cleanly.

The known answer: a module whose body sends SIGTERM to its own process and then runs an ``exec`` of a
string (as scipy's array_api_compat does). The handler runs inside that import, whatever the load.
A KeyboardInterrupt raised there used to end ``python -m`` by SIGINT at exit (-2) although the program
caught it and exited 130.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

from rlbench.worker import interrupts

LANDS_IN_IMPORT = """\
# the handler runs at the bytecode after os.kill: inside the exec'd string, inside this import
exec("import os, signal\\nos.kill(os.getpid(), signal.SIGTERM)\\ntotal = 0\\nfor i in range(200_000):\\n    total += i")
print("import finished", flush=True)
"""

#: A script's end: the deferred signal comes back within RETRY_S (at most 5 s here), and the script says whether it
#: stopped.
WAIT_AND_SAY = """\
    for _ in range(500):
        time.sleep(0.01)
    print("never stopped", flush=True)
    sys.exit(0)
except KeyboardInterrupt:
    print("stopped", flush=True)
    sys.exit(130)
"""

MAIN = (
    """\
import sys, time
{install}
try:
    import lands_in_import
"""
    + WAIT_AND_SAY
)


def _run_as_module(tmp_path, install: str) -> subprocess.CompletedProcess:
    pkg = tmp_path / "prog"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "__main__.py").write_text(MAIN.format(install=install))
    (tmp_path / "lands_in_import.py").write_text(LANDS_IN_IMPORT)
    return subprocess.run(
        [sys.executable, "-m", "prog"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
        env={"PYTHONPATH": f"{tmp_path}:{interrupts.__file__.rsplit('/rlbench/', 1)[0]}"},
    )


def test_a_signal_inside_an_import_stops_the_program_after_it(tmp_path):
    done = _run_as_module(tmp_path, "from rlbench.worker.interrupts import install; install()")
    assert done.returncode == 130, done
    assert done.stdout.splitlines() == ["import finished", "stopped"], done


def test_without_the_deferral_the_import_is_cut_and_the_exit_is_a_signal(tmp_path):
    """The failure the deferral prevents, shown with a handler that raises at once: the import is cut
    short, and the exit code the program chose is lost to CPython's SIGINT exit."""
    raising = textwrap.dedent("""\
        import signal
        def now(signum, frame):
            raise KeyboardInterrupt
        signal.signal(signal.SIGTERM, now)""")
    done = _run_as_module(tmp_path, raising)
    assert "import finished" not in done.stdout
    assert done.returncode == -2, done


def test_importing_sees_import_frames_only(tmp_path, monkeypatch):
    (tmp_path / "sees_its_import.py").write_text(
        "import sys\nfrom rlbench.worker.interrupts import importing\nINSIDE = importing(sys._getframe())\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    import sees_its_import

    assert sees_its_import.INSIDE is True
    assert not interrupts.importing(sys._getframe())
    assert not interrupts.importing(None)


@pytest.mark.parametrize("sig", interrupts.SIGNALS)
def test_install_and_restore_put_back_what_was_there(sig):
    import signal

    outer = signal.signal(sig, signal.SIG_DFL)  # whatever the test runner was started with (nohup: SIGHUP ignored)
    try:
        previous = interrupts.install((sig,))
        assert signal.getsignal(sig) is interrupts.interrupt
        interrupts.restore(previous)
        assert signal.getsignal(sig) == signal.SIG_DFL
    finally:
        signal.signal(sig, outer)


def test_a_signal_ignored_at_start_stays_ignored():
    """nohup ignores SIGHUP: closing the terminal must not stop the run."""
    import signal

    before = signal.signal(signal.SIGHUP, signal.SIG_IGN)
    try:
        assert interrupts.install((signal.SIGHUP,)) == {}
        assert signal.getsignal(signal.SIGHUP) == signal.SIG_IGN
    finally:
        signal.signal(signal.SIGHUP, before)


def test_each_signal_that_raises_is_counted():
    import sys as _sys

    before = interrupts.received()
    with pytest.raises(KeyboardInterrupt):
        interrupts.interrupt(15, _sys._getframe())
    assert interrupts.received() == before + 1


def test_once_the_command_is_leaving_a_signal_is_counted_not_raised(monkeypatch):
    """After the command has its exit code, a KeyboardInterrupt would only print a traceback on the way out
    (from ``sys.exit``'s caller or an exit handler); the next command's install raises again."""
    import signal
    import sys as _sys

    monkeypatch.setattr(interrupts, "_leaving", [False])
    before = interrupts.received()
    interrupts.leaving()
    interrupts.interrupt(15, _sys._getframe())  # no KeyboardInterrupt
    assert interrupts.received() == before + 1
    previous = interrupts.install((signal.SIGTERM,))
    try:
        with pytest.raises(KeyboardInterrupt):
            interrupts.interrupt(15, _sys._getframe())
    finally:
        interrupts.restore(previous)


CUT_HANDSHAKE = """\
import multiprocessing, os, signal, sys
from multiprocessing import reduction
{install}
real = reduction.sendfds


def send_after_a_signal(sock, fds):
    # the handler runs at the next bytecode: between the server's accept and the descriptors it waits for
    os.kill(os.getpid(), signal.SIGTERM)
    return real(sock, fds)


if __name__ == "__main__":
    reduction.sendfds = send_after_a_signal
    child = multiprocessing.get_context("forkserver").Process(target=print, args=("child ran",))
    try:
        child.start()
        child.join()
        print("never stopped", flush=True)
    except KeyboardInterrupt:
        print("stopped", flush=True)
        if {cut}:  # the server (alive while this process holds its pipe) reads EOF: wait for its end
            from multiprocessing import forkserver

            os.waitpid(forkserver._forkserver._forkserver_pid, 0)
        sys.exit(130)
"""


def _run_script(tmp_path, template: str, install: bool, **fields) -> subprocess.CompletedProcess:
    """Run ``template`` as a script with rlbench's handler installed (``install``) or one that raises at once."""
    handler = (
        "from rlbench.worker.interrupts import install; install()"
        if install
        else "def now(s, f):\n    raise KeyboardInterrupt\nsignal.signal(signal.SIGTERM, now)"
    )
    (tmp_path / "prog.py").write_text(template.format(install=handler, **fields))
    return subprocess.run(
        [sys.executable, "prog.py"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
        env={"PYTHONPATH": interrupts.__file__.rsplit("/rlbench/", 1)[0]},
    )


@pytest.mark.parametrize(("install", "cut"), [(True, False), (False, True)], ids=["deferred", "raised at once"])
def test_a_signal_during_the_fork_servers_handshake_waits_for_its_end(tmp_path, install, cut):
    """Known answer (the signal is sent from inside the handshake, whatever the load): deferred, the handshake
    ends and the program stops after it; raised at once, the server reads EOF and prints its traceback (CI,
    the fifth session's stop: ``recvfds ... EOFError`` on the command's stderr)."""
    done = _run_script(tmp_path, CUT_HANDSHAKE, install, cut=cut)
    assert done.returncode == 130, done
    assert ("EOFError" in done.stderr) is cut, done.stderr


def test_in_uncut_step_sees_the_handshake_only():
    import types

    code = compile("import sys\nframe = sys._getframe()", "/x/multiprocessing/forkserver.py", "exec")
    inside: dict = {}
    exec(code.replace(co_name="connect_to_new_process"), inside)  # noqa: S102 - a frame with that name, here
    assert interrupts.in_uncut_step(inside["frame"])
    assert not interrupts.in_uncut_step(sys._getframe())
    assert not interrupts.in_uncut_step(None)
    assert isinstance(inside["frame"], types.FrameType)


LANDS_IN_FINALIZER = (
    """\
import os, signal, sys, time, weakref
{install}


class Thing:
    pass


def callback():  # called by weakref.finalize as the thing is collected: Python prints what it raises, drops it
    os.kill(os.getpid(), signal.SIGTERM)
    total = 0
    for i in range(200_000):  # the handler runs at a bytecode of this loop: inside the callback
        total += i


try:
    thing = Thing()
    weakref.finalize(thing, callback)
    del thing
"""
    + WAIT_AND_SAY
)


@pytest.mark.parametrize("install", [True, False], ids=["deferred", "raised at once"])
def test_a_signal_inside_a_weakref_callback_stops_the_program_after_it(tmp_path, install):
    """Known answer (the signal is sent from inside the callback, whatever the load): deferred, the callback ends and
    the program stops after it, nothing on stderr; raised at once, Python prints "Exception ignored in" and drops the
    KeyboardInterrupt: the program never stops (the sweep's report, CI-like run, 2026-11-30)."""
    done = _run_script(tmp_path, LANDS_IN_FINALIZER, install)
    if install:
        assert (done.returncode, done.stdout, done.stderr) == (130, "stopped\n", ""), done
    else:
        assert done.returncode == 0 and "Exception ignored in" in done.stderr, done


def test_in_finalizer_sees_del_and_weakref_callbacks_only():
    code = compile("import sys\nframe = sys._getframe()", "/x/_weakrefset.py", "exec")
    inside: dict = {}
    exec(code.replace(co_name="_remove"), inside)  # noqa: S102 - a frame in that file, here
    assert interrupts.in_finalizer(inside["frame"])
    dele: dict = {}
    exec(compile("import sys\nframe = sys._getframe()", "/x/mine.py", "exec").replace(co_name="__del__"), dele)  # noqa: S102
    assert interrupts.in_finalizer(dele["frame"])
    assert not interrupts.in_finalizer(sys._getframe())
    assert not interrupts.in_finalizer(None)
