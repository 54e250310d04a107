"""The study configs: every shipped config validates, and tiny versions of the forum and actor
studies run for real and their report answers the question."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest
import yaml
from conftest import REPO, run_cli, trial_processes_alive

from rlbench.autoconfig.section import AutoconfigSection
from rlbench.measure.machine import MachineInfo
from rlbench.planning.plan import plan_trials
from rlbench.spec.load import load_spec, spec_from_dict

TWO_CORES = MachineInfo(
    hostname="test",
    cpu_model="fake",
    logical_cores=2,
    physical_cores=2,
    usable_cores=[0, 1],
    memory_bytes=2**34,
    gpus=[],
)
CONFIGS = sorted((REPO / "configs").glob("*.yaml"))


@pytest.mark.parametrize("config", CONFIGS, ids=[c.stem for c in CONFIGS])
def test_every_shipped_config_validates(config):
    data = yaml.safe_load(config.read_text())
    if "autoconfig" in data:  # an autoconfig spec: its section apart, the rest a sweep spec
        AutoconfigSection.model_validate(data.pop("autoconfig"))
        loaded = spec_from_dict(data, source=config)
    else:
        loaded = load_spec(config)
    assert loaded.points, config


def _tiny(config: str, tmp_path: Path, grid: dict) -> Path:
    """The shipped study config with a tiny budget: same env, knobs and axis, two grid values."""
    spec = yaml.safe_load((REPO / "configs" / config).read_text())
    spec["environment"]["env_config"].update(step_cost_us=20, episode_len=20)
    spec["training"] = {"train_batch_size_per_learner": 200, "minibatch_size": 100, "num_epochs": 1}
    spec["rl_module"] = {"fcnet_hiddens": [16]}
    spec.update(
        grid=grid, repeats=1, stop={"iterations": 3}, warmup_iterations=1, env_ceiling_s=0.2, trial_timeout_s=120
    )
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


def test_time_to_target_study_seeds_differ_by_repeat_not_by_grid_point():
    """The shipped study's seeding, from its plan (no trial runs): a fresh seed per repeat, shared by
    every configuration, so configurations of one repeat are compared on the same seed."""
    spec = yaml.safe_load((REPO / "configs" / "time_to_target.yaml").read_text())
    spec.update(grid={"num_env_runners": [0, 1]}, repeats=2)
    plans = plan_trials(spec_from_dict(spec, check_envs=False), TWO_CORES)
    seeds = pd.DataFrame([{"index": p.index, "repeat": p.repeat, "seed": p.seed} for p in plans])
    assert seeds["seed"].notna().all()
    assert (seeds.groupby("repeat")["seed"].nunique() == 1).all() and seeds.groupby("index")["seed"].nunique().eq(
        2
    ).all()


@pytest.mark.slow
def test_tiny_time_to_target_study_records_outcomes_and_curves(tmp_path):
    """The shipped study, shrunk to one trial: 2 iterations cannot reach a CartPole return of 1,000 (its
    episodes end at 500), so the trial is recorded as not reached, and the report says so (its seeding,
    which needs repeats, is checked from the plan above)."""
    spec = yaml.safe_load((REPO / "configs" / "time_to_target.yaml").read_text())
    spec["training"].update(train_batch_size_per_learner=200, minibatch_size=100, num_epochs=1)
    spec.update(
        grid={"num_env_runners": [0]},
        repeats=1,
        stop={"iterations": 2, "episode_return_mean": 1000},
        env_ceiling_s=0,
        trial_timeout_s=120,
    )
    path = tmp_path / "time_to_target.yaml"
    path.write_text(yaml.safe_dump(spec))
    out = tmp_path / "ttt"
    done = run_cli("sweep", str(path), "--out", str(out))
    assert done.returncode == 0, done.stdout + done.stderr
    trials = pd.read_parquet(out / "trials.parquet")
    assert (trials["status"] == "ok").all() and (~trials["reached_target"].astype(bool)).all()
    assert trials["time_to_target_s"].isna().all() and (trials["iterations"] == 2).all()
    assert trials["final_episode_return_mean"].notna().all() and trials["seed"].notna().all()
    report = (out / "report.md").read_text()
    assert "No configuration reached the target." in report
    assert (
        "Reaching episode_return_mean >= 1000: no configuration reached the target in any of its 1 ok repeats" in report
    )
    assert "plots/report_learning_env_steps.png" in report and "report_time_to_target_pareto" not in report
    assert trial_processes_alive(out) == []
