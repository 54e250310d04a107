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

from typing import TYPE_CHECKING, Any, Sequence, TypeVar

from pydantic import BaseModel, ConfigDict, Field, field_validator

from rlbench.spec.errors import _ValueErrorAt

if TYPE_CHECKING:
    from rlbench.spec.model import SweepSpec

#: What a variant's name looks like: it is a table value, a label and part of no path.
NAME_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_.+-]*$"


class Variant(BaseModel):
    """One side of a comparison: a name and the spec keys it sets over the base spec."""

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True, allow_inf_nan=False)

    name: str = Field(pattern=NAME_PATTERN, max_length=40)
    """Its name in tables, reports and ``rlbench compare`` (letters, digits, ``_ . + -``; unique)."""
    set: dict[str, Any] = Field(default_factory=dict)
    """Spec keys and their values for this variant, named as grid axes are (``num_env_runners``,
    ``env_config.step_cost_us``, ``execution``, ``training.lr``); empty: the base spec as it is."""
    packages: dict[str, str] = Field(default_factory=dict)
    """Reserved: package versions per variant (issue 27); not supported by this rlbench yet."""

    @field_validator("packages")
    @classmethod
    def _no_packages_yet(cls, value: dict[str, str]) -> dict[str, str]:
        if value:
            raise ValueError("per-variant package versions are not supported by this rlbench yet: remove "
                             "'packages:' (the variant's keys go under 'set:')")
        return value


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
    if spec.rounds > 1:
        if "repeats" in spec.model_fields_set and spec.repeats not in (1, spec.rounds):
            raise _ValueErrorAt(("repeats",), f"repeats={spec.repeats} and rounds={spec.rounds}: each round runs "
                                "every configuration once, so rounds are the repeats; keep 'rounds' only")
        spec.repeats = spec.rounds
    return spec


def names(spec: SweepSpec) -> list[str | None]:
    """The variants' names in spec order; ``[None]`` without variants (one unnamed side)."""
    return [v.name for v in spec.variants] or [None]


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
