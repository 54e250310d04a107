"""A history's whole series: where it steps (change points), and what learning says beside the speed.

The steps between adjacent releases (:mod:`.trends`) miss a slowdown that arrives a few percent a
release: each step passes, the series does not. Per configuration, the throughput and each phase of the split
(:data:`~rlbench.analysis.history.split.PHASES`, milliseconds per 1,000 env steps) are read as one series over the
releases, each release a group of rounds, and a penalised fit finds where the series' level steps
(:func:`~rlbench.analysis.stats.change_points`: ruptures' PELT, asv's step detection and Otava's E-divisive means
being the same idea). The fit only says where to look: each candidate is held to the one change rule
(:func:`~rlbench.analysis.change.paired`) between the releases of the segment before it and of the segment after
it, each round's value the median over the segment's releases in that round, so a change point is *reported*
with the same evidence as every step (``regressed`` / ``improved``: a change with evidence of at least the
threshold). A throughput change point names the phases that moved across the same segments, in milliseconds per
1,000 env steps, and the command that finds its release when releases the history did not measure lie between
its two sides (added by the command, which knows the spec and the index).

Beside the speed, the return at equal env steps (the largest env-step count every ok trial of the configuration
reached, as :func:`~rlbench.analysis.curves.returns_at_equal_steps` takes it) per release: a release that is
slower and learns better, or that changed a default, is a trade (:func:`trade_words`), not only a regression.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import pandas as pd

from rlbench.analysis.change import Change, can_show, paired
from rlbench.analysis.evidence import change_sentence, change_verdict, lower_at_equal_steps, missing_evidence, runs_text
from rlbench.analysis.findings import CHANGE_POINT_PENALTY, SIGNIFICANCE
from rlbench.analysis.history.changes import ApiChange
from rlbench.analysis.history.split import PHASES, split_column
from rlbench.analysis.stats import change_points, rank_p

Rounds = dict[int, float]
"""round -> one value of a release in it."""

#: The words of a learning comparison with evidence, either way.
LEARNS = ("learns better", "learns worse")


@dataclass(frozen=True)
class PhaseMove:
    """One phase across a throughput change point: its milliseconds per 1,000 env steps on each side."""

    phase: str
    """The iterations column (``sample_s``; :data:`~rlbench.analysis.history.split.PHASES`)."""
    ms_before: float | None
    """The earlier segment's median over its rounds (each round: the median over the segment's releases)."""
    ms_after: float | None
    """The later segment's."""
    change: Change
    """The later segment's milliseconds against the earlier's, paired by round (above 1: the phase takes longer)."""


@dataclass(frozen=True)
class LearningStep:
    """The return at equal env steps of a later release (or segment) against an earlier one."""

    before: str
    """The earlier release, or segment (``2.40.0..2.44.0``)."""
    after: str
    """The later one."""
    env_steps: float | None
    """The env-step count both are read at (None: no learning curve)."""
    return_before: float | None
    """The earlier side's median return there, over its trials."""
    return_after: float | None
    """The later side's."""
    n_before: int
    """Trials of the earlier side with a return there."""
    n_after: int
    """Of the later side."""
    p_value: float | None
    """One-sided exact Mann-Whitney U p-value that the lower side's returns lie below the higher's."""
    verdict: str
    """``learns better`` / ``learns worse`` (the later side; lower by at least
    :data:`~rlbench.analysis.findings.CLEARLY_BELOW_FRAC` of the higher median's size and the test shows it), ``no
    clear difference``, ``no evidence yet ...`` (too few trials for the test), ``no data``."""

    @property
    def sentence(self) -> str:
        """``return at 40,000 env steps 150.2 -> 181.0 (p = 0.0022, one-sided Mann-Whitney U, 6 runs a side)``."""
        if self.return_before is None or self.return_after is None or self.env_steps is None:
            return "no return at equal env steps on both sides"
        test = "" if self.p_value is None else f"p = {self.p_value:.2g}, one-sided Mann-Whitney U, "
        return (
            f"return at {self.env_steps:,.0f} env steps {self.return_before:,.1f} -> {self.return_after:,.1f} "
            f"({test}{runs_text(self.n_before, self.n_after)})"
        )


