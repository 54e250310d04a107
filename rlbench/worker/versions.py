"""The versions a trial's process imports, and whether they are its variant's pins (standard library only).

A variant with ``packages:`` runs its trials in an environment of their own (:mod:`rlbench.run.envs`);
that its trials ran the pinned versions is checked here, in the trial's own process, before anything
is built: a trial whose versions differ from the pins fails with both named, never a silent mix.
"""

from __future__ import annotations

import importlib.metadata
import platform
import re

#: The stack under every trial, recorded whether pinned or not.
STACK = ("ray", "torch", "gymnasium", "numpy")


def _canonical(dist: str) -> str:
    return re.sub(r"[-_.]+", "-", dist).lower()


def imported_versions(pins: dict[str, str] | None = None) -> dict[str, str | None]:
    """``python`` and the version of each distribution of :data:`STACK` and ``pins`` as this process
    finds it on its path (what ``import`` loads); None for one it does not have."""
    out: dict[str, str | None] = {"python": platform.python_version()}
    for dist in dict.fromkeys([*STACK, *(pins or {})]):
        try:
            out[dist] = importlib.metadata.version(dist)
        except importlib.metadata.PackageNotFoundError:
            try:  # older metadata lookups do not normalize the name
                out[dist] = importlib.metadata.version(_canonical(dist).replace("-", "_"))
            except importlib.metadata.PackageNotFoundError:
                out[dist] = None
    return out


def mismatches(pins: dict[str, str], versions: dict[str, str | None]) -> list[str]:
    """``numpy 2.1.0 where the variant pins 2.0.2`` for every pin the process does not have."""
    return [
        f"{dist} {versions.get(dist) or 'not installed'} where the variant pins {version}"
        for dist, version in pins.items()
        if versions.get(dist) != version
    ]
