"""Spec stage: read a sweep YAML into a validated :class:`~rlbench.spec.model.SweepSpec` and expand its grid.

Everything a user can get wrong in the YAML is caught here, before anything runs, and reported
as a :class:`~rlbench.spec.model.SpecError` naming the file, the line, the key path and a fix (the
CLI exits 2). Old RLlib names are translated to the new API stack (:data:`~rlbench.spec.model.ALIASES`);
keys a framework no longer has are refused with its adapter's hint (:data:`~rlbench.spec.training.REMOVED`).
"""

from __future__ import annotations

import difflib
import itertools
import json
import math
import re
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ValidationError

from rlbench.adapters import get_adapter
from rlbench.spec.envcheck import check_env, framework_problem
from rlbench.spec.limits import MAX_TRIALS
from rlbench.spec.matched import match_frameworks
from rlbench.spec.model import (
    ALIASES,
    KNOB_SECTION,
    TRIAL_SECTIONS,
    GridPoint,
    LoadedSpec,
    RaySection,
    SpecError,
    StopSection,
    SweepSpec,
    TrialConfig,
    _knob_names,
    _ValueErrorAt,
)
from rlbench.spec.quick import quick_data, quick_point
from rlbench.spec.relative import RELATIVE_KNOBS, SYNTAX, RelativeValue, is_relative, looks_relative, resolve
from rlbench.spec.stop import unreported_target
from rlbench.spec.training import ALGOS, REMOVED
from rlbench.spec.variants import MEASURE_KEYS, unsupported_pins
from rlbench.spec.yamlfile import LineMap, read_yaml


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
    training = data.get("training")
    for algo in ALGOS if isinstance(training, dict) else ():  # per-algorithm keys: training.<algo>
        assert isinstance(training, dict)  # for the type checker: the loop runs only then
        if isinstance(training.get(algo), dict):
            training[algo] = rename(training[algo], ("training", algo))
    if isinstance(data.get("grid"), dict):
        data["grid"] = rename(data["grid"], ("grid",))
    for knob, old_path in seen_old.items():
        if knob in seen_new:
            new_path = ".".join(map(str, seen_new[knob]))
            errors.append(
                (
                    old_path,
                    f"old name '{old_path[-1]}' and new name '{knob}' (at {new_path}) are both in this "
                    "file: use only the new name",
                )
            )
    return data


#: The trial keys outside any section that a grid axis or a variant may set.
TOP_LEVEL_AXES = ("cpus", "algo", "framework", "execution", "switch_off")


def axis_target(axis: str) -> tuple[str, ...]:
    """Where a grid axis writes its values, as a key path into the trial config.

    :data:`TOP_LEVEL_AXES` -> top level; ``env``/``env_config`` -> environment; ``env_config.KEY`` -> one key
    of env_config; ``section.knob`` -> that knob; a bare knob name -> its (unique) section.
    Raises KeyError with a suggestion for an unknown axis.
    """
    if axis in TOP_LEVEL_AXES:
        return (axis,)
    if axis.startswith("env_config.") and len(axis) > len("env_config."):
        return ("environment", "env_config", axis[len("env_config.") :])
    if axis.startswith("environment.env_config."):
        return ("environment", "env_config", axis[len("environment.env_config.") :])
    if axis in KNOB_SECTION:
        return (KNOB_SECTION[axis], axis)
    if "." in axis:
        section, knob = axis.split(".", 1)
        if section in TRIAL_SECTIONS and knob in _knob_names(TRIAL_SECTIONS[section]):
            return (section, knob)
    choices = [*TOP_LEVEL_AXES, "env_config.<key>"] + list(KNOB_SECTION)
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
    if key in REMOVED:
        hint = f": {REMOVED[key]}"
    elif key in KNOB_SECTION:
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
    return json.dumps(value, sort_keys=True) if isinstance(value, (dict, list)) else value


def _relative_problems(column: str, values: list) -> list[str]:
    """What is wrong with the relative values (``cpus-1``, :mod:`rlbench.spec.relative`) of one grid axis."""
    problems = []
    for value in values:
        if column not in RELATIVE_KNOBS:
            if is_relative(value):
                problems.append(
                    f"{value!r} is a value relative to the machine's CPUs; only these knobs take one: "
                    f"{', '.join(RELATIVE_KNOBS)}"
                )
        elif value in ("max", "all"):
            problems.append(f"{value!r}: write 'cpus' for all of the machine's usable cores ({SYNTAX})")
        elif looks_relative(value):
            try:
                resolve(value, 1)
            except ValueError as e:
                problems.append(str(e))
    return problems


