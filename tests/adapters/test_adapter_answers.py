"""What the rest of rlbench asks an adapter instead of knowing the framework's words (issue 35): its train batch,
how many processes sample, the iterations column of a result metric, the learners' GPUs, and its config
snippet. RLlib's answers are checked against the installed RLlib's own config objects (built, no Ray started)."""

from __future__ import annotations

import pytest

from rlbench.adapters import get_adapter
from rlbench.adapters.demand import ActorDemand, ResourceDemand
from rlbench.adapters.pysource import literal, method_call
from rlbench.adapters.rllib.config import build_config, config_class
from rlbench.adapters.rllib.training import ALGORITHMS, DEFAULT_TRAIN_BATCH
from rlbench.spec.model import TrialConfig
from rlbench.studies.envbench import ceiling_key, trial_ceiling_key


def trial(**sections) -> TrialConfig:
    return TrialConfig.model_validate({"environment": {"env": "CartPole-v1"}, **sections})


def test_the_learners_gpus_are_the_drivers_learner_and_the_learner_actors_but_not_the_runners():
    demand = ResourceDemand(
        1,
        (ActorDemand("env_runner", 2, 1.0, 0.25, "env runners"), ActorDemand("learner", 3, 1.0, 0.5, "learners")),
        driver_gpus=0.0,
    )
    assert (demand.learner_gpus, demand.gpus) == (1.5, 2.0)
    assert ResourceDemand(1, driver_gpus=0.5).learner_gpus == 0.5
    rllib = get_adapter("rllib")
    assert rllib.resource_demand(trial(learners={"learner_gpus": 0.5})).learner_gpus == 0.5  # the driver's learner
    assert rllib.resource_demand(trial(learners={"learner_gpus": 2})).learner_gpus == 2.0  # 2 learners x 1 GPU
    assert rllib.resource_demand(trial(env_runners={"num_gpus_per_env_runner": 1.0})).learner_gpus == 0.0


def test_rllib_defaults_are_the_installed_rllibs():
    for algo in ALGORITHMS:
        assert config_class(algo)().train_batch_size == DEFAULT_TRAIN_BATCH[algo], algo


@pytest.mark.parametrize(
    "algo, learners, batch",
    [("PPO", 0, None), ("PPO", 2, None), ("PPO", 2, 300), ("APPO", 0, None), ("IMPALA", 3, None), ("IMPALA", 1, 64)],
)
def test_rllib_train_batch_is_what_its_config_trains_on(algo, learners, batch):
    config = trial(
        algo=algo,
        learners={"num_learners": learners},
        training={"train_batch_size_per_learner": batch} if batch else {},
    )
    answer = get_adapter("rllib").train_batch(config)
    built = build_config(config)
    assert (answer.per_learner, answer.env_steps) == (built.train_batch_size_per_learner, built.total_train_batch_size)


def test_plain_train_batch_is_its_own():
    plain = get_adapter("plain")
    assert plain.train_batch(trial(framework="plain")).env_steps == 1000
    assert plain.train_batch(trial(framework="plain", training={"train_batch_size_per_learner": 64})).per_learner == 64


def test_sampling_processes_and_the_ceiling_a_trial_is_measured_against():
    rllib, plain = get_adapter("rllib"), get_adapter("plain")
    assert [rllib.sampling_processes(trial(env_runners={"num_env_runners": n})) for n in (0, 1, 3)] == [1, 1, 3]
    assert plain.sampling_processes(trial(framework="plain")) == 1
    config = trial(environment={"env": "CartPole-v1", "env_config": {"b": 1}}, env_runners={"num_env_runners": 3})
    assert trial_ceiling_key(config, 4) == ceiling_key("CartPole-v1", {"b": 1}, 3, 4)


def test_the_iterations_column_of_a_result_metric():
    rllib, plain = get_adapter("rllib"), get_adapter("plain")
    assert (
        rllib.metric_column("episode_return_mean")
        == rllib.metric_column("env_runners/episode_return_mean")
        == "episode_return_mean"
    )
    assert rllib.metric_column("vf_loss") is None and rllib.metric_column("no_such_metric") is None
    assert plain.metric_column("episode_return_mean") == "episode_return_mean"
    assert plain.metric_column("num_episodes") is None


def test_the_rllib_snippet_builds_the_config_the_trial_measured():
    """Executed (a config of ours, not a spec from elsewhere), the snippet gives RLlib the trial's keys: it
    differs from the trial's own build only where rlbench adds its instruments."""
    config = trial(
        algo="APPO",
        env_runners={
            "num_env_runners": 1,
            "rollout_fragment_length": 25,
            "gym_env_vectorize_mode": "async",
            "num_envs_per_env_runner": 2,
        },
        learners={"num_aggregator_actors_per_learner": 1, "max_requests_in_flight_per_aggregator_actor": 2},
        training={"lr": 0.001, "circular_buffer_num_batches": 4},
        rl_module={"fcnet_hiddens": [16]},
    )
    snippet = get_adapter("rllib").config_snippet(config, "k")
    assert (snippet.file_name, snippet.language) == ("rllib_config.py", "python")
    scope: dict = {}
    exec(compile(snippet.text, snippet.file_name, "exec"), scope)  # noqa: S102 - our own config, inert values
    pasted = scope["config"].to_dict()
    measured = build_config(config, seed=3, without=frozenset({"stats", "callback"})).to_dict()
    differ = {k for k in measured if repr(measured[k]) != repr(pasted.get(k))}
    assert differ == {"restart_failed_env_runners", "log_level", "seed"}  # rlbench's own settings, not the spec's


def test_literal_and_method_call_render_only_data():
    class Sneaky(str):
        def __repr__(self):
            return "__import__('os')"

    assert literal(Sneaky("a")) == "'a'"
    assert literal(float("inf")) == "float('inf')"
    assert literal(object()).startswith("'<object object")
    assert literal({"a": (1, 2)}) == "{'a': [1, 2]}"
    assert method_call("training", {"lr": 0.1, "gamma": float("nan")}) == "    .training(lr=0.1, gamma=float('nan'))"
    for name in ("import", "a b", "x);os.system('y'", ""):
        with pytest.raises(ValueError, match="plain identifier"):
            method_call("training", {name: 1})
    with pytest.raises(ValueError, match="plain identifier"):
        method_call("__import__('os').system", {})
