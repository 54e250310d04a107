"""End to end with real Ray and RLlib: APPO and IMPALA on a tiny env (tables, roles, policy lag), and a
PPO trial with two remote learners (two learner processes sampled). Every check is a count or a value
RLlib or the env fixes, never a timing bound."""

from __future__ import annotations

import pandas as pd
import pytest
from conftest import sweep_ok, trial_processes_alive

pytestmark = pytest.mark.slow

#: APPO and IMPALA on the tiny env: one env runner (half a core), one aggregator actor (1 CPU, RLlib's
#: rule), the learner in the driver; one iteration is at least 200 sampled env steps.
ASYNC_SPEC = """\
name: async_e2e
algo: APPO
environment:
  env: envs.tiny:TinyEnv
  env_config: {episode_len: 20}
env_runners:
  num_env_runners: 1
  num_cpus_per_env_runner: 0.5
learners:
  num_learners: 0
  num_aggregator_actors_per_learner: 1
resources:
  num_cpus_for_main_process: 0
training:
  train_batch_size_per_learner: 100
  minibatch_size: 50
reporting:
  min_time_s_per_iteration: 0
  min_sample_timesteps_per_iteration: 200
rl_module:
  fcnet_hiddens: [16]
grid:
  algo: [APPO, IMPALA]
cpus: 2
seed: 3
stop:
  iterations: 4
warmup_iterations: 1
trial_timeout_s: 240
sample_hz: 10
env_ceiling_s: 0
"""

#: PPO with two remote learners of half a core each (data-parallel SGD), sampling in the driver.
TWO_LEARNERS_SPEC = """\
name: two_learners_e2e
algo: PPO
environment:
  env: envs.tiny:TinyEnv
  env_config: {episode_len: 20}
env_runners:
  num_env_runners: 0
learners:
  num_learners: 2
  num_cpus_per_learner: 0.5
resources:
  num_cpus_for_main_process: 1
training:
  train_batch_size_per_learner: 100
  minibatch_size: 50
  num_epochs: 2
rl_module:
  fcnet_hiddens: [16]
cpus: 2
seed: 3
stop:
  iterations: 3
warmup_iterations: 1
trial_timeout_s: 240
sample_hz: 10
env_ceiling_s: 0
"""


def _sweep(tmp_path_factory, name: str, text: str):
    return sweep_ok(tmp_path_factory.mktemp(name), text)[0]


@pytest.fixture(scope="module")
def async_run(tmp_path_factory):
    return _sweep(tmp_path_factory, "async", ASYNC_SPEC)


@pytest.fixture(scope="module")
def two_learners(tmp_path_factory):
    return _sweep(tmp_path_factory, "two_learners", TWO_LEARNERS_SPEC)


def test_async_trials_ran_with_their_algorithm(async_run):
    trials = pd.read_parquet(async_run / "trials.parquet").set_index("trial_id")
    assert list(trials["status"]) == ["ok", "ok"], trials["reason"].tolist()
    assert list(trials["algo"]) == ["APPO", "IMPALA"]
    assert (trials["aggregator_cpus_allocated"] == 1.0).all()  # 1 learner (the driver's) x 1 aggregator x 1 CPU


def test_async_iterations_count_steps_updates_and_lag(async_run):
    its = pd.read_parquet(async_run / "iterations.parquet")
    assert list(its.groupby("trial_id").size()) == [4, 4]
    assert (its["env_steps_sampled"] >= 200).all()  # RLlib repeats its training step until 200 were sampled
    assert (its["training_steps"] >= 1).all()
    # An async learner's results come back as its updates finish: an iteration may carry none and the next two
    # (IMPALA's steady iterations read 0, 4 and 2 updates, 0, 1,200 and 600 env steps trained, in a fresh clone's
    # suite beside a load spike, 2026-11-30). So each trial's iterations carry some, and each row carries its
    # updates, trained steps, busy seconds and lag together, or none of them
    assert (its.groupby("trial_id")["learner_updates"].sum() > 0).all()
    updated = its["learner_updates"] > 0
    assert (its["sgd_steps"] >= its["learner_updates"]).all()
    assert ((its["env_steps_trained"] > 0) == updated).all() and ((its["learner_busy_s"] > 0) == updated).all()
    assert (its["sampler_busy_s"] > 0).all()
    assert (its["busy_overlap_s"] >= 0).all()
    lag = its.dropna(subset=["policy_lag_mean"])
    assert lag.index.equals(its[updated].index)  # V-trace's batches carry the sampler's weights version: each update
    assert (
        lag["policy_lag_mean"] >= 1
    ).all()  # RLlib's count: 1 is on-policy (the version goes up as the update starts)
    assert (lag["policy_lag_max"] >= lag["policy_lag_mean"] - 1e-9).all()
    # the driver's split still adds up to the wall time (its waits, for these algorithms)
    total = its["sample_s"] + its["learn_s"] + its["sync_s"] + its["other_s"]
    assert (total - its["wall_s"]).abs().max() < 1e-9


