"""One step of autoconfig's walk, decided: what a point's verdicts ask for, whether a raced value moves the walk,
what the move does to learning, and why the walk stops.

The walk itself (the stages, the budget, resume) is :mod:`rlbench.autoconfig.walk.session`; this module holds its
decisions as pure functions of what was read, so each is tested on fake verdicts and fake readings
(tests/autoconfig/test_walk_steps.py):

- :func:`read_point`: a point's configuration row (its readings so far, as the analysis sums them) read through
  the verdicts (:func:`rlbench.analysis.next_step.advise`: the first verdict that names a knob, the values that
  fit), with its distance from its ceiling (``ceiling_frac``, null where no env ceiling was measured);
- :func:`decide_step`: after a step's race, where the walk goes: to the cheapest value that shows a gain over the
  current point by the one change rule (:mod:`rlbench.analysis.change`), of at least the tolerance, and is as good
  as the best such value; else to the cheapest value as good as the current within the tolerance
  (:func:`~rlbench.analysis.change.equivalent`) that asks fewer resources and is no way back to a point the walk
  left; else nowhere (ties stay);
- :func:`learning_check`: a move of a knob that changes learning (its ``learning`` in
  :data:`~rlbench.analysis.knobs.KNOBS`) compared at equal env
  steps, by the report's rule for learning (:func:`rlbench.analysis.evidence.lower_at_equal_steps` and the one
  rank test).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, Literal

import numpy as np

from rlbench.analysis.change import Change, can_show, equivalent
from rlbench.analysis.config_row import ConfigRow
from rlbench.analysis.evidence import beyond, lower_at_equal_steps, missing_evidence, runs_text
from rlbench.analysis.findings import CEILING_CLOSE_FRAC, SIGNIFICANCE
from rlbench.analysis.knobs import facts
from rlbench.analysis.next_step import advices, knob_values
from rlbench.analysis.stats import rank_p
from rlbench.autoconfig.ask_tell import Standing, below, leader

#: Why the walk stopped (``autoconfig.json``'s ``stop_reason``): no verdict names a knob; the knob has no value that
#: fits; the sampler's verdicts say this machine's cores are the limit; the step's race showed no gain by the one
#: rule; the point runs at :data:`~rlbench.analysis.findings.CEILING_CLOSE_FRAC` of its ceiling or more; the budget
#: left no step; (``--walk`` on a grid) the verdict names a knob the grid does not vary; the point gave no reading.
StopReason = Literal["no_knob", "no_fit", "cores_limit", "no_gain", "ceiling", "budget", "off_grid", "no_reading"]
STOP_WORDS: dict[str, str] = {
    "no_knob": "no verdict names a knob",
    "no_fit": "no new value of the knob the verdict names fits this machine",
    "cores_limit": "no more env runners fit, the sampler's verdict says what limits them",
    "no_gain": "the step showed no evidence of a gain",
    "ceiling": f"the point runs at {CEILING_CLOSE_FRAC:.0%} of its ceiling or more",
    "budget": "the budget left no step",
    "off_grid": "the verdict names a knob the grid does not vary (--walk moves along the grid's axes only)",
    "no_reading": "the point gave no reading",
}


def changes_learning(knob: str | None) -> str | None:
    """What moving ``knob`` changes in learning, in words (its ``learning`` in :data:`~rlbench.analysis.knobs.KNOBS`);
    None when it changes speed only (CPUs, threads)."""
    return facts(knob).learning


@dataclass(frozen=True)
class PointAdvice:
    """What a point's readings say: its first verdict that names a knob and the values that fit, or why none."""

    env_steps_per_s: float | None
    """The point's median throughput over its readings so far (None: no reading)."""
    ceiling_env_steps_per_s: float | None
    """What its env and learner allow here (the analysis' ``ceiling_env_steps_per_s``); None: not measured."""
    ceiling_frac: float | None
    """Throughput over that ceiling; None where no env ceiling was measured (``env_ceiling_s: 0``, or an
    rlbench without the sampler's ceilings)."""
    knob: str | None
    """The spec key the verdict names (None: no step)."""
    current: float | None
    """Its value at this point."""
    values: tuple[float, ...]
    """The values that fit, the current one included (() without a step)."""
    label: str
    """The verdict's short label (``learner short of threads``), or ``""``."""
    text: str
    """The verdict's sentence with its numbers, or why nothing names a knob."""
    stop: str | None
    """Why there is no step (a :data:`StopReason`); None when there is one."""


