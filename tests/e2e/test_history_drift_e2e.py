"""``rlbench history`` over a drift (issue 60), end to end with no network: a package ``drifty`` written by the test in
four versions, each making every env step burn 15% more CPU time than the one before (1,000, 1,150, 1,323, 1,521 us:
envs.versioned), on the plain adapter (no Ray: a trial costs seconds). No adjacent step moves throughput by the
threshold (25%: each step is about 13%), so no step is flagged; the release against the first moves by 34% (1.521x
the cost): the cumulative comparison says so, with the paired rule's evidence in 6 rounds, and the command exits 1
(the last release slower over the whole series, issue 60).
The 6 rounds are read warm (``rounds_per_process: 3``, issue 56): 8 trial processes of 3 windows each, not 24
trials, each window a round (73 s against 96-132 s cold on 2 cores, 2026-11-29); the cold path is the versions
e2e's.

Why load cannot move the verdicts: the cost is CPU time, so a busy machine stretches both sides of a round alike, and
each verdict has about 9 points of margin either way (a step 13% against 25%, the drift 34% against 25%); two steady
iterations of 600 steps a trial (about 1.5 s of env) keep one trial's reading from being one scheduler's slice.
Measured 2026-11-29 at load 5 with one steady iteration of 200 steps: steps read 0.85, 0.89, 0.91, the drift 0.71
(0.62-0.87): a step that close to the threshold is why the window is longer now. At 12% a step and 20% (CI's
fresh-clone run beside a benchmark, load 5-8, 2026-11-29) the drift read 0.737 paired (0.62-0.92, p 0.031) but 0.731
unpaired with an interval of 0.55-1.005 (the rounds' readings swung with the load), so the one rule, which wants
every interval off 1, said no change: the drift is larger now, its unpaired interval further from 1."""

from __future__ import annotations

import json

import pytest
from conftest import run_cli
from wheels import write_wheel

pytestmark = pytest.mark.slow

COSTS = {"1.0.0": 1000, "1.1.0": 1150, "1.2.0": 1323, "1.3.0": 1521}

SPEC = """\
name: drift
framework: plain
environment:
  env: envs.versioned:VersionedCostEnv
  env_config: {cost_from: "drifty:step_cost_us", episode_len: 50}
env_runners: {num_env_runners: 0}
training: {train_batch_size_per_learner: 600}
stop: {iterations: 3}
warmup_iterations: 1
rounds_per_process: 3
env_ceiling_s: 0
"""


@pytest.fixture(scope="module")
def history(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("drift")
    for version, cost in COSTS.items():
        write_wheel(
            tmp / "wheels", "drifty", version, {"drifty/__init__.py": f"def step_cost_us():\n    return {cost}\n"}
        )
    (tmp / "drift.yaml").write_text(SPEC)
    out = tmp / "history"
    done = run_cli(
        "history",
        str(tmp / "drift.yaml"),
        "--package",
        "drifty",
        "--versions",
        ",".join(COSTS),
        "--index",
        str(tmp / "wheels"),
        "--threshold",
        "25%",
        "--out",
        str(out),
        env={"RLBENCH_ENV_CACHE": str(tmp / "envs")},
    )
    return done, out


def test_no_step_is_flagged_and_the_drift_is_found_against_the_first_release(history):
    done, out = history
    assert done.returncode == 1 and (out / "history.json").exists(), done.stdout[-4000:] + done.stderr[-4000:]
    data = json.loads((out / "history.json").read_text())
    (config,) = data["configurations"]
    steps = [s for s in config["steps"] if s["metric"] == "throughput"]
    assert not data["flagged"], data["flagged"]  # every adjacent step about 13%: under the 25% threshold
    assert len(steps) == 3 and all(s["verdict"] != "regressed" for s in steps), steps
    cumulative = {(c["before"], c["after"]): c for c in config["cumulative"] if c["metric"] == "throughput"}
    last = cumulative[("1.0.0", "1.3.0")]
    assert last["verdict"] == "regressed", last  # 1.521x the cost: about 34% slower, with evidence in 6 rounds
    assert "slower" in last["sentence"] and "6 rounds" in last["sentence"]
    assert "the whole series did" in done.stdout  # the terminal says the series moved where no step did
    assert "the last release is slower over the whole series: all 1." in " ".join(done.stdout.split())


def test_the_rounds_were_read_as_windows_of_two_processes_a_release(history):
    _, out = history
    data = json.loads((out / "history.json").read_text())
    (run,) = data["runs"]
    assert run["rounds"] == 6 and run["rounds_per_process"] == 3 and run["trials"] == 24 and run["ok"] == 24
    assert run["processes"] == 8
    assert len(list((out / "runs" / "01-history" / "trials").iterdir())) == 8  # 4 releases x 2 processes
    assert "Rounds were read warm" in (out / "history.html").read_text()
