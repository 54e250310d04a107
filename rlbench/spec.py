"""Spec stage: read a sweep YAML into a validated :class:`SweepSpec`.

Everything a user can get wrong in the YAML is caught here, before anything runs, and reported
as a :class:`SpecError` naming the file, the line, the key path and a fix (the CLI exits 2).

The sections mirror RLlib's ``AlgorithmConfig`` (``environment``, ``env_runners``, ``learners``,
``resources``, ``training``, ``rl_module``); old RLlib names are accepted as aliases (:data:`ALIASES`)
and translated to the new API stack, because RLlib ignores several of them silently.
"""

from __future__ import annotations

import difflib
import importlib
import itertools
import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, Union

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

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
}


class SpecError(Exception):
    """A problem in the user's sweep spec; the message says where and how to fix it."""


class _ValueErrorAt(ValueError):
    """A cross-field check's error, pinned to the key the user should change (for its line)."""

    def __init__(self, loc: tuple[str, ...], message: str):
        super().__init__(message)
        self.loc = loc


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True, validate_assignment=False)


class EnvironmentSection(_Section):
    env: str
    """A gymnasium id (``CartPole-v1``) or an import path ``package.module:Class``."""
    env_config: dict[str, Any] = Field(default_factory=dict)
    """Passed to the env's constructor (import paths) or ``gymnasium.make`` keyword arguments (ids)."""


class EnvRunnersSection(_Section):
    num_env_runners: int = Field(1, ge=0)
    """Remote env-runner actors (0: sample in the driver). rlbench's default is 1, RLlib's PPO is 2."""
    num_envs_per_env_runner: int = Field(1, ge=1)
    """Vectorized env copies per env runner."""
    num_cpus_per_env_runner: float = Field(1.0, gt=0)
    """CPUs Ray reserves for each env runner; its torch threads default to the floor of this."""
    num_gpus_per_env_runner: float = Field(0.0, ge=0)
    """GPUs Ray reserves for each env runner."""
    rollout_fragment_length: Union[int, Literal["auto"]] = "auto"
    """Steps each env collects per sample call; ``auto`` lets RLlib derive it from the batch size."""


class LearnersSection(_Section):
    num_learners: int = Field(0, ge=0)
    """Remote learner actors; 0 puts the learner inside the driver process."""
    num_cpus_per_learner: Union[float, Literal["auto"]] = "auto"
    """CPUs per remote learner; ``auto`` is 1 without a GPU and 0 with one (RLlib's rule)."""
    num_gpus_per_learner: float = Field(0.0, ge=0)
    """GPUs per learner (also for the driver's learner when num_learners is 0)."""
    learner_gpus: Union[float, None] = Field(None, ge=0)
    """rlbench's translation of the old ``num_gpus``: total learner GPUs. 0: CPU learning; 0 < x <= 1:
    num_learners=0 and num_gpus_per_learner=x (the driver's learner on a GPU); an integer N > 1:
    num_learners=N, num_gpus_per_learner=1."""

    @model_validator(mode="after")
    def _resolve(self) -> "LearnersSection":
        explicit = self.model_fields_set
        if self.learner_gpus is not None:
            gpus = self.learner_gpus
            if "num_gpus_per_learner" in explicit:
                raise ValueError(
                    "learner_gpus (old name num_gpus) and num_gpus_per_learner both set: keep one"
                )
            if gpus > 0 and "num_learners" in explicit:
                raise ValueError(
                    "learner_gpus > 0 (old name num_gpus) decides num_learners: drop num_learners, or "
                    "use num_learners with num_gpus_per_learner instead"
                )
            if gpus > 1 and gpus != int(gpus):
                raise ValueError(f"learner_gpus={gpus}: above 1 it must be a whole number of GPUs")
            if gpus == 0:
                self.num_gpus_per_learner = 0.0
            elif gpus <= 1:
                self.num_learners, self.num_gpus_per_learner = 0, float(gpus)
            else:
                self.num_learners, self.num_gpus_per_learner = int(gpus), 1.0
        if self.num_cpus_per_learner == "auto":
            self.num_cpus_per_learner = 0.0 if self.num_gpus_per_learner > 0 else 1.0
        return self

    @property
    def total_gpus(self) -> float:
        """GPUs all learners together ask for."""
        return self.num_gpus_per_learner * max(1, self.num_learners)


