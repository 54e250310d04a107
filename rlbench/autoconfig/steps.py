"""Env steps to the target, raced beside the time to it (objective ``time_to_target``).

Why: a search space over what each iteration learns from (the algorithm, asynchronous runners, the
batch per learner, the fragment length) changes how many env steps the target takes, not only how
fast they come. The time to target holds both; the steps say which one moved. A configuration may
reach the target sooner because it steps faster (the same steps) or because it learns from fewer.

Censoring: a trial that missed the target within its cap counts as never reaching it. As for time,
each reading becomes a score, ``1 / env_steps`` or 0 when censored, and the median and its bootstrap
interval (:func:`rlbench.analysis.stats.median_ci`) are taken on the scores, then turned back into
steps. Every trial has the same cap in seconds, but not in steps: a slower trial is censored after
fewer steps. Kaplan-Meier would drop a censored trial from the risk set where it stopped; here it
stays in for ever. So this median is never below the Kaplan-Meier median, and equals it when each
censored trial ran more env steps than every trial of its configuration that reached the target.
It is None when more than half the trials were censored.

Differences (:func:`compare_steps`): each race entrant against the chosen configuration, by the one rule of
"did it change?" (:func:`rlbench.analysis.change.unpaired` of the scores: the interval of their ratio off 1 and
the one-sided exact Mann-Whitney U test agreeing at ``SIGNIFICANCE``), its words with the evidence it has. With
fewer readings than a rank test needs, the comparison says what evidence is missing. The ratio reported is of
median steps (the scores' ratio turned back), with its bootstrap interval.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

import numpy as np

from rlbench.analysis import evidence, stats
from rlbench.analysis.change import can_show, unpaired

#: One trial's env steps: (steps sampled up to the target, or up to the cap; whether it reached the target).
Reading = tuple[float, bool]


@dataclass(frozen=True)
class StepsStanding:
    """One configuration's env steps to the target over its race readings."""

    key: str
    """Candidate key."""
    median: float | None
    """Median env steps to the target, censored trials as never reaching it; None when more than half
    were censored (or no reading)."""
    ci_low: float | None
    """Lower end of its bootstrap interval (None with fewer than 2 readings)."""
    ci_high: float | None
    """Upper end (None: unbounded, the interval reaches the censored trials, or fewer than 2 readings)."""
    n: int
    """Readings (censored included)."""
    censored: int
    """Readings that did not reach the target."""


@dataclass(frozen=True)
class StepsComparison:
    """One entrant's env steps to the target against the chosen configuration's."""

    key: str
    """The entrant."""
    chosen_key: str
    """The chosen configuration."""
    ratio: float | None
    """median steps(key) / median steps(chosen); None when either median is None."""
    ci_low: float | None
    """Lower end of the ratio's bootstrap interval (None with fewer than 2 readings a side)."""
    ci_high: float | None
    """Upper end (None also when the interval reaches the censored trials)."""
    p_value: float | None
    """One-sided exact Mann-Whitney U p-value in the direction of the medians (None: too few rounds)."""
    differ: bool
    """The one rule finds a change (the interval off 1, the test agreeing at ``findings.SIGNIFICANCE``)."""
    text: str
    """The finding in words, with its evidence or what evidence is missing."""


def scores(readings: Sequence[Reading]) -> list[float]:
    """``1 / steps`` for a trial that reached the target, 0 for a censored one (higher is better)."""
    return [1.0 / s if reached and s > 0 else 0.0 for s, reached in readings]


def _inv(score: float | None) -> float | None:
    return None if score is None or score <= 0 else 1.0 / score


def steps_standing(key: str, readings: Sequence[Reading]) -> StepsStanding:
    """The median env steps to the target of ``readings``, with its interval (see the module docstring)."""
    e = stats.median_ci(scores(readings))
    return StepsStanding(
        key, _inv(e.median), _inv(e.ci_high), _inv(e.ci_low), e.n, sum(not reached for _, reached in readings)
    )


def _steps_text(value: float | None) -> str:
    return "beyond the cap" if value is None else f"{value:,.0f}"


def compare_steps(readings: Mapping[str, Sequence[Reading]], chosen_key: str) -> list[StepsComparison]:
    """Each other configuration's env steps to the target against ``chosen_key``'s, in ``readings``' order."""
    mine = scores(readings.get(chosen_key, ()))
    out = []
    for key, theirs in readings.items():
        if key == chosen_key:
            continue
        other = scores(theirs)
        with np.errstate(divide="ignore", invalid="ignore"):  # a resample of censored scores: a ratio to 0
            c = unpaired(mine, other)  # median(other) / median(mine) of scores: steps(chosen) / steps(key)
        ratio, low, high = _inv(c.ratio), _inv(c.ci_high), _inv(c.ci_low)  # steps(key) / steps(chosen)
        high = high if high is not None and math.isfinite(high) else None
        a, b = stats.median_ci(other).median, stats.median_ci(mine).median
        more = a is not None and b is not None and a < b  # a lower score: more steps
        in_steps = replace(c, ratio=ratio, ci_low=low, ci_high=high)  # the scores' ratio turned back into steps
        medians = f"median {_steps_text(_inv(a))} against {_steps_text(_inv(b))}"
        text = evidence.amount_sentence(chosen_key, key, in_steps, "env steps to the target", more, medians)
        enough = can_show(len(other), len(mine))
        out.append(
            StepsComparison(
                key=key,
                chosen_key=chosen_key,
                ratio=ratio,
                ci_low=low,
                ci_high=high,
                p_value=c.p_value if enough else None,
                differ=c.differs,
                text=text,
            )
        )
    return out
