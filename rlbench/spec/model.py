"""The sweep spec's model: the trial config and the validated sweep, from the typed sections.

The sections mirror RLlib's ``AlgorithmConfig`` (``environment``, ``env_runners``, ``learners``,
``resources``, ``training``, ``rl_module``: :mod:`rlbench.spec.sections`, :mod:`rlbench.spec.training`); old
RLlib names are accepted as aliases (:data:`ALIASES`) and translated to the new API stack by
:mod:`rlbench.spec.load`, because RLlib ignores several of them silently. Every field has a docstring: it is
the spec's reference (docs/SPEC.md, docs/SCHEMA.md).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any, Literal, get_args

from pydantic import BaseModel, Field, TypeAdapter, ValidationError, model_validator

from rlbench.adapters import FRAMEWORKS, get_adapter
from rlbench.spec.errors import SpecError, _ValueErrorAt
from rlbench.spec.limits import MAX_CPUS, MAX_ITERATIONS, MAX_REPEATS, MAX_SECONDS, MAX_SEED
from rlbench.spec.relative import RelativeValue
from rlbench.spec.sections import (
    EnvironmentSection,
    EnvRunnersSection,
    LearnersSection,
    ReportingSection,
    ResourcesSection,
    RLModuleSection,
    ThreadsSection,
    _Section,
)
from rlbench.spec.stop import STOP_LIMITS, StopSection, StopTarget
from rlbench.spec.switch_off import SwitchOff
from rlbench.spec.training import ALGOS, Algo, TrainingSection, and_names, foreign_key_message, foreign_training_keys
from rlbench.spec.variants import MEASURE_KEYS, Variant

#: Old RLlib name -> new-API-stack knob. ``num_gpus`` becomes rlbench's ``learner_gpus``
#: (see :class:`LearnersSection` for how that maps to ``num_learners`` / ``num_gpus_per_learner``).
ALIASES: dict[str, str] = {
    "num_workers": "num_env_runners",
    "num_rollout_workers": "num_env_runners",
    "num_cpus_for_driver": "num_cpus_for_main_process",
    "num_envs_per_worker": "num_envs_per_env_runner",
    "num_cpus_per_worker": "num_cpus_per_env_runner",
    "num_gpus_per_worker": "num_gpus_per_env_runner",
    "sgd_minibatch_size": "minibatch_size",
    "num_sgd_iter": "num_epochs",
    "train_batch_size": "train_batch_size_per_learner",
    "num_gpus": "learner_gpus",
    "max_requests_in_flight_per_aggregator_worker": "max_requests_in_flight_per_aggregator_actor",
}


#: The roles ``profile_roles`` may name, and its default: all of them.
ProfileRole = Literal["driver", "learner", "env_runner", "ray_system", "other"]
PROFILE_ROLES: tuple[ProfileRole, ...] = get_args(ProfileRole)

#: Why a seed must be below 2**31, in the words of a refusal (the one bound: rlbench.spec.seeds).
SEED_RANGE = (
    f"seeds must be 0 to {MAX_SEED}, because RLlib seeds env runner i with seed + i (gymnasium sub-env j with + j) "
    "and numpy takes seeds below 2**32"
)

#: The frameworks a spec may name: the registry's (``rlbench.adapters.FRAMEWORKS``), so a framework registered is one
#: a spec may name with nothing else to edit.
Framework = Literal[FRAMEWORKS]  # type: ignore[valid-type]  # built from the registry: pydantic checks it at run time

__all__ = [
    "ALIASES",
    "Algo",
    "Framework",
    "SpecError",
    "STOP_LIMITS",
    "StopSection",
    "StopTarget",
    "SweepSpec",
    "TrainingSection",
    "TrialConfig",
]


class TrialSections(_Section):
    """The keys one trial runs with, declared once: a :class:`SweepSpec` holds them as the base its
    grid and variants vary, a :class:`TrialConfig` as one trial's values after they are applied."""

    framework: Framework = "rllib"
    """The training system whose adapter runs the trial (``rllib``; ``plain``: no framework and no Ray,
    the env stepped with random actions in the trial process, for lifecycle tests and env costs; ``sb3``:
    Stable-Baselines3's PPO, no Ray, ``pip install -e ".[sb3]"``). Also a grid axis and a variant key: trials of
    several frameworks get every PPO hyperparameter the spec leaves unset pinned to one value (docs/SPEC.md,
    "Comparing frameworks")."""
    algo: Algo = "PPO"
    """The RLlib algorithm (``PPO``: synchronous; ``APPO``, ``IMPALA``: asynchronous sampling, V-trace; ``DQN``,
    ``SAC``: off-policy, from a replay buffer). Also a grid axis: ``algo: [PPO, APPO]``."""
    execution: Literal["tune", "script"] = "tune"
    """How the driver runs: ``tune`` as a Tune trial actor would (niced as Ray's workers, torch and BLAS threads
    limited to its CPUs); ``script`` as a plain ``algo.train()`` loop (normal priority, the libraries' own
    thread defaults, no ``pin_driver``). docs/RUNNING.md, "Execution". Also a grid axis and a variant key."""
    switch_off: SwitchOff = Field(default_factory=list)
    """rlbench's own choices switched off, a fidelity diagnosis (``[affinity, threads]``; the names in
    :data:`rlbench.spec.switch_off.SWITCHES`): recorded in each plan's ``switched_off`` and in the manifest.
    Empty (the default): none. Also a grid axis and a variant key, to compare with nothing off."""
    environment: EnvironmentSection
    """Which env and its env_config."""
    env_runners: EnvRunnersSection = Field(default_factory=EnvRunnersSection)
    """Sampling resources."""
    learners: LearnersSection = Field(default_factory=LearnersSection)
    """Learning resources."""
    resources: ResourcesSection = Field(default_factory=ResourcesSection)
    """Driver resources."""
    threads: ThreadsSection = Field(default_factory=ThreadsSection)
    """Explicit torch thread counts per role."""
    training: TrainingSection = Field(default_factory=TrainingSection)
    """Training keys (each algorithm accepts its own: its adapter's ``training_keys(algo)``)."""
    reporting: ReportingSection = Field(default_factory=ReportingSection)
    """What one iteration is."""
    rl_module: RLModuleSection = Field(default_factory=RLModuleSection)
    """Network shape."""
    cpus: int | None = Field(None, ge=1, le=MAX_CPUS)
    """Machine size to emulate: the trial's Ray gets this many CPUs (less the driver's) and its
    process tree is pinned to this many cores. None: all cores."""


