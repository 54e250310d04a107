"""rlbench autoconfig for real, through the CLI, on the plain adapter (no Ray: about a second a trial).

The known answer: SyntheticEnv burns ``step_cost_us`` of CPU per step, so with everything else
equal the cheapest step cost steps fastest, by far (0 us against 1000 and 5000). autoconfig must
name it, within its budget + 10%, write every output, and a resumed run must not run a finished
trial again.

Every phase runs whatever the load: the cost model drops 5000 us (a fifth of the baseline's rate by its env step alone),
the baseline is protected from the model, so two configurations are left, more than the one
finalist, and rung 0 (2 x 3 trials) is sized with the spec's cold start before any is measured.
An earlier grid had 2 us beside 0 us with two finalists: the model predicts 2 us at 37-55% of
0 us from env ceilings measured for 0.3 s, so on a loaded machine it dropped 2 us untried (3 of 4
runs with two cores kept busy), two were left, the search ran nothing and the test failed. 200 us then failed the
same way once at load 9 (the model, its per-iteration cost inflated by the load, kept it): 5000 us is dropped at
any load (its env step alone is 5x the baseline's).
"""

from __future__ import annotations

import json
import shutil
import signal
import subprocess
import sys
import time

import pandas as pd
import psutil
import pytest
import yaml
from conftest import REPO, run_cli

SPEC = """\
name: ac_known
framework: plain
environment:
  env: envs.synthetic:SyntheticEnv
  env_config: {{episode_len: 50}}
env_runners: {{num_env_runners: 0}}
training: {{train_batch_size_per_learner: 200}}
cpus: 1
grid:
  env_config.step_cost_us: [1000, 5000, 0]
stop: {{seconds: 1}}
warmup_iterations: 1
sample_hz: 5
env_ceiling_s: 0.3
autoconfig:
  trial_s: {trial_s}
  cold_start_s: 0.5
  baseline: {{env_config.step_cost_us: 1000}}
  finalists: 1
  min_rounds: 3
  max_rounds: 3
"""
#: Twice what the run needs on a quiet machine (13 trials, about 25 s): the work is bounded by the spec (one
#: finalist, 3 race rounds), not by the budget, so the budget's assertions hold with two cores kept busy (the
#: run took 53-80 s then; at 60 s it ended over budget + 10% once, 80 s).
BUDGET_S = 120


def write_spec(path, trial_s=0.4):
    path.write_text(SPEC.format(trial_s=trial_s))
    return path


