"""The Stable-Baselines3 adapter: SB3 2.9's PPO driven one iteration at a time in the trial process, no Ray.

Roles: the trial process is the driver (inference and learning, as RLlib's with ``num_learners: 0``); with
``num_env_runners: N`` its env processes (``SubprocVecEnv``, titled ``rlbench::SB3EnvRunner``) are env runners,
so per-role CPU, allocated against used, and the heat map mean what they mean for RLlib. Modules:
:mod:`.mapping` (the spec's keys as ``PPO(...)`` arguments, SB3's defaults, what it refuses), :mod:`.timing`
(exact timers on any clock), :mod:`.envs` (one env, its process titled), :mod:`.trainer` (the iteration loop),
:mod:`.snippet` (the config as SB3 code). Standard library only at module level; SB3 and torch are imported
when a trial builds.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from rlbench.adapters.base import Adapter, ConfigSnippet
from rlbench.adapters.demand import ActorDemand, ResourceDemand, TrainBatch
from rlbench.adapters.roles import RoleRules
from rlbench.adapters.sb3.envs import ENV_RUNNER_TITLE
from rlbench.adapters.sb3.mapping import (
    PPO_KEYS,
    defaults,
    env_count,
    in_subprocesses,
    quick_settings,
    refusals,
    train_batch,
)
from rlbench.adapters.vocabulary import EPISODE_METRICS, KeyHandling

if TYPE_CHECKING:
    from rlbench.adapters.base import TrialConfig
    from rlbench.adapters.sb3.trainer import SB3Trainer

#: The result metrics a ``stop:`` target may name (from ``Monitor``'s episodes and SB3's step count), also as
#: RLlib's paths (``env_runners/episode_return_mean``), so one target serves a sweep over both frameworks.
SB3_METRICS = (*EPISODE_METRICS, "num_env_steps_sampled_lifetime")

#: The oldest SB3 the adapter drives: the ``collect_rollouts``/``train`` loop and ``_setup_learn``'s signature
#: as read in 2.9.2's ``OnPolicyAlgorithm.learn`` (the version the ``sb3`` extra pins and the tests run).
SUPPORTED_SB3 = "2.9.0"


class SB3Adapter(Adapter):
    """Stable-Baselines3 (PPO) as an :class:`rlbench.adapters.base.Adapter`: on-policy and synchronous, no runtime
    (the base's answers)."""

    name = "sb3"
    #: Its env processes are titled (SubprocVecEnv's, :mod:`.envs`); anything else of the trial, multiprocessing's
    #: forkserver that starts them among it, is ``other`` with its command line as the why.
    role_rules = RoleRules(titles=((ENV_RUNNER_TITLE, "env_runner"),))
    #: ``torch._dynamo``: SB3's policy builds a torch optimizer, which imports it (1.06 s, as RLlib's learner does).
    preload_modules = ("rlbench.adapters.sb3.trainer", "stable_baselines3", "torch", "torch._dynamo", "gymnasium")
    algorithms = ("PPO",)
    requires = {"stable-baselines3": SUPPORTED_SB3}
    extra = "sb3"
    extra_modules = ("stable_baselines3", "setproctitle")
    #: A fork, the torch and SB3 imports the fork server has made, the build; with env processes, each one's
    #: start (SB3's forkserver imports SB3 and torch in it): about 1-3 s on 2 cores.
    cold_start_s = 2.0

    def key_handling(self, algo: str) -> dict[str, KeyHandling]:
        return dict(PPO_KEYS)  # PPO is its one algorithm: the vocabulary's PPO keys, mapped or refused

    def hyperparameter_defaults(self, config: TrialConfig) -> dict[tuple[str, str], Any]:
        return defaults(config)

    def refusals(self, config: TrialConfig) -> list[tuple[tuple[str, ...], str]]:
        return refusals(config)

    def result_metrics(self) -> list[str]:
        return [*SB3_METRICS, *(f"env_runners/{m}" for m in SB3_METRICS)]  # RLlib's paths name the same figures

    def resource_demand(self, config: TrialConfig) -> ResourceDemand:
        runners = config.env_runners
        return ResourceDemand(
            config.resources.num_cpus_for_main_process,
            (ActorDemand("env_runner", runners.num_env_runners, runners.num_cpus_per_env_runner, 0.0, "env runners"),),
        )

    def torch_threads(self, config: TrialConfig) -> dict[str, int]:
        t = config.threads
        driver = t.driver_torch_threads or max(1, config.resources.num_cpus_for_main_process)
        runner = t.env_runner_torch_threads or max(1, math.floor(config.env_runners.num_cpus_per_env_runner))
        return {"driver": driver, "learner": driver, "env_runner": runner}

    def train_batch(self, config: TrialConfig) -> TrainBatch:
        return TrainBatch(train_batch(config), 1)

    def sampling_processes(self, config: TrialConfig) -> int:
        return env_count(config) if in_subprocesses(config) else 1

    def quick_settings(self, config: TrialConfig) -> dict[tuple[str, str], Any]:
        return quick_settings(config)

    def config_snippet(self, config: TrialConfig, title: str) -> ConfigSnippet:
        from rlbench.adapters.sb3.snippet import config_snippet

        return config_snippet(config, title)

    def quiet_logging(self) -> None:
        import warnings

        warnings.filterwarnings("ignore", category=DeprecationWarning)

    def trainer(self, config: TrialConfig, *, seed: int | None, without: frozenset[str] = frozenset()) -> SB3Trainer:
        from rlbench.adapters.sb3.trainer import SB3Trainer

        return SB3Trainer(config, seed=seed, threads=self.torch_threads(config))
