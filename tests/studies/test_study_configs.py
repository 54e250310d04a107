"""The study configs: every shipped config validates, and tiny versions of the forum and actor
studies run for real and their report answers the question."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest
import yaml
from conftest import REPO, run_cli, trial_processes_alive

from rlbench.spec.load import load_spec

CONFIGS = sorted((REPO / "configs").glob("*.yaml"))


@pytest.mark.parametrize("config", CONFIGS, ids=[c.stem for c in CONFIGS])
def test_every_shipped_config_validates(config):
    loaded = load_spec(config)
    assert loaded.points, config


def _tiny(config: str, tmp_path: Path, grid: dict) -> Path:
    """The shipped study config with a tiny budget: same env, knobs and axis, two grid values."""
    spec = yaml.safe_load((REPO / "configs" / config).read_text())
    spec["environment"]["env_config"].update(step_cost_us=20, episode_len=20)
    spec["training"] = {"train_batch_size_per_learner": 200, "minibatch_size": 100, "num_epochs": 1}
    spec["rl_module"] = {"fcnet_hiddens": [16]}
    spec.update(grid=grid, repeats=1, stop={"iterations": 3}, warmup_iterations=1, env_ceiling_s=0.2,
                trial_timeout_s=120)
    path = tmp_path / config
    path.write_text(yaml.safe_dump(spec))
    return path


@pytest.mark.slow
def test_tiny_forum_study_answers_in_words(tmp_path):
    spec = _tiny("forum_learner_threads.yaml", tmp_path, {"driver_torch_threads": [1, 2]})
    out = tmp_path / "forum"
    done = run_cli("sweep", str(spec), "--out", str(out))
    assert done.returncode == 0, done.stdout + done.stderr
    trials = pd.read_parquet(out / "trials.parquet")
    assert list(trials["driver_torch_threads"]) == [1, 2]  # the threads the driver reported back
    assert (trials["num_env_runners"] == 1).all() and (trials["status"] == "ok").all()
    report = (out / "report.md").read_text()
    assert "## What more learner CPUs bought" in report
    assert "driver_torch_threads 1 -> 2" in report
    assert "torch threads in the driver, which holds the learner: 1 -> 2" in report
    assert "cores busy" in report
    assert trial_processes_alive(out) == []


@pytest.mark.slow
def test_tiny_actor_sweep_reports_scaling_and_sampling_efficiency(tmp_path):
    spec = _tiny("actor_sweep.yaml", tmp_path, {"num_env_runners": [1, 2]})
    out = tmp_path / "actors"
    done = run_cli("sweep", str(spec), "--out", str(out))
    assert done.returncode == 0, done.stdout + done.stderr
    trials = pd.read_parquet(out / "trials.parquet")
    assert list(trials["num_env_runners"]) == [1, 2]
    assert (trials["sampling_efficiency"] > 0).all()
    # each trial's ceiling was measured with as many env processes as it has runners, on its cpus (how
    # much faster 2 are than 1 is a timing figure: a busy machine can take the second core away)
    ceilings = json.loads((out / "env_ceilings.json").read_text())
    assert sorted(c["procs"] for c in ceilings.values()) == [1, 2]
    assert all(c["steps"] > 0 and c["cpu_s"] > 0 for c in ceilings.values())
    assert trials["env_ceiling_steps_per_s"].notna().all()
    report = (out / "report.md").read_text()
    assert "### num_env_runners" in report and "knee" in report
    assert trial_processes_alive(out) == []
