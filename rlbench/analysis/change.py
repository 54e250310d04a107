"""Did it change? The one rule behind ``rlbench compare`` (two folders, or one folder's variants),
``history``, ``bisect`` and servebench's path comparisons, as asv's ``statistics.is_different`` is
behind its compare.

The design of the data picks the test; the rule is the same:

- **unpaired** (independent repeats: two result folders, two servebench paths): the ratio B/A of the
  medians, with a bootstrap interval that resamples the two sides independently
  (:func:`~rlbench.analysis.stats.ratio_ci`); the test is the one-sided exact Mann-Whitney U of the
  repeats in the ratio's direction (:func:`~rlbench.analysis.stats.rank_p`);
- **paired** (rounds: variants and versions, whose two sides ran back to back in each round): the same
  ratio of medians and interval, and the paired ratio, the median of the rounds' B/A with an interval
  over the rounds (:func:`~rlbench.analysis.stats.median_ci`: the machine's drift between rounds
  cancels in it); the test is the two-sided exact Wilcoxon signed-rank test of the rounds' log ratios
  (:func:`~rlbench.analysis.stats.signed_rank_p`).

B changed against A (:attr:`Change.differs`) when every interval excludes 1 on the same side and the
test agrees at :data:`~rlbench.analysis.findings.SIGNIFICANCE` (:func:`changed`); whether the runs could show a
change at all is :func:`can_show` (repeats) and :func:`rounds_can_show` (rounds); B is *as good as* A within a
threshold when every interval lies inside 1 +/- it (:func:`equivalent`: more runs cannot show a change that
large), and apart from it by more than the threshold when every interval lies beyond it on one side
(:func:`clear_of`; autoconfig's race decides with both: ``decide.verdict``). What that is called in words is
:mod:`rlbench.analysis.evidence`' (the thresholds :mod:`rlbench.analysis.findings`'). Where rounds were run but
may be too few for the paired test (autoconfig's race), :func:`by_rounds` picks the design and says which it took.
The table of which command uses which design: docs/ANALYSIS.md, "Did it change? One rule".

:class:`Change` is what ``compare.json``, ``history.json`` and ``bisect.json`` hold for every pair, so
its fields are part of their schema (:data:`COMPARISON_SCHEMA_VERSION`; docs/SCHEMA.md).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, fields
from typing import Any

from rlbench.analysis import findings
from rlbench.analysis.stats import median_ci, rank_p, ratio_ci, signed_rank_p, smallest_rank_p, smallest_signed_rank_p

#: Version of the comparison files' schema (``compare.csv``, ``compare.json``, ``history.json``,
#: ``bisect.json``: the field ``schema_version``). 1: the files before it had the field (two schemas of
#: ``compare.*``; a pair's figures flat in each row or step). 2: one row schema for both kinds of
#: ``compare``, every pair's figures in one nested :class:`Change` (docs/SCHEMA.md).
COMPARISON_SCHEMA_VERSION = 2
#: The test of each design, as :attr:`Change.test` names it.
TESTS = {"unpaired": "Mann-Whitney U, one-sided", "paired": "Wilcoxon signed-rank, two-sided"}


def can_show(n_a: int, n_b: int) -> bool:
    """Whether ``n_a`` against ``n_b`` repeats are enough for the rank test of independent runs to reach
    :data:`~rlbench.analysis.findings.SIGNIFICANCE` (:func:`~rlbench.analysis.stats.smallest_rank_p`: 3 a side,
    or 2 against 6)."""
    return smallest_rank_p(n_a, n_b) <= findings.SIGNIFICANCE


def rounds_can_show(pairs: int) -> bool:
    """Whether ``pairs`` rounds are enough for the rank test of paired rounds to reach
    :data:`~rlbench.analysis.findings.SIGNIFICANCE` (:func:`~rlbench.analysis.stats.smallest_signed_rank_p`:
    :data:`~rlbench.analysis.findings.ROUNDS_FOR_EVIDENCE`)."""
    return smallest_signed_rank_p(pairs) <= findings.SIGNIFICANCE


def changed(intervals: Sequence[tuple[float | None, float | None]], p_value: float | None) -> bool:
    """The one rule of "did it change?": every interval (of B/A) excludes 1 on the same side and the rank
    test agrees at :data:`~rlbench.analysis.findings.SIGNIFICANCE` (docs/ANALYSIS.md, "Did it change? One rule")."""
    lows = [low for low, _ in intervals if low is not None]
    highs = [high for _, high in intervals if high is not None]
    if p_value is None or len(lows) < len(intervals) or len(highs) < len(intervals):
        return False
    return (min(lows) > 1.0 or max(highs) < 1.0) and p_value <= findings.SIGNIFICANCE


@dataclass(frozen=True)
class Change:
    """B against A: the figures of one pair and whether it changed, by the one rule."""

    design: str
    """``unpaired`` (independent repeats) or ``paired`` (rounds, a round's two sides back to back)."""
    basis: str
    """What the ratio's interval resampled: ``repeats``, ``iterations`` (fewer than
    :data:`~rlbench.analysis.findings.REPEATS_FOR_INTERVAL` repeats on a side: within-run noise only),
    ``rounds``; ``-`` when a side has no value."""
    n_a: int
    """Values of side A the ratio's interval resampled."""
    n_b: int
    """Values of side B."""
    ratio: float | None
    """median(B) / median(A) (below 1: B is lower); None when a side has no value or A's median is 0."""
    ci_low: float | None
    """Lower end of its bootstrap interval at :data:`~rlbench.analysis.findings.CONFIDENCE`, the two sides resampled
    independently (None with fewer than 2 values on a side)."""
    ci_high: float | None
    """Upper end."""
    paired_ratio: float | None
    """Paired: the median over the rounds both sides ran of that round's B / A; unpaired: None."""
    paired_ci_low: float | None
    """Lower end of its bootstrap interval over the rounds (None with fewer than 2 pairs)."""
    paired_ci_high: float | None
    """Upper end."""
    test: str
    """The rank test of the design (:data:`TESTS`)."""
    runs_a: int
    """Runs of side A the test ranks: its repeats (unpaired), the rounds both sides ran (paired)."""
    runs_b: int
    """Runs of side B (paired: the same rounds)."""
    p_value: float | None
    """The test's p-value (unpaired: in the ratio's direction; None without a direction or a run a side)."""
    differs: bool
    """Every interval excludes 1 on the same side and the test agrees (:func:`changed`)."""

    @property
    def effect(self) -> float | None:
        """The ratio a threshold is held against: the paired ratio (paired), the ratio of medians (unpaired)."""
        return self.paired_ratio if self.design == "paired" and self.paired_ratio is not None else self.ratio

    @property
    def enough(self) -> bool:
        """Whether these runs could show a change at all: the test could reach
        :data:`~rlbench.analysis.findings.SIGNIFICANCE` and the ratio's interval has 2 values a side to resample
        (1 reading against 19 can give p = 1/20, but no interval)."""
        if self.design == "paired":
            return rounds_can_show(self.runs_a)
        return can_show(self.runs_a, self.runs_b) and min(self.n_a, self.n_b) >= 2

    @property
    def intervals(self) -> list[tuple[float | None, float | None]]:
        """The intervals of B/A the rule holds against 1: the ratio's, and the paired ratio's (paired)."""
        out = [(self.ci_low, self.ci_high)]
        return out + [(self.paired_ci_low, self.paired_ci_high)] if self.design == "paired" else out


#: The fields of a :class:`Change`, in order: the flat columns of ``compare.csv`` (docs/SCHEMA.md).
CHANGE_FIELDS: tuple[str, ...] = tuple(f.name for f in fields(Change))


def _finite(values: Sequence[float] | None) -> list[float]:
    return [float(v) for v in (() if values is None else values) if v is not None and math.isfinite(float(v))]


def unpaired(
    a: Sequence[float], b: Sequence[float], within: tuple[Sequence[float], Sequence[float]] | None = None
) -> Change:
    """B against A from independent repeats (each side's values one per run).

    With fewer than :data:`~rlbench.analysis.findings.REPEATS_FOR_INTERVAL` repeats on a side, the ratio's
    interval resamples ``within`` instead, when given: each side's runs' steady iterations, pooled (compare's
    single runs). Its interval then shows within-run noise only, and the test still counts the runs.
    """
    a, b = _finite(a), _finite(b)
    enough_repeats = min(len(a), len(b)) >= findings.REPEATS_FOR_INTERVAL
    xa, xb = (a, b) if enough_repeats or within is None else (_finite(within[0]), _finite(within[1]))
    r = ratio_ci(xa, xb)
    p = None
    if r.ratio is not None and r.ratio != 1.0 and a and b:
        lower, higher = (b, a) if r.ratio < 1 else (a, b)
        p = rank_p(lower, higher)
    basis = "-" if not a or not b else "repeats" if xa is a else "iterations"
    return Change(
        design="unpaired",
        basis=basis,
        n_a=r.n_a,
        n_b=r.n_b,
        ratio=r.ratio,
        ci_low=r.ci_low,
        ci_high=r.ci_high,
        paired_ratio=None,
        paired_ci_low=None,
        paired_ci_high=None,
        test=TESTS["unpaired"],
        runs_a=len(a),
        runs_b=len(b),
        p_value=p,
        differs=changed([(r.ci_low, r.ci_high)], p),
    )


def paired(a: Mapping[int, float], b: Mapping[int, float]) -> Change:
    """B against A from rounds (round -> value on each side; a round missing on a side drops out of the
    pairs only)."""
    r = ratio_ci(list(a.values()), list(b.values()))
    ratios = [b[k] / a[k] for k in sorted(set(a) & set(b)) if a[k] > 0]
    pair = median_ci(ratios)
    p = signed_rank_p(ratios)
    return Change(
        design="paired",
        basis="rounds" if a and b else "-",
        n_a=r.n_a,
        n_b=r.n_b,
        ratio=r.ratio,
        ci_low=r.ci_low,
        ci_high=r.ci_high,
        paired_ratio=pair.median,
        paired_ci_low=pair.ci_low,
        paired_ci_high=pair.ci_high,
        test=TESTS["paired"],
        runs_a=len(ratios),
        runs_b=len(ratios),
        p_value=p,
        differs=changed([(r.ci_low, r.ci_high), (pair.ci_low, pair.ci_high)], p),
    )


def by_rounds(a: Mapping[int, float], b: Mapping[int, float]) -> Change:
    """B against A from values taken in rounds (round -> value; autoconfig's race): :func:`paired` where the rounds
    both sides ran can reach significance (:func:`rounds_can_show`), else :func:`unpaired` over the same values,
    as if independent (the design the :class:`Change` names; :func:`design_note` says why in words)."""
    if rounds_can_show(len(set(a) & set(b))):
        return paired(a, b)
    return unpaired(list(a.values()), list(b.values()))


def design_note(rounds: int) -> str | None:
    """Why values taken in ``rounds`` rounds were compared unpaired (None: they were paired), in words."""
    if rounds_can_show(rounds):
        return None
    return (
        f"{rounds} round{'s' if rounds != 1 else ''}: the paired test needs {findings.ROUNDS_FOR_EVIDENCE}, so "
        "the rounds were compared as independent repeats"
    )


def equivalent(change: Change, threshold: float) -> bool:
    """Whether B is as good as A within ``threshold``: every interval of B/A lies inside [1 - threshold,
    1 + threshold], so more runs cannot show a change that large at :data:`~rlbench.analysis.findings.CONFIDENCE`."""
    ends = [x for pair in change.intervals for x in pair if x is not None]
    return len(ends) == 2 * len(change.intervals) and min(ends) >= 1.0 - threshold and max(ends) <= 1.0 + threshold


def clear_of(change: Change, threshold: float) -> bool:
    """Whether B is apart from A by more than ``threshold``: every interval of B/A lies below 1 - threshold, or every
    one above 1 + threshold (the other side of :func:`equivalent`: more runs cannot bring it inside the threshold at
    :data:`~rlbench.analysis.findings.CONFIDENCE`)."""
    ends = [x for pair in change.intervals for x in pair if x is not None]
    if len(ends) < 2 * len(change.intervals):
        return False
    return max(ends) < 1.0 - threshold or min(ends) > 1.0 + threshold


def flat(change: Change | None, prefix: str = "") -> dict[str, Any]:
    """The change's fields as flat columns (``compare.csv``), each name after ``prefix``; all None without one."""
    return {prefix + name: None if change is None else getattr(change, name) for name in CHANGE_FIELDS}
