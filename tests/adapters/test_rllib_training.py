"""RLlib's spec knowledge (rlbench/adapters/rllib/training.py): each algorithm's training keys are
arguments of its ``training()`` in the installed Ray, and the tables agree with each other."""

from __future__ import annotations

import inspect

import pytest

from rlbench.adapters import get_adapter
from rlbench.adapters.rllib.config import ALGO_CONFIG_CLASSES
from rlbench.adapters.rllib.resources import ASYNC_ALGOS
from rlbench.adapters.rllib.training import (
    ALGO_ONLY_KEYS,
    ALGO_TRAINING_KEYS,
    ALGORITHMS,
    REFUSED_VALUES,
    REMOVED_KEYS,
)


def test_the_adapter_answers_from_its_tables():
    rllib = get_adapter("rllib")
    assert rllib.algorithms == ALGORITHMS == ("PPO", "APPO", "IMPALA", "DQN", "SAC")
    assert [a for a in ALGORITHMS if rllib.trains_on_replay(a)] == ["DQN", "SAC"]
    assert not any(get_adapter("plain").trains_on_replay(a) for a in ALGORITHMS)  # it trains nothing
    assert {algo: rllib.training_keys(algo) for algo in ALGORITHMS} == ALGO_TRAINING_KEYS
    assert (rllib.algo_only_keys, rllib.refused_values, rllib.removed_keys) == (
        ALGO_ONLY_KEYS,
        REFUSED_VALUES,
        REMOVED_KEYS,
    )


def test_the_tables_agree_with_each_other():
    keys = set().union(*ALGO_TRAINING_KEYS.values())
    assert set(ALGO_TRAINING_KEYS) == set(ALGO_CONFIG_CLASSES) == set(ALGORITHMS)
    assert ASYNC_ALGOS <= set(ALGORITHMS)
    assert all(set(algos) <= set(ALGORITHMS) for algos in ALGO_ONLY_KEYS.values())
    assert set(REFUSED_VALUES) <= keys  # a refused value is one of an accepted key
    assert not set(REMOVED_KEYS) & keys  # a removed key is accepted by no algorithm
    assert ALGO_TRAINING_KEYS["PPO"] - ALGO_TRAINING_KEYS["APPO"] == {"vf_clip_param"}
    assert ALGO_TRAINING_KEYS["IMPALA"] - ALGO_TRAINING_KEYS["APPO"] == {"learner_queue_size"}


def test_training_keys_are_rllib_260_training_arguments():
    """Every key rlbench accepts for an algorithm is an argument of that algorithm's ``training()`` in
    the installed Ray (APPO's ``learner_queue_size`` is one, but RLlib refuses it on the new stack)."""
    from ray.rllib.algorithms.appo import APPOConfig
    from ray.rllib.algorithms.dqn import DQNConfig
    from ray.rllib.algorithms.impala import IMPALAConfig
    from ray.rllib.algorithms.ppo import PPOConfig
    from ray.rllib.algorithms.sac import SACConfig

    classes = {"PPO": PPOConfig, "APPO": APPOConfig, "IMPALA": IMPALAConfig, "DQN": DQNConfig, "SAC": SACConfig}
    assert set(ALGO_CONFIG_CLASSES) == set(classes) == set(ALGORITHMS)
    base = set(inspect.signature(PPOConfig.__mro__[1].training).parameters)
    for algo, cls in classes.items():
        names = set()
        for klass in cls.__mro__:
            if "training" in vars(klass):
                names |= set(inspect.signature(vars(klass)["training"]).parameters)
        names = {"lambda" if n == "lambda_" else n for n in names | base}
        assert ALGO_TRAINING_KEYS[algo] <= names, (algo, ALGO_TRAINING_KEYS[algo] - names)


def test_replay_algorithms_share_the_replay_keys_and_sac_takes_no_lr():
    """DQN and SAC: the replay keys in common, each its own beside; SAC's lr is refused by RLlib 2.60 on the new
    stack (its validate raises), so it is not a SAC key: actor_lr, critic_lr and alpha_lr are."""
    from rlbench.adapters.rllib.training import REPLAY_ALGOS

    dqn, sac = ALGO_TRAINING_KEYS["DQN"], ALGO_TRAINING_KEYS["SAC"]
    assert REPLAY_ALGOS == {"DQN", "SAC"}
    assert {
        "replay_buffer_config",
        "training_intensity",
        "n_step",
        "num_steps_sampled_before_learning_starts",
        "target_network_update_freq",
        "tau",
    } <= dqn & sac
    assert "lr" in dqn and "lr" not in sac and {"actor_lr", "critic_lr", "alpha_lr"} <= sac - dqn
    assert not {"minibatch_size", "num_epochs", "lambda", "entropy_coeff"} & (dqn | sac)  # on-policy keys


