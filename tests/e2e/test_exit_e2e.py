"""How a trial process ends, for real (RLlib, Ray): a SIGSEGV during training fails the trial; one inside
``ray.shutdown()``, after ``trained`` (as Ray's C++ threads crash now and then while Ray tears down), leaves
it ok, its signal recorded and said; an env that raises fails the trial with the env's own words, out of
RLlib's wrapping. The same rule on the plain adapter (no Ray, a trial in about a second), in every window:
during training, in the framework's teardown, after ``shutdown``, after ``end``. The faults fire at an env
step count and at a state of the runtime (envs/faulty.py), never after some time, so load cannot move them."""

from __future__ import annotations

import json
import signal
import subprocess
from pathlib import Path

import pandas as pd
import pytest
from conftest import run_cli, trial_processes_alive

from rlbench.results.events_file import BuildEvent
from rlbench.results.layout import TrialFolder
from rlbench.results.records import TEARDOWN_CRASH

pytestmark = pytest.mark.slow

SPEC = """\
name: exits
environment:
  env: envs.faulty:FaultyEnv
  env_config: {at_step: 200}
env_runners: {num_env_runners: 0}
training: {train_batch_size_per_learner: 128, minibatch_size: 64, num_epochs: 1}
rl_module: {fcnet_hiddens: [8]}
cpus: 2
grid: {env_config.fault: [segv, segv_in_shutdown, raise]}
stop: {iterations: 3}
warmup_iterations: 1
env_ceiling_s: 0
trial_timeout_s: 300
"""


def sweep_of(tmp: Path, spec: str) -> tuple[Path, subprocess.CompletedProcess]:
    """Run ``spec`` in ``tmp`` with ``tmp/home`` as HOME (RLlib's ~/ray_results lands there); (its folder, the run)."""
    (tmp / "spec.yaml").write_text(spec)
    (tmp / "home").mkdir()
    return tmp / "out", run_cli(
        "sweep", str(tmp / "spec.yaml"), "--out", str(tmp / "out"), env={"HOME": str(tmp / "home")}
    )


@pytest.fixture(scope="module")
def exits(tmp_path_factory):
    return sweep_of(tmp_path_factory.mktemp("exits"), SPEC)


def _events(out: Path, trial_id: str) -> list[str]:
    return [json.loads(line)["event"] for line in (out / "trials" / trial_id / "events.jsonl").read_text().splitlines()]


def test_a_crash_in_training_fails_and_one_inside_ray_shutdown_keeps_ok(exits):
    out, done = exits
    assert done.returncode == 1, done.stdout + done.stderr  # the crash during training is a failed trial
    trials = pd.read_parquet(out / "trials.parquet").set_index("trial_id")
    # at_step 200 with 128-step iterations: the segv fires in iteration 2, so 1 iteration was recorded
    assert trials.loc["t000r0", "status"] == "failed"
    assert trials.loc["t000r0", "reason"].startswith("trial process died (signal 11, SIGSEGV) after 1 iterations")
    assert trials.loc["t000r0", "exit_signal"] == signal.SIGSEGV
    assert "trained" not in _events(out, "t000r0")
    # the hook set in iteration 2 fires as Ray marks the driver disconnected inside ray.shutdown()
    assert trials.loc["t001r0", "status"] == "ok"
    assert trials.loc["t001r0", "exit_signal"] == signal.SIGSEGV
    assert trials.loc["t001r0", "reason"] == (
        f"{TEARDOWN_CRASH}: its process died (signal 11, SIGSEGV) after it had trained, while its framework and "
        "runtime shut down (shutdown_s unknown); all 3 iterations were recorded"
    )
    assert _events(out, "t001r0")[-1] == "trained" and pd.isna(trials.loc["t001r0", "shutdown_s"])
    assert trials.loc["t001r0", "iterations"] == 3 and trials.loc["t001r0", "env_steps_per_s"] > 0


def test_the_teardown_crash_is_said_in_the_terminal_and_the_report(exits):
    out, done = exits
    text = " ".join(done.stdout.split())
    assert f"t001r0 ok: {TEARDOWN_CRASH}: its process died (signal 11, SIGSEGV)" in text, done.stdout
    assert "1 ok, 0 skipped, 2 failed" in text
    report = " ".join((out / "report.md").read_text().split())
    assert "1 trial ended in its teardown, after training: t001r0 (signal 11, SIGSEGV)." in report


