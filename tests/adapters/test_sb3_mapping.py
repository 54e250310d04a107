"""The SB3 adapter's answers without training: the spec's keys as SB3's arguments (checked against the installed
SB3), what it refuses at load, the matched preset of a ``framework`` axis, roles, resources and its snippet.
No Ray, no env process: the model the snippet builds is constructed, never trained."""

from __future__ import annotations

import inspect

import pytest
import yaml

from rlbench.adapters import get_adapter
from rlbench.adapters.base import NEVER_BINDS
from rlbench.adapters.rllib.training import PPO_DEFAULTS as RLLIB_DEFAULTS
from rlbench.adapters.sb3.mapping import PPO_DEFAULTS, ppo_arguments
from rlbench.spec.errors import SpecError
from rlbench.spec.load import spec_from_dict
from rlbench.spec.model import TrialConfig

SB3 = get_adapter("sb3")


def trial(**sections) -> TrialConfig:
    return TrialConfig.model_validate({"framework": "sb3", "environment": {"env": "CartPole-v1"}, **sections})


def test_sb3_defaults_are_the_installed_sb3s():
    from stable_baselines3 import PPO

    signature = inspect.signature(PPO.__init__).parameters
    for key, argument in {
        "lr": "learning_rate",
        "minibatch_size": "batch_size",
        "num_epochs": "n_epochs",
        "gamma": "gamma",
        "lambda": "gae_lambda",
        "clip_param": "clip_range",
        "entropy_coeff": "ent_coef",
        "vf_loss_coeff": "vf_coef",
        "grad_clip": "max_grad_norm",
    }.items():
        assert PPO_DEFAULTS[("training", key)] == signature[argument].default, key
    assert signature["clip_range_vf"].default is None and signature["target_kl"].default is None
    assert (
        signature["n_steps"].default * 4
        == SB3.hyperparameter_defaults(trial(env_runners={"num_env_runners": 0, "num_envs_per_env_runner": 4}))[
            ("training", "train_batch_size_per_learner")
        ]
    )
    policy = PPO("MlpPolicy", "CartPole-v1", device="cpu").policy  # built, not trained
    assert policy.net_arch == {"pi": [64, 64], "vf": [64, 64]} and policy.activation_fn.__name__ == "Tanh"
    assert not policy.share_features_extractor or policy.features_extractor.__class__.__name__ == "FlattenExtractor"


def test_rllib_defaults_are_the_installed_rllibs():
    from ray.rllib.algorithms.ppo import PPOConfig
    from ray.rllib.core.rl_module.default_model_config import DefaultModelConfig

    config, model = PPOConfig(), DefaultModelConfig()
    names = {"lambda": "lambda_"}
    for (section, key), value in RLLIB_DEFAULTS.items():
        if section == "rl_module":
            assert getattr(model, key) == value, key
        elif key == "grad_clip":
            assert config.grad_clip is None and value == NEVER_BINDS  # None: no clipping
        else:
            assert getattr(config, names.get(key, key)) == value, key


def test_the_spec_keys_become_sb3_arguments():
    config = trial(
        env_runners={"num_env_runners": 2, "num_envs_per_env_runner": 2},
        training={
            "train_batch_size_per_learner": 400,
            "minibatch_size": 50,
            "num_epochs": 3,
            "lr": 0.001,
            "gamma": 0.9,
            "lambda": 0.8,
            "clip_param": 0.1,
            "entropy_coeff": 0.01,
            "vf_loss_coeff": 0.25,
            "grad_clip": 2.0,
            "use_kl_loss": False,
        },
        rl_module={"fcnet_hiddens": [32, 16], "fcnet_activation": "relu"},
    )
    assert ppo_arguments(config) == {
        "n_steps": 100,
        "batch_size": 50,
        "n_epochs": 3,
        "learning_rate": 0.001,
        "gamma": 0.9,
        "gae_lambda": 0.8,
        "clip_range": 0.1,
        "ent_coef": 0.01,
        "vf_coef": 0.25,
        "max_grad_norm": 2.0,
        "policy_kwargs": {"net_arch": {"pi": [32, 16], "vf": [32, 16]}, "activation_fn": "ReLU"},
    }
    assert SB3.train_batch(config).env_steps == 400 and SB3.sampling_processes(config) == 4
    assert SB3.sampling_processes(trial(env_runners={"num_env_runners": 0, "num_envs_per_env_runner": 8})) == 1
    demand = SB3.resource_demand(config)
    assert (demand.driver_cpus, demand.actor_cpus, demand.role_cpus(SB3.roles)) == (
        1,
        2.0,
        {"driver": 1.0, "env_runner": 2.0, "other": 0.0},
    )
    assert SB3.torch_threads(config) == {"driver": 1, "learner": 1, "env_runner": 1}


