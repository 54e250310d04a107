"""What a pinned release needs beyond the sweep's own packages: its requirements the sweep does not meet.

A variant's environment (:mod:`rlbench.run.envs`) holds the pinned distributions, with this rlbench and the
sweep's own site-packages behind them. A release built against an older stack may need what the sweep lacks
(Ray 2.40 imports ``aiosignal``, which 2.60 no longer requires) or another version of what it has (RLlib 2.47's
``rllib`` extra pins ``gymnasium==1.0.0``; the sweep's 2.60 has 1.2.2). So after the pins are installed, their own
requirements are read from the installed metadata and compared with the sweep's distributions: each one the
sweep meets is left to the sweep (one copy, the same version for every release), each one it does not is
installed into the environment, its own dependencies held to the sweep's versions where they fit
(:func:`constraints`). Pure: the metadata and the sweep's versions are handed in, so the tests need no index.
"""

from __future__ import annotations

import importlib.metadata
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name
from packaging.version import InvalidVersion, Version


@dataclass(frozen=True)
class Needed:
    """One requirement of a pinned release that the sweep's packages do not meet."""

    requirement: str
    """As the release states it (markers dropped): ``gymnasium==1.0.0``, ``aiosignal``."""
    sweep_version: str | None
    """The sweep's version of that distribution, or None when the sweep lacks it."""

    @property
    def name(self) -> str:
        """The distribution's canonical name."""
        return canonicalize_name(Requirement(self.requirement).name)


def installed_versions(paths: Iterable[str] | None = None) -> dict[str, str]:
    """Canonical distribution name -> version, of the distributions on ``paths`` (default: this Python's path)."""
    out: dict[str, str] = {}
    found = importlib.metadata.distributions() if paths is None else importlib.metadata.distributions(path=list(paths))
    for dist in found:
        name = dist.metadata["Name"]
        if name and canonicalize_name(name) not in out:  # the first on the path wins, as an import does
            out[canonicalize_name(name)] = dist.version
    return out


def _requirements(metadata) -> list[Requirement]:
    out = []
    for line in metadata.get_all("Requires-Dist") or []:
        try:
            out.append(Requirement(line))
        except InvalidRequirement:
            continue  # a malformed line of a foreign package: the installer would refuse it, not us
    return out


def _applies(req: Requirement, extra: str) -> bool:
    return req.marker is None or req.marker.evaluate({"extra": extra})


def _met(req: Requirement, versions: Mapping[str, str]) -> bool:
    have = versions.get(canonicalize_name(req.name))
    if have is None:
        return False
    try:
        return req.specifier.contains(Version(have), prereleases=True)
    except InvalidVersion:
        return False


def used_extras(metadata, versions: Mapping[str, str]) -> list[str]:
    """The extras of the sweep's own copy of a distribution (its ``metadata``) whose every requirement the sweep
    has installed: ``rllib`` for a sweep whose Ray came with RLlib's packages. A pinned release is installed with
    the same extras, so it brings its own versions of what those extras name (RLlib's gymnasium among them)."""
    requirements = _requirements(metadata)
    out = []
    for extra in metadata.get_all("Provides-Extra") or []:
        mine = [r for r in requirements if r.marker is not None and _applies(r, extra) and not _applies(r, "")]
        if mine and all(canonicalize_name(r.name) in versions for r in mine):
            out.append(extra)
    return out


def unmet(metadata, extras: Iterable[str], sweep: Mapping[str, str], pinned: Iterable[str]) -> list[Needed]:
    """The requirements of one pinned release (its installed ``metadata``, with ``extras``) that the ``sweep``'s
    versions do not meet, in the release's order, each once; requirements on the pinned distributions themselves
    are theirs to meet."""
    skip = {canonicalize_name(p) for p in pinned}
    out: dict[str, Needed] = {}
    for req in _requirements(metadata):
        name = canonicalize_name(req.name)
        if name in skip or not any(_applies(req, e) for e in ("", *extras)):
            continue
        if not _met(req, sweep):
            text = f"{req.name}{req.specifier}" if req.specifier else req.name
            if name in out and text not in out[name].requirement:  # two lines on one distribution: both hold
                text = f"{out[name].requirement},{req.specifier}"
            out[name] = Needed(text, sweep.get(name))
    return list(out.values())


def constraints(sweep: Mapping[str, str], free: Iterable[str]) -> str:
    """A constraints file holding every distribution of the sweep to its version, but the ``free`` ones (the pins
    and what the release needs otherwise): what the installer may add for the needed packages is the sweep's own
    version where the sweep has one. Local versions (``2.13.0+cpu``) and unparsable ones are left free."""
    skip = {canonicalize_name(f) for f in free}
    lines = []
    for name, version in sorted(sweep.items()):
        if name in skip:
            continue
        try:
            if Version(version).local is not None:
                continue
        except InvalidVersion:
            continue
        lines.append(f"{name}=={version}")
    return "\n".join(lines) + "\n"


def pinned_metadata(site: Path, pins: Iterable[str]) -> dict[str, object]:
    """Canonical pinned name -> its installed metadata in an environment's ``site`` folder."""
    wanted = {canonicalize_name(p) for p in pins}
    out: dict[str, object] = {}
    for dist in importlib.metadata.distributions(path=[str(site)]):
        name = canonicalize_name(dist.metadata["Name"] or "")
        if name in wanted:
            out[name] = dist.metadata
    return out