def read_options(row: Mapping[str, Any] | None) -> list[PointAdvice]:
    """A point's configuration row read through every verdict that names a knob or the cores' limit, in the order
    they are followed (:func:`rlbench.analysis.next_step.advices`): the walk follows the first it can and passes a
    blocked one for the next (issue 57). One ``no_reading`` entry without a throughput, one ``no_knob`` without a
    verdict."""
    read = ConfigRow.of(row or {})
    rate = read.env_steps_per_s
    no_knob = PointAdvice(
        env_steps_per_s=rate,
        ceiling_env_steps_per_s=read.ceiling_env_steps_per_s,
        ceiling_frac=read.ceiling_frac,
        knob=None,
        current=None,
        values=(),
        label="",
        text="no verdict names a knob",
        stop="no_knob",
    )
    if row is None or rate is None:
        unread = replace(no_knob, env_steps_per_s=None, ceiling_env_steps_per_s=None, ceiling_frac=None)
        return [replace(unread, text="no steady reading", stop="no_reading")]
    out = []
    for a in advices(row):  # the row itself: a test's world hands its own answers in it
        verdict = a.verdict or (a.step.verdict if a.step is not None else None)
        current = a.current if a.current is not None else (a.step.current if a.step is not None else None)
        values = tuple(float(v) for v in a.step.values) if a.step is not None else ()
        knob = verdict.knob if verdict is not None else None
        label = verdict.label if verdict is not None else ""
        out.append(replace(no_knob, knob=knob, current=current, values=values, label=label, text=a.reason, stop=a.stop))
    return out or [no_knob]


def read_point(row: Mapping[str, Any] | None) -> PointAdvice:
    """The verdict a point's row asks the walk to follow first: the first of :func:`read_options` with a step, else
    the first (its stop says why none has one)."""
    options = read_options(row)
    return next((o for o in options if o.stop is None), options[0])


def next_value(knob: str, current: float, up: bool, row: Mapping[str, Any] | None) -> float | None:
    """The knob's next value past ``current`` in the direction a move that paid took (the ladder of values that
    fit the point, :func:`rlbench.analysis.next_step.knob_values`: doubling for envs per runner and the minibatch,
    CPUs and runners up to what the cores hold); None where none fits (issue 57: keep going while it pays)."""
    if row is None:
        return None
    ladder = [float(v) for v in knob_values(knob, current, row)]
    ahead = [v for v in ladder if (v > current if up else v < current)]
    return (min(ahead) if up else max(ahead)) if ahead else None