class TrialConfig(TrialSections):
    """Everything one trial runs with: the spec's sections after the grid values are applied."""

    @model_validator(mode="after")
    def _keys_of_its_algorithm(self) -> TrialConfig:
        """Every key the trial sets is one its framework's adapter accepts for its algorithm."""
        adapter = get_adapter(self.framework)
        if self.algo not in adapter.algorithms:
            raise _ValueErrorAt(
                ("algo",),
                f"framework {self.framework} runs {and_names(adapter.algorithms)}, not "
                f"{self.algo}: set algo to one of them, or another framework",
            )
        self.training = self.training.for_algo(self.algo)
        foreign = foreign_training_keys(self.algo, self.training, self.framework)
        if foreign:
            key, belongs_to = foreign[0]
            raise _ValueErrorAt(("training", key), foreign_key_message(self.algo, "training", key, belongs_to))
        for (section, key), algos in adapter.algo_only_keys.items():
            if self.algo not in algos and key in getattr(self, section).model_fields_set:
                if getattr(getattr(self, section), key) not in (None, 0):
                    raise _ValueErrorAt((section, key), foreign_key_message(self.algo, section, key, algos))
        refused = adapter.refusals(self)  # what the framework cannot run faithfully, with what to set instead
        if refused:
            path, why = refused[0]
            raise _ValueErrorAt(path, f"framework {self.framework}: {why}")
        return self

    @model_validator(mode="after")
    def _check_batch(self) -> TrialConfig:
        t = self.training
        if t.minibatch_size and t.train_batch_size_per_learner and t.minibatch_size > t.train_batch_size_per_learner:
            raise _ValueErrorAt(
                ("training", "minibatch_size"),
                f"training.minibatch_size={t.minibatch_size} is larger "
                f"than training.train_batch_size_per_learner={t.train_batch_size_per_learner}",
            )
        if self.execution == "script" and self.resources.pin_driver:
            raise _ValueErrorAt(
                ("resources", "pin_driver"),
                "pin_driver pins the driver to its cores, which a plain "
                "script does not do: with execution: script, drop pin_driver",
            )
        return self