def _format_pydantic(
    err: ValidationError, prefix: tuple, lines: LineMap, path: Path, line_of: dict[tuple, tuple] | None = None
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
                msg += f" (got {_short(e['input'])})"
        where = lines.at(path, next((v for k, v in (line_of or {}).items() if loc[: len(k)] == k), loc))
        out.append(f"{where}: {key_path}: {msg}")
    return out


def _model_at(loc: tuple) -> type[BaseModel] | None:
    loc = tuple(x for x in loc if not isinstance(x, int))
    if loc and loc[0] == "grid":
        return None
    if not loc:
        return SweepSpec
    others: dict[str, type[BaseModel]] = {"stop": StopSection, "ray": RaySection}
    return TRIAL_SECTIONS.get(loc[-1]) or others.get(loc[-1])


def load_spec(path: str | Path, *, check_envs: bool = True, quick: bool = False) -> LoadedSpec:
    """Read, translate and validate a sweep YAML; expand its grid. Raises SpecError."""
    path = Path(path)
    data, lines = read_yaml(path)
    if data is None:
        raise SpecError(f"{path}: the file is empty; see configs/smoke.yaml for a starting point")
    if not isinstance(data, dict):
        raise SpecError(f"{path}: the top level must be a mapping of keys (name:, environment:, grid:, ...)")
    return spec_from_dict(data, source=path, lines=lines, check_envs=check_envs, quick=quick)


def spec_from_dict(
    data: dict,
    *,
    source: str | Path = "<spec>",
    lines: LineMap | None = None,
    check_envs: bool = True,
    quick: bool = False,
) -> LoadedSpec:
    """Validate an already-parsed spec mapping (see :func:`load_spec`); ``quick``: as ``--quick`` runs it
    (:mod:`rlbench.spec.quick`)."""
    path = Path(source)
    lines = lines or LineMap()
    errors: list[tuple[tuple, str]] = []
    notes: dict[str, str] = {}
    data = _translate_aliases(quick_data(data) if quick else data, notes, errors)

    def fail(problems: list[str]) -> None:
        raise SpecError("\n".join(problems))

    problems = [f"{lines.at(path, p)}: {'.'.join(map(str, p))}: {m}" for p, m in errors]
    if "autoconfig" in data:  # rlbench autoconfig pops it before it calls here
        msg = (
            f"{lines.at(path, ('autoconfig',))}: autoconfig: this section is read by `rlbench autoconfig "
            f"{path} --budget 20m`; to run the whole grid with rlbench sweep, remove the section"
        )
        problems.append(msg)
    if problems:
        fail(problems)

    grid = data.get("grid") or {}
    if not isinstance(grid, dict):
        fail([f"{path}: grid: must be a mapping of axis -> list of values"])
    for axis, values in grid.items():
        where = f"{lines.at(path, ('grid', axis))}: grid.{axis}"
        try:
            axis_target(str(axis))
        except KeyError as e:
            problems.append(f"{where}: {e.args[0]}")
            continue
        if not isinstance(values, list):
            problems.append(f"{where}: must be a list of values, e.g. [1, 2, 4] (got {_short(values)})")
        elif not values:
            problems.append(f"{where}: empty list: give at least one value, or remove the axis")
        else:
            problems += [f"{where}: {p}" for p in _relative_problems(axis_column(str(axis)), values)]
    problems += _variant_problems(data.get("variants"), grid, path, lines)
    if problems:
        fail(problems)

    try:
        spec = SweepSpec.model_validate(data)
    except ValidationError as e:
        fail(_format_pydantic(e, (), lines, path))

    points = math.prod(len(v) for v in grid.values()) * max(1, len(spec.variants))
    if points * spec.repeats > MAX_TRIALS:  # counted before a single grid point is built
        fail(
            [
                f"{lines.at(path, ('grid',), ('repeats',))}: grid: {points:,} grid points (times variants) x repeats "
                f"{spec.repeats} = {points * spec.repeats:,} trials, more than {MAX_TRIALS:,} "
                "(each trial starts its own "
                "Ray, seconds at least): use fewer values per axis, or split the sweep into several specs"
            ]
        )

    base = {k: data[k] for k in [*TRIAL_SECTIONS, *TOP_LEVEL_AXES] if k in data}
    axes = list(grid)
    trials = []
    for combo in itertools.product(*(grid[a] for a in axes)):
        raw = json.loads(json.dumps(base))
        relative = []
        for axis, value in zip(axes, combo):
            _set_path(raw, axis_target(axis), value)
            if is_relative(value) and axis_column(axis) in RELATIVE_KNOBS:
                relative.append(RelativeValue(axis_column(axis), axis_target(axis), value))
        for number, variant in enumerate(spec.variants or [None]):
            mine = json.loads(json.dumps(raw))
            line_of: dict[tuple, tuple] = {axis_target(a): ("grid", a) for a in axes}
            for key, value in variant.set.items() if variant else ():
                if key in MEASURE_KEYS:  # how the trial is measured, in its plan (planning/plan.py), not its config
                    continue
                _set_path(mine, axis_target(key), value)
                line_of[axis_target(key)] = ("variants", number, "set", key)
            checked = json.loads(json.dumps(mine))
            for rel in relative:  # the plan resolves them on the machine; here 1 stands in (every such knob takes 1)
                _set_path(checked, rel.path, 1)
            try:
                config = TrialConfig.model_validate(checked)
            except ValidationError as e:
                where = ", ".join(f"{a}={_short(v, 60)}" for a, v in zip(axes, combo))
                where += f"{', ' if where else ''}variant {variant.name}" if variant else ""
                msgs = _format_pydantic(e, (), lines, path, line_of)
                fail([f"{m}  [grid point {where}]" if where else m for m in msgs])
            trials.append(
                GridPoint(
                    {axis_column(a): column_value(v) for a, v in zip(axes, combo)},
                    config,
                    relative=tuple(relative),
                    raw=mine if relative else None,
                    variant=variant.name if variant else None,
                )
            )
    try:  # trials of several frameworks: every hyperparameter left unset pinned to one value (spec/matched.py)
        trials, matched_notes = match_frameworks(trials)
    except SpecError as e:
        fail([f"{lines.at(path, ('grid', 'framework'), ('framework',))}: {e}"])
    try:
        trials = [quick_point(p) for p in trials] if quick else trials
    except ValueError as e:
        fail([f"{path}: {e}"])
    unreported = unreported_target(spec.stop.target, [p.config.framework for p in trials])
    if unreported and spec.stop.target is not None:  # a framework that does not report it runs every trial to its end
        metric = spec.stop.target.metric
        problems.append(f"{lines.at(path, ('stop', metric))}: stop.{metric}: {unreported}")
    frameworks: dict[str, set[str]] = {}
    for point in trials:
        frameworks.setdefault(point.variant or "", set()).add(point.config.framework)
    for i, dist, why in unsupported_pins(spec.variants, frameworks):  # e.g. ray: "2.9.3" under the RLlib adapter
        problems.append(f"{lines.at(path, ('variants', i, 'packages', dist))}: variants[{i}].packages.{dist}: {why}")
    if problems:
        fail(problems)
    loaded = LoadedSpec(
        source=path,
        spec=spec,
        points=trials,
        alias_notes=[f"{k}  (first at {v})" for k, v in notes.items()],
        matched_notes=matched_notes,
        quick=quick,
    )

    if check_envs:  # what this machine must have: every framework's extra (but a variant's own packages), every env
        pins = {v.name: dict(v.packages) for v in spec.variants or ()}
        for framework in sorted(
            {
                f
                for variant, names in frameworks.items()
                for f in names
                if not set(pins.get(variant, {})) & set(get_adapter(f).requires)
            }
        ):
            if (needs := framework_problem(framework)) is not None:
                problems.append(f"{lines.at(path, ('grid', 'framework'), ('framework',))}: {needs}")
        for env in sorted({p.config.environment.env for p in trials}):
            try:
                check_env(env)
            except ValueError as e:
                env_axes = [a for a in axes if axis_target(a) == ("environment", "env") and env in grid[a]]
                at = lines.at(path, ("grid", env_axes[0]) if env_axes else ("environment", "env"))
                problems.append(f"{at}: environment.env: {e}")
        if problems:
            fail(problems)
    return loaded


def _variant_problems(variants: Any, grid: dict, path: Path, lines: LineMap) -> list[str]:
    """What is wrong with the keys each variant sets (its name, uniqueness and the rest: the model)."""
    problems = []
    axes = {axis_target(str(a)) for a in grid if _is_axis(str(a))}
    for i, variant in enumerate(variants if isinstance(variants, list) else []):
        keys = variant.get("set") if isinstance(variant, dict) else None
        for key, value in keys.items() if isinstance(keys, dict) else ():
            where = f"{lines.at(path, ('variants', i, 'set', key))}: variants[{i}].set.{key}"
            if key in MEASURE_KEYS:  # a sweep key, checked by the model (spec/variants.py)
                continue
            try:
                target = axis_target(str(key))
            except KeyError as e:
                problems.append(f"{where}: {e.args[0]} (a variant sets the keys a grid axis may name)")
                continue
            if target in axes:
                problems.append(
                    f"{where}: '{key}' is also a grid axis: a variant may not set what the grid varies; "
                    "drop it from the grid or from the variant"
                )
            elif is_relative(value) or looks_relative(value):
                problems.append(
                    f"{where}: {value!r}: a variant's value is written as it is, not relative to the "
                    "machine's CPUs; give a number (or make it a grid axis)"
                )
    return problems


def _is_axis(axis: str) -> bool:
    try:
        axis_target(axis)
    except KeyError:
        return False
    return True


def _short(value: Any, limit: int = 120) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[:limit] + "..."


def slug(text: str) -> str:
    """A file-name-safe version of ``text``."""
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", text).strip("_") or "sweep"
