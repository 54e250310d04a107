"""A trial's verdict from its events and how its process ended (run/trial.py's _verdict), on
hand-written event files: a death after ``trained`` (in the teardown) keeps a trial ok, one before fails it."""

from __future__ import annotations

import json
import signal
from pathlib import Path
from types import SimpleNamespace

import pytest

from rlbench.results.layout import TrialFolder
from rlbench.results.records import TEARDOWN_CRASH
from rlbench.run.verdict import TrialStop, exit_signal
from rlbench.run.verdict import verdict as _verdict

#: _verdict reads the plan only for a timeout or a memory stop, neither of which these trials had.
NO_PLAN = None
ITERATIONS = [{"event": "iteration", "iteration": i} for i in (1, 2, 3)]


def _trial(tmp_path: Path, events: list[dict]) -> TrialFolder:
    folder = TrialFolder(tmp_path / "t000r0")
    folder.path.mkdir(parents=True)
    folder.events_file.write_text("".join(json.dumps(e) + "\n" for e in events))
    return folder


def test_a_death_after_shutdown_keeps_the_trial_ok(tmp_path):
    trial = _trial(tmp_path, [{"event": "start"}, *ITERATIONS, {"event": "trained"}, {"event": "shutdown"}])
    status, reason = _verdict(NO_PLAN, trial, -signal.SIGSEGV, timed_out=False)
    assert status == "ok"
    assert reason == (
        f"{TEARDOWN_CRASH}: its process died (signal 11, SIGSEGV) after it had trained, after its "
        "runtime had shut down (shutdown_s recorded); all 3 iterations were recorded"
    )


def test_a_death_inside_the_teardown_keeps_the_trial_ok(tmp_path):
    """``trained`` written, ``shutdown`` not: it died inside ``algo.stop()`` or ``ray.shutdown()``."""
    trial = _trial(tmp_path, [{"event": "start"}, *ITERATIONS, {"event": "trained"}])
    status, reason = _verdict(NO_PLAN, trial, -signal.SIGABRT, timed_out=False)
    assert status == "ok"
    assert reason == (
        f"{TEARDOWN_CRASH}: its process died (signal 6, SIGABRT) after it had trained, while its "
        "framework and runtime shut down (shutdown_s unknown); all 3 iterations were recorded"
    )


def test_a_death_before_trained_fails_the_trial(tmp_path):
    trial = _trial(tmp_path, [{"event": "start"}, *ITERATIONS])
    status, reason = _verdict(NO_PLAN, trial, -signal.SIGSEGV, timed_out=False)
    assert status == "failed"
    assert reason.startswith("trial process died (signal 11, SIGSEGV) after 3 iterations")


def test_an_exit_without_end_in_the_teardown_is_said_as_an_exit(tmp_path):
    trial = _trial(tmp_path, [*ITERATIONS, {"event": "trained"}])
    assert _verdict(NO_PLAN, trial, 3, timed_out=False)[1].startswith(
        f"{TEARDOWN_CRASH}: its process exited (exit code 3) after it had trained"
    )


def test_a_teardown_killed_on_timeout_or_interrupt_keeps_the_trial_ok(tmp_path):
    """The sweep's own kill inside the teardown (a ``ray.shutdown()`` that hangs past the timeout or the
    interrupt's grace) ends a trial whose figures are all written: ok, saying so."""
    trial = _trial(tmp_path, [*ITERATIONS, {"event": "trained"}])
    plan = SimpleNamespace(timeout_s=300.0, ray_address=None)
    assert _verdict(plan, trial, -9, timed_out=True)[1].startswith(
        f"{TEARDOWN_CRASH}: it was killed after trial_timeout_s=300 s after it had trained, while"
    )
    assert _verdict(plan, trial, -9, timed_out=False, stop=TrialStop(interrupted=True))[1].startswith(
        f"{TEARDOWN_CRASH}: it was interrupted (Ctrl-C or SIGTERM) and killed after the grace period"
    )
    stopped = _trial(
        tmp_path / "b",
        [
            *ITERATIONS,
            {"event": "trained"},
            {"event": "shutdown"},
            {"event": "interrupted"},
            {"event": "end", "status": "interrupted"},
        ],
    )
    assert _verdict(plan, stopped, 1, timed_out=False, stop=TrialStop(interrupted=True)) == (
        "ok",
        f"{TEARDOWN_CRASH}: it was interrupted (Ctrl-C or SIGTERM) after it had trained, after its runtime "
        "had shut down (shutdown_s recorded); all 3 iterations were recorded",
    )