class RaySection(_Section):
    """Settings of each trial's private Ray runtime."""

    include_dashboard: bool = False
    """Start Ray's dashboard (web UI) in each trial; it is then bound to 127.0.0.1 only."""


class _Named(_Section):
    """The sweep's name, a base of its own only to keep it first (see :class:`SweepSpec`)."""

    name: str = Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]*$", max_length=100)
    """Sweep name; used in the default output folder ``results/<name>/<timestamp>/``."""


def check_variants(spec: SweepSpec) -> SweepSpec:
    """The sweep-level checks of ``variants`` and ``rounds`` (:class:`SweepSpec`'s model validator); with
    ``rounds`` the repeats are the rounds (round r is repeat r: its seed, its trial ids)."""
    if "variants" in spec.model_fields_set and not spec.variants:
        raise _ValueErrorAt(
            ("variants",),
            "empty list: give the variants to compare, each as {name: ..., set: "
            "{...}} (the first is the reference), or remove 'variants:'",
        )
    seen: dict[str, int] = {}
    for i, variant in enumerate(spec.variants):
        if variant.name in seen:
            raise _ValueErrorAt(
                ("variants", i, "name"),
                f"variant name '{variant.name}' is used twice (also "
                f"variants[{seen[variant.name]}]): give every variant its own name",
            )
        seen[variant.name] = i
    for i, variant in enumerate(spec.variants):  # measurement keys: checked as the spec's own key is
        for key in set(variant.set) & set(MEASURE_KEYS):
            field = type(spec).model_fields[key]
            try:
                adapter: TypeAdapter[Any] = TypeAdapter(Annotated[field.annotation, field])  # type: ignore[arg-type]
                variant.set[key] = adapter.validate_python(variant.set[key])
            except ValidationError as e:
                raise _ValueErrorAt(
                    ("variants", i, "set", key), f"{e.errors()[0]['msg']} (got {variant.set[key]!r})"
                ) from None
    if spec.rounds > 1:
        if "repeats" in spec.model_fields_set and spec.repeats not in (1, spec.rounds):
            raise _ValueErrorAt(
                ("repeats",),
                f"repeats={spec.repeats} and rounds={spec.rounds}: each round runs "
                "every configuration once, so rounds are the repeats; keep 'rounds' only",
            )
        spec.repeats = spec.rounds
    if spec.rounds_per_process > 1 and spec.stop.target is not None:
        raise _ValueErrorAt(
            ("rounds_per_process",),
            f"rounds_per_process={spec.rounds_per_process} with stop.target: a time to the target is a whole "
            "process's, and a window of one is not a round of it; remove one of the two",
        )
    return spec


