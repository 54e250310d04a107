"""The ``stop:`` section: iteration and time limits, and one result metric's target (Tune's way).

``stop: {iterations: 50, episode_return_mean: 150}`` ends a trial at the first iteration whose
``episode_return_mean`` is 150 or more, or after 50 iterations. A metric where lower is better is
written ``{at_most: X}``. The names a target may use are the adapter's result metrics
(:meth:`rlbench.adapters.base.Adapter.result_metrics`); an unknown one is an error with a suggestion.
"""

from __future__ import annotations

import difflib
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from rlbench.adapters import get_adapter
from rlbench.spec.errors import _ValueErrorAt
from rlbench.spec.limits import MAX_ITERATIONS, MAX_SECONDS


class StopTarget(BaseModel):
    """A result metric's threshold that ends a trial when reached (Tune's ``stop={metric: value}``)."""

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)

    metric: str
    """The adapter's result metric, e.g. ``episode_return_mean``."""
    threshold: float
    """The value to reach."""
    mode: Literal["at_least", "at_most"] = "at_least"
    """``at_least``: reached when the metric is >= threshold (higher is better); ``at_most``: <= (lower is better)."""

    def reached(self, value: float | None) -> bool:
        """Whether one iteration's value reaches the threshold (a missing value never does)."""
        if value is None or value != value:
            return False
        return value >= self.threshold if self.mode == "at_least" else value <= self.threshold


#: The keys a ``stop:`` mapping has besides its one result metric.
STOP_LIMITS = ("iterations", "seconds")


class StopSection(BaseModel):
    """When a trial stops: ``iterations`` and/or ``seconds``, and optionally one result metric's
    target, e.g. ``{iterations: 50, episode_return_mean: 150}`` (reached at >= 150) or
    ``{iterations: 50, vf_loss: {at_most: 0.1}}`` (a metric where lower is better)."""

    model_config = ConfigDict(
        extra="allow", use_attribute_docstrings=True, validate_assignment=False, allow_inf_nan=False
    )

    iterations: int | None = Field(None, ge=1, le=MAX_ITERATIONS)
    """Stop a trial after this many training iterations (warm-up included)."""
    seconds: float | None = Field(None, gt=0, le=MAX_SECONDS)
    """Stop a trial once its iterations have taken this long (checked after each iteration)."""

    @model_validator(mode="after")
    def _one_given(self) -> StopSection:
        extra = dict(self.model_extra or {})
        names = get_adapter().result_metrics()
        for key in extra:
            if key not in names:
                close = difflib.get_close_matches(str(key), [*STOP_LIMITS, *names], n=1, cutoff=0.6)
                if close:
                    raise _ValueErrorAt(("stop", str(key)), f"unknown key '{key}'; did you mean '{close[0]}'?")
                half = len(names) // 2
                raise _ValueErrorAt(
                    ("stop", str(key)),
                    (
                        f"unknown key or result metric '{key}': stop takes iterations, seconds and one result "
                        "metric of "
                        f"the adapter: {', '.join(names[:half])} (or their full paths, e.g. {names[half]})"
                    ),
                )
        if len(extra) > 1:
            raise _ValueErrorAt(
                ("stop", str(list(extra)[1])), f"one target metric per sweep: keep one of {', '.join(map(str, extra))}"
            )
        if self.iterations is None and self.seconds is None:
            if extra:
                raise ValueError(
                    "a target metric needs stop.iterations or stop.seconds as well, so a trial that "
                    "never reaches it still ends"
                )
            raise ValueError("give stop.iterations, stop.seconds or both")
        self.target  # noqa: B018  (checks the target's value)
        return self

    @property
    def target(self) -> StopTarget | None:
        """The result metric's target, or None."""
        extra = dict(self.model_extra or {})
        if not extra:
            return None
        ((metric, value),) = extra.items()
        if isinstance(value, bool):
            value = "not a number"
        if isinstance(value, (int, float)):
            return StopTarget(metric=metric, threshold=float(value))
        if isinstance(value, dict) and len(value) == 1 and next(iter(value)) in ("at_least", "at_most"):
            ((mode, threshold),) = value.items()
            if isinstance(threshold, (int, float)) and not isinstance(threshold, bool):
                return StopTarget(metric=metric, threshold=float(threshold), mode=mode)
        raise _ValueErrorAt(
            ("stop", metric),
            (
                f"give a number (the trial stops at the first iteration whose {metric} is at least "
                f"that) or {{at_most: X}} for a metric where lower is better (got {value!r})"
            ),
        )


def unreported_target(target: StopTarget | None, frameworks: list[str]) -> str | None:
    """Why a ``stop:`` target cannot serve trials of ``frameworks`` (one of them does not report its metric, so
    its trials would never reach it), with the metrics every one of them reports; None when it can."""
    if target is None:
        return None
    frameworks = list(dict.fromkeys(frameworks))
    lacking = [f for f in frameworks if target.metric not in get_adapter(f).result_metrics()]
    if not lacking:
        return None
    common = [
        m
        for m in get_adapter(frameworks[0]).result_metrics()
        if "/" not in m and all(m in get_adapter(f).result_metrics() for f in frameworks)
    ]
    return (
        f"framework {' and '.join(lacking)} does not report it, so its trials would never reach the target: use "
        f"one of {', '.join(common)}"
    )