@dataclass(frozen=True)
class ChangePoint:
    """Where one series of a configuration steps: the segment of releases before it against the segment after."""

    metric: str
    """``throughput`` or a phase's iterations column (``sample_s``)."""
    before: str
    """The last release before the step."""
    after: str
    """The first release from which the new level holds."""
    earlier: list[str]
    """The releases of the segment before the step, oldest first."""
    later: list[str]
    """The releases of the segment after it."""
    level_before: float | None
    """The earlier segment's median: env steps/s (throughput) or milliseconds per 1,000 env steps (a phase)."""
    level_after: float | None
    """The later segment's."""
    change: Change
    """The later segment against the earlier, paired by round, as a speed (a phase: 1 / its milliseconds), so a
    ratio below 1 means slower whichever the series."""
    verdict: str
    """The one rule's verdict (:func:`~rlbench.analysis.evidence.change_verdict`)."""
    sentence: str
    """The change in words with its evidence."""
    phases: list[PhaseMove] = field(default_factory=list)
    """Throughput: each phase's change across the same segments."""
    learning: LearningStep | None = None
    """Throughput: the return at equal env steps of the later segment against the earlier."""
    trade: str = ""
    """A reported slowdown that learns better or changed a default, in words (:func:`trade_words`); a reported point
    across which a knob a spec can set changed its default, said as an API change (as the step across it is); else
    empty."""
    between: int | None = None
    """Releases the package index lists between ``before`` and ``after`` (None: the index was not read)."""
    bisect: str | None = None
    """Throughput, with releases between (or the index not read): the ``rlbench bisect`` command that finds the
    release."""

    @property
    def reported(self) -> bool:
        """A change with evidence of at least the threshold, either way."""
        return self.verdict in ("regressed", "improved")

    @property
    def size(self) -> float:
        """How far it moved, either way: |log(ratio)| (0 without one), for ordering the biggest first."""
        effect = self.change.effect
        return abs(math.log(effect)) if effect is not None and effect > 0 else 0.0

    @property
    def moved(self) -> list[PhaseMove]:
        """The phases that changed with evidence across it, the biggest first."""
        out = [m for m in self.phases if m.change.differs and m.change.effect]
        return sorted(out, key=lambda m: -abs(math.log(m.change.effect or 1.0)))


def round_values(frame: pd.DataFrame, column: str) -> Rounds:
    """round -> the column's value in that round (finite and above 0 only)."""
    if column not in frame:
        return {}
    values = pd.to_numeric(frame[column], errors="coerce")
    return {int(r): float(v) for r, v in zip(frame["_round"], values) if np.isfinite(v) and v > 0}


def segment_rounds(series: Mapping[str, Rounds], releases: Sequence[str]) -> Rounds:
    """A segment as one side of a paired comparison: round -> the median over its releases' values in that round."""
    rounds = sorted({r for v in releases for r in series.get(v, {})})
    return {r: float(np.median([series[v][r] for v in releases if r in series.get(v, {})])) for r in rounds}


def span(releases: Sequence[str]) -> str:
    """A segment of releases in words: ``2.44.0``, or ``2.40.0..2.44.0``."""
    return releases[0] if len(releases) == 1 else f"{releases[0]}..{releases[-1]}"


def _median(values: Mapping[int, float]) -> float | None:
    return float(np.median(list(values.values()))) if values else None


def series_points(
    series: Mapping[str, Rounds], versions: Sequence[str], metric: str, threshold: float, *, speed: bool
) -> list[ChangePoint]:
    """The change points of one series (``series``: release -> round -> value; ``speed``: whether a higher value is
    faster, else the value is milliseconds and its inverse is compared), each held to the one rule between its two
    segments."""
    present = [v for v in versions if series.get(v)]
    breaks = change_points([[math.log(x) for x in series[v].values()] for v in present], CHANGE_POINT_PENALTY)
    bounds = [0, *breaks, len(present)]
    segments = [present[a:b] for a, b in zip(bounds, bounds[1:])]
    out = []
    for earlier, later in zip(segments, segments[1:]):
        a, b = segment_rounds(series, earlier), segment_rounds(series, later)
        rates = (a, b) if speed else ({r: 1.0 / x for r, x in a.items()}, {r: 1.0 / x for r, x in b.items()})
        change = paired(*rates)
        out.append(
            ChangePoint(
                metric=metric,
                before=earlier[-1],
                after=later[0],
                earlier=earlier,
                later=later,
                level_before=_median(a),
                level_after=_median(b),
                change=change,
                verdict=change_verdict(change, threshold),
                sentence=change_sentence(span(earlier), span(later), change),
            )
        )
    return out