class SweepSpec(TrialSections, _Named):
    """A validated sweep: the base trial config, the grid over it, and how to run each trial.

    ``name`` comes from its own base so that it stays the first key (pydantic puts the fields of the
    last base first), in the manifest's spec and in error lists, as it always was."""

    grid: dict[str, list[Any]] = Field(default_factory=dict)
    """Axis -> values; the trials are the cartesian product (axis names: see :func:`axis_target`)."""
    repeats: int = Field(1, ge=1, le=MAX_REPEATS)
    """How many times each grid point runs (one after another; ``rounds`` interleaves them)."""
    variants: list[Variant] = Field(default_factory=list, max_length=26)
    """Named sets of keys compared on every grid point, the first the reference (:mod:`rlbench.spec.variants`)."""
    rounds: int = Field(1, ge=1, le=MAX_REPEATS)
    """Rounds: the whole grid (every variant) once per round, the variants' order rotating each round."""
    rounds_per_process: int = Field(1, ge=1, le=MAX_REPEATS)
    """With ``rounds``: each configuration's trial process reads this many rounds as measured windows of one built
    trainer (issue 56), the windows of up to three configurations' processes interleaved, so a round costs a start
    only every this many rounds (a history trial here: 37 s of start, warm-up and stop around 8.5 s of steady
    iterations). 1 (the default): every round a trial of its own. A round is then a window, not a process: the
    report and the history say so, with the processes a configuration had. Without rounds (one round: a plain
    sweep of a history's spec) it changes nothing."""
    stop: StopSection
    """When a trial stops."""
    warmup_iterations: int = Field(1, ge=0, le=MAX_ITERATIONS)
    """Leading iterations flagged ``warmup`` and left out of steady-state figures."""
    trial_timeout_s: float = Field(900.0, gt=0, le=MAX_SECONDS)
    """A trial still running after this long is killed with its process tree (status ``timeout``)."""
    trial_memory_limit_bytes: int | None = Field(None, ge=1 << 20, le=1 << 60)
    """A trial whose processes together hold more resident memory than this is killed with its process tree
    (status ``failed``, reason ``out of memory``). None: no limit; else at least 1 MiB."""
    ray: RaySection = Field(default_factory=RaySection)
    """Settings of each trial's Ray runtime."""
    sample_hz: float = Field(10.0, ge=0.1, le=100)
    """Utilization samples per second (0.1 to 100)."""
    overlap_trial_start: bool = True
    """Launch the next trial (its process and its Ray runtime) while the previous one shuts down; it
    builds nothing, so no measured iteration starts, before the previous trial's processes are gone.
    Saves the shutdown, 1.4-1.9 s a trial (measured); the start's ``ray_init_s`` may share the CPU with
    that shutdown (``overlap_s`` says how long). false: one trial's processes at a time. Local sweeps only."""
    profile_hz: int = Field(0, ge=0, le=1000)
    """Stack samples per second py-spy takes of every Python process of each trial, from outside
    (as the utilization sampler does), in the steady-state window only: per trial
    ``profiles/<role>-<pid>.speedscope.json`` and a flame graph per role, per sweep
    ``profiles.parquet``. 0 (the default): no profiling. 100 is py-spy's own default rate; its cost
    is measured in docs/MEASUREMENT.md. Needs ptrace permission (root, or CAP_SYS_PTRACE); without
    it the trial runs unprofiled and says so (``profile_status``)."""
    profile_native: bool = False
    """With ``profile_hz``: also record native (C/C++) frames (py-spy ``--native``), so time inside
    torch's kernels shows under the C++ function (``mkl_blas_..._sgemm_kernel``), not only under the
    Python line that called it. py-spy then pauses each process at every sample and uses about ten
    times the CPU (docs/MEASUREMENT.md)."""
    profile_roles: list[ProfileRole] = Field(
        default_factory=lambda: list(PROFILE_ROLES), min_length=1, max_length=len(PROFILE_ROLES)
    )
    """With ``profile_hz``: the roles whose processes py-spy samples (default: every role). py-spy
    costs about the same per process whether it is busy or idle (it reads every thread's state at
    every sample), so leaving out Ray's own mostly idle agents (``[driver, learner, env_runner]``)
    cuts its cost most on a small machine (docs/MEASUREMENT.md)."""
    env_ceiling_s: float = Field(1.0, ge=0, le=3600)
    """Before the trials, step each distinct (env, env_config, env-runner count, cpus) alone for this
    many seconds in as many processes as the trial has env runners (``rlbench envbench``), so every
    trial gets ``sampling_efficiency``. 0: do not measure (those columns stay null)."""
    seed: int | list[int] | None = None
    """Seeds of the repeats (every trial is seeded; grid points with the same repeat index share a
    seed). None: drawn fresh when the sweep is planned and recorded (a resume reuses them); an int N:
    derived from N (:func:`rlbench.spec.seeds.derive_seed`); a list: the seeds of repeats 0, 1, ...
    as given (at least ``repeats`` of them; what ``rlbench reproduce`` writes)."""

    @model_validator(mode="after")
    def _variants_and_rounds(self) -> SweepSpec:
        return check_variants(self)

    @model_validator(mode="after")
    def _seeds_cover_repeats(self) -> SweepSpec:
        if isinstance(self.seed, list):
            if len(self.seed) < self.repeats:
                raise _ValueErrorAt(
                    ("seed",),
                    f"seed lists {len(self.seed)} seeds but repeats={self.repeats}: give "
                    "one seed per repeat, or a single number to derive them from",
                )
            wrong = [s for s in self.seed if not 0 <= s <= MAX_SEED]
            if wrong:
                raise _ValueErrorAt(("seed",), f"seed {wrong[0]} is out of range: {SEED_RANGE}")
        elif self.seed is not None and not 0 <= self.seed <= MAX_SEED:
            raise _ValueErrorAt(("seed",), f"seed {self.seed} is out of range: {SEED_RANGE}")
        return self

    @model_validator(mode="after")
    def _warmup_leaves_steady_state(self) -> SweepSpec:
        if self.stop.iterations is not None and self.stop.seconds is None:
            if self.stop.iterations <= self.warmup_iterations:
                raise _ValueErrorAt(
                    ("stop", "iterations"),
                    f"stop.iterations={self.stop.iterations} leaves no steady-"
                    f"state iteration after warmup_iterations={self.warmup_iterations}: raise stop.iterations",
                )
        return self


