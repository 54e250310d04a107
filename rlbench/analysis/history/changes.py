"""What changed between two releases besides their speed: how each figure was read, and the defaults the
framework resolved. A history says these as API changes, so that a series that breaks is not read as a
regression.

Every trial records, with its build, how its adapter read each figure in that release (``read_paths``: RLlib
2.40-2.52 through ``clear_on_reduce`` stats, 2.53 on through a stats class, ...) and the framework's
effective config as that release resolved it (``framework_config``: the spec's keys and the release's own
defaults, plain values only). Between two adjacent releases of one configuration:

- a read path that differs is a **method change**: the figure is read another way from the later release
  on (or no more, or not yet: a phase None on one side);
- a config key whose value differs is a **changed default** (the spec set the same value on both sides, so
  the release resolved it differently). One of the knobs a spec can set (:func:`workload_keys`: the trial
  config's sections, ``rollout_fragment_length``, ``gym_env_vectorize_mode``, ...) changes the workload
  itself: the step compares two different runs, a series break said as an API change (set the knob in the spec
  to compare like with like); any other changed default (``log_gradients``) is how the release runs as its users
  run it, said beside the step. A key only one side has was **added** or **removed** (renamed keys show as
  one of each);
- a dependency whose imported version differs (each trial records the versions its process imported) came
  with the release: RLlib pins gymnasium per release, so a step may carry a gymnasium change too.

A key whose value differs between two trials of the same release (the seed of a round) says nothing of the
release and is left out.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class ApiChange:
    """What differs between two releases of one configuration, besides their numbers."""

    before: str
    """The earlier version."""
    after: str
    """The later version."""
    read_paths: dict[str, tuple[str | None, str | None]] = field(default_factory=dict)
    """Figure -> (how the earlier release was read, how the later one was): only those that differ."""
    defaults: dict[str, tuple[Any, Any]] = field(default_factory=dict)
    """Config key -> (the earlier release's value, the later one's): keys both have, whose values differ."""
    added: list[str] = field(default_factory=list)
    """Config keys only the later release has."""
    removed: list[str] = field(default_factory=list)
    """Config keys only the earlier release has."""
    dependencies: dict[str, tuple[str | None, str | None]] = field(default_factory=dict)
    """Distribution -> (the version the earlier release's trials imported, the later's): those that differ, the
    compared package itself left out (a release's own pins, e.g. RLlib 2.49's ``gymnasium==1.1.1``)."""

    @property
    def workload(self) -> dict[str, tuple[Any, Any]]:
        """The changed defaults that are knobs a spec can set (:func:`workload_keys`): the workload itself changed."""
        keys = workload_keys()
        return {k: v for k, v in self.defaults.items() if k in keys}

    @property
    def any(self) -> bool:
        """Whether anything differs."""
        return bool(self.read_paths or self.defaults or self.added or self.removed or self.dependencies)

    def words(self, most: int = 6) -> str:
        """The change in one line: ``defaults changed: a 1 -> 2; read differently: x; 3 keys added, 1 removed``."""
        parts = []
        for words, changed in (("workload defaults changed", self.workload), ("defaults changed", self.defaults)):
            changed = {k: v for k, v in changed.items() if words.startswith("workload") or k not in self.workload}
            if changed:
                shown = [f"{k} {v[0]!r} -> {v[1]!r}" for k, v in list(changed.items())[:most]]
                more = len(changed) - len(shown)
                parts.append(f"{words}: " + "; ".join(shown) + (f"; {more} more" if more > 0 else ""))
        if self.read_paths:
            parts.append(
                "read differently: "
                + "; ".join(f"{k}: {v[0] or 'none'} -> {v[1] or 'none'}" for k, v in self.read_paths.items())
            )
        if self.added or self.removed:
            parts.append(f"config keys: {len(self.added)} added, {len(self.removed)} removed")
        if self.dependencies:
            parts.append(
                "dependencies: "
                + "; ".join(f"{k} {v[0] or 'none'} -> {v[1] or 'none'}" for k, v in self.dependencies.items())
            )
        return "; ".join(parts) if parts else "no API change seen"


Facts = tuple[dict[str, Any], dict[str, Any], dict[str, Any]]


@functools.cache
def workload_keys() -> frozenset[str]:
    """The knobs a spec can set: every key of the trial config's sections (``env_runners``, ``learners``,
    ``training``, ``rl_module``, ...), in the framework's names the spec mirrors."""
    from pydantic import BaseModel

    from rlbench.spec.model import TrialConfig

    keys: set[str] = set()
    for info in TrialConfig.model_fields.values():
        section = info.annotation
        if isinstance(section, type) and issubclass(section, BaseModel):
            keys |= {info.alias or name for name, info in section.model_fields.items()}
    return frozenset(keys)


def release_facts(facts: Iterable[Mapping[str, Any]]) -> Facts:
    """One release's (read paths, config, imported versions) over its trials' facts (``read_paths``,
    ``framework_config``, ``versions``): what every trial agrees on (a key whose value differs between them, or that
    some trial lacks, is left out)."""
    facts = [f for f in facts if isinstance(f, Mapping)]
    return (
        _agreed([f.get("read_paths") for f in facts]),
        _agreed([f.get("framework_config") for f in facts]),
        _agreed([f.get("versions") for f in facts]),
    )


def _agreed(dicts: list[Any]) -> dict[str, Any]:
    dicts = [d for d in dicts if isinstance(d, Mapping)]
    if not dicts:
        return {}
    first = dicts[0]
    return {str(k): v for k, v in first.items() if all(k in d and d[k] == v for d in dicts[1:]) and _plain(v)}


def _value(value: Any) -> Any:
    """A default as compared: text in any case is one value (RLlib 2.52 wrote the vector mode ``SYNC`` as ``sync``)."""
    return value.lower() if isinstance(value, str) else value


def _plain(value: Any) -> bool:
    return value is None or isinstance(value, (bool, int, float, str))


def api_change(before: str, after: str, a: Facts, b: Facts, package: str | None = None) -> ApiChange:
    """The change from release ``before`` (its facts, :func:`release_facts`) to ``after``; ``package``: the compared
    distribution, left out of the dependencies. Releases with no recorded facts (an older rlbench's trials) show no
    change: unknown is not a change."""
    (paths_a, config_a, deps_a), (paths_b, config_b, deps_b) = a, b
    paths = {
        k: (paths_a.get(k), paths_b.get(k))
        for k in sorted(set(paths_a) | set(paths_b))
        if paths_a and paths_b and paths_a.get(k) != paths_b.get(k)
    }
    deps = {
        k: (deps_a.get(k), deps_b.get(k))
        for k in sorted(set(deps_a) | set(deps_b))
        if deps_a and deps_b and k != package and deps_a.get(k) != deps_b.get(k)
    }
    if not (config_a and config_b):
        return ApiChange(before, after, paths, dependencies=deps)
    both = sorted(set(config_a) & set(config_b))
    return ApiChange(
        before,
        after,
        paths,
        {k: (config_a[k], config_b[k]) for k in both if _value(config_a[k]) != _value(config_b[k])},
        sorted(set(config_b) - set(config_a)),
        sorted(set(config_a) - set(config_b)),
        deps,
    )
