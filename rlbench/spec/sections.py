"""The spec's sections that mirror RLlib's ``AlgorithmConfig`` one for one (``environment``, ``env_runners``,
``learners``, ``resources``, ``reporting``, ``rl_module``) and rlbench's own ``threads``: typed, bounded, a
docstring per key (the spec's reference). The ``training`` section is typed in :mod:`rlbench.spec.training`;
:mod:`rlbench.spec.model` puts them together into the trial config and the sweep.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from rlbench.spec.limits import MAX_ACTORS, MAX_BATCH, MAX_CPUS, MAX_GPUS, MAX_SECONDS, MAX_THREADS


class _Section(BaseModel):
    model_config = ConfigDict(
        extra="forbid", use_attribute_docstrings=True, validate_assignment=False, allow_inf_nan=False
    )


class EnvironmentSection(_Section):
    env: str
    """A gymnasium id (``CartPole-v1``) or an import path ``package.module:Class``."""
    env_config: dict[str, Any] = Field(default_factory=dict)
    """Passed to the env's constructor (import paths) or ``gymnasium.make`` keyword arguments (ids)."""


class EnvRunnersSection(_Section):
    num_env_runners: int = Field(1, ge=0, le=MAX_ACTORS)
    """Remote env-runner actors (0: sample in the driver). rlbench's default is 1, RLlib's PPO is 2."""
    num_envs_per_env_runner: int = Field(1, ge=1, le=MAX_BATCH)
    """Vectorized env copies per env runner."""
    num_cpus_per_env_runner: float = Field(1.0, gt=0, le=MAX_CPUS)
    """CPUs Ray reserves for each env runner; its torch threads default to the floor of this."""
    num_gpus_per_env_runner: float = Field(0.0, ge=0, le=MAX_GPUS)
    """GPUs Ray reserves for each env runner."""
    rollout_fragment_length: Annotated[int, Field(ge=1, le=MAX_BATCH)] | Literal["auto"] | None = None
    """Steps each env collects per sample call; ``auto`` lets RLlib derive it from the batch size; None
    (default) keeps the algorithm's default (PPO: ``auto``; APPO and IMPALA: 50)."""
    gym_env_vectorize_mode: Literal["sync", "async"] | None = None
    """How an env runner steps its ``num_envs_per_env_runner`` envs: ``sync``, one after another in its own
    process (RLlib's default), or ``async``, each in a subprocess of its own (gymnasium's AsyncVectorEnv; the
    subprocesses count as the env runner's and reserve no CPU of their own). None: RLlib's default."""


class LearnersSection(_Section):
    num_learners: int = Field(0, ge=0, le=MAX_ACTORS)
    """Remote learner actors; 0 puts the learner inside the driver process."""
    num_cpus_per_learner: Annotated[float, Field(ge=0, le=MAX_CPUS)] | Literal["auto"] = "auto"
    """CPUs per remote learner; ``auto`` is 1 without a GPU and 0 with one (RLlib's rule)."""
    num_gpus_per_learner: float = Field(0.0, ge=0, le=MAX_GPUS)
    """GPUs per learner (also for the driver's learner when num_learners is 0)."""
    num_aggregator_actors_per_learner: int = Field(0, ge=0, le=MAX_ACTORS)
    """APPO and IMPALA: actors (1 CPU each) per learner that turn episodes into train batches off the
    driver (with num_learners 0: per the driver's learner). 0: the driver's learner connector does it."""
    max_requests_in_flight_per_aggregator_actor: int | None = Field(None, ge=1, le=MAX_BATCH)
    """APPO and IMPALA: batches each aggregator actor may be building at once (RLlib's default: 3)."""
    learner_gpus: float | None = Field(None, ge=0, le=MAX_GPUS)
    """rlbench's translation of the old ``num_gpus``: total learner GPUs. 0: CPU learning; 0 < x <= 1:
    num_learners=0 and num_gpus_per_learner=x (the driver's learner on a GPU); an integer N > 1:
    num_learners=N, num_gpus_per_learner=1."""

    @model_validator(mode="after")
    def _resolve(self) -> LearnersSection:
        explicit = self.model_fields_set
        if self.learner_gpus is not None:
            gpus = self.learner_gpus
            if gpus > 1 and gpus != int(gpus):
                raise ValueError(f"learner_gpus={gpus}: above 1 it must be a whole number of GPUs")
            num_learners, per_learner = (
                (self.num_learners, 0.0) if gpus == 0 else (0, float(gpus)) if gpus <= 1 else (int(gpus), 1.0)
            )
            # A value given beside learner_gpus is refused only when it says something else: a plan.json holds
            # all three (the resolved pair beside learner_gpus) and must read back as the same trial.
            if "num_gpus_per_learner" in explicit and self.num_gpus_per_learner != per_learner:
                raise ValueError(
                    f"learner_gpus={gpus:g} (old name num_gpus) means num_gpus_per_learner={per_learner:g}, but "
                    f"num_gpus_per_learner={self.num_gpus_per_learner:g} is set too: keep one"
                )
            if "num_learners" in explicit and self.num_learners != num_learners:
                raise ValueError(
                    f"learner_gpus={gpus:g} (old name num_gpus) decides num_learners={num_learners}, but "
                    f"num_learners={self.num_learners} is set too: drop num_learners, or use num_learners with "
                    "num_gpus_per_learner instead"
                )
            self.num_learners, self.num_gpus_per_learner = num_learners, per_learner
        if self.num_cpus_per_learner == "auto":
            self.num_cpus_per_learner = 0.0 if self.num_gpus_per_learner > 0 else 1.0
        return self

    @property
    def total_gpus(self) -> float:
        """GPUs all learners together ask for."""
        return self.num_gpus_per_learner * max(1, self.num_learners)


