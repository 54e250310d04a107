"""Variants end to end, on the plain adapter (no Ray, about a second a trial): a sweep with three
variants in six rounds, through the real CLI. Known answers that hold however busy the machine is:
variant B's env burns 4x A's CPU time per step (envs.synthetic burns thread CPU time, not wall
time), so B is slower in every round. C is A again: it is compared and reported, but its verdict is
not asserted here, since at the 95% level a twin is still called different in about 2 sweeps in 100
(docs/ANALYSIS.md, "Variants") and a busy machine's drift adds to that; "a twin gets no evidence" is
tested on fixed readings in tests/analysis/test_variant_comparison.py."""

from __future__ import annotations

import json
import os
import re
import shutil

import pandas as pd
import pytest
from conftest import run_cli

pytestmark = pytest.mark.slow

SPEC = """\
name: ab
framework: plain
environment:
  env: envs.synthetic:SyntheticEnv
  env_config: {step_cost_us: 100, episode_len: 50}
env_runners: {num_env_runners: 0}
training: {train_batch_size_per_learner: 200}
stop: {iterations: 2}
warmup_iterations: 1
env_ceiling_s: 0
variants:
  - name: A
  - name: B
    set: {env_config.step_cost_us: 400}
  - name: C
rounds: 6
"""


@pytest.fixture(scope="module")
def sweep(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("variants")
    (tmp / "ab.yaml").write_text(SPEC)
    out = tmp / "out"
    done = run_cli("sweep", str(tmp / "ab.yaml"), "--out", str(out))
    assert done.returncode == 0, done.stdout + done.stderr
    return out


def test_every_variant_runs_once_per_round_in_rotating_order(sweep):
    trials = pd.read_parquet(sweep / "trials.parquet")
    assert len(trials) == 18 and set(trials["status"]) == {"ok"}
    assert sorted(zip(trials["round"], trials["variant"])) == sorted((r, v) for r in range(6) for v in "ABC")
    started = {
        t: json.loads((sweep / "trials" / t / "record.json").read_text())["started_epoch"] for t in trials["trial_id"]
    }
    trials["started"] = trials["trial_id"].map(started)
    for r, group in trials.sort_values("started").groupby("round"):
        expected = ["A", "B", "C"][r % 3 :] + ["A", "B", "C"][: r % 3]  # round r starts at variant r mod 3
        assert list(group["variant"]) == expected, r
    # rounds ran one after another: every trial of round r started before any of round r + 1
    by_round = trials.groupby("round")["started"]
    assert all(by_round.max()[r] < by_round.min()[r + 1] for r in range(5))
    plan = json.loads((sweep / "trials" / "t001r2" / "plan.json").read_text())
    assert (
        plan["variant"] == "B"
        and plan["round"] == 2
        and plan["config"]["environment"]["env_config"] == {"step_cost_us": 400, "episode_len": 50}
    )


def test_the_report_says_b_is_slower_and_nothing_of_c(sweep):
    text = (sweep / "report.md").read_text()
    assert "## Variants" in text
    slower = re.search(
        r"B is (\d+\.\d)% slower than A \(6 rounds; paired ratio (\d\.\d+), 95% CI (\d\.\d+)-(\d\.\d+)", text
    )
    assert slower, text
    assert float(slower.group(4)) < 1  # the whole interval below 1 (the ratio itself, ~0.25-0.3, moves with load)
    assert re.search(r"C against A\*\*: .*\(6 rounds; paired ratio \d\.\d+, 95% CI", text), text


def test_compare_dir_compares_the_variants(sweep, tmp_path):
    done = run_cli("compare", str(sweep), "--out", str(tmp_path))
    assert done.returncode == 1, done.stdout + done.stderr  # B is slower than A by more than 5%
    text = " ".join(done.stdout.split())
    assert "B is " in text and "% slower than A (6 rounds;" in text
    table = pd.read_csv(tmp_path / "compare.csv")
    assert list(table["b"]) == ["B", "C"] and list(table["a"]) == ["A", "A"] and set(table["design"]) == {"paired"}
    assert table.loc[0, "paired_ci_high"] < 1 and table.loc[0, "ci_high"] < 1 and table.loc[0, "verdict"] == "regressed"
    # C (A's twin): compared with intervals, its verdict left to the fixed-readings unit tests (module docstring)
    assert table.loc[1, ["ci_low", "ci_high", "paired_ci_low", "paired_ci_high"]].notna().all()


def test_compare_dir_without_variants_is_bad_input(tmp_path):
    from conftest import REPO

    folder = shutil.copytree(REPO / "tests" / "data" / "results-format-2", tmp_path / "f2")
    done = run_cli("compare", str(folder))
    assert done.returncode == 2, done.stdout + done.stderr
    assert "holds no sweep with two or more variants: give a second result folder" in " ".join(done.stdout.split())
    assert not (folder / "compare.csv").exists()


SCRIPT_SPEC = """\
name: exec
framework: plain
environment:
  env: envs.synthetic:SyntheticEnv
  env_config: {step_cost_us: 10}
env_runners: {num_env_runners: 0}
training: {train_batch_size_per_learner: 100}
stop: {iterations: 2}
warmup_iterations: 1
env_ceiling_s: 0
variants:
  - name: tune
  - name: script
    set: {execution: script}
"""


def test_execution_script_leaves_the_thread_pools_as_a_plain_loop_has_them(tmp_path):
    (tmp_path / "exec.yaml").write_text(SCRIPT_SPEC)
    out = tmp_path / "out"
    done = run_cli("sweep", str(tmp_path / "exec.yaml"), "--out", str(out))
    assert done.returncode == 0, done.stdout + done.stderr
    trials = pd.read_parquet(out / "trials.parquet").set_index("variant")
    assert trials.loc["tune", "execution"] == "tune" and trials.loc["script", "execution"] == "script"

    def build(variant: str) -> dict:
        lines = (out / "trials" / trials.loc[variant, "trial_id"] / "events.jsonl").read_text().splitlines()
        return next(e for e in map(json.loads, lines) if e["event"] == "build")

    assert set(build("tune")["thread_pools"].values()) <= {1}  # limited to num_cpus_for_main_process, as Tune's actor
    if len(os.sched_getaffinity(0)) > 1 and build("script")["thread_pools"]:
        assert max(build("script")["thread_pools"].values()) > 1  # the library's own default: a thread per core
    plan = json.loads((out / "trials" / trials.loc["script", "trial_id"] / "plan.json").read_text())
    assert any(d.startswith("execution: script") for d in plan["differs_from_tune"])
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["execution"] == ["script", "tune"]
    assert any(d.startswith("execution: script") for d in manifest["differs_from_tune"])