class ResourcesSection(_Section):
    num_cpus_for_main_process: int = Field(1, ge=0)
    """CPUs reserved for the driver out of the trial's ``cpus`` (rlbench's meaning, see README):
    Ray gets the rest, the driver is pinned to these cores and gets this many torch threads."""


class ThreadsSection(_Section):
    driver_torch_threads: Union[int, None] = Field(None, ge=1)
    """torch threads in the driver (which holds the learner when num_learners=0); default:
    max(1, num_cpus_for_main_process)."""
    learner_torch_threads: Union[int, None] = Field(None, ge=1)
    """torch threads in each remote learner; default: max(1, floor(num_cpus_per_learner))."""
    env_runner_torch_threads: Union[int, None] = Field(None, ge=1)
    """torch threads in each env runner; default: max(1, floor(num_cpus_per_env_runner))."""


class TrainingSection(_Section):
    """PPO training keys; a key left out keeps RLlib's default."""

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True, populate_by_name=True)

    train_batch_size_per_learner: Union[int, None] = Field(None, ge=1)
    """Env steps per learner per iteration (total = this x max(1, num_learners))."""
    minibatch_size: Union[int, None] = Field(None, ge=1)
    """SGD minibatch size."""
    num_epochs: Union[int, None] = Field(None, ge=1)
    """Passes over the train batch per iteration."""
    lr: Union[float, None] = Field(None, gt=0)
    """Learning rate."""
    gamma: Union[float, None] = Field(None, ge=0, le=1)
    """Discount factor."""
    lambda_: Union[float, None] = Field(None, ge=0, le=1, alias="lambda")
    """GAE lambda (YAML key ``lambda``)."""
    clip_param: Union[float, None] = Field(None, gt=0)
    """PPO clip parameter."""
    vf_clip_param: Union[float, None] = Field(None, gt=0)
    """Value-function clip parameter."""
    entropy_coeff: Union[float, None] = Field(None, ge=0)
    """Entropy bonus coefficient."""
    vf_loss_coeff: Union[float, None] = Field(None, ge=0)
    """Value-function loss coefficient."""
    kl_coeff: Union[float, None] = Field(None, ge=0)
    """Initial KL coefficient."""
    use_kl_loss: Union[bool, None] = None
    """Whether the KL term is in the loss."""
    grad_clip: Union[float, None] = Field(None, gt=0)
    """Gradient clipping threshold."""
    shuffle_batch_per_epoch: Union[bool, None] = None
    """Shuffle the train batch before each epoch."""


class RLModuleSection(_Section):
    """The default RLModule's model_config; a key left out keeps RLlib's default."""

    fcnet_hiddens: Union[list[int], None] = None
    """Hidden layer sizes of the policy and value networks."""
    fcnet_activation: Union[Literal["tanh", "relu", "swish", "linear"], None] = None
    """Activation of the hidden layers."""
    vf_share_layers: Union[bool, None] = None
    """Whether policy and value function share their hidden layers."""


class TrialConfig(_Section):
    """Everything one trial runs with: the spec's sections after the grid values are applied."""

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
    """PPO training keys."""
    rl_module: RLModuleSection = Field(default_factory=RLModuleSection)
    """Network shape."""
    cpus: Union[int, None] = Field(None, ge=1)
    """Machine size to emulate: the trial's Ray gets this many CPUs (less the driver's) and its
    process tree is pinned to this many cores. None: all cores."""

    @model_validator(mode="after")
    def _check_batch(self) -> "TrialConfig":
        t = self.training
        if t.minibatch_size and t.train_batch_size_per_learner and t.minibatch_size > t.train_batch_size_per_learner:
            raise _ValueErrorAt(
                ("training", "minibatch_size"),
                f"training.minibatch_size={t.minibatch_size} is larger than "
                f"training.train_batch_size_per_learner={t.train_batch_size_per_learner}"
            )
        return self


class StopSection(_Section):
    iterations: Union[int, None] = Field(None, ge=1)
    """Stop a trial after this many training iterations (warm-up included)."""
    seconds: Union[float, None] = Field(None, gt=0)
    """Stop a trial once its iterations have taken this long (checked after each iteration)."""

    @model_validator(mode="after")
    def _one_given(self) -> "StopSection":
        if self.iterations is None and self.seconds is None:
            raise ValueError("give stop.iterations, stop.seconds or both")
        return self


