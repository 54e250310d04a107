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

from rlbench.adapters.base import ActorDemand, ConfigSnippet, ResourceDemand, TrainBatch
from rlbench.adapters.rllib.training import ALGO_TRAINING_KEYS, REMOVED_KEYS
from rlbench.adapters.sb3.envs import ENV_RUNNER_TITLE
from rlbench.adapters.sb3.mapping import defaults, env_count, in_subprocesses, quick_settings, refusals, train_batch

if TYPE_CHECKING:
    from rlbench.adapters.base import TrialConfig
    from rlbench.adapters.sb3.trainer import SB3Trainer

#: The result metrics a ``stop:`` target may name (from ``Monitor``'s episodes and SB3's step count), also as
#: RLlib's paths (``env_runners/episode_return_mean``), so one target serves a sweep over both frameworks.
SB3_METRICS = ("episode_return_mean", "episode_return_min", "episode_return_max", "episode_len_mean",
               "episode_len_min", "episode_len_max", "num_episodes", "num_env_steps_sampled_lifetime")

#: The oldest SB3 the adapter drives: the ``collect_rollouts``/``train`` loop and ``_setup_learn``'s signature
#: as read in 2.9.2's ``OnPolicyAlgorithm.learn`` (the version the ``sb3`` extra pins and the tests run).
SUPPORTED_SB3 = "2.9.0"


class SB3Adapter:
    """Stable-Baselines3 (PPO) as an :class:`rlbench.adapters.base.Adapter`."""

    name = "sb3"
    roles = ("driver", "env_runner", "other")
    preload_modules = ("rlbench.adapters.sb3.trainer", "stable_baselines3", "torch", "gymnasium")
    actor_class_roles: dict[str, str] = {}
    system_titles: tuple[str, ...] = ()
    algorithms = ("PPO",)
    # The spec's PPO keys: those with no faithful SB3 equivalent are refused by ``refusals``, with what to set.
    algo_only_keys: dict[tuple[str, str], tuple[str, ...]] = {}
    refused_values: dict[str, tuple[Any, str]] = {}
    removed_keys = REMOVED_KEYS
    runtime = None
    requires = {"stable-baselines3": SUPPORTED_SB3}
    #: A fork, the torch and SB3 imports the fork server has made, the build; with env processes, each one's
    #: start (SB3's forkserver imports SB3 and torch in it): about 1-3 s on 2 cores.
    cold_start_s = 2.0

    def training_keys(self, algo: str) -> frozenset[str]:
        return ALGO_TRAINING_KEYS[algo]

    def hyperparameter_defaults(self, config: TrialConfig) -> dict[tuple[str, str], Any]:
        return defaults(config)

    def refusals(self, config: TrialConfig) -> list[tuple[tuple[str, ...], str]]:
        return refusals(config)

    def is_asynchronous(self, algo: str) -> bool:
        return False

    def trains_on_replay(self, algo: str) -> bool:
        return False  # PPO only: on-policy, so autoconfig's cost model of an iteration applies

    def classify_process(self, cmdline: list[str], *, is_driver: bool) -> str:
        if is_driver:
            return "driver"
        return "env_runner" if cmdline and cmdline[0].strip().startswith(ENV_RUNNER_TITLE) else "other"

    def result_metrics(self) -> list[str]:
        return [*SB3_METRICS, *(f"env_runners/{m}" for m in SB3_METRICS)]  # RLlib's paths name the same figures

    def metric_column(self, name: str) -> str | None:
        return "episode_return_mean" if name.removeprefix("env_runners/") == "episode_return_mean" else None

    def resource_demand(self, config: TrialConfig) -> ResourceDemand:
        runners = config.env_runners
        return ResourceDemand(config.resources.num_cpus_for_main_process,
                              (ActorDemand("env_runner", runners.num_env_runners, runners.num_cpus_per_env_runner,
                                           0.0, "env runners"),))

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

    def set_driver_threads(self, n: int) -> None:
        import torch

        torch.set_num_threads(n)

    def make_env(self, env: str, env_config: dict[str, Any]) -> Any:
        from rlbench.adapters.envs import make_env

        return make_env(env, env_config)

    def trainer(self, config: TrialConfig, *, seed: int | None, without: frozenset[str] = frozenset()) -> SB3Trainer:
        from rlbench.adapters.sb3.trainer import SB3Trainer

        return SB3Trainer(config, seed=seed, threads=self.torch_threads(config))

    def serving(self) -> None:
        return None  # rlbench servebench serves RLlib's policies only so far
