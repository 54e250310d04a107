"""Every key an adapter takes is mapped, refused or deliberately ignored by it, never dropped in silence: a key an
adapter took and dropped would let a grid over it measure nothing (issue 44: SB3's mapping dropped what it neither
mapped nor refused, with no test). Each adapter's word (``key_handling``) is checked against what it does."""

from __future__ import annotations

import pytest

from rlbench.adapters import FRAMEWORKS, get_adapter
from rlbench.adapters.vocabulary import ALGO_TRAINING_KEYS, ALGORITHMS
from rlbench.spec.model import TrialConfig

#: A value for every PPO key, none of them SB3's or RLlib's default (so a mapped key shows in the arguments and a
#: refused one is refused).
PPO_VALUES = {
    "train_batch_size_per_learner": 64,
    "minibatch_size": 32,
    "num_epochs": 3,
    "lr": 0.01,
    "gamma": 0.9,
    "grad_clip": 1.0,
    "shuffle_batch_per_epoch": False,
    "entropy_coeff": 0.1,
    "vf_loss_coeff": 0.7,
    "lambda": 0.8,
    "clip_param": 0.25,
    "kl_coeff": 0.3,
    "kl_target": 0.02,
    "use_kl_loss": True,
    "vf_clip_param": 5.0,
}


def config(**training) -> TrialConfig:
    return TrialConfig.model_validate({"environment": {"env": "CartPole-v1"}, "training": training})


@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_each_adapter_says_what_it_does_with_every_key_it_takes(framework):
    adapter = get_adapter(framework)
    for algo in adapter.algorithms:
        handling = adapter.key_handling(algo)
        assert set(handling) == adapter.training_keys(algo) <= ALGO_TRAINING_KEYS[algo]
        assert {h.kind for h in handling.values()} <= {"mapped", "refused", "ignored"}
        assert all(h.how.strip() for h in handling.values()), (framework, algo)


def test_the_sample_values_cover_ppo():
    assert set(PPO_VALUES) == ALGO_TRAINING_KEYS["PPO"]


@pytest.mark.parametrize("key", sorted(ALGO_TRAINING_KEYS["PPO"]))
def test_sb3_maps_or_refuses_each_ppo_key_as_it_says(key):
    from rlbench.adapters.sb3.mapping import PPO_ARGUMENTS, ppo_arguments, refusals

    handling = get_adapter("sb3").key_handling("PPO")[key]
    assert handling.kind in ("mapped", "refused")  # SB3 runs PPO: nothing of it is ignored
    trial = config(**{key: PPO_VALUES[key]})
    refused = [path for path, _ in refusals(trial)]
    if handling.kind == "refused":
        assert ("training", key) in refused
        assert ("training", key) not in [path for path, _ in refusals(config())]  # unset: what SB3 does anyway
    else:
        assert refused == []
        args = ppo_arguments(trial)
        if key == "train_batch_size_per_learner":
            assert args["n_steps"] == 64  # one env: the whole batch per env
        else:
            assert args[PPO_ARGUMENTS[key]] == PPO_VALUES[key]


def test_rllib_passes_every_key_to_its_training_call():
    from rlbench.adapters.rllib.config import spec_calls

    assert {h.kind for a in ALGORITHMS for h in get_adapter("rllib").key_handling(a).values()} == {"mapped"}
    trial = config(**PPO_VALUES)
    assert dict(spec_calls(trial))["training"] == trial.training.model_dump(exclude_none=True)  # RLlib's names
    assert trial.training.model_dump(exclude_none=True, by_alias=True) == PPO_VALUES  # every key, every value


def test_plain_ignores_all_but_the_batch_it_steps():
    plain = get_adapter("plain")
    handling = plain.key_handling("PPO")
    assert [k for k, h in handling.items() if h.kind == "mapped"] == ["train_batch_size_per_learner"]
    assert plain.train_batch(config(train_batch_size_per_learner=64)).per_learner == 64
    assert plain.train_batch(config(**PPO_VALUES)).per_learner == 64  # the rest change nothing it does