@pytest.mark.parametrize(
    "sections, path",
    [
        ({"training": {"use_kl_loss": True}}, "training.use_kl_loss"),
        ({"training": {"kl_coeff": 0.2}}, "training.kl_coeff"),
        ({"training": {"vf_clip_param": 10.0}}, "training.vf_clip_param"),
        ({"training": {"shuffle_batch_per_epoch": False}}, "training.shuffle_batch_per_epoch"),
        (
            {
                "training": {"train_batch_size_per_learner": 100},
                "env_runners": {"num_env_runners": 0, "num_envs_per_env_runner": 8},
            },
            "training.train_batch_size_per_learner",
        ),
        ({"rl_module": {"vf_share_layers": True}}, "rl_module.vf_share_layers"),
        ({"learners": {"num_learners": 1}}, "learners.num_learners"),
        ({"env_runners": {"gym_env_vectorize_mode": "async"}}, "env_runners.gym_env_vectorize_mode"),
        ({"env_runners": {"rollout_fragment_length": 50}}, "env_runners.rollout_fragment_length"),
        ({"reporting": {"min_time_s_per_iteration": 1}}, "reporting.min_time_s_per_iteration"),
    ],
)
def test_a_key_sb3_cannot_run_faithfully_is_refused_at_load_naming_it(sections, path):
    spec = {
        "name": "r",
        "framework": "sb3",
        "environment": {"env": "CartPole-v1"},
        "stop": {"iterations": 2},
        **sections,
    }
    with pytest.raises(SpecError) as e:
        spec_from_dict(spec, check_envs=False)
    assert f"{path}: framework sb3: " in str(e.value)
    trial(training={"vf_clip_param": NEVER_BINDS, "use_kl_loss": False})  # never binds, no KL: what SB3 does


BASE = {
    "name": "m",
    "environment": {"env": "CartPole-v1"},
    "stop": {"iterations": 2},
    "env_runners": {"num_env_runners": 0},
}


def test_a_framework_axis_pins_every_unset_hyperparameter_to_one_value_on_both_sides():
    """RLlib first in the axis: its defaults, except where SB3 cannot run them (the KL loss, the value-loss clip,
    shared layers): SB3's there. A key the spec sets stays; the batch follows RLlib's 4000 where 4000 splits
    over SB3's envs, SB3's own 2048 x envs where it does not (3 envs)."""
    loaded = spec_from_dict(
        {**BASE, "training": {"lr": 0.001}, "grid": {"framework": ["rllib", "sb3"], "num_envs_per_env_runner": [4, 3]}},
        check_envs=False,
    )
    configs = {(p.config.framework, p.config.env_runners.num_envs_per_env_runner): p.config for p in loaded.points}

    def pinned(config):
        return (
            config.training.model_dump(by_alias=True, exclude_none=True, exclude={"PPO", "APPO", "IMPALA"}),
            config.rl_module.model_dump(exclude_none=True),
        )

    assert pinned(configs["rllib", 4]) == pinned(configs["sb3", 4])
    assert pinned(configs["rllib", 3]) == pinned(configs["sb3", 3])
    training, module = pinned(configs["sb3", 4])
    assert training == {
        "train_batch_size_per_learner": 4000,
        "minibatch_size": 128,
        "num_epochs": 30,
        "lr": 0.001,
        "gamma": 0.99,
        "grad_clip": NEVER_BINDS,
        "shuffle_batch_per_epoch": True,
        "entropy_coeff": 0.0,
        "vf_loss_coeff": 1.0,
        "lambda": 1.0,
        "clip_param": 0.3,
        "use_kl_loss": False,
        "vf_clip_param": NEVER_BINDS,
    }
    assert module == {"fcnet_hiddens": [256, 256], "fcnet_activation": "tanh", "vf_share_layers": False}
    assert pinned(configs["sb3", 3])[0]["train_batch_size_per_learner"] == 2048 * 3
    assert "training.use_kl_loss = False for rllib and sb3 (sb3's default; rllib's True)" in loaded.matched_notes
    assert not any(n.startswith("training.lr") for n in loaded.matched_notes)  # the spec set it


def test_one_framework_or_a_framework_that_learns_nothing_pins_nothing():
    for grid in ({"framework": ["sb3"]}, {"framework": ["rllib", "plain"]}):
        loaded = spec_from_dict({**BASE, "grid": grid}, check_envs=False)
        assert loaded.matched_notes == [] and all(p.config.training.lr is None for p in loaded.points)