def learning_between(
    before: str, after: str, a: Sequence[float], b: Sequence[float], env_steps: float | None
) -> LearningStep:
    """The later side's returns at equal env steps (``b``) against the earlier's (``a``): :class:`LearningStep`."""
    ma: float | None = None
    mb: float | None = None
    p: float | None = None
    verdict = "no data"
    if len(a) and len(b) and env_steps is not None:
        ma, mb = float(np.median(a)), float(np.median(b))
        lower, higher = (a, b) if ma < mb else (b, a)
        gap = lower_at_equal_steps(min(ma, mb), max(ma, mb))
        p = rank_p(lower, higher) if ma != mb else None
        word = LEARNS[0] if mb > ma else LEARNS[1]
        if gap and p is not None and p <= SIGNIFICANCE:
            verdict = word
        elif gap and not can_show(len(a), len(b)):
            verdict = missing_evidence(len(a), len(b), f"{after} {word}")
        else:
            verdict = "no clear difference"
    return LearningStep(
        before=before,
        after=after,
        env_steps=env_steps,
        return_before=ma,
        return_after=mb,
        n_before=len(a),
        n_after=len(b),
        p_value=p,
        verdict=verdict,
    )


def equal_step_returns(
    sides: Mapping[str, pd.DataFrame], curves: Mapping[str, Any] | None
) -> tuple[float | None, dict[str, list[float]]]:
    """(the env-step count every ok trial of the configuration reached, name -> each trial's return there)
    (``curves``: trial_id -> :class:`~rlbench.analysis.curves.Curve`)."""
    if not curves:
        return None, {}
    mine = {
        name: [curves[t] for t in frame["trial_id"] if t in curves and not curves[t].empty]
        for name, frame in sides.items()
    }
    ends = [float(c.env_steps[-1]) for found in mine.values() for c in found]
    if not ends:
        return None, {}
    steps = min(ends)
    out = {}
    for name, found in mine.items():
        values = [float(np.interp(steps, c.env_steps, c.returns)) for c in found]
        out[name] = [v for v in values if np.isfinite(v)]
    return steps, out


def trade_words(slower: bool, learning: LearningStep | None, api: ApiChange | None) -> str:
    """A slowdown said as a trade when the later side learns better at equal env steps or changed a default (empty
    when it is not slower, or neither)."""
    if not slower:
        return ""
    parts = []
    if learning is not None and learning.verdict == LEARNS[0]:
        parts.append(f"it learns better at equal env steps ({learning.sentence})")
    if api is not None and api.defaults:
        parts.append(f"it changed defaults ({api.words()})")
    return "a trade, not only a regression: slower, but " + " and ".join(parts) if parts else ""


def config_points(
    sides: Mapping[str, pd.DataFrame],
    versions: Sequence[tuple[str, str]],
    threshold: float,
    *,
    returns: tuple[float | None, Mapping[str, list[float]]] = (None, {}),
    apis: Mapping[tuple[str, str], ApiChange | None] | None = None,
) -> list[ChangePoint]:
    """Every change point of one configuration (``sides``: variant name -> its ok trials with ``_round``), the
    throughput's and each phase's, the reported first and the biggest first; a throughput point with the phases
    across it, the learning across it and its trade (``apis``: (earlier, later release) -> the API change)."""
    names = {v: name for v, name in versions}
    order = [v for v, _ in versions]
    tput = {v: round_values(sides[names[v]], "env_steps_per_s") for v in order}
    phases = {
        phase: {v: round_values(sides[names[v]], split_column(phase)) for v in order}
        for phase, _ in PHASES
        if any(split_column(phase) in f for f in sides.values())
    }
    out = []
    for point in series_points(tput, order, "throughput", threshold, speed=True):
        moves = []
        for phase, series in phases.items():
            a, b = segment_rounds(series, point.earlier), segment_rounds(series, point.later)
            if a and b:
                moves.append(PhaseMove(phase, _median(a), _median(b), paired(a, b)))
        steps, by_name = returns
        learning = learning_between(
            span(point.earlier),
            span(point.later),
            [x for v in point.earlier for x in by_name.get(names[v], [])],
            [x for v in point.later for x in by_name.get(names[v], [])],
            steps,
        )
        api = (apis or {}).get((point.before, point.after))
        trade = trade_words(point.verdict == "regressed", learning, api)
        if point.reported and api is not None and api.workload:  # as the step across it is said
            trade = f"an API change, not a regression: a knob a spec can set changed its default ({api.words()})"
        out.append(replace(point, phases=moves, learning=learning, trade=trade))
    for phase, series in phases.items():
        out += series_points(series, order, phase, threshold, speed=False)
    return sorted(out, key=lambda p: (not p.reported, -p.size))


def read_change_points(records: Sequence[Mapping[str, Any]]) -> list[ChangePoint]:
    """``history.json``'s change points (a configuration's ``change_points``) read back through their schema: each
    record validated into a :class:`ChangePoint` (a field missing or of the wrong type raises pydantic's
    ValidationError)."""
    from pydantic import TypeAdapter

    return TypeAdapter(list[ChangePoint]).validate_python(list(records))