def test_async_learners_build_no_batch_beside_aggregator_actors(async_run):
    """With an aggregator actor (this spec's one per learner) APPO's and IMPALA's learner connector runs there: the
    learner is handed built batches, so it builds none (learn_batches 0, no pipeline time: the aggregator role's
    CPU holds it), and its whole split is its updates; they work beside the driver's learn_s (a wait), so the rest
    of learn_s and sgd_s are null. (Without aggregators, RLlib's default, the learner builds one batch per update:
    learner_connector_s then sums the calls, tests/adapters/test_rllib_learner_device.py and the DQN and SAC
    trials of tests/e2e/test_offpolicy_e2e.py.)"""
    its = pd.read_parquet(async_run / "iterations.parquet")
    steady = its[~its["warmup"]]
    assert (steady["learn_batches"] == 0).all() and (steady["learn_batch_s"] == 0).all()
    assert (steady["learner_connector_s"] == 0).all()
    assert ((steady["learn_update_s"] > 0) == (steady["learner_updates"] > 0)).all()  # none where none came back
    assert steady["learn_other_s"].isna().all() and steady["sgd_s"].isna().all()


def test_async_roles_are_classified(async_run):
    util = pd.read_parquet(async_run / "utilization.parquet")
    procs = util[util["kind"] == "process"]
    for trial_id, rows in procs.groupby("trial_id"):
        roles = set(rows["role"])
        assert {"driver", "env_runner", "aggregator", "state_server", "ray_system"} <= roles, (trial_id, roles)
        assert "other" not in roles, rows[rows["role"] == "other"]
        assert rows[rows["role"] == "aggregator"]["pid"].nunique() == 1


def test_async_report_shows_lag_and_busy_shares(async_run):
    md = (async_run / "report.md").read_text()
    assert "policy lag mean / max" in md and "sampler busy" in md and "learner busy" in md
    assert "asynchronous algorithms" in md
    assert trial_processes_alive(async_run) == []


def test_two_learner_processes_sampled(two_learners):
    trials = pd.read_parquet(two_learners / "trials.parquet")
    assert list(trials["status"]) == ["ok"], trials["reason"].tolist()
    assert trials["learner_cpus_allocated"].iloc[0] == 1.0  # 2 x 0.5
    util = pd.read_parquet(two_learners / "utilization.parquet")
    learners = util[(util["kind"] == "process") & (util["role"] == "learner")]
    assert learners["pid"].nunique() == 2
    assert "other" not in set(util[util["kind"] == "process"]["role"])


def test_two_learners_each_update_once_per_iteration(two_learners):
    its = pd.read_parquet(two_learners / "iterations.parquet")
    assert len(its) == 3 and (its["training_steps"] == 1).all()
    # PPO: one Learner.update per learner per training step; the batch is per learner (100 each)
    assert (its["learner_updates"] == 1.0).all()
    assert (its["env_steps_trained"] >= 200).all()
    assert (its["sgd_steps"] >= 2).all()  # num_epochs 2, at least one minibatch each
    assert (its["learner_busy_s"] > 0).all()
    # synchronous: every batch was sampled with the weights its update starts from, RLlib's lag 1
    assert (its["policy_lag_mean"] == 1.0).all() and (its["policy_lag_max"] == 1.0).all()
    assert trial_processes_alive(two_learners) == []
