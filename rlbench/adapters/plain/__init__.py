"""The plain adapter: a trial with no training framework and no runtime (no Ray process at all).

The trial process steps its env ``train_batch_size_per_learner`` times per iteration with uniformly
random actions and learns nothing. It exists for two reasons: it proves the adapter seam (the worker,
the sweep, the tables and the report drive it exactly as they drive RLlib; docs/ARCHITECTURE.md,
"adding a framework", follows it), and it lets the lifecycle tests (Ctrl-C, kill -9, resume, faults,
timeouts) run in about a second a trial where RLlib itself is not what they check: an RLlib trial
costs 8-15 s of start-up on 2 cores (Ray's runtime, the build). It also measures an env alone, in
the trial's own process, with the same iteration records as a training run.

Standard library only at module level; gymnasium and numpy are imported by the trainer.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from rlbench.adapters.base import ResourceDemand, TrainBatch
from rlbench.adapters.rllib.training import ALGO_ONLY_KEYS, ALGO_TRAINING_KEYS, ALGORITHMS, REFUSED_VALUES, REMOVED_KEYS

if TYPE_CHECKING:
    from rlbench.adapters.plain.trainer import PlainTrainer
    from rlbench.adapters.base import TrialConfig

#: The result metrics a ``stop:`` target may name with this adapter.
PLAIN_METRICS = ("episode_return_mean", "num_episodes")
#: Env steps per iteration when the spec sets no ``train_batch_size_per_learner``.
DEFAULT_STEPS = 1000
#: Env steps of a ``--quick`` iteration (the spec's own when fewer): nothing learns, so only the stepping is checked.
QUICK_STEPS = 100


class PlainAdapter:
    """No framework: the env stepped with random actions in the trial process, as an :class:`Adapter`."""

    name = "plain"
    roles = ("driver", "other")
    preload_modules = ("rlbench.adapters.plain.trainer", "gymnasium", "numpy")
    actor_class_roles: dict[str, str] = {}
    system_titles: tuple[str, ...] = ()
    # RLlib's spec keys, accepted and ignored (nothing learns; the trainer reads train_batch_size_per_learner
    # alone): a spec validates the same under either framework, so a grid over framework or a lifecycle test
    # that swaps rllib for plain meets the same errors. A framework of its own declares its own keys.
    algorithms = ALGORITHMS
    algo_only_keys = ALGO_ONLY_KEYS
    refused_values = REFUSED_VALUES
    removed_keys = REMOVED_KEYS
    runtime = None
    requires: dict[str, str] = {}
    #: A fork and an env build: the known-answer autoconfig test's trials cost about 0.5 s beside training.
    cold_start_s = 0.5

    def training_keys(self, algo: str) -> frozenset[str]:
        return ALGO_TRAINING_KEYS[algo]

    def hyperparameter_defaults(self, config: TrialConfig) -> dict[tuple[str, str], Any]:
        return {}  # nothing learns: no hyperparameter to match

    def refusals(self, config: TrialConfig) -> list[tuple[tuple[str, ...], str]]:
        return []

    def is_asynchronous(self, algo: str) -> bool:
        return False

    def trains_on_replay(self, algo: str) -> bool:
        return False  # it steps its env and trains nothing, whatever the spec's algo

    def classify_process(self, cmdline: list[str], *, is_driver: bool) -> str:
        return "driver" if is_driver else "other"

    def result_metrics(self) -> list[str]:
        return list(PLAIN_METRICS)

    def metric_column(self, name: str) -> str | None:
        return name if name == "episode_return_mean" else None

    def resource_demand(self, config: TrialConfig) -> ResourceDemand:
        return ResourceDemand(config.resources.num_cpus_for_main_process)

    def torch_threads(self, config: TrialConfig) -> dict[str, int]:
        n = config.threads.driver_torch_threads or max(1, config.resources.num_cpus_for_main_process)
        return {"driver": n, "learner": n, "env_runner": n}

    def train_batch(self, config: TrialConfig) -> TrainBatch:
        return TrainBatch(config.training.train_batch_size_per_learner or DEFAULT_STEPS, 1)

    def sampling_processes(self, config: TrialConfig) -> int:
        return 1  # the trial process steps its one env

    def quick_settings(self, config: TrialConfig) -> dict[tuple[str, str], Any]:
        steps = self.train_batch(config).per_learner
        return {("training", "train_batch_size_per_learner"): QUICK_STEPS} if steps > QUICK_STEPS else {}

    def config_snippet(self, config: TrialConfig, title: str) -> None:
        return None  # no framework: no code to paste

    def quiet_logging(self) -> None:
        pass

    def set_driver_threads(self, n: int) -> None:
        pass  # no torch here: the driver's BLAS pools are limited by the worker (threadpoolctl)

    def make_env(self, env: str, env_config: dict[str, Any]) -> Any:
        from rlbench.adapters.envs import make_env

        return make_env(env, env_config)

    def trainer(self, config: TrialConfig, *, seed: int | None, without: frozenset[str] = frozenset()) -> PlainTrainer:
        from rlbench.adapters.plain.trainer import PlainTrainer

        return PlainTrainer(config, seed=seed, steps_per_iteration=self.train_batch(config).per_learner)

    def serving(self) -> None:
        return None  # nothing learns here: no policy to serve
