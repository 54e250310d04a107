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
from typing import TYPE_CHECKING, Annotated, Any, Sequence, TypeVar, Union

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError, field_validator

from rlbench.adapters import get_adapter, unsupported
from rlbench.spec.errors import _ValueErrorAt

if TYPE_CHECKING:
    from rlbench.spec.model import SweepSpec

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
    index: Union[str, None] = Field(None, max_length=500)
    """Where ``packages`` come from: a package index URL (pip's ``--index-url``) or a local folder of wheels
    (``--no-index --find-links``); None: pip's default index."""

    @field_validator("packages")
    @classmethod
    def _exact_pins(cls, value: dict[str, str]) -> dict[str, str]:
        for dist, version in value.items():
            if not re.fullmatch(DIST_PATTERN, dist):
                raise ValueError(f"package '{dist}': not a distribution name (letters, digits, '.', '_', '-')")
            if not isinstance(version, str) or not re.fullmatch(VERSION_PATTERN, version):
                raise ValueError(f"package '{dist}': version {version!r} is not an exact version such as 2.59.0 "
                                 "(write it in quotes; ranges are not pins)")
        return value


class PackageSet(BaseModel):
    """A variant's packages as a trial carries them in its plan (``plan.json``)."""

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)

    pins: dict[str, str]
    """Distribution -> exact version the trial's process must import."""
    index: Union[str, None] = None
    """Where they were installed from (see :attr:`Variant.index`)."""
    python: Union[str, None] = None
    """The interpreter of their environment, set by the sweep once it exists (:mod:`rlbench.run.envs`)."""


def check_variants(spec: SweepSpec) -> SweepSpec:
    """The sweep-level checks of ``variants`` and ``rounds`` (a model validator of the spec); with
    ``rounds`` the repeats are the rounds (round r is repeat r: its seed, its trial ids)."""
    if "variants" in spec.model_fields_set and not spec.variants:
        raise _ValueErrorAt(("variants",), "empty list: give the variants to compare, each as {name: ..., set: "
                            "{...}} (the first is the reference), or remove 'variants:'")
    seen: dict[str, int] = {}
    for i, variant in enumerate(spec.variants):
        if variant.name in seen:
            raise _ValueErrorAt(("variants", i, "name"), f"variant name '{variant.name}' is used twice (also "
                                f"variants[{seen[variant.name]}]): give every variant its own name")
        seen[variant.name] = i
    for i, variant in enumerate(spec.variants):  # measurement keys: checked as the spec's own key is
        for key in set(variant.set) & set(MEASURE_KEYS):
            field = type(spec).model_fields[key]
            try:
                variant.set[key] = TypeAdapter(Annotated[field.annotation, field]).validate_python(variant.set[key])
            except ValidationError as e:
                raise _ValueErrorAt(("variants", i, "set", key), f"{e.errors()[0]['msg']} (got "
                                    f"{variant.set[key]!r})") from None
    if spec.rounds > 1:
        if "repeats" in spec.model_fields_set and spec.repeats not in (1, spec.rounds):
            raise _ValueErrorAt(("repeats",), f"repeats={spec.repeats} and rounds={spec.rounds}: each round runs "
                                "every configuration once, so rounds are the repeats; keep 'rounds' only")
        spec.repeats = spec.rounds
    return spec


def measured(spec: SweepSpec, variant: str | None) -> dict[str, Any]:
    """How the named variant's trials are measured: :data:`MEASURE_KEYS` from the spec, as the variant sets them."""
    found = next((v for v in spec.variants if v.name == variant), None)
    return {k: (found.set if found and k in found.set else vars(spec))[k] for k in MEASURE_KEYS}


def package_set(spec: SweepSpec, variant: str | None) -> PackageSet | None:
    """The packages the named variant pins (None without pins)."""
    found = next((v for v in spec.variants if v.name == variant), None)
    return PackageSet(pins=dict(found.packages), index=found.index) if found and found.packages else None


def unsupported_pins(spec: SweepSpec, frameworks: dict[str, set[str]]) -> list[tuple[int, str, str]]:
    """(variant index, distribution, why) for every pin older than an adapter its variant runs under can
    drive (``frameworks``: variant name -> the frameworks of its grid points); refused before anything runs."""
    out = []
    for i, variant in enumerate(spec.variants):
        for framework in sorted(frameworks.get(variant.name, ())):
            adapter = get_adapter(framework)
            for why in unsupported(adapter.requires, dict(variant.packages), adapter.name):
                dist = why.split(" ", 1)[0]
                out.append((i, dist, f"{why}: pin {adapter.requires[dist]} or later (docs/VERSIONS.md)"))
    return out


T = TypeVar("T")


def in_rounds(plans: Sequence[T], variant_count: int, *, repeat=lambda p: p.repeat, index=lambda p: p.index) -> list[T]:
    """``plans`` (every grid point's variants and repeats) in run order by rounds: round by round,
    within a round grid point by grid point, and within a point its variants, the first of them
    variant ``round mod V`` (``index`` is ``point * V + variant``)."""
    v = max(1, variant_count)

    def key(plan: T) -> tuple[int, int, int]:
        r, i = repeat(plan), index(plan)
        return r, i // v, (i % v - r) % v
    return sorted(plans, key=key)
