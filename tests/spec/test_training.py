"""Algorithms in the spec: ``algo`` (also a grid axis), each algorithm's own training keys, keys of
another algorithm refused with the algorithm they belong to, old-API-stack keys refused with what to use.

Hand-made specs; ``BASE`` has five lines, so appended keys start at line 6.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from rlbench.adapters import FRAMEWORKS, get_adapter
from rlbench.spec.load import load_spec
from rlbench.spec.model import KNOB_SECTION, SpecError, TrialConfig
from rlbench.spec.training import ALGOS, REMOVED, TrainingSection, accepted_keys, owners

BASE = """\
name: t
environment:
  env: envs.tiny:TinyEnv
stop:
  iterations: 3
"""


def load(tmp_path: Path, text: str):
    path = tmp_path / "spec.yaml"
    path.write_text(text)
    return load_spec(path)


def error(tmp_path: Path, text: str) -> str:
    with pytest.raises(SpecError) as info:
        load(tmp_path, text)
    return str(info.value)


def at(tmp_path: Path, line: int) -> str:
    return f"{tmp_path / 'spec.yaml'}:{line}"


def test_algo_defaults_to_ppo_and_is_carried_by_the_trial_config(tmp_path):
    assert load(tmp_path, BASE).points[0].config.algo == "PPO"
    loaded = load(tmp_path, BASE + "algo: APPO\n")
    assert loaded.spec.algo == "APPO" and loaded.points[0].config.algo == "APPO"
    assert loaded.points[0].axes == {}


def test_algo_as_a_grid_axis(tmp_path):
    loaded = load(tmp_path, BASE + "grid:\n  algo: [PPO, APPO, IMPALA]\n  num_env_runners: [1, 2]\n")
    assert [(p.axes["algo"], p.axes["num_env_runners"]) for p in loaded.points] == [
        ("PPO", 1),
        ("PPO", 2),
        ("APPO", 1),
        ("APPO", 2),
        ("IMPALA", 1),
        ("IMPALA", 2),
    ]
    assert [p.config.algo for p in loaded.points] == ["PPO", "PPO", "APPO", "APPO", "IMPALA", "IMPALA"]


def test_unknown_algo(tmp_path):
    msg = error(tmp_path, BASE + "algo: A2C\n")
    assert msg == f"{at(tmp_path, 6)}: algo: Input should be 'PPO', 'APPO', 'IMPALA', 'DQN' or 'SAC' (got 'A2C')"


def test_each_algorithm_takes_its_own_keys(tmp_path):
    text = BASE + (
        "algo: APPO\ntraining:\n  circular_buffer_num_batches: 4\n  circular_buffer_iterations_per_batch: 1\n"
        "  vtrace: true\n  broadcast_interval: 2\n  lambda: 0.95\n  lr: 0.001\n"
    )
    t = load(tmp_path, text).points[0].config.training
    assert t.model_dump(exclude_none=True) == {
        "circular_buffer_num_batches": 4,
        "circular_buffer_iterations_per_batch": 1,
        "vtrace": True,
        "broadcast_interval": 2,
        "lambda_": 0.95,
        "lr": 0.001,
    }
    t = load(tmp_path, BASE + "algo: IMPALA\ntraining:\n  learner_queue_size: 5\n  vf_loss_coeff: 0.1\n").points[0]
    assert t.config.training.learner_queue_size == 5


@pytest.mark.parametrize(
    ("algo", "key", "value", "belongs"),
    [
        ("PPO", "circular_buffer_num_batches", 4, "an APPO key"),
        ("PPO", "vtrace", "true", "an APPO and IMPALA key"),
        ("IMPALA", "clip_param", 0.2, "a PPO and APPO key"),
        ("APPO", "learner_queue_size", 4, "an IMPALA key"),
        ("APPO", "vf_clip_param", 10, "a PPO key"),
        ("IMPALA", "target_network_update_freq", 2, "an APPO, DQN and SAC key"),
        ("SAC", "lr", 0.001, "a PPO, APPO, IMPALA and DQN key"),  # SAC: actor_lr, critic_lr, alpha_lr
        ("DQN", "actor_lr", 0.001, "a SAC key"),
        ("PPO", "replay_buffer_config", "{capacity: 10}", "a DQN and SAC key"),
    ],
)
def test_a_key_of_another_algorithm_says_which_it_belongs_to(tmp_path, algo, key, value, belongs):
    # line 6: algo, 7: training, 8: the key
    msg = error(tmp_path, BASE + f"algo: {algo}\ntraining:\n  {key}: {value}\n")
    assert msg.startswith(
        f"{at(tmp_path, 8)}: training.{key}: {belongs}, but this trial runs {algo}: "
        f"remove training.{key} (or move it under training."
    )
    assert ", or set algo to " in msg


def test_a_foreign_key_in_a_grid_over_algo_names_the_grid_point(tmp_path):
    # the APPO point is fine; the PPO point is refused, pointing at the training key's line (7)
    msg = error(tmp_path, BASE + "training:\n  circular_buffer_num_batches: 4\ngrid:\n  algo: [APPO, PPO]\n")
    assert msg == (
        f"{at(tmp_path, 7)}: training.circular_buffer_num_batches: an APPO key, but this trial runs "
        "PPO: remove training.circular_buffer_num_batches (or move it under training.APPO), or set algo "
        "to APPO  [grid point algo='PPO']"
    )


def test_a_foreign_key_as_a_grid_axis_points_at_the_axis(tmp_path):
    msg = error(tmp_path, BASE + "algo: PPO\ngrid:\n  circular_buffer_num_batches: [2, 4]\n")
    assert msg.startswith(f"{at(tmp_path, 8)}: training.circular_buffer_num_batches: an APPO key")


def test_aggregator_actors_are_for_appo_and_impala(tmp_path):
    msg = error(tmp_path, BASE + "learners:\n  num_aggregator_actors_per_learner: 1\n")
    assert msg.startswith(
        f"{at(tmp_path, 7)}: learners.num_aggregator_actors_per_learner: an APPO and IMPALA key, "
        "but this trial runs PPO"
    )
    assert load(tmp_path, BASE + "learners:\n  num_aggregator_actors_per_learner: 0\n")  # 0 asks for nothing
    cfg = load(tmp_path, BASE + "algo: IMPALA\nlearners:\n  num_aggregator_actors_per_learner: 2\n").points[0].config
    assert cfg.learners.num_aggregator_actors_per_learner == 2


def test_vtrace_false_is_refused_with_the_reason(tmp_path):
    msg = error(tmp_path, BASE + "algo: IMPALA\ntraining:\n  vtrace: false\n")
    assert msg.startswith(f"{at(tmp_path, 8)}: training.vtrace: Ray 2.60 runs IMPALA and APPO with V-trace only")


@pytest.mark.parametrize("old", sorted(get_adapter("rllib").removed_keys))
def test_old_api_stack_keys_are_refused_with_what_to_use(tmp_path, old):
    msg = error(tmp_path, BASE + f"algo: APPO\ntraining:\n  {old}: 1\n")
    assert msg == f"{at(tmp_path, 8)}: training.{old}: unknown key '{old}': {REMOVED[old]}"


def test_old_ppo_names_are_translated_for_every_algorithm(tmp_path):
    loaded = load(
        tmp_path,
        BASE + "algo: IMPALA\nenv_runners:\n  num_workers: 2\ntraining:\n  num_sgd_iter: 2\n  train_batch_size: 500\n",
    )
    cfg = loaded.points[0].config
    assert (cfg.env_runners.num_env_runners, cfg.training.num_epochs, cfg.training.train_batch_size_per_learner) == (
        2,
        2,
        500,
    )
    assert [n.split("  ")[0] for n in loaded.alias_notes] == [
        "num_workers -> num_env_runners",
        "num_sgd_iter -> num_epochs",
        "train_batch_size -> train_batch_size_per_learner",
    ]


def test_max_requests_per_aggregator_worker_is_translated(tmp_path):
    loaded = load(tmp_path, BASE + "algo: APPO\nlearners:\n  max_requests_in_flight_per_aggregator_worker: 2\n")
    assert loaded.points[0].config.learners.max_requests_in_flight_per_aggregator_actor == 2


def test_reporting_section_and_its_keys_as_axes(tmp_path):
    loaded = load(
        tmp_path,
        BASE + "algo: APPO\nreporting:\n  min_time_s_per_iteration: 1\n"
        "grid:\n  min_sample_timesteps_per_iteration: [0, 500]\n",
    )
    assert [p.config.reporting.model_dump(exclude_none=True) for p in loaded.points] == [
        {"min_time_s_per_iteration": 1.0, "min_sample_timesteps_per_iteration": 0},
        {"min_time_s_per_iteration": 1.0, "min_sample_timesteps_per_iteration": 500},
    ]


def test_rollout_fragment_length_defaults_to_the_algorithms_own(tmp_path):
    assert load(tmp_path, BASE).points[0].config.env_runners.rollout_fragment_length is None
    assert (
        load(tmp_path, BASE + "env_runners:\n  rollout_fragment_length: auto\n")
        .points[0]
        .config.env_runners.rollout_fragment_length
        == "auto"
    )


def test_a_plan_written_before_algorithms_reads_as_ppo():
    config = TrialConfig.model_validate_json(
        '{"environment": {"env": "CartPole-v1"}, "env_runners": {"rollout_fragment_length": "auto"}}'
    )
    assert config.algo == "PPO"


def test_per_algorithm_keys_go_to_that_algorithms_trials_only(tmp_path):
    # lines: 6 training, 7 lr, 8 PPO:, 9 num_sgd_iter, 10 minibatch, 11 APPO:, 12 lr, 13 buffer, 14 grid, 15 algo
    text = BASE + (
        "training:\n  lr: 0.001\n  PPO:\n    num_sgd_iter: 6\n    minibatch_size: 100\n"
        "  APPO:\n    lr: 0.002\n    circular_buffer_num_batches: 4\ngrid:\n  algo: [PPO, APPO, IMPALA]\n"
    )
    loaded = load(tmp_path, text)
    assert [p.config.training.model_dump(exclude_none=True) for p in loaded.points] == [
        {"lr": 0.001, "minibatch_size": 100, "num_epochs": 6},
        {"lr": 0.002, "circular_buffer_num_batches": 4},
        {"lr": 0.001},
    ]
    assert "num_sgd_iter -> num_epochs  (first at training.PPO.num_sgd_iter)" in loaded.alias_notes
    # the merged config is what a plan holds: no per-algorithm sub-sections left in it
    assert all(p.config.training.PPO is None and p.config.training.APPO is None for p in loaded.points)


def test_per_algorithm_keys_must_be_that_algorithms(tmp_path):
    msg = error(tmp_path, BASE + "training:\n  APPO:\n    vf_clip_param: 1\n")
    assert msg == f"{at(tmp_path, 8)}: training.APPO.vf_clip_param: not an APPO key: it is a PPO key"
    msg = error(tmp_path, BASE + "training:\n  APPO:\n    PPO:\n      lr: 1\n")
    assert msg.startswith(f"{at(tmp_path, 8)}: training.APPO.PPO: per-algorithm keys do not nest")
    msg = error(tmp_path, BASE + "training:\n  IMPALA:\n    lr: -1\n")
    assert msg.startswith(f"{at(tmp_path, 8)}: training.IMPALA.lr: Input should be greater than 0")


def test_per_algorithm_sub_sections_are_not_grid_axes(tmp_path):
    msg = error(tmp_path, BASE + "grid:\n  APPO: [{lr: 0.1}]\n")
    assert msg.startswith(f"{at(tmp_path, 7)}: grid.APPO: unknown key 'APPO'")


def test_the_model_types_every_adapters_keys_and_every_key_is_an_axis():
    """One source: the keys the adapters accept are the model's fields (checked on import too)."""
    keys = {f.alias or name for name, f in TrainingSection.model_fields.items()} - set(ALGOS)
    adapters = [get_adapter(f) for f in FRAMEWORKS]
    assert set().union(*(a.training_keys(algo) for a in adapters for algo in a.algorithms)) == keys
    assert set(ALGOS) == {algo for a in adapters for algo in a.algorithms}
    assert list(TrainingSection.model_fields)[-len(ALGOS) :] == list(ALGOS)  # one sub-section per algorithm, last
    assert all(KNOB_SECTION[k] == "training" for k in keys)
    assert all(owners(k) for k in keys)
    assert not set(REMOVED) & keys
    assert REMOVED == {**get_adapter("plain").removed_keys, **get_adapter("rllib").removed_keys}


def test_plain_takes_the_keys_rllib_takes(tmp_path):
    """A spec validates the same under either framework (the plain adapter accepts RLlib's keys and ignores them)."""
    for algo in ALGOS:
        assert accepted_keys(algo, "plain") == accepted_keys(algo, "rllib") == accepted_keys(algo)
    msg = error(tmp_path, BASE + "framework: plain\nalgo: IMPALA\ntraining:\n  clip_param: 0.2\n")
    assert msg.startswith(f"{at(tmp_path, 9)}: training.clip_param: a PPO and APPO key, but this trial runs IMPALA: ")


def test_an_algorithm_its_framework_does_not_run_is_refused(tmp_path, monkeypatch):
    monkeypatch.setattr(get_adapter("plain"), "algorithms", ("PPO",))  # a framework with one algorithm
    assert load(tmp_path, BASE + "framework: plain\n").points[0].config.algo == "PPO"
    msg = error(tmp_path, BASE + "framework: plain\nalgo: APPO\n")
    assert (
        msg
        == f"{at(tmp_path, 7)}: algo: framework plain runs PPO, not APPO: set algo to one of them, or another framework"
    )
