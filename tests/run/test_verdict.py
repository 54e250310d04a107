"""A trial's verdict from its events and how its process ended (run/trial.py's _verdict), on
hand-written event files: a death after the runtime shut down keeps a trial ok, one before fails it."""

from __future__ import annotations

import json
import signal
from pathlib import Path

from rlbench.results.layout import TrialFolder
from rlbench.run.trial import _verdict, exit_signal

#: _verdict reads the plan only for a timeout or a memory stop, neither of which these trials had.
NO_PLAN = None
ITERATIONS = [{"event": "iteration", "iteration": i} for i in (1, 2, 3)]


def _trial(tmp_path: Path, events: list[dict]) -> TrialFolder:
    folder = TrialFolder(tmp_path / "t000r0")
    folder.path.mkdir()
    folder.events_file.write_text("".join(json.dumps(e) + "\n" for e in events))
    return folder


def test_a_death_after_shutdown_keeps_the_trial_ok(tmp_path):
    trial = _trial(tmp_path, [{"event": "start"}, *ITERATIONS, {"event": "trained"}, {"event": "shutdown"}])
    status, reason = _verdict(NO_PLAN, trial, -signal.SIGSEGV, timed_out=False)
    assert status == "ok"
    assert "signal 11" in reason and "all 3 iterations were recorded" in reason


def test_a_death_before_shutdown_fails_the_trial(tmp_path):
    trial = _trial(tmp_path, [{"event": "start"}, *ITERATIONS, {"event": "trained"}])
    status, reason = _verdict(NO_PLAN, trial, -signal.SIGSEGV, timed_out=False)
    assert status == "failed"
    assert reason.startswith("trial process died (signal 11) after 3 iterations")


def test_an_error_before_shutdown_stays_failed_whatever_the_exit(tmp_path):
    trial = _trial(tmp_path, [*ITERATIONS, {"event": "error", "error": "RuntimeError: boom"}, {"event": "shutdown"}])
    assert _verdict(NO_PLAN, trial, -signal.SIGSEGV, timed_out=False) == ("failed", "RuntimeError: boom")


def test_a_clean_end_is_ok_with_no_note(tmp_path):
    trial = _trial(tmp_path, [*ITERATIONS, {"event": "trained"}, {"event": "shutdown"}, {"event": "end", "status": "ok"}])
    assert _verdict(NO_PLAN, trial, 0, timed_out=False) == ("ok", None)


def test_exit_signal_reads_the_negative_exit_code():
    assert exit_signal(-11) == 11
    assert exit_signal(0) is None and exit_signal(1) is None and exit_signal(None) is None
