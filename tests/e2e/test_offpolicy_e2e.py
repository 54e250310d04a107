"""End to end with real Ray and RLlib: DQN and SAC (issue 37) in one sweep with ``algo`` as its grid axis, on
CartPole with tiny batches (SAC with its discrete-action loss; the continuous one, HalfCheetah's, is the
workload study's). Every check is a count RLlib or the spec fixes, or a sum that holds whatever the load:
the replay buffer's three timers add up to its total and lie inside the iteration's other time, the target
updates are as many as the updates (SAC: every update) or as the target period allows (DQN).

The same sweep carries the GPU axis as a user writes it (``num_gpus: [0, 1]``, issue 42): on this machine,
which has no GPU, the ``num_gpus: 1`` points are skipped with their reason before any Ray starts (they cost
the sweep nothing), and the CPU points run; on 1923cec every such trial failed."""

from __future__ import annotations

import pandas as pd
import pytest
from conftest import sweep_ok, trial_processes_alive

pytestmark = pytest.mark.slow

#: 100 env steps an iteration in fragments of 4 (25 training steps, the driver's own env runner: no actor to
#: start, the trial's cold start is most of its 10-20 s), learning from the
#: 64th sampled step on, a 16-step batch per update; DQN's target network moves every 50 sampled steps, SAC's
#: after every update (RLlib's default, target_network_update_freq 0).
SPEC = """\
name: offpolicy_e2e
algo: DQN
environment:
  env: CartPole-v1
env_runners:
  num_env_runners: 0
  rollout_fragment_length: 4
learners:
  num_learners: 0
resources:
  num_cpus_for_main_process: 1
training:
  train_batch_size_per_learner: 16
  replay_buffer_config: {capacity: 2000}
  num_steps_sampled_before_learning_starts: 64
  DQN: {target_network_update_freq: 50}
reporting:
  min_time_s_per_iteration: 0
  min_sample_timesteps_per_iteration: 100
rl_module:
  fcnet_hiddens: [16]
  head_fcnet_hiddens: [16]
grid:
  num_gpus: [0, 1]
  algo: [DQN, SAC]
cpus: 2
seed: 5
stop:
  iterations: 3
warmup_iterations: 1
trial_timeout_s: 240
sample_hz: 10
env_ceiling_s: 0
"""


@pytest.fixture(scope="module")
def swept(tmp_path_factory):
    return sweep_ok(tmp_path_factory.mktemp("offpolicy"), SPEC)


@pytest.fixture(scope="module")
def run(swept):
    return swept[0]


def test_the_gpu_points_are_skipped_with_their_reason_and_the_cpu_points_run(swept):
    out, done = swept
    trials = pd.read_parquet(out / "trials.parquet").set_index("trial_id")
    assert list(zip(trials["learner_gpus"], trials["algo"], trials["status"])) == [
        (0, "DQN", "ok"),
        (0, "SAC", "ok"),
        (1, "DQN", "skipped"),
        (1, "SAC", "skipped"),
    ]
    skipped = trials[trials["status"] == "skipped"]
    assert (skipped["num_gpus_per_learner"] == 1).all() and (skipped["num_learners"] == 0).all()
    assert set(skipped["reason"]) == {"needs 1 GPUs (learners and env runners) but this machine has 0"}
    assert (skipped["iterations"] == 0).all()
    assert "2 ok, 2 skipped, 0 failed" in done.stdout
    assert "alias: num_gpus -> learner_gpus  (first at grid.num_gpus)" in done.stdout
    # said once before the trials, in the words every trial skipped for that kind of reason shares
    assert done.stdout.count("2 of 4 trials need more GPUs than this machine's 0: they will be skipped") == 1


def test_both_algorithms_ran_from_one_grid(run):
    trials = pd.read_parquet(run / "trials.parquet").set_index("trial_id")
    trials = trials[trials["learner_gpus"] == 0]
    assert list(trials["status"]) == ["ok", "ok"], trials["reason"].tolist()
    assert list(trials["algo"]) == ["DQN", "SAC"]
    assert trials["replay_frac"].notna().all() and (trials["replay_frac"] > 0).all()
    assert (trials["updates_per_env_step"] == 0.25).all()  # one update of each 4-step sampling round
    assert trial_processes_alive(run) == []


def test_an_off_policy_iteration_counts_what_the_spec_fixes(run):
    its = pd.read_parquet(run / "iterations.parquet").merge(
        pd.read_parquet(run / "trials.parquet")[["trial_id", "algo"]], on="trial_id"
    )
    assert list(its.groupby("trial_id").size()) == [3, 3]
    # RLlib repeats its training step, 4 env steps each, until 100 were sampled: 25 steps an iteration
    assert (its["env_steps_sampled"] == 100).all() and (its["training_steps"] == 25).all()
    steady = its[~its["warmup"]]  # learning started at step 64, inside the first iteration
    assert (steady["learner_updates"] == 25).all() and (steady["sgd_steps"] == 25).all()
    assert (steady["updates_per_env_step"] == 0.25).all()
    sac, dqn = steady[steady["algo"] == "SAC"], steady[steady["algo"] == "DQN"]
    assert (sac["target_updates"] == sac["learner_updates"]).all()  # SAC: a soft update after every update
    assert dqn["target_updates"].between(1, 3).all()  # DQN: one per 50 sampled steps, 100 an iteration
    assert (steady["target_update_s"] > 0).all() and (steady["target_update_s"] <= steady["learn_s"]).all()
    assert (steady["learner_connector_s"] <= steady["learn_s"]).all()
    # the learner's split (issue 43): a train batch built from replayed episodes for each of the 25 updates, its
    # pipeline time summed over them (RLlib's mean of a call x 25) inside the probe's batch builds (the pipeline is
    # most of _make_batch_if_necessary; one call's mean would be about 1/25 of it)
    assert (steady["learn_batches"] == 25).all()
    ratio = steady["learner_connector_s"] / steady["learn_batch_s"]
    assert ratio.between(0.5, 1.01).all(), ratio.tolist()
    # batch, updates and the rest (the target updates in it) are learn_s; the rest holds the target updates
    parts = steady["learn_batch_s"] + steady["learn_update_s"] + steady["learn_other_s"]
    assert (parts - steady["learn_s"]).abs().max() < 1e-9 and (
        steady["learn_other_s"] >= steady["target_update_s"]
    ).all()


def test_the_replay_buffer_is_split_out_of_the_other_time(run):
    its = pd.read_parquet(run / "iterations.parquet")
    parts = its["replay_add_s"] + its["replay_sample_s"] + its["replay_update_s"]
    assert (parts - its["replay_s"]).abs().max() < 1e-12
    assert (its["replay_add_s"] > 0).all() and (its["replay_sample_s"] > 0).all()
    # RLlib times the buffer apart from sampling, learning and sync, inside train(): it is part of other_s
    assert (its["replay_s"] <= its["other_s"]).all()
    total = its["sample_s"] + its["learn_s"] + its["sync_s"] + its["other_s"]
    assert (total - its["wall_s"]).abs().max() < 1e-9


def test_the_report_shows_the_replay_share_and_the_learning(run):
    md = (run / "report.md").read_text()
    assert "| replay | updates / env step |" in md.replace("  ", " ") or ("replay" in md and "updates / env step" in md)
    its = pd.read_parquet(run / "iterations.parquet")
    assert its.groupby("trial_id")["episode_return_mean"].apply(lambda s: s.notna().any()).all()  # CartPole ends