def test_a_timeout_or_interrupt_before_trained_is_what_it_was(tmp_path):
    trial = _trial(tmp_path, ITERATIONS)
    plan = SimpleNamespace(timeout_s=300.0, ray_address=None)
    assert _verdict(plan, trial, -9, timed_out=True)[0] == "timeout"
    assert _verdict(plan, trial, -9, timed_out=False, stop=TrialStop(interrupted=True))[0] == "interrupted"


def test_a_memory_kill_in_the_teardown_stays_failed(tmp_path):
    """The limit is the user's: crossing it fails the trial wherever it happened."""
    trial = _trial(tmp_path, [*ITERATIONS, {"event": "trained"}])
    plan = SimpleNamespace(timeout_s=300.0, ray_address=None, memory_limit_bytes=2**20)
    assert _verdict(plan, trial, -9, timed_out=False, stop=TrialStop(memory_bytes=2**21))[0] == "failed"


@pytest.mark.parametrize(
    ("node_events", "status"),
    [
        ([], "failed"),  # trained, but it died fetching its node samplers' rows: those are lost
        ([{"event": "node_sampling", "rows": 10}], "ok"),
        (
            [{"event": "node_sampling_error", "error": "RayActorError: gone"}],
            "ok",
        ),  # no rows to fetch, as in a clean end
    ],
)
def test_on_a_cluster_the_node_rows_must_be_fetched(tmp_path, node_events, status):
    trial = _trial(tmp_path, [*ITERATIONS, {"event": "trained"}, *node_events])
    plan = SimpleNamespace(timeout_s=300.0, ray_address="10.0.0.1:6379")
    assert _verdict(plan, trial, -signal.SIGSEGV, timed_out=False)[0] == status


def test_the_kernel_oom_kill_is_named_once(tmp_path):
    reason = _verdict(NO_PLAN, _trial(tmp_path, ITERATIONS), -signal.SIGKILL, timed_out=False)[1]
    assert reason.startswith("trial process died (signal 9, SIGKILL: the kernel's out-of-memory killer does this")


def test_an_error_stays_failed_whatever_the_exit(tmp_path):
    trial = _trial(tmp_path, [*ITERATIONS, {"event": "error", "error": "RuntimeError: boom"}, {"event": "shutdown"}])
    assert _verdict(NO_PLAN, trial, -signal.SIGSEGV, timed_out=False) == ("failed", "RuntimeError: boom")


def test_an_error_in_the_teardown_keeps_the_trial_ok_and_names_it(tmp_path):
    """``algo.stop()`` raising after ``trained``: the trial writes error and end (failed); its figures are complete."""
    trial = _trial(
        tmp_path,
        [
            *ITERATIONS,
            {"event": "trained"},
            {"event": "shutdown"},
            {"event": "error", "error": "RuntimeError: stop"},
            {"event": "end", "status": "failed"},
        ],
    )
    assert _verdict(NO_PLAN, trial, 1, timed_out=False) == (
        "ok",
        f"{TEARDOWN_CRASH}: it raised RuntimeError: stop after it had trained, after its runtime had shut down "
        "(shutdown_s recorded); all 3 iterations were recorded",
    )


def test_a_clean_end_is_ok_with_no_note(tmp_path):
    trial = _trial(
        tmp_path, [*ITERATIONS, {"event": "trained"}, {"event": "shutdown"}, {"event": "end", "status": "ok"}]
    )
    assert _verdict(NO_PLAN, trial, 0, timed_out=False) == ("ok", None)


def test_exit_signal_reads_the_negative_exit_code():
    assert exit_signal(-11) == 11
    assert exit_signal(0) is None and exit_signal(1) is None and exit_signal(None) is None