class RaySection(_Section):
    """Settings of each trial's private Ray runtime."""

    include_dashboard: bool = False
    """Start Ray's dashboard (web UI) in each trial; it is then bound to 127.0.0.1 only."""


class SweepSpec(_Section):
    """A validated sweep: the base trial config, the grid over it, and how to run each trial."""

    name: str = Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")
    """Sweep name; used in the default output folder ``results/<name>/<timestamp>/``."""
    algo: Literal["PPO"] = "PPO"
    """RLlib algorithm (PPO only for now)."""
    environment: EnvironmentSection
    """See :class:`TrialConfig`."""
    env_runners: EnvRunnersSection = Field(default_factory=EnvRunnersSection)
    learners: LearnersSection = Field(default_factory=LearnersSection)
    resources: ResourcesSection = Field(default_factory=ResourcesSection)
    threads: ThreadsSection = Field(default_factory=ThreadsSection)
    training: TrainingSection = Field(default_factory=TrainingSection)
    rl_module: RLModuleSection = Field(default_factory=RLModuleSection)
    cpus: Union[int, None] = Field(None, ge=1)
    """See :class:`TrialConfig`."""
    grid: dict[str, list[Any]] = Field(default_factory=dict)
    """Axis -> values; the trials are the cartesian product (axis names: see :func:`axis_target`)."""
    repeats: int = Field(1, ge=1)
    """How many times each grid point runs."""
    stop: StopSection
    """When a trial stops."""
    warmup_iterations: int = Field(1, ge=0)
    """Leading iterations flagged ``warmup`` and left out of steady-state figures."""
    trial_timeout_s: float = Field(900.0, gt=0)
    """A trial still running after this long is killed with its process tree (status ``timeout``)."""
    trial_memory_limit_bytes: Union[int, None] = Field(None, gt=0)
    """A trial whose processes together hold more resident memory than this is killed with its
    process tree (status ``failed``, reason ``out of memory``). None: no limit."""
    ray: RaySection = Field(default_factory=RaySection)
    """Settings of each trial's Ray runtime."""
    sample_hz: float = Field(10.0, gt=0, le=100)
    """Utilization samples per second."""
    env_ceiling_s: float = Field(1.0, ge=0)
    """Before the trials, step each distinct (env, env_config, env-runner count, cpus) alone for this
    many seconds in as many processes as the trial has env runners (``rlbench envbench``), so every
    trial gets ``sampling_efficiency``. 0: do not measure (those columns stay null)."""
    seed: Union[int, None] = None
    """RLlib seed for every trial (None: unseeded)."""

    @model_validator(mode="after")
    def _warmup_leaves_steady_state(self) -> "SweepSpec":
        if self.stop.iterations is not None and self.stop.seconds is None:
            if self.stop.iterations <= self.warmup_iterations:
                raise _ValueErrorAt(
                    ("stop", "iterations"),
                    f"stop.iterations={self.stop.iterations} leaves no steady-state iteration after "
                    f"warmup_iterations={self.warmup_iterations}: raise stop.iterations"
                )
        return self


TRIAL_SECTIONS: dict[str, type[_Section]] = {
    "environment": EnvironmentSection,
    "env_runners": EnvRunnersSection,
    "learners": LearnersSection,
    "resources": ResourcesSection,
    "threads": ThreadsSection,
    "training": TrainingSection,
    "rl_module": RLModuleSection,
}


def _knob_names(model: type[BaseModel]) -> list[str]:
    return [f.alias or name for name, f in model.model_fields.items()]


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
    """The resolved config this point runs with."""


@dataclass(frozen=True)
class LoadedSpec:
    """A validated spec file with its grid expanded."""

    source: Path
    """The YAML file it came from."""
    spec: SweepSpec
    """The validated spec."""
    points: list[GridPoint]
    """Grid points in grid order (the last axis varies fastest)."""
    alias_notes: list[str]
    """One line per old name that was translated, e.g. ``num_workers -> num_env_runners``."""


# ---------------------------------------------------------------------------------------------
# YAML reading with line numbers