@pytest.fixture(scope="module")
def known(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("autoconfig")
    spec, out = write_spec(tmp / "ac.yaml"), tmp / "out"
    t = time.monotonic()
    done = run_cli("autoconfig", str(spec), "--budget", f"{BUDGET_S}s", "--out", str(out), timeout=300)
    return spec, out, done, time.monotonic() - t


def test_names_the_known_best_within_its_budget(known):
    _, out, done, wall = known
    assert done.returncode == 0, done.stdout + done.stderr
    answer = json.loads((out / "autoconfig.json").read_text())
    best = answer["best"]["axes"]["env_config.step_cost_us"]
    same = [s["axes"]["env_config.step_cost_us"] for s in answer["indistinguishable"]]
    assert best == 0 or 0 in same, answer
    assert answer["speedup"]["ratio"] > 1.5 and answer["speedup"]["ci_low"] > 1.0
    # each env_config's env step was probed: 5000 us a step cannot win against 0 and is dropped untried
    assert {e["key"]: e["reason"] for e in answer["eliminations"]}.get("env_config.step_cost_us=5000") == "model"
    assert wall <= BUDGET_S * 1.1 + 5  # +5: the interpreter's own start, outside the command's clock
    assert answer["wall_s"] <= BUDGET_S * 1.1
    assert "winner: env_config.step_cost_us=0" in done.stdout and "rlbench sweep" in done.stdout
    assert "best.yaml" in done.stdout


def test_writes_every_output_and_the_columns(known):
    _, out, _, _ = known
    for name in (
        "trials.parquet",
        "iterations.parquet",
        "summary.csv",
        "autoconfig.json",
        "best.yaml",
        "report.html",
        "report.md",
        "autoconfig_state.json",
    ):
        assert (out / name).is_file(), name
    assert not list(out.glob("*.py"))  # the plain adapter has no code to paste: no rllib_config.py (issue 35)
    trials = pd.read_parquet(out / "trials.parquet")
    assert set(trials["phase"]) == {"probe", "search", "race"}
    assert trials["rung"].notna().sum() == (trials["phase"] == "search").sum()
    assert trials["round"].notna().sum() == (trials["phase"] == "race").sum()
    assert (trials["status"] == "ok").all()
    best = yaml.safe_load((out / "best.yaml").read_text())
    assert best["grid"] == {"env_config.step_cost_us": [1000, 0]}
    md = (out / "report.md").read_text()
    for heading in (
        "## Autoconfig",
        "### Search path",
        "### Predicted against measured",
        "### CPUs against throughput: the Pareto front",
    ):
        assert heading in md, heading


def test_a_resume_runs_no_finished_trial_again(known, tmp_path):
    spec, out, _, _ = known
    copy = tmp_path / "out"
    shutil.copytree(out, copy)
    state = json.loads((copy / "autoconfig_state.json").read_text())
    last = list(state["trials"].values())[-1]["trial_id"]  # as if the run died during its last trial
    (copy / "trials" / last / "record.json").unlink()
    for name in ("autoconfig.json", "best.yaml"):
        (copy / name).unlink()
    kept = {p.parent.name: p.stat().st_mtime_ns for p in (copy / "trials").glob("*/record.json")}
    done = run_cli("autoconfig", str(spec), "--budget", f"{BUDGET_S}s", "--out", str(copy), "--resume", timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "(1 run now)" in done.stdout, done.stdout
    after = {p.parent.name: p.stat().st_mtime_ns for p in (copy / "trials").glob("*/record.json")}
    assert {k: after[k] for k in kept} == kept  # not one finished trial touched
    assert set(after) - set(kept) == {last}
    assert (copy / "attempts" / last).is_dir()
    assert json.loads((copy / "autoconfig.json").read_text())["best"] is not None


def _state_has(key):
    def ready(out):
        try:
            return key in json.loads((out / "autoconfig_state.json").read_text())["decided"]
        except (OSError, ValueError):  # not written yet, or being replaced
            return False

    return ready


#: When the signal is sent: the moment a file shows the run has reached a point, whatever the load; each of
#: Ctrl-C, SIGTERM and SIGHUP at least once (sweep, history, bisect: tests/e2e/test_interrupts_e2e.py).
STOP_POINTS = {
    "folder taken": ((lambda out: (out / "manifest.json").exists()), signal.SIGTERM),
    "probe running": ((lambda out: any((out / "trials").glob("*/events.jsonl"))), signal.SIGINT),
    "probe done": (_state_has("probes"), signal.SIGHUP),
    "race started": (_state_has("race"), signal.SIGTERM),
}


def _default_signals() -> None:
    """SIGINT and SIGHUP as a terminal's foreground job has them (a test run started with ``&`` or nohup
    passes them on ignored, and rlbench leaves a signal ignored at start alone)."""
    for sig in (signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, signal.SIG_DFL)


@pytest.mark.parametrize("point", list(STOP_POINTS))
def test_a_signal_at_any_point_exits_130_with_the_resume_line_no_traceback_and_no_process_left(tmp_path, point):
    spec, out = write_spec(tmp_path / "ac.yaml"), tmp_path / "out"
    reached, sig = STOP_POINTS[point]
    proc = subprocess.Popen(
        [sys.executable, "-m", "rlbench", "autoconfig", str(spec), "--budget", f"{BUDGET_S}s", "--out", str(out)],
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=_default_signals,
    )
    deadline = time.monotonic() + 240
    while not reached(out) and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.005)
    assert proc.poll() is None, "the run ended before the point: " + "".join(proc.communicate())
    children = psutil.Process(proc.pid).children(recursive=True)
    proc.send_signal(sig)
    text, errors = proc.communicate(timeout=240)
    assert proc.returncode == 130, text + errors
    assert "--resume" in text and f"--out {out}" in text, text
    assert "Traceback" not in errors and "Exception" not in errors, errors  # issue 39: the fork server's stop
    _, alive = psutil.wait_procs(children, timeout=30)
    assert not alive, alive


def test_a_spec_with_no_grid_is_walked_from_its_configuration(tmp_path):
    """No grid: the walk (issue 50). The plain adapter steps the env alone and measures no runner split and no
    learner, so after the start's reading (issue 57: one, step 1's race would take it as its first round's) it
    stops: at its ceiling (the env's own rate, where the sampler's ceiling is computed), or because no verdict names
    a knob; the endpoint is the start, every output is written, and a resume of the finished run runs nothing
    again."""
    spec = tmp_path / "walk.yaml"
    spec.write_text(
        SPEC.format(trial_s=0.4)
        .replace("grid:\n  env_config.step_cost_us: [1000, 5000, 0]\n", "")
        .replace("  baseline: {env_config.step_cost_us: 1000}\n", "")
    )
    out = tmp_path / "out"
    done = run_cli("autoconfig", str(spec), "--budget", "60s", "--out", str(out), timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    data = json.loads((out / "autoconfig.json").read_text())
    assert data["mode"] == "walk" and data["stop_reason"] in ("ceiling", "no_knob") and data["path"] == []
    assert data["best"]["key"] == data["baseline"]["key"] == "base" and data["best"]["n"] == 1
    assert [p["step"] for p in data["walk_points"]] == [0] and data["probe_trials"] == 1
    trials = pd.read_parquet(out / "trials.parquet")
    assert set(trials["phase"]) == {"walk"} and sorted(trials["round"]) == [0] and set(trials["rung"]) == {0}
    assert f"walk stopped: {data['stop_text']}" in done.stdout and "endpoint: base: no move" in done.stdout
    assert "## Autoconfig: the walk" in (out / "report.md").read_text()
    again = run_cli("autoconfig", str(spec), "--budget", "60s", "--out", str(out), "--resume", timeout=300)
    assert again.returncode == 0 and "(0 run now)" in again.stdout, again.stdout + again.stderr


def test_a_warm_walk_reads_its_start_as_a_window_and_its_verdict_while_the_trial_stays_built(tmp_path):
    """Issue 56: ``warm_windows`` makes each walk reading a window of a kept trial; the start's trial is launched for
    its first window, and its verdict row is read from a copy of the folder in which it has ended (its record and
    utilization written there), while it stays built for the next step's race; here the walk stops at the start, and
    the trial ends with the run (its stop gate), its own record the final one. The evidence and autoconfig.json say
    how the readings were taken."""
    spec = tmp_path / "walk.yaml"
    spec.write_text(
        SPEC.format(trial_s=0.4)
        .replace("grid:\n  env_config.step_cost_us: [1000, 5000, 0]\n", "")
        .replace("  baseline: {env_config.step_cost_us: 1000}\n", "  warm_windows: 3\n")
    )
    out = tmp_path / "out"
    done = run_cli("autoconfig", str(spec), "--budget", "60s", "--out", str(out), timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    data = json.loads((out / "autoconfig.json").read_text())
    assert data["warm_windows"] == 3 and "a window of a warm trial" in data["evidence"]
    assert data["best"]["key"] == "base" and data["best"]["n"] == 1
    its = pd.read_parquet(out / "iterations.parquet")
    assert set(its["window"]) == {0} and its["warmup"].sum() == 1  # one window read, its warm-up inside it
    trial = out / "trials" / "t000r0"
    assert (trial / "window-0").exists() and (trial / "window-stop").exists()  # ended with the run, by its stop gate
    record = json.loads((trial / "record.json").read_text())
    assert record["status"] == "ok" and record["reason"] is None  # the final record, not the copy's (KEPT_REASON)
    assert data["walk_points"][0]["verdict"]  # the start's verdict row was read (from the copy)
    assert pd.read_parquet(out / "trials.parquet")["status"].tolist() == ["ok"]
    again = run_cli("autoconfig", str(spec), "--budget", "60s", "--out", str(out), "--resume", timeout=300)
    assert again.returncode == 0 and "(0 run now)" in again.stdout, again.stdout + again.stderr


def test_a_row_is_read_from_a_copy_with_its_kept_trial_and_every_other_points_trial_ends(monkeypatch, tmp_path):
    """Issue 56: as the walk plans a step from point b, the kept trials of the last step's other entrants (a, c)
    end; b's own, still kept, stays, and b's row is read from a copy of the folder holding its snapshot, which is
    gone afterwards (no Ray, no trial: the batches are a stand-in that records what it was asked)."""
    from types import SimpleNamespace

    from rlbench.results.layout import ResultsFolder
    from rlbench.run.autoconfig_driver import driver as module

    class Batches:
        def __init__(self):
            self.retired, self.snapped = [], []

        def holds(self, tid):
            return tid == "t001r0"

        def retire(self, *tids):
            self.retired.append(tids)

        def snapshot(self, tid, into):
            into.path.mkdir(parents=True)
            self.snapped.append((tid, into.path))

    run = object.__new__(module.Driver)
    run._warm = {"a": "t000r0", "b": "t001r0", "c": "t002r0"}
    run.batches, run.folder = Batches(), ResultsFolder(tmp_path / "out")
    (tmp_path / "out" / "trials").mkdir(parents=True)
    run.setup = SimpleNamespace(templates={"b": SimpleNamespace(index=1)})
    read = []
    monkeypatch.setattr(module, "configuration_rows", lambda path: read.append(path) or pd.DataFrame({"index": [1]}))
    assert run.row("b") == {"index": 1}
    assert run.batches.retired == [("t000r0", "t002r0")] and run._warm == {"b": "t001r0"}  # together, in one call
    (tid, into), copy = run.batches.snapped[0], read[0]
    assert tid == "t001r0" and into == copy / "trials" / "t001r0" and copy != run.folder.path
    assert not copy.exists()  # the copy is removed once its row is read