def test_the_quick_rule_reads_rllib_260s_own_defaults():
    """--quick's rule (training.quick_settings) reads what RLlib trains with where the spec is silent: each
    figure is the installed Ray's."""
    from ray.rllib.algorithms.appo import APPOConfig
    from ray.rllib.algorithms.dqn import DQNConfig
    from ray.rllib.algorithms.impala import IMPALAConfig
    from ray.rllib.algorithms.ppo import PPOConfig
    from ray.rllib.algorithms.sac import SACConfig

    from rlbench.adapters.rllib.training import (
        DEFAULT_FRAGMENT,
        DEFAULT_LEARNING_STARTS,
        DEFAULT_MIN_SAMPLE_STEPS,
        DEFAULT_MIN_TIME_S,
        PPO_DEFAULTS,
    )

    assert APPOConfig().rollout_fragment_length == IMPALAConfig().rollout_fragment_length == DEFAULT_FRAGMENT
    assert {
        a: c().min_time_s_per_iteration for a, c in (("APPO", APPOConfig), ("IMPALA", IMPALAConfig))
    } == DEFAULT_MIN_TIME_S
    assert {
        a: c().num_steps_sampled_before_learning_starts for a, c in (("DQN", DQNConfig), ("SAC", SACConfig))
    } == DEFAULT_LEARNING_STARTS
    assert DQNConfig().min_sample_timesteps_per_iteration == DEFAULT_MIN_SAMPLE_STEPS["DQN"]
    assert SACConfig().min_time_s_per_iteration <= 1 and SACConfig().min_sample_timesteps_per_iteration <= 200
    assert PPOConfig().minibatch_size == PPO_DEFAULTS[("training", "minibatch_size")]


QUICK_CASES = [  # (algo, env, the spec's sections) -> what --quick trains on: (batch per learner, minibatch)
    ("PPO", "CartPole-v1", {}, (128, 128)),
    (
        "PPO",
        "CartPole-v1",
        {"learners": {"num_learners": 2}, "training": {"train_batch_size_per_learner": 2000, "minibatch_size": 500}},
        (128, 128),
    ),
    ("PPO", "CartPole-v1", {"training": {"train_batch_size_per_learner": 64, "minibatch_size": 32}}, (64, 32)),
    ("APPO", "CartPole-v1", {"training": {"minibatch_size": 500}}, (100, 100)),
    ("APPO", "CartPole-v1", {"env_runners": {"rollout_fragment_length": 32}}, (96, None)),
    ("IMPALA", "CartPole-v1", {"reporting": {"min_time_s_per_iteration": 0.5}}, (100, None)),
    ("DQN", "CartPole-v1", {}, (32, None)),
    ("SAC", "Pendulum-v1", {"reporting": {"min_sample_timesteps_per_iteration": 1000}}, (64, None)),
]


@pytest.mark.parametrize(
    "algo, env, sections, expected", QUICK_CASES, ids=[f"{c[0]}-{i}" for i, c in enumerate(QUICK_CASES)]
)
def test_a_quick_trial_is_one_rllib_validates(algo, env, sections, expected):
    """--quick cuts each algorithm's batch to a size RLlib 2.60 accepts: the built AlgorithmConfig passes RLlib's
    own validate() (minibatch within the batch, APPO/IMPALA's a multiple of the rollout fragment), an iteration is
    bounded (at most 1 s of training steps, 200 sampled env steps), and DQN/SAC learn within it."""
    from rlbench.adapters.rllib.config import build_config
    from rlbench.spec.load import spec_from_dict

    loaded = spec_from_dict(
        {"name": "q", "algo": algo, "environment": {"env": env}, "stop": {"seconds": 60}, **sections}, quick=True
    )
    built = build_config(loaded.points[0].config)
    built.validate()
    assert (built.train_batch_size_per_learner, built.minibatch_size) == expected
    assert (built.min_time_s_per_iteration or 0) <= 1 and built.min_sample_timesteps_per_iteration <= 200
    if algo in ("DQN", "SAC"):
        assert built.num_steps_sampled_before_learning_starts == 2 * expected[0]
    if algo in ("APPO", "IMPALA"):  # until one batch was sampled and trained on: 1 s alone gave 0 steps under load
        assert built.min_sample_timesteps_per_iteration == built.min_train_timesteps_per_iteration == expected[0]
