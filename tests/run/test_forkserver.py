"""The fork server is stopped once, by one owner (rlbench/run/forkserver.py): its socket is gone when
release returns, a socket already gone is no error, a second release is nothing, and an exit that
outlasts multiprocessing's finalizers prints no traceback (issue 39). A plain sweep's server: no
torch, it starts in about 0.2 s."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time

import psutil
from conftest import REPO

from rlbench.run.forkserver import release_fork_server, stop_fork_server
from rlbench.run.trial import TrialLauncher


def _plain_server():
    from multiprocessing import forkserver

    launcher = TrialLauncher(frameworks=("plain",))
    launcher.warm()
    launcher.wait_ready()
    server = forkserver._forkserver
    return server._forkserver_pid, server._forkserver_address


def _gone(pid: int, timeout_s: float = 60) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            if psutil.Process(pid).status() == psutil.STATUS_ZOMBIE:
                time.sleep(0.02)  # exited, the reaper thread about to reap it
                continue
        except psutil.NoSuchProcess:
            return True
        time.sleep(0.02)
    return False


def test_release_removes_the_socket_at_once_and_the_server_exits():
    pid, address = _plain_server()
    assert os.path.exists(address)
    release_fork_server()
    assert not os.path.exists(address)  # no thread left to unlink it later
    assert _gone(pid)
    release_fork_server()  # once: a second release (another command path) is nothing


def test_a_socket_already_gone_is_no_error():
    """What the temp folder's exit finalizer (multiprocessing.util._remove_temp_dir) does before a stop."""
    pid, address = _plain_server()
    os.unlink(address)
    stop_fork_server()
    assert _gone(pid, timeout_s=1)  # stop waits for the exit itself


def test_a_later_trial_starts_a_new_server_after_a_release():
    old, _ = _plain_server()
    release_fork_server()
    new, address = _plain_server()
    assert new != old and os.path.exists(address)
    stop_fork_server()
    assert _gone(old) and _gone(new, timeout_s=1)  # none left for the next test that counts servers


#: The race, its window widened: an exit handler registered before multiprocessing's own (atexit runs
#: them last in, first out) keeps the interpreter alive after multiprocessing's finalizers removed the
#: temp folder, as a slow exit does. Before the fix the stop thread's unlink then raised
#: "Exception in thread rlbench-forkserver-stop ... FileNotFoundError: ... listener-..." every time.
RACE = textwrap.dedent("""\
    import atexit, time
    atexit.register(time.sleep, 1.0)
    from rlbench.run.forkserver import release_fork_server
    from rlbench.run.trial import TrialLauncher
    if __name__ == "__main__":
        launcher = TrialLauncher(frameworks=("plain",))
        launcher.warm()
        launcher.wait_ready()
        release_fork_server()
        print("released", flush=True)
""")


def test_an_exit_that_outlasts_multiprocessings_finalizers_prints_no_traceback(tmp_path):
    script = tmp_path / "race.py"
    script.write_text(RACE)
    done = subprocess.run(
        [sys.executable, str(script)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )
    assert done.returncode == 0 and done.stdout == "released\n", done.stdout + done.stderr
    assert "Traceback" not in done.stderr and "Exception" not in done.stderr, done.stderr