def test_an_env_that_raises_fails_its_trial_with_its_own_words(exits):
    """RLlib hands the env runner's exception to the driver wrapped in its own error types; the reason
    is the env's exception, as the plain adapter (tests/e2e/test_faults_e2e.py) gives it unwrapped."""
    out, _ = exits
    trials = pd.read_parquet(out / "trials.parquet").set_index("trial_id")
    assert trials.loc["t002r0", "status"] == "failed" and trials.loc["t002r0", "iterations"] == 1
    assert trials.loc["t002r0", "reason"].startswith("RuntimeError: FaultyEnv: injected failure at step 200")
    assert pd.isna(trials.loc["t002r0", "exit_signal"])


def test_each_record_holds_the_signal(exits):
    """record.json keeps the exit code and the signal (a healthy trial's 0 and null: tests/e2e/test_e2e_sweep.py)."""
    out, _ = exits
    for trial_id in ("t000r0", "t001r0"):
        record = json.loads((out / "trials" / trial_id / "record.json").read_text())
        assert record["exit_code"] == -signal.SIGSEGV and record["exit_signal"] == signal.SIGSEGV


def test_nothing_of_the_crashed_trials_is_left(exits):
    out, _ = exits
    assert trial_processes_alive(out) == []


def test_crashed_trials_leave_no_log_folder(exits):
    """RLlib makes an empty ~/ray_results folder per algorithm built outside Tune; a trial that crashed
    never stopped its algorithm, so the sweep removes it (each full test run left about 4 before)."""
    out, _ = exits
    builds = [TrialFolder(out / "trials" / t).event(BuildEvent) for t in ("t000r0", "t001r0", "t002r0")]
    made = [b.log_dir if b else None for b in builds]
    assert all(m and m.startswith(str(out.parent / "home" / "ray_results")) for m in made), made
    assert list((out.parent / "home" / "ray_results").iterdir()) == []


# ---------------------------------------------------------------------------------------------
# The same rule on the plain adapter, in every window (no Ray: the file's Ray group does not wait for it)

PLAIN_SPEC = """\
name: plain_exits
framework: plain
environment:
  env: envs.faulty:FaultyEnv
  env_config: {at_step: 200}
env_runners: {num_env_runners: 0}
training: {train_batch_size_per_learner: 128}
cpus: 1
grid: {env_config.fault: [segv, segv_in_close, segv_after_shutdown, segv_after_end]}
stop: {iterations: 3}
warmup_iterations: 1
env_ceiling_s: 0
sample_hz: 5
trial_timeout_s: 120
"""


@pytest.fixture(scope="module")
def plain_exits(tmp_path_factory):
    return sweep_of(tmp_path_factory.mktemp("plain_exits"), PLAIN_SPEC)


@pytest.mark.no_ray
def test_plain_each_window_gets_its_verdict(plain_exits):
    """Before ``trained``: failed. In the framework's teardown (its env's close) or after ``shutdown``: ok,
    with the teardown note. After ``end``: ok as the trial recorded it, its signal kept in the record."""
    out, done = plain_exits
    assert done.returncode == 1, done.stdout + done.stderr
    trials = pd.read_parquet(out / "trials.parquet").set_index("trial_id")
    assert list(trials["status"]) == ["failed", "ok", "ok", "ok"]
    assert list(trials["exit_signal"]) == [signal.SIGSEGV] * 4
    assert trials.loc["t000r0", "reason"].startswith("trial process died (signal 11, SIGSEGV) after 1 iterations")
    assert trials.loc["t001r0", "reason"].startswith(
        f"{TEARDOWN_CRASH}: its process died (signal 11, SIGSEGV) after it had trained, while its framework and "
        "runtime shut down (shutdown_s unknown)"
    )
    assert pd.isna(trials.loc["t001r0", "shutdown_s"])
    assert trials.loc["t002r0", "reason"].startswith(
        f"{TEARDOWN_CRASH}: its process died (signal 11, SIGSEGV) after it had trained, after its runtime had shut "
        "down (shutdown_s recorded)"
    )
    assert trials.loc["t002r0", "shutdown_s"] >= 0
    assert pd.isna(trials.loc["t003r0", "reason"]) and _events(out, "t003r0")[-1] == "end"
    assert list(trials["iterations"]) == [1, 3, 3, 3]
    text = " ".join(done.stdout.split())
    for trial_id in ("t001r0", "t002r0"):
        assert f"{trial_id} ok: {TEARDOWN_CRASH}: its process died (signal 11, SIGSEGV)" in text, done.stdout
    report = " ".join((out / "report.md").read_text().split())
    assert (
        "2 trials ended in their teardown, after training: t001r0 (signal 11, SIGSEGV), t002r0 (signal 11, SIGSEGV)."
        in report
    )


@pytest.mark.no_ray
def test_plain_crashed_trials_leave_nothing(plain_exits):
    out, _ = plain_exits
    assert trial_processes_alive(out) == []