class _LineMap:
    """Key path (tuple of keys) -> 1-based line in the YAML file."""

    def __init__(self, text: str):
        self.lines: dict[tuple, int] = {}
        try:
            root = yaml.compose(text, Loader=yaml.SafeLoader)
        except yaml.YAMLError:
            return
        self._walk(root, ())

    def _walk(self, node, path: tuple) -> None:
        if isinstance(node, yaml.MappingNode):
            for key_node, value_node in node.value:
                p = path + (getattr(key_node, "value", None),)
                self.lines[p] = key_node.start_mark.line + 1
                self._walk(value_node, p)
        elif isinstance(node, yaml.SequenceNode):
            for i, item in enumerate(node.value):
                self.lines[path + (i,)] = item.start_mark.line + 1
                self._walk(item, path + (i,))

    def line(self, path: tuple) -> int | None:
        while path:
            if path in self.lines:
                return self.lines[path]
            path = path[:-1]
        return None


def _read_yaml(path: Path) -> tuple[Any, _LineMap]:
    try:
        text = path.read_text()
    except FileNotFoundError:
        raise SpecError(f"{path}: no such file") from None
    except OSError as e:
        raise SpecError(f"{path}: cannot read: {e.strerror}") from None
    try:
        data = yaml.safe_load(text)
    except yaml.MarkedYAMLError as e:
        mark = e.problem_mark
        where = f"{path}:{mark.line + 1}:{mark.column + 1}" if mark else str(path)
        raise SpecError(f"{where}: YAML syntax error: {e.problem or e}") from None
    except yaml.YAMLError as e:
        raise SpecError(f"{path}: YAML error: {e}") from None
    return data, _LineMap(text)


# ---------------------------------------------------------------------------------------------
# Aliases and grid axes


def _translate_aliases(data: dict, notes: dict[str, str], errors: list[tuple[tuple, str]]) -> dict:
    """Rename old keys to new ones in every section and in the grid; record what was renamed."""
    seen_old: dict[str, tuple] = {}
    seen_new: dict[str, tuple] = {}

    def rename(mapping: dict, path: tuple) -> dict:
        out = {}
        for key, value in mapping.items():
            new = ALIASES.get(key) if isinstance(key, str) else None
            bare = key.rsplit(".", 1)[-1] if isinstance(key, str) else key
            if new is None and isinstance(key, str) and "." in key and bare in ALIASES:
                new = key[: -len(bare)] + ALIASES[bare]
            if new is not None:
                seen_old.setdefault(ALIASES.get(bare, new), path + (key,))
                notes.setdefault(f"{key} -> {new}", ".".join(map(str, path + (key,))))
                if new in out or new in mapping:
                    errors.append((path + (key,), f"both '{key}' and its new name '{new}' are set: keep one"))
                out[new] = value
            else:
                if isinstance(key, str) and bare in ALIASES.values():
                    seen_new.setdefault(bare, path + (key,))
                out[key] = value
        return out

    data = dict(data)
    for section in TRIAL_SECTIONS:
        if isinstance(data.get(section), dict):
            data[section] = rename(data[section], (section,))
    if isinstance(data.get("grid"), dict):
        data["grid"] = rename(data["grid"], ("grid",))
    for knob, old_path in seen_old.items():
        if knob in seen_new:
            new_path = ".".join(map(str, seen_new[knob]))
            errors.append(
                (old_path, f"old name '{old_path[-1]}' and new name '{knob}' (at {new_path}) are both in this "
                 "file: use only the new name")
            )
    return data


def axis_target(axis: str) -> tuple[str, ...]:
    """Where a grid axis writes its values, as a key path into the trial config.

    ``cpus`` -> top level; ``env``/``env_config`` -> environment; ``env_config.KEY`` -> one key of
    env_config; ``section.knob`` -> that knob; a bare knob name -> its (unique) section.
    Raises KeyError with a suggestion for an unknown axis.
    """
    if axis == "cpus":
        return ("cpus",)
    if axis.startswith("env_config.") and len(axis) > len("env_config."):
        return ("environment", "env_config", axis[len("env_config."):])
    if axis.startswith("environment.env_config."):
        return ("environment", "env_config", axis[len("environment.env_config."):])
    if axis in KNOB_SECTION:
        return (KNOB_SECTION[axis], axis)
    if "." in axis:
        section, knob = axis.split(".", 1)
        if section in TRIAL_SECTIONS and knob in _knob_names(TRIAL_SECTIONS[section]):
            return (section, knob)
    choices = ["cpus", "env_config.<key>"] + list(KNOB_SECTION)
    raise KeyError(_unknown(axis, choices))


