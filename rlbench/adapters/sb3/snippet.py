"""A trial config as Stable-Baselines3 code, ready to paste: ``sb3_config.py``, what ``rlbench autoconfig`` writes
for an SB3 answer (standard library only). The arguments are the ones the trial's build passes
(:func:`.mapping.ppo_arguments`), every value rendered inert (:mod:`rlbench.adapters.pysource`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rlbench.adapters.base import ConfigSnippet
from rlbench.adapters.pysource import literal
from rlbench.adapters.sb3.mapping import env_count, in_subprocesses, ppo_arguments

if TYPE_CHECKING:
    from rlbench.adapters.base import TrialConfig

#: The file the snippet is written to.
FILE_NAME = "sb3_config.py"


def config_snippet(config: TrialConfig, title: str) -> ConfigSnippet:
    """``sb3_config.py`` for one trial config, headed by ``title`` (which configuration it is)."""
    arguments = ppo_arguments(config)
    policy = dict(arguments.pop("policy_kwargs", {}))
    vec = "SubprocVecEnv" if in_subprocesses(config) else "DummyVecEnv"
    env = config.environment
    lines = [
        '"""The configuration rlbench autoconfig chose (autoconfig.json has the evidence)."""',
        f"# configuration: {literal(title)}",
        "# An env written as 'package.module:Class' in the spec must be registered with gymnasium or made here.",
        "import gymnasium",
        "import torch",
        "from stable_baselines3 import PPO",
        "from stable_baselines3.common.env_util import make_vec_env",
        f"from stable_baselines3.common.vec_env import {vec}",
        "",
        f"env = make_vec_env({literal(env.env)}, n_envs={env_count(config)}, vec_env_cls={vec}, "
        f"env_kwargs={literal(dict(env.env_config))})",
        "model = PPO(",
        '    "MlpPolicy",',
        "    env,",
        *(f"    {key}={literal(value)}," for key, value in arguments.items()),
    ]
    if policy:
        net = f"net_arch={literal(policy['net_arch'])}" if "net_arch" in policy else ""
        act = f"activation_fn=torch.nn.{policy['activation_fn']}" if "activation_fn" in policy else ""
        lines.append(f"    policy_kwargs=dict({', '.join(p for p in (net, act) if p)}),")
    lines += [")", "# model.learn(total_timesteps=...)", ""]
    return ConfigSnippet(FILE_NAME, "python", "\n".join(lines))
