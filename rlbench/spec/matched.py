"""The matched preset: when a sweep's trials run several training frameworks, every hyperparameter a trial
leaves unset is pinned to one value for all of them, never left to each framework's own default.

Defaults differ (RLlib 2.60's PPO against SB3 2.9's: learning rate, batch, epochs, lambda, clipping, network;
docs/SPEC.md, "Comparing frameworks"), so defaults against defaults would measure configuration, not framework.
Each adapter says what it trains with where the spec is silent (``Adapter.hyperparameter_defaults``) and what
it cannot run (``Adapter.refusals``); here, framework-neutral, each unset key gets the first framework's
default (the sweep's order: a ``framework: [rllib, sb3]`` axis makes RLlib's the reference) that every other
framework of the sweep accepts, else the next framework's. A key no framework's default satisfies for all is
refused at load: the spec must set it. The pinned values are in each trial's config (``plan.json``) and each
pinned key is said once when the sweep starts.
"""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

from rlbench.adapters import get_adapter
from rlbench.spec.errors import SpecError
from rlbench.spec.model import GridPoint, TrialConfig


def _value(config: TrialConfig, section: str, key: str) -> Any:
    model = getattr(config, section)
    name = next((n for n, f in type(model).model_fields.items() if (f.alias or n) == key), key)
    return getattr(model, name)


def _with(config: TrialConfig, framework: str, pins: dict[tuple[str, str], Any]) -> TrialConfig:
    """``config`` under ``framework`` with ``pins`` set, unvalidated (a probe for the adapters' refusals)."""
    update: dict[str, Any] = {"framework": framework}
    for section in {s for s, _ in pins}:
        model = getattr(config, section)
        names = {(f.alias or n): n for n, f in type(model).model_fields.items()}
        update[section] = model.model_copy(update={names[k]: v for (s, k), v in pins.items() if s == section})
    return config.model_copy(update=update)


def _accepted(
    config: TrialConfig, frameworks: list[str], pins: dict[tuple[str, str], Any], key: tuple[str, str]
) -> bool:
    return all(key not in {path for path, _ in get_adapter(f).refusals(_with(config, f, pins))} for f in frameworks)


def _pins(config: TrialConfig, frameworks: list[str]) -> tuple[dict[tuple[str, str], Any], list[str]]:
    """The values pinned in one trial config, and a note for each."""
    tables = {f: get_adapter(f).hyperparameter_defaults(_with(config, f, {})) for f in frameworks}
    keys = list(dict.fromkeys(k for table in tables.values() for k in table))
    pins: dict[tuple[str, str], Any] = {}
    notes = []
    for key in keys:
        if _value(config, *key) is not None:
            continue  # the spec set it: the same value on every side already
        candidates = [(f, tables[f][key]) for f in frameworks if key in tables[f]]
        chosen = next(((f, v) for f, v in candidates if _accepted(config, frameworks, {**pins, key: v}, key)), None)
        if chosen is None:
            said = "; ".join(f"{f}'s default {v!r}" for f, v in candidates)
            raise SpecError(
                f"{'.'.join(key)}: the frameworks compared ({', '.join(frameworks)}) have no default every "
                f"one of them runs ({said}): set it in the spec"
            )
        pins[key] = chosen[1]
        others = ", ".join(f"{f}'s {v!r}" for f, v in candidates if f != chosen[0])
        notes.append(
            f"{'.'.join(key)} = {chosen[1]!r} for {' and '.join(frameworks)} ({chosen[0]}'s default"
            f"{'; ' + others if others else ''})"
        )
    return pins, notes


def _set(data: dict, pins: dict[tuple[str, str], Any]) -> dict:
    data = json.loads(json.dumps(data))
    for (section, key), value in pins.items():
        data.setdefault(section, {})[key] = value
    return data


def match_frameworks(points: list[GridPoint]) -> tuple[list[GridPoint], list[str]]:
    """``points`` with the matched preset applied where they run several learning frameworks, and one note per
    pinned key and value. Points of a framework that learns nothing (``plain``) are left as they are."""
    learning = [
        f
        for f in dict.fromkeys(p.config.framework for p in points)
        if any(get_adapter(f).hyperparameter_defaults(p.config) for p in points if p.config.framework == f)
    ]
    if len(learning) < 2:
        return points, []
    out: list[GridPoint] = []
    notes: list[str] = []
    for point in points:
        if point.config.framework not in learning:
            out.append(point)
            continue
        pins, said = _pins(point.config, learning)
        notes += [n for n in said if n.split(" (")[0] not in {m.split(" (")[0] for m in notes}]
        try:
            out.append(with_keys(point, pins))
        except ValueError as e:
            raise SpecError(
                f"the matched preset ({', '.join('.'.join(k) for k in pins)}) makes a trial the spec "
                f"cannot run: {e}: set those keys in the spec"
            ) from None
    return out, notes


def with_keys(point: GridPoint, keys: dict[tuple[str, str], Any]) -> GridPoint:
    """The point with ``keys`` ((section, YAML key) -> value) set in its validated config, its trial checks run
    again (ValueError says what they refuse), and in its mapping as written (which the plan resolves relative
    values from). The matched preset's pins and ``--quick``'s cut batch are set this way."""
    config = _with(point.config, point.config.framework, keys)
    config = config._keys_of_its_algorithm()._check_batch()  # type: ignore[operator]  # validators, called again
    return replace(point, config=config, raw=_set(point.raw, keys) if point.raw is not None else None)