def axis_column(axis: str) -> str:
    """The trials-table column of a grid axis: its new-API knob name (``env_config.KEY`` kept whole)."""
    target = axis_target(axis)
    if target[:2] == ("environment", "env_config") and len(target) == 3:
        return f"env_config.{target[2]}"
    return target[-1]


def _unknown(key: str, choices: list[str]) -> str:
    close = difflib.get_close_matches(key, choices, n=1, cutoff=0.6)
    hint = f"; did you mean '{close[0]}'?" if close else ""
    if key in KNOB_SECTION:
        hint = f"; '{key}' belongs under '{KNOB_SECTION[key]}:'"
    elif ALIASES.get(key) in KNOB_SECTION:
        hint = f"; '{key}' (old name of '{ALIASES[key]}') belongs under '{KNOB_SECTION[ALIASES[key]]}:'"
    return f"unknown key '{key}'{hint}"


def _set_path(data: dict, path: tuple, value: Any) -> None:
    node = data
    for key in path[:-1]:
        node = node.setdefault(key, {})
        if not isinstance(node, dict):
            raise SpecError(f"cannot set {'.'.join(path)}: {key} is not a mapping")
    node[path[-1]] = value


def column_value(value: Any) -> Any:
    """A grid value as stored in a table cell: scalars as they are, mappings and lists as JSON."""
    if isinstance(value, (dict, list)):
        return json.dumps(value, sort_keys=True)
    return value


# ---------------------------------------------------------------------------------------------
# Environments


def check_env(env: str) -> None:
    """Raise ValueError unless ``env`` is a registered gymnasium id or an importable ``module:Class``."""
    if ":" in env and not env.startswith(("ale_py:",)):
        module_name, _, attr = env.partition(":")
        try:
            module = importlib.import_module(module_name)
        except ImportError as e:
            raise ValueError(
                f"env '{env}': cannot import module '{module_name}' ({e}); is its folder on PYTHONPATH "
                "(run rlbench from the folder that holds it)?"
            ) from None
        except Exception as e:  # the module itself is broken: say so, with its error
            raise ValueError(f"env '{env}': importing '{module_name}' raised {type(e).__name__}: {e}") from None
        if not hasattr(module, attr):
            names = [n for n in dir(module) if not n.startswith("_")]
            close = difflib.get_close_matches(attr, names, n=1)
            hint = f"; did you mean '{module_name}:{close[0]}'?" if close else ""
            raise ValueError(f"env '{env}': module '{module_name}' has no '{attr}'{hint}")
        return
    import gymnasium

    try:
        gymnasium.spec(env)
    except Exception:
        ids = list(gymnasium.registry.keys())
        close = difflib.get_close_matches(env, ids, n=1)
        hint = f"; did you mean '{close[0]}'?" if close else ""
        raise ValueError(
            f"env '{env}' is neither a registered gymnasium id nor an import path 'package.module:Class'{hint}"
        ) from None


# ---------------------------------------------------------------------------------------------
# Loading


def _format_pydantic(
    err: ValidationError, prefix: tuple, lines: _LineMap, path: Path, line_of: dict[tuple, tuple] | None = None
) -> list[str]:
    """One message per error; ``line_of`` maps a config key path to where its value is in the file
    when that is elsewhere (a grid axis)."""
    out = []
    for e in err.errors():
        loc = prefix + tuple(x for x in e["loc"] if not (isinstance(x, str) and x.startswith("function-")))
        at = e.get("ctx", {}).get("error")
        if isinstance(at, _ValueErrorAt):
            loc = prefix + at.loc
        key_path = ".".join(str(x) for x in loc) or "(top level)"
        if e["type"] == "extra_forbidden":
            model = _model_at(loc[:-1])
            choices = _knob_names(model) if model is not None else []
            if model is SweepSpec:
                choices += list(KNOB_SECTION)
            msg = _unknown(str(loc[-1]), choices)
        elif e["type"] == "missing":
            msg = "required key is missing"
        else:
            msg = e["msg"].removeprefix("Value error, ")
            if "input" in e and not isinstance(e["input"], (dict, list)) and e["type"] != "value_error":
                msg += f" (got {e['input']!r})"
        line = lines.line(next((v for k, v in (line_of or {}).items() if loc[:len(k)] == k), loc))
        out.append(f"{path}{':' + str(line) if line else ''}: {key_path}: {msg}")
    return out