def trade_pairs(knob: str, current: float, partner_current: float) -> list[tuple[float, float]]:
    """The (knob, partner) values a trade races (its partner: its ``trade`` in :data:`~rlbench.analysis.knobs.KNOBS`,
    issue 57), nearest the current pair first: the knob one step up (twice, on a ladder of multiples; one more CPU or
    runner, and twice as many), the partner one or half down, never below its ``floor``. Whether each pair fits the
    trial's cores is the plan's answer, asked point by point."""
    floor = facts(facts(knob).trade).floor or 0
    ups = [2 * current] if facts(knob).cap else sorted({current + 1, 2 * max(current, 1.0)})
    downs = sorted({partner_current - 1, float(int(partner_current // 2))}, reverse=True)
    pairs = [(k, p) for k in ups for p in downs if k > current and floor <= p < partner_current]
    return sorted(set(pairs), key=lambda kp: (kp[0] - current, partner_current - kp[1]))


def at_ceiling(point: PointAdvice) -> bool:
    """Whether the walk stops at this point for its ceiling: it runs at :data:`~rlbench.analysis.findings.
    CEILING_CLOSE_FRAC` of it or more, and its verdict's knob does not raise the ceiling (``raises_ceiling``)."""
    close = point.ceiling_frac is not None and point.ceiling_frac >= CEILING_CLOSE_FRAC
    return close and not facts(point.knob).raises_ceiling


def gain(change: Change, threshold: float, level: float = SIGNIFICANCE) -> bool:
    """Whether B improved on A by the one rule's words (:func:`rlbench.analysis.evidence.change_verdict`'s
    ``improved``): a change (every interval of B/A off 1, the rank test agreeing), upwards, by at least the threshold
    (a smaller change with evidence is no reason to move: with readings 0.5% apart it can be "significant"); with
    ``level`` below :data:`~rlbench.analysis.findings.SIGNIFICANCE`, the test at that level (a race that looked
    again past its cap: :class:`~rlbench.autoconfig.walk.session.WalkRace`)."""
    strict = level >= SIGNIFICANCE or (change.p_value is not None and change.p_value <= level)
    return change.differs and strict and beyond(change.effect, threshold, "faster")


Outcome = Literal["gain", "cheaper", "stay"]


def decide_step(
    current: str,
    standings: Sequence[Standing],
    versus: Callable[[str, str], Change],
    threshold: float,
    no_return: frozenset[str] = frozenset(),
    level: float = SIGNIFICANCE,
) -> tuple[str, Outcome]:
    """Where one step's race moves the walk, and why.

    Args:
        current: the point the step started from (raced beside the values).
        standings: every entrant's race standing (scores: higher is better).
        versus: B against A by the one rule (``versus(a, b)``), as the race compares them.
        threshold: the tolerance (``autoconfig.tolerance_pct`` / 100): as good as the best, and the same as the
            current within it.
        no_return: points the walk left earlier: it goes back to one only with a gain, never for being cheaper.
        level: the rank test's level for a gain (:func:`gain`; a race that went past its cap asks more).
    Returns:
        (the point to stand at next, and why: ``gain``, a value above the current by the rule and by at least
        the threshold (:func:`gain`), the cheapest of those as good as the best of them; ``cheaper``, no gain, but
        a value as good as the current within the threshold by every interval and asking fewer CPUs (then GPUs);
        ``stay``, neither, or a tie in cost).
    """
    by_key = {s.key: s for s in standings}
    if current not in by_key:
        return current, "stay"
    others = [s for s in standings if s.key != current and s.median is not None]
    ahead = [s for s in others if gain(versus(current, s.key), threshold, level)]
    if ahead:
        best = leader(ahead)
        assert best is not None and best.median is not None  # ``others`` have readings
        floor = (1.0 - threshold) * best.median
        pool = [
            s for s in ahead if s.key == best.key or (not below(versus(best.key, s.key)) and (s.median or 0.0) >= floor)
        ]
        return min(pool, key=lambda s: (s.cpus, s.gpus, -(s.median or 0.0), s.key)).key, "gain"
    here = by_key[current]
    cheaper = [
        s
        for s in others
        if s.key not in no_return
        and (s.cpus, s.gpus) < (here.cpus, here.gpus)
        and equivalent(versus(current, s.key), threshold)
    ]
    if cheaper:
        return min(cheaper, key=lambda s: (s.cpus, s.gpus, -(s.median or 0.0), s.key)).key, "cheaper"
    return current, "stay"


def step_values(point: PointAdvice, grid_values: Sequence[Any] | None) -> tuple[float, ...]:
    """The values a step races beside the current one: the verdict's values that fit (a grid walk: the grid's values
    of that axis instead, the current one left out), nearest the current first on the side the verdict asks for
    (larger first: every knob a verdict names asks for more), then the smaller ones."""
    current = point.current
    pool = [float(v) for v in (grid_values if grid_values is not None else point.values)]
    pool = sorted({v for v in pool if v != current})
    larger = [v for v in pool if current is None or v > current]
    smaller = sorted((v for v in pool if current is not None and v < current), reverse=True)
    return tuple(larger + smaller)


@dataclass(frozen=True)
class LearningCheck:
    """A move compared at equal env steps: did the throughput it bought cost learning?"""

    env_steps: float | None
    """The env steps at which both sides' returns were read (the largest every trial of both reached)."""
    from_return: float | None
    """The median return of the point the step left, there."""
    to_return: float | None
    """The median return of the point it moved to."""
    p_value: float | None
    """One-sided exact Mann-Whitney U that the new point's returns lie below the old one's."""
    cost: bool
    """Lower by at least :data:`~rlbench.analysis.findings.CLEARLY_BELOW_FRAC` of the old median, and the test shows
    it at :data:`~rlbench.analysis.findings.SIGNIFICANCE`: the gain cost learning."""
    text: str
    """In words, with the evidence or what is missing."""


def _at(curve: Sequence[tuple[float, float]], steps: float) -> float | None:
    xs = np.array([c[0] for c in curve], dtype=float)
    ys = np.array([c[1] for c in curve], dtype=float)
    if not len(xs) or steps < xs[0]:
        return None
    value = float(np.interp(steps, xs, ys))
    return value if np.isfinite(value) else None


def learning_check(
    before: Sequence[Sequence[tuple[float, float]]], after: Sequence[Sequence[tuple[float, float]]]
) -> LearningCheck:
    """Returns (``episode_return_mean``) of the two points' race trials at equal env steps, the report's rule for
    learning: lower when the median is below the other's by at least ``CLEARLY_BELOW_FRAC`` of its size, and only
    said as a cost when the one rank test shows it (each curve: (env steps sampled so far, return) an iteration)."""
    curves = [c for c in [*before, *after] if c]
    if not curves or not any(before) or not any(after):
        return LearningCheck(None, None, None, None, False, "no return was read on one side: learning not compared")
    steps = min(float(c[-1][0]) for c in curves)
    a = [v for c in before if c and (v := _at(c, steps)) is not None]
    b = [v for c in after if c and (v := _at(c, steps)) is not None]
    if not a or not b:
        return LearningCheck(steps, None, None, None, False, "no return at equal env steps: learning not compared")
    ma, mb = float(np.median(a)), float(np.median(b))
    at = f"return {mb:,.1f} against {ma:,.1f} at {steps:,.0f} env steps"
    if not lower_at_equal_steps(mb, ma):
        return LearningCheck(steps, ma, mb, None, False, f"no lower return at equal env steps ({at})")
    p = rank_p(b, a)
    n = runs_text(len(b), len(a))
    if p <= SIGNIFICANCE:
        return LearningCheck(
            steps, ma, mb, p, True, f"it cost learning: {at}, p = {p:.2g} (one-sided Mann-Whitney U, {n})"
        )
    if not can_show(len(b), len(a)):
        return LearningCheck(
            steps, ma, mb, p, False, f"lower return ({at}), but {missing_evidence(len(b), len(a), 'it learns worse')}"
        )
    return LearningCheck(
        steps, ma, mb, p, False, f"lower return ({at}), but the rank test does not show it (p = {p:.2g}, {n})"
    )
