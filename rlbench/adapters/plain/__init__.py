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

from rlbench.adapters.base import Adapter
from rlbench.adapters.demand import ResourceDemand, TrainBatch
from rlbench.adapters.vocabulary import ALGO_ONLY_KEYS, ALGO_TRAINING_KEYS, ALGORITHMS, KeyHandling

if TYPE_CHECKING:
    from rlbench.adapters.base import TrialConfig
    from rlbench.adapters.plain.trainer import PlainTrainer

#: The result metrics a ``stop:`` target may name with this adapter.
PLAIN_METRICS = ("episode_return_mean", "num_episodes")
#: Env steps per iteration when the spec sets no ``train_batch_size_per_learner``.
DEFAULT_STEPS = 1000
#: Env steps of a ``--quick`` iteration (the spec's own when fewer): nothing learns, so only the stepping is checked.
QUICK_STEPS = 100


class PlainAdapter(Adapter):
    """No framework: the env stepped with random actions in the trial process, as an :class:`Adapter`. It trains
    nothing whatever the spec's algo: no hyperparameter to match, nothing asynchronous, nothing replayed (the base's
    answers)."""

    name = "plain"
    preload_modules = ("rlbench.adapters.plain.trainer", "gymnasium", "numpy")
    # The vocabulary's keys, taken and ignored but for the batch (nothing learns): a spec validates the same under
    # either framework, so a grid over framework or a lifecycle test that swaps rllib for plain meets the same
    # errors.
    algorithms = ALGORITHMS
    algo_only_keys = ALGO_ONLY_KEYS
    #: A fork and an env build: the known-answer autoconfig test's trials cost about 0.5 s beside training.
    cold_start_s = 0.5

    def key_handling(self, algo: str) -> dict[str, KeyHandling]:
        ignored = KeyHandling("ignored", "nothing learns: the trial steps its env with random actions")
        return {
            key: KeyHandling("mapped", "env steps per iteration") if key == "train_batch_size_per_learner" else ignored
            for key in ALGO_TRAINING_KEYS[algo]
        }

    def result_metrics(self) -> list[str]:
        return list(PLAIN_METRICS)

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

    def set_driver_threads(self, n: int) -> None:
        pass  # no torch here: the driver's BLAS pools are limited by the worker (threadpoolctl)

    def trainer(self, config: TrialConfig, *, seed: int | None, without: frozenset[str] = frozenset()) -> PlainTrainer:
        from rlbench.adapters.plain.trainer import PlainTrainer

        return PlainTrainer(config, seed=seed, steps_per_iteration=self.train_batch(config).per_learner)
