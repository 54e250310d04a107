"""How a trial process ends, for real (RLlib, Ray): a SIGSEGV before the runtime shut down fails the
trial; one after it (the crash CI met in Ray's C++ threads at interpreter exit) leaves it ok, with
its signal recorded; an env that raises fails the trial with the env's own words, out of RLlib's
wrapping. The faults fire at an env step count (envs/faulty.py), not after some time."""

from __future__ import annotations

import json
import signal
from pathlib import Path

import pandas as pd
import pytest
from conftest import run_cli, trial_processes_alive

from rlbench.results.layout import TrialFolder

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
grid: {env_config.fault: [segv, segv_after_shutdown, raise]}
stop: {iterations: 3}
warmup_iterations: 1
env_ceiling_s: 0
trial_timeout_s: 300
"""


@pytest.fixture(scope="module")
def exits(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("exits")
    (tmp / "exits.yaml").write_text(SPEC)
    out = tmp / "out"
    (tmp / "home").mkdir()
    done = run_cli("sweep", str(tmp / "exits.yaml"), "--out", str(out), env={"HOME": str(tmp / "home")})
    return out, done


def _events(out: Path, trial_id: str) -> list[str]:
    return [json.loads(line)["event"] for line in (out / "trials" / trial_id / "events.jsonl").read_text().splitlines()]


def test_a_crash_before_shutdown_fails_and_one_after_keeps_ok(exits):
    out, done = exits
    assert done.returncode == 1, done.stdout + done.stderr  # the crash before shutdown is a failed trial
    trials = pd.read_parquet(out / "trials.parquet").set_index("trial_id")
    # at_step 200 with 128-step iterations: the segv fires in iteration 2, so 1 iteration was recorded
    assert trials.loc["t000r0", "status"] == "failed"
    assert trials.loc["t000r0", "reason"].startswith("trial process died (signal 11) after 1 iterations")
    assert trials.loc["t000r0", "exit_signal"] == signal.SIGSEGV
    assert "shutdown" not in _events(out, "t000r0")
    # the hook set in iteration 2 fires when the trial writes its end event: all 3 iterations, then shutdown
    assert trials.loc["t001r0", "status"] == "ok"
    assert trials.loc["t001r0", "exit_signal"] == signal.SIGSEGV
    assert "all 3 iterations were recorded" in trials.loc["t001r0", "reason"]
    assert _events(out, "t001r0")[-2:] == ["trained", "shutdown"]
    assert trials.loc["t001r0", "iterations"] == 3


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
    made = [TrialFolder(out / "trials" / t).event("build").get("log_dir") for t in ("t000r0", "t001r0", "t002r0")]
    assert all(m and m.startswith(str(out.parent / "home" / "ray_results")) for m in made), made
    assert list((out.parent / "home" / "ray_results").iterdir()) == []