class ResourcesSection(_Section):
    num_cpus_for_main_process: int = Field(1, ge=0, le=MAX_CPUS)
    """CPUs reserved for the driver out of the trial's ``cpus``, as Tune reserves them for its trial
    actor (docs/RUNNING.md): Ray gets the rest, so env runners and learners cannot use them, and the driver
    gets this many torch threads (at least 1)."""
    pin_driver: bool = False
    """Also pin the driver to its reserved cores and every other process of the trial to the rest.
    Off by default: Tune pins nothing, and rlbench measures what a user gets under Tune."""


class ThreadsSection(_Section):
    driver_torch_threads: int | None = Field(None, ge=1, le=MAX_THREADS)
    """torch threads in the driver (which holds the learner when num_learners=0); default:
    max(1, num_cpus_for_main_process)."""
    learner_torch_threads: int | None = Field(None, ge=1, le=MAX_THREADS)
    """torch threads in each remote learner; default: max(1, floor(num_cpus_per_learner))."""
    env_runner_torch_threads: int | None = Field(None, ge=1, le=MAX_THREADS)
    """torch threads in each env runner; default: max(1, floor(num_cpus_per_env_runner))."""


class ReportingSection(_Section):
    """What one training iteration is (RLlib's ``reporting()``); a key left out keeps the algorithm's default."""

    min_time_s_per_iteration: float | None = Field(None, ge=0, le=MAX_SECONDS)
    """Repeat RLlib's training step until the iteration has lasted this long (PPO: unset, one step per
    iteration; APPO and IMPALA: 10 s)."""
    min_sample_timesteps_per_iteration: int | None = Field(None, ge=0, le=MAX_BATCH)
    """Repeat the training step until this many env steps were sampled in the iteration."""
    min_train_timesteps_per_iteration: int | None = Field(None, ge=0, le=MAX_BATCH)
    """Repeat the training step until this many env steps were trained on in the iteration."""


class RLModuleSection(_Section):
    """The default RLModule's model_config; a key left out keeps RLlib's default."""

    fcnet_hiddens: list[Annotated[int, Field(ge=1, le=1 << 20)]] | None = Field(None, max_length=1_000)
    """Hidden layer sizes of the policy and value networks."""
    fcnet_activation: Literal["tanh", "relu", "swish", "linear"] | None = None
    """Activation of the hidden layers."""
    vf_share_layers: bool | None = None
    """Whether policy and value function share their hidden layers."""
    head_fcnet_hiddens: list[Annotated[int, Field(ge=1, le=1 << 20)]] | None = Field(None, max_length=1_000)
    """Hidden layer sizes of the heads on top of the encoder (RLlib's Atari CNN: [256]; DQN's Q head, SAC's heads)."""