TRIAL_SECTIONS: dict[str, type[BaseModel]] = {
    "environment": EnvironmentSection,
    "env_runners": EnvRunnersSection,
    "learners": LearnersSection,
    "resources": ResourcesSection,
    "threads": ThreadsSection,
    "training": TrainingSection,
    "reporting": ReportingSection,
    "rl_module": RLModuleSection,
}


def _knob_names(model: type[BaseModel]) -> list[str]:
    """A section's keys (``training.<algo>`` sub-sections are not knobs: no grid axis sets them)."""
    return [f.alias or name for name, f in model.model_fields.items() if (f.alias or name) not in ALGOS]


#: knob name -> the section that holds it (knob names are unique across sections).
KNOB_SECTION: dict[str, str] = {
    knob: section for section, model in TRIAL_SECTIONS.items() for knob in _knob_names(model)
}


@dataclass(frozen=True)
class GridPoint:
    """One point of the grid."""

    axes: dict[str, Any]
    """Trials-table column -> value for every grid axis (mappings and lists JSON-encoded)."""
    config: TrialConfig
    """The resolved config this point runs with (a relative value, see ``relative``, stands in as 1
    until the plan resolves it on the machine)."""
    relative: tuple[RelativeValue, ...] = ()
    """The point's grid values written relative to the machine (``cpus-1``); resolved by the plan."""
    raw: dict[str, Any] | None = None
    """The config mapping as written, relative values included (only when ``relative`` is not empty)."""
    variant: str | None = None
    """The variant whose keys it runs with (``variants:``); None without variants."""


@dataclass(frozen=True)
class LoadedSpec:
    """A validated spec file with its grid expanded."""

    source: Path
    """The YAML file it came from."""
    spec: SweepSpec
    """The validated spec."""
    points: list[GridPoint]
    """Grid points in grid order (the last axis varies fastest), each point's variants after one another."""
    alias_notes: list[str]
    """One line per old name that was translated, e.g. ``num_workers -> num_env_runners``."""
    matched_notes: list[str] = field(default_factory=list)
    """One line per hyperparameter the matched preset pinned (trials of several frameworks;
    :mod:`rlbench.spec.matched`)."""
    quick: bool = False
    """Loaded for ``--quick`` (:mod:`rlbench.spec.quick`): one repeat, no warm-up, one iteration, a cut train batch."""
