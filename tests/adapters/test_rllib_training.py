"""RLlib's spec knowledge (rlbench/adapters/rllib/training.py): each algorithm's training keys are
arguments of its ``training()`` in the installed Ray, and the tables agree with each other."""

from __future__ import annotations

import inspect

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
    assert (rllib.algo_only_keys, rllib.refused_values, rllib.removed_keys) == (ALGO_ONLY_KEYS, REFUSED_VALUES,
                                                                                 REMOVED_KEYS)


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
    assert {"replay_buffer_config", "training_intensity", "n_step", "num_steps_sampled_before_learning_starts",
            "target_network_update_freq", "tau"} <= dqn & sac
    assert "lr" in dqn and "lr" not in sac and {"actor_lr", "critic_lr", "alpha_lr"} <= sac - dqn
    assert not {"minibatch_size", "num_epochs", "lambda", "entropy_coeff"} & (dqn | sac)  # on-policy keys