def test_a_variant_that_swaps_the_framework_is_matched_too():
    loaded = spec_from_dict(
        {
            **BASE,
            "variants": [{"name": "rl", "set": {"framework": "rllib"}}, {"name": "sb", "set": {"framework": "sb3"}}],
        },
        check_envs=False,
    )
    assert {p.config.training.num_epochs for p in loaded.points} == {30}


def test_the_snippet_builds_the_model_the_trial_measured():
    """Executed (our own config, not a spec from elsewhere), the snippet makes SB3's PPO with the trial's
    arguments; the env name is data, never code."""
    config = trial(
        env_runners={"num_env_runners": 0, "num_envs_per_env_runner": 2},
        training={"train_batch_size_per_learner": 64, "minibatch_size": 32, "lr": 0.01},
        rl_module={"fcnet_hiddens": [8], "fcnet_activation": "swish"},
    )
    snippet = SB3.config_snippet(config, "sb3 ''' \n import os")
    assert (snippet.file_name, snippet.language) == ("sb3_config.py", "python")
    assert "\nimport os" not in snippet.text
    scope: dict = {}
    exec(compile(snippet.text, "sb3_config.py", "exec"), scope)  # noqa: S102 - our own config
    model = scope["model"]
    assert (model.n_steps, model.batch_size, model.learning_rate, model.env.num_envs) == (32, 32, 0.01, 2)
    assert model.policy.net_arch == {"pi": [8], "vf": [8]} and model.policy.activation_fn.__name__ == "SiLU"


def test_env_processes_are_env_runners_by_their_title():
    assert SB3.classify_process(["rlbench::SB3EnvRunner", ""], is_driver=False).name == "env_runner"
    forkserver = SB3.classify_process(["python", "-c", "from multiprocessing.forkserver import main"], is_driver=False)
    assert (forkserver.name, forkserver.why) == (
        "other",
        "no rule names it: python -c from multiprocessing.forkserver import main",
    )
    assert SB3.classify_process(["ray::IDLE"], is_driver=False).name == "other"  # no Ray beside SB3: not Ray's
    assert SB3.classify_process(["anything"], is_driver=True).name == "driver"
    assert (
        SB3.metric_column("episode_return_mean") == "episode_return_mean" and SB3.metric_column("num_episodes") is None
    )


def test_a_stop_target_one_framework_does_not_report_is_refused_at_load():
    with pytest.raises(SpecError, match="stop.vf_loss: framework sb3 does not report it"):
        spec_from_dict(
            {**BASE, "grid": {"framework": ["rllib", "sb3"]}, "stop": {"iterations": 3, "vf_loss": {"at_most": 1.0}}},
            check_envs=False,
        )
    loaded = spec_from_dict(
        {
            **BASE,
            "grid": {"framework": ["rllib", "sb3"]},
            "stop": {"iterations": 3, "env_runners/episode_return_mean": 100},
        },
        check_envs=False,
    )
    assert SB3.metric_column(loaded.spec.stop.target.metric) == "episode_return_mean"


def test_an_autoconfig_space_over_frameworks_plans_both_and_answers_sb3_in_sb3s_code(tmp_path):
    """``rlbench autoconfig``'s search space takes ``framework`` as an axis (matched, as a sweep's), and an SB3
    candidate's answer is ``sb3_config.py``, the file the driver writes (planned only: no trial runs)."""
    from rlbench.measure.machine import MachineInfo
    from rlbench.run.autoconfig_driver.space import prepare

    spec = {
        **BASE,
        "training": {"train_batch_size_per_learner": 1024, "minibatch_size": 128},
        "grid": {"framework": ["rllib", "sb3"], "num_env_runners": [0, 1], "num_envs_per_env_runner": [4, 8]},
        "stop": {"seconds": 8},
        "cpus": 2,
        "autoconfig": {"objective": "throughput", "trial_s": 8, "baseline": {}},
    }
    path = tmp_path / "space.yaml"
    path.write_text(yaml.safe_dump(spec))
    machine = MachineInfo(
        hostname="t",
        cpu_model="fake",
        logical_cores=2,
        physical_cores=2,
        usable_cores=[0, 1],
        memory_bytes=2**34,
        gpus=[],
    )
    setup = prepare(path, budget="10m", objective=None, machine=machine)
    sb3 = [key for key in setup.candidates if 'framework="sb3"' in key]
    assert len(sb3) == 4 and len([k for k in setup.candidates if 'framework="rllib"' in k]) == 4
    config = setup.templates[sb3[0]].config
    assert config.training.num_epochs == 30 and config.training.use_kl_loss is False  # matched
    assert get_adapter(config.framework).config_snippet(config, sb3[0]).file_name == "sb3_config.py"