def _model_at(loc: tuple) -> type[BaseModel] | None:
    loc = tuple(x for x in loc if not isinstance(x, int))
    if loc and loc[0] == "grid":
        return None
    if not loc:
        return SweepSpec
    model = TRIAL_SECTIONS.get(loc[-1]) or {"stop": StopSection, "ray": RaySection}.get(loc[-1])
    return model


def load_spec(path: str | Path, *, check_envs: bool = True) -> LoadedSpec:
    """Read, translate and validate a sweep YAML; expand its grid. Raises SpecError."""
    path = Path(path)
    data, lines = _read_yaml(path)
    if data is None:
        raise SpecError(f"{path}: the file is empty; see configs/smoke.yaml for a starting point")
    if not isinstance(data, dict):
        raise SpecError(f"{path}: the top level must be a mapping of keys (name:, environment:, grid:, ...)")
    return spec_from_dict(data, source=path, lines=lines, check_envs=check_envs)


def spec_from_dict(
    data: dict, *, source: str | Path = "<spec>", lines: _LineMap | None = None, check_envs: bool = True
) -> LoadedSpec:
    """Validate an already-parsed spec mapping (see :func:`load_spec`)."""
    path = Path(source)
    lines = lines or _LineMap("")
    errors: list[tuple[tuple, str]] = []
    notes: dict[str, str] = {}
    data = _translate_aliases(data, notes, errors)

    def fail(problems: list[str]) -> None:
        raise SpecError("\n".join(problems))

    problems = [f"{path}{':' + str(lines.line(p)) if lines.line(p) else ''}: {'.'.join(map(str, p))}: {m}"
                for p, m in errors]
    if problems:
        fail(problems)

    grid = data.get("grid") or {}
    if not isinstance(grid, dict):
        fail([f"{path}: grid: must be a mapping of axis -> list of values"])
    for axis, values in grid.items():
        where = f"{path}{':' + str(lines.line(('grid', axis))) if lines.line(('grid', axis)) else ''}: grid.{axis}"
        try:
            axis_target(str(axis))
        except KeyError as e:
            problems.append(f"{where}: {e.args[0]}")
            continue
        if not isinstance(values, list):
            problems.append(f"{where}: must be a list of values, e.g. [1, 2, 4] (got {values!r})")
        elif not values:
            problems.append(f"{where}: empty list: give at least one value, or remove the axis")
    if problems:
        fail(problems)

    try:
        spec = SweepSpec.model_validate(data)
    except ValidationError as e:
        fail(_format_pydantic(e, (), lines, path))

    base = {k: data[k] for k in list(TRIAL_SECTIONS) + ["cpus"] if k in data}
    axes = list(grid)
    trials = []
    for combo in itertools.product(*(grid[a] for a in axes)):
        raw = json.loads(json.dumps(base))
        for axis, value in zip(axes, combo):
            _set_path(raw, axis_target(axis), value)
        try:
            config = TrialConfig.model_validate(raw)
        except ValidationError as e:
            where = ", ".join(f"{a}={v!r}" for a, v in zip(axes, combo))
            msgs = _format_pydantic(e, (), lines, path, {axis_target(a): ("grid", a) for a in axes})
            fail([f"{m}  [grid point {where}]" if axes else m for m in msgs])
        trials.append(GridPoint({axis_column(a): column_value(v) for a, v in zip(axes, combo)}, config))
    loaded = LoadedSpec(source=path, spec=spec, points=trials,
                        alias_notes=[f"{k}  (first at {v})" for k, v in notes.items()])

    if check_envs:
        for env in sorted({p.config.environment.env for p in trials}):
            try:
                check_env(env)
            except ValueError as e:
                env_axes = [a for a in axes if axis_target(a) == ("environment", "env") and env in grid[a]]
                line = lines.line(("grid", env_axes[0]) if env_axes else ("environment", "env"))
                problems.append(f"{path}{':' + str(line) if line else ''}: environment.env: {e}")
        if problems:
            fail(problems)
    return loaded


def slug(text: str) -> str:
    """A file-name-safe version of ``text``."""
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", text).strip("_") or "sweep"
