"""Variants of a sweep and its rounds: what is compared, and the order that makes the comparison fair.

A spec's ``variants:`` lists named sets of spec keys (``{name: B, set: {env_config.step_cost_us: 400}}``);
every grid configuration runs once per variant per round (``rounds: N``). Within a round a
configuration's variants run back to back, and the variant that goes first rotates from round to
round (round r starts at variant r mod V), so the two sides of a pair meet the same machine a few
seconds apart and neither side is always first: the design docs/MEASUREMENT.md 7 measured as the
only one that resolves 5% on a machine that drifts 5-10% over minutes. The analysis pairs them by
round (:mod:`rlbench.analysis.variants`).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any, TypeVar

from pydantic import BaseModel, ConfigDict, Field, field_validator

from rlbench.adapters import get_adapter, unsupported

#: What a variant's name looks like: it is a table value, a label and part of no path.
NAME_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_.+-]*$"
#: A distribution name (PEP 508) and an exact version (PEP 440's public and local parts).
DIST_PATTERN = r"[A-Za-z0-9]([A-Za-z0-9._-]*[A-Za-z0-9])?"
VERSION_PATTERN = r"[0-9]+(\.[0-9]+)*((a|b|rc)[0-9]+)?(\.post[0-9]+)?(\.dev[0-9]+)?(\+[A-Za-z0-9.]+)?"
#: Sweep keys a variant may set besides the trial's: how its trials are measured, not what they run, so
#: that "what does profiling cost?" is a variant (``{name: on, set: {profile_hz: 100}}``) like any other.
MEASURE_KEYS = ("sample_hz", "profile_hz", "profile_native", "profile_roles")


class Variant(BaseModel):
    """One side of a comparison: a name and the spec keys it sets over the base spec."""

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True, allow_inf_nan=False)

    name: str = Field(pattern=NAME_PATTERN, max_length=40)
    """Its name in tables, reports and ``rlbench compare`` (letters, digits, ``_ . + -``; unique)."""
    set: dict[str, Any] = Field(default_factory=dict)
    """Spec keys and their values for this variant, named as grid axes are (``num_env_runners``,
    ``env_config.step_cost_us``, ``execution``, ``pin_driver``, ``switch_off``, ``training.lr``) or a
    measurement key (:data:`MEASURE_KEYS`: ``profile_hz``); empty: the base spec as it is."""
    packages: dict[str, str] = Field(default_factory=dict, max_length=20)
    """Distribution -> exact version (``{ray: 2.59.0}``): the variant's trials run in a Python environment of
    their own with these installed over the sweep's (:mod:`rlbench.run.envs`); each trial records the versions
    it imported, and one that differs from a pin fails."""
    index: str | None = Field(None, max_length=500)
    """Where ``packages`` come from: a package index URL (pip's ``--index-url``) or a local folder of wheels
    (``--no-index --find-links``); None: pip's default index."""

    @field_validator("packages")
    @classmethod
    def _exact_pins(cls, value: dict[str, str]) -> dict[str, str]:
        for dist, version in value.items():
            if not re.fullmatch(DIST_PATTERN, dist):
                raise ValueError(f"package '{dist}': not a distribution name (letters, digits, '.', '_', '-')")
            if not isinstance(version, str) or not re.fullmatch(VERSION_PATTERN, version):
                raise ValueError(
                    f"package '{dist}': version {version!r} is not an exact version such as 2.59.0 "
                    "(write it in quotes; ranges are not pins)"
                )
        return value


class PackageSet(BaseModel):
    """A variant's packages as a trial carries them in its plan (``plan.json``)."""

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)

    pins: dict[str, str]
    """Distribution -> exact version the trial's process must import."""
    index: str | None = None
    """Where they were installed from (see :attr:`Variant.index`)."""
    python: str | None = None
    """The interpreter of their environment, set by the sweep once it exists (:mod:`rlbench.run.envs`)."""


def measured(spec_values: dict[str, Any], variants: Sequence[Variant], variant: str | None) -> dict[str, Any]:
    """How the named variant's trials are measured: :data:`MEASURE_KEYS` from the spec (``spec_values``: its
    fields by name), as the variant sets them."""
    found = next((v for v in variants if v.name == variant), None)
    return {k: (found.set if found and k in found.set else spec_values)[k] for k in MEASURE_KEYS}


def package_set(variants: Sequence[Variant], variant: str | None) -> PackageSet | None:
    """The packages the named variant pins (None without pins)."""
    found = next((v for v in variants if v.name == variant), None)
    return PackageSet(pins=dict(found.packages), index=found.index) if found and found.packages else None


def unsupported_pins(variants: Sequence[Variant], frameworks: dict[str, set[str]]) -> list[tuple[int, str, str]]:
    """(variant index, distribution, why) for every pin older than an adapter its variant runs under can
    drive (``frameworks``: variant name -> the frameworks of its grid points); refused before anything runs."""
    out = []
    for i, variant in enumerate(variants):
        for framework in sorted(frameworks.get(variant.name, ())):
            adapter = get_adapter(framework)
            for why in unsupported(adapter.requires, dict(variant.packages), adapter.name):
                dist = why.split(" ", 1)[0]
                out.append((i, dist, f"{why}: pin {adapter.requires[dist]} or later (docs/VERSIONS.md)"))
    return out


T = TypeVar("T")


def in_rounds(
    plans: Sequence[T], variant_count: int, *, repeat=lambda p: p.repeat, index=lambda p: p.index, rotate=None
) -> list[T]:
    """``plans`` (every grid point's variants and repeats) in run order by rounds: round by round,
    within a round grid point by grid point, and within a point its variants, the first of them
    variant ``rotate(round) mod V`` (``index`` is ``point * V + variant``; ``rotate`` default: the round itself)."""
    v = max(1, variant_count)

    def key(plan: T) -> tuple[int, int, int]:
        r, i = repeat(plan), index(plan)
        return r, i // v, (i % v - (r if rotate is None else rotate(r))) % v

    return sorted(plans, key=key)
