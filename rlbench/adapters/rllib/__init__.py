"""The RLlib adapter: the one place that knows RLlib's config names, result keys, process titles,
resource rules and training calls.

Another training system, or an RLlib release that renames keys, means changing this package
alone. Pinned facts (checked by tests/adapters/) are measured on Ray 2.60; see RLLIB_NOTES in the
shared design notes. Modules: :mod:`.roles` (process titles), :mod:`.resources` (what a trial
asks of the machine), :mod:`.config` (the AlgorithmConfig), :mod:`.timing` (the callback that
times env and inference in every env runner), :mod:`.results` (exact per-iteration timings from the
result dict), :mod:`.learner_probe` (what each learner did: busy time, updates, policy lag),
:mod:`.lifecycle` (build, train, stop), :mod:`.training` (the algorithms and the spec keys each
accepts), :mod:`.compat` (which path each RLlib release takes, 2.40 on), :mod:`.serving` (a policy
trained, saved and loaded for ``rlbench servebench``; its residual model in :mod:`.serving_models`).
Only ``config``, ``timing``, ``lifecycle``, ``compat`` and the serving modules import Ray or RLlib, and only
when a trial builds its algorithm or servebench serves.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from rlbench.adapters.base import Adapter, ConfigSnippet
from rlbench.adapters.demand import ResourceDemand, TrainBatch
from rlbench.adapters.rllib.compat import OLDEST
from rlbench.adapters.rllib.resources import ASYNC_ALGOS, resource_demand, torch_threads
from rlbench.adapters.rllib.results import metric_column, metric_names
from rlbench.adapters.rllib.roles import RAY_TITLE_ROLES, ROLE_RULES
from rlbench.adapters.rllib.training import (
    ALGO_ONLY_KEYS,
    ALGO_TRAINING_KEYS,
    ALGORITHMS,
    DEFAULT_TRAIN_BATCH,
    PPO_DEFAULTS,
    REFUSED_VALUES,
    REMOVED_KEYS,
    REPLAY_ALGOS,
    quick_settings,
)
from rlbench.adapters.vocabulary import KeyHandling
from rlbench.ray_facts.processes import RAY_SYSTEM_TITLES, RAY_TITLE_PREFIX

if TYPE_CHECKING:
    from rlbench.adapters.base import TrialConfig
    from rlbench.adapters.rllib.lifecycle import RLlibTrainer
    from rlbench.adapters.rllib.serving import RLlibServing

#: The oldest Ray this adapter drives, measured (docs/VERSIONS.md, "The supported Ray range"): 2.40.0, the first
#: release whose default is the new API stack. Every release from it to 2.60.0 builds, trains and records every
#: timer through :mod:`.compat` (the one seam that names which path each release range takes: 2.40-2.52 log
#: per-iteration values with ``clear_on_reduce``, 2.53 on through a stats class; 2.40 has no ``RLlibCallback``
#: nor ``build_algo``; ...), each release in an environment of its own dependencies (CartPole PPO and APPO,
#: 2026-11-28). An older ray is refused before anything runs.
SUPPORTED_RAY = ".".join(map(str, OLDEST))


class RLlibAdapter(Adapter):
    """RLlib (new API stack) as an :class:`rlbench.adapters.base.Adapter`."""

    name = "rllib"
    role_rules = ROLE_RULES
    #: ``ray.dashboard.optional_deps`` is what every ``ray.init`` of a local runtime imports to decide whether its
    #: dashboard agent runs minimal (``ray._private.utils.get_dashboard_dependency_error``): with ``ray[default]``'s
    #: packages installed (the ``serve`` extra brings them) that is aiohttp, grpc, opencensus, OpenTelemetry and
    #: prometheus_client, 249 modules and 0.19 s of the trial's CPU inside its ``ray.init`` (0.34 s against 0.15 s
    #: preloaded, 4 forks each, docs/MEASUREMENT.md 7), paid by every trial where Tune pays it once. The fork server
    #: skips a module that does not import (Ray without those packages). ``torch._dynamo``: torch's optimizers import it
    #: as the learner builds its first one (``Optimizer.__init__``, via ``torch._compile``), with sympy and
    #: torch.distributed, 978 modules in all: 1.06 s of every trial's build, 1.24 s of a 1.86 s 1-runner CartPole
    #: build by cProfile (2026-11-30, quiet), imported once here instead.
    preload_modules = (
        "rlbench.adapters.rllib.lifecycle",
        "ray",
        "ray.rllib.algorithms.ppo",
        "ray.rllib.algorithms.appo",
        "ray.rllib.algorithms.impala",
        "ray.rllib.algorithms.dqn",
        "ray.rllib.algorithms.sac",
        "torch",
        "torch._dynamo",
        "gymnasium",
        "ray.dashboard.optional_deps",
    )
    #: An env runner's or a learner's actor imports RLlib, torch and gymnasium in its worker: 3.8 s quiet, after the
    #: driver asked for it. Ray prestarts as many workers as the trial has CPUs when its driver connects; preloaded,
    #: they import these while the driver builds, and the actors start in workers that have them: a 1-runner
    #: CartPole PPO trial's build 8.2 and 8.8 s -> 6.2 and 6.6 s, its sweep's wall 113 and 124 s -> 99 and 115 s
    #: (12 trials a sweep, ABBA, 2 cores, load 1.4-1.8, 2026-11-30). The same module brings PPO, APPO, IMPALA,
    #: DQN and SAC and the learner's torch classes.
    worker_preload_modules = ("ray.rllib.env.single_agent_env_runner",)
    actor_class_roles = {title.removeprefix(RAY_TITLE_PREFIX): role for title, role in RAY_TITLE_ROLES.items()}
    system_titles = RAY_SYSTEM_TITLES
    algorithms = ALGORITHMS
    algo_only_keys = ALGO_ONLY_KEYS
    refused_values = REFUSED_VALUES
    removed_keys = REMOVED_KEYS
    runtime = "ray"
    requires = {"ray": SUPPORTED_RAY}
    #: ray.init 2.3-7 s, the build 1-3 s, ray.shutdown 1.1-1.4 s on 2 cores (RLLIB_NOTES); a trial of the
    #: issue-34 space cost 13-14 s with 3-5 s of training.
    cold_start_s = 10.0

    def key_handling(self, algo: str) -> dict[str, KeyHandling]:
        # every key of the vocabulary as it is: AlgorithmConfig.training(**the spec's training section)
        return {key: KeyHandling("mapped", f"AlgorithmConfig.training({key}=...)") for key in ALGO_TRAINING_KEYS[algo]}

    def hyperparameter_defaults(self, config: TrialConfig) -> dict[tuple[str, str], Any]:
        if config.algo != "PPO":  # the matched preset is PPO's (the one algorithm another framework runs)
            return {}
        return {**PPO_DEFAULTS, ("training", "train_batch_size_per_learner"): self.train_batch(config).per_learner}

    def is_asynchronous(self, algo: str) -> bool:
        return algo in ASYNC_ALGOS

    def trains_on_replay(self, algo: str) -> bool:
        return algo in REPLAY_ALGOS

    def result_metrics(self) -> list[str]:
        return metric_names()

    def metric_column(self, name: str) -> str | None:
        return metric_column(name)

    def resource_demand(self, config: TrialConfig) -> ResourceDemand:
        return resource_demand(config)

    def torch_threads(self, config: TrialConfig) -> dict[str, int]:
        return torch_threads(config)

    def train_batch(self, config: TrialConfig) -> TrainBatch:
        learners = max(1, config.learners.num_learners)  # 0: the driver's own learner
        per_learner = config.training.train_batch_size_per_learner or DEFAULT_TRAIN_BATCH[config.algo] // learners
        return TrainBatch(per_learner, learners)

    def sampling_processes(self, config: TrialConfig) -> int:
        return max(1, config.env_runners.num_env_runners)  # 0: the driver's local env runner samples

    def quick_settings(self, config: TrialConfig) -> dict[tuple[str, str], Any]:
        return quick_settings(config)

    def config_snippet(self, config: TrialConfig, title: str) -> ConfigSnippet:
        from rlbench.adapters.rllib.snippet import config_snippet

        return config_snippet(config, title)

    def quiet_logging(self) -> None:
        from rlbench.adapters.rllib.config import quiet_logging

        quiet_logging()

    def trainer(self, config: TrialConfig, *, seed: int | None, without: frozenset[str] = frozenset()) -> RLlibTrainer:
        from rlbench.adapters.rllib.lifecycle import RLlibTrainer

        return RLlibTrainer(config, seed=seed, without=without)

    def serving(self) -> RLlibServing:
        from rlbench.adapters.rllib.serving import RLlibServing

        return RLlibServing()


__all__ = ["SUPPORTED_RAY", "RLlibAdapter", "RAY_TITLE_ROLES", "resource_demand", "torch_threads"]
