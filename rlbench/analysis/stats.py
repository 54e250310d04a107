"""Statistics for the analysis: medians with bootstrap intervals, spread, ratios, rank tests, scaling fits.

Pure functions on numbers (no tables, no files), each tested on hand-computed data. Every
confidence interval comes from one engine, :func:`interval` (rliable's
``get_interval_estimates(scores, func)`` shape: samples and a statistic in, an interval out), so
the bootstrap's method, resamples and seed are set in one place. The rules and thresholds are
explained in docs/ANALYSIS.md.

scipy is imported inside the functions that use it: ``scipy.stats``' import is 1.2 s of a core (it writes its
distributions' docstrings), paid before by every command that reads results, also where no interval is computed
(one repeat a point, ``--dry-run``).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from rlbench.analysis.findings import CONFIDENCE

#: Bootstrap resamples (percentile method; seeded, so a report is reproducible).
BOOTSTRAP_RESAMPLES = 2000
#: Seed of the bootstrap's random generator.
BOOTSTRAP_SEED = 0


def interval(
    samples: Sequence[np.ndarray],
    statistic: Callable,
    *,
    confidence: float = CONFIDENCE,
    resamples: int = BOOTSTRAP_RESAMPLES,
    seed: int = BOOTSTRAP_SEED,
) -> tuple[np.ndarray, np.ndarray]:
    """Percentile-bootstrap interval of ``statistic(*samples)``: the one engine behind every CI here.

    Args:
        samples: one array per group, resampled independently (along the last axis; a 2-D array
            is a batch of same-sized samples, one per row, bootstrapped in one vectorized call).
        statistic: a vectorized function of the samples that reduces the last axis (``axis=-1``),
            e.g. ``np.median`` or the ratio of two medians.
    Returns:
        (low, high): arrays shaped like the statistic (scalars for 1-D samples). scipy.stats.bootstrap,
        percentile method, seeded, so a report is reproducible.
    """
    from scipy import stats

    res = stats.bootstrap(
        tuple(samples),
        statistic,
        confidence_level=confidence,
        n_resamples=resamples,
        method="percentile",
        vectorized=True,
        paired=False,
        axis=-1,
        random_state=np.random.default_rng(seed),
    )
    return res.confidence_interval.low, res.confidence_interval.high


def is_number(v) -> bool:
    """A finite number (not a bool): a value an axis can be scaled along."""
    return (
        isinstance(v, (int, float, np.integer, np.floating))
        and not isinstance(v, (bool, np.bool_))
        and math.isfinite(float(v))
    )


def _finite(values: Sequence[float | None] | np.ndarray) -> np.ndarray:
    a = np.asarray([v for v in values if v is not None], dtype=float)
    return a[np.isfinite(a)]


@dataclass(frozen=True)
class Estimate:
    """A median with its bootstrap confidence interval and spread."""

    median: float | None
    """Median of the values (None without values)."""
    ci_low: float | None
    """Lower end of the 95% percentile-bootstrap interval of the median (None with fewer than 2 values)."""
    ci_high: float | None
    """Upper end of that interval."""
    cv: float | None
    """Coefficient of variation: sample standard deviation (ddof=1) / mean (None with fewer than 2 values)."""
    n: int
    """How many values it is computed from."""


def interval_text(low: float | None, high: float | None, digits: int = 3) -> str:
    """``"low-high"`` for printing an interval, ``"-"`` where there is none (fewer than 2 values)."""
    return "-" if low is None or high is None else f"{low:.{digits}f}-{high:.{digits}f}"


def cv(values: Sequence[float] | np.ndarray) -> float | None:
    """Sample standard deviation (ddof=1) over the mean; None with fewer than 2 values or mean 0."""
    a = _finite(values)
    if len(a) < 2 or a.mean() == 0:
        return None
    return float(a.std(ddof=1) / abs(a.mean()))


def median_ci(
    values: Sequence[float | None],
    confidence: float = CONFIDENCE,
    resamples: int = BOOTSTRAP_RESAMPLES,
    seed: int = BOOTSTRAP_SEED,
) -> Estimate:
    """Median of ``values`` with a percentile-bootstrap CI (scipy.stats.bootstrap) and the CV.

    Args:
        values: independent measurements (e.g. one per repeat); None and non-finite are ignored.
    Returns:
        :class:`Estimate`; the interval is None with fewer than 2 values, and collapses to the
        value when all values are equal.
    """
    a = _finite(values)
    if len(a) == 0:
        return Estimate(None, None, None, None, 0)
    median = float(np.median(a))
    if len(a) < 2:
        return Estimate(median, None, None, None, 1)
    if np.all(a == a[0]):
        return Estimate(median, median, median, 0.0, len(a))
    low, high = interval((a,), np.median, confidence=confidence, resamples=resamples, seed=seed)
    return Estimate(median, min(float(low), median), max(float(high), median), cv(a), len(a))


@dataclass(frozen=True)
class Ratio:
    """median(b) / median(a) with its bootstrap interval."""

    ratio: float | None
    """Point estimate; None when either side has no values or a's median is 0."""
    ci_low: float | None
    """Lower end of the 95% interval (independent resampling of a and b); None when a side has < 2 values."""
    ci_high: float | None
    """Upper end."""
    n_a: int
    """Values on side a."""
    n_b: int
    """Values on side b."""


def _median_ratio(a, b, axis=-1):
    return np.median(b, axis=axis) / np.median(a, axis=axis)


def ratio_ci(
    a: Sequence[float],
    b: Sequence[float],
    confidence: float = CONFIDENCE,
    resamples: int = BOOTSTRAP_RESAMPLES,
    seed: int = BOOTSTRAP_SEED,
) -> Ratio:
    """median(b) / median(a), with a percentile-bootstrap CI that resamples a and b independently."""
    xa, xb = _finite(a), _finite(b)
    if len(xa) == 0 or len(xb) == 0 or np.median(xa) == 0:
        return Ratio(None, None, None, len(xa), len(xb))
    ratio = float(np.median(xb) / np.median(xa))
    if len(xa) < 2 or len(xb) < 2:
        return Ratio(ratio, None, None, len(xa), len(xb))
    if np.all(xa == xa[0]) and np.all(xb == xb[0]):
        return Ratio(ratio, ratio, ratio, len(xa), len(xb))
    low, high = interval((xa, xb), _median_ratio, confidence=confidence, resamples=resamples, seed=seed)
    return Ratio(ratio, min(float(low), ratio), max(float(high), ratio), len(xa), len(xb))


def median_cis(
    samples: list[np.ndarray],
    confidence: float = CONFIDENCE,
    resamples: int = BOOTSTRAP_RESAMPLES,
    seed: int = BOOTSTRAP_SEED,
    max_elements: int = 1_000_000,
) -> list[tuple[float | None, float | None]]:
    """Percentile-bootstrap CI of the median for many samples at once (scipy.stats.bootstrap, batched).

    Samples of the same size go through one vectorized call (chunked to ``max_elements`` values in
    flight); the result equals calling :func:`median_ci` on each, up to resampling.
    Returns (low, high) per sample; (None, None) with fewer than 2 values.
    """
    out: list[tuple[float | None, float | None]] = [(None, None)] * len(samples)
    by_n: dict[int, list[int]] = {}
    for i, s in enumerate(samples):
        if len(s) >= 2:
            by_n.setdefault(len(s), []).append(i)
    for n, idx in by_n.items():
        chunk = max(1, max_elements // (n * resamples))
        for start in range(0, len(idx), chunk):
            part = idx[start : start + chunk]
            data = np.vstack([samples[i] for i in part])
            medians = np.median(data, axis=1)
            lows, highs = (
                np.atleast_1d(x)
                for x in interval((data,), np.median, confidence=confidence, resamples=resamples, seed=seed)
            )
            for j, i in enumerate(part):
                m = float(medians[j])
                lo, hi = float(lows[j]), float(highs[j])
                if np.all(data[j] == data[j][0]) or not math.isfinite(lo):
                    lo = hi = m
                out[i] = (min(lo, m), max(hi, m))
    return out


# ---------------------------------------------------------------------------------------------
# Rank tests: the one of independent samples, the one of paired rounds


def rank_p(lower: Sequence[float], higher: Sequence[float]) -> float:
    """One-sided exact Mann-Whitney U p-value that ``lower``'s values lie below ``higher``'s: the one
    rank test of independent samples (compare, the learning and servebench comparisons, autoconfig).

    Exact also with ties (``method="exact"``): scipy's default leaves the exact test for the normal
    approximation as soon as a value repeats, which gave p = 0.04 for 2 equal readings against 3 (exact:
    1/10), below what 2 readings can ever show. 3 values all below 3 others: 1 / C(6, 3) = 0.05.
    """
    from scipy import stats

    return float(stats.mannwhitneyu(list(lower), list(higher), alternative="less", method="exact").pvalue)


def smallest_rank_p(n_a: int, n_b: int) -> float:
    """The smallest p :func:`rank_p` can give for ``n_a`` against ``n_b`` values: every value of one side
    below every value of the other, 1 / C(n_a + n_b, n_a) (1 without values; 0.0 once that is below what a float
    holds, from about 500 a side: the binomial itself is too large for one)."""
    if n_a <= 0 or n_b <= 0:
        return 1.0
    ways = math.comb(n_a + n_b, n_a)
    return 1.0 / ways if ways.bit_length() < 1000 else 0.0


def signed_rank_p(ratios: Sequence[float]) -> float | None:
    """Two-sided exact Wilcoxon signed-rank p-value of ``log(ratios)`` against 0: the rank test of paired
    rounds (exact for these few rounds); 1.0 when every ratio is 1, None without ratios."""
    logs = np.log(np.asarray(ratios, dtype=float))
    if len(logs) == 0:
        return None
    if np.all(logs == 0):
        return 1.0
    from scipy import stats

    return float(stats.wilcoxon(logs, alternative="two-sided", zero_method="wilcox").pvalue)


def smallest_signed_rank_p(pairs: int) -> float:
    """The smallest p :func:`signed_rank_p` can give on ``pairs`` rounds: every one the same way, 2 / 2**n
    (5 rounds: 0.0625; 6: 0.031); 1 without pairs."""
    return min(1.0, 2.0 / 2**pairs) if pairs > 0 else 1.0


# ---------------------------------------------------------------------------------------------
# Change points: where a series of levels steps


def change_points(groups: Sequence[Sequence[float]], penalty: float) -> list[int]:
    """Where a series steps: the positions ``i`` (1 to n - 1) at which a new level begins, over ``groups`` (one
    group of readings per point of the series, in order; a group without readings is left out of the fit and never
    starts a segment). The fit is ruptures' PELT (Killick et al. 2012) of piecewise-constant levels, least squares,
    on the groups' medians: a break is kept when it lowers the squared error by more than ``penalty * noise**2 *
    log(n)``, where ``noise`` is the spread of a median (the readings' pooled deviation from their group's median,
    as a standard deviation by the MAD, times sqrt(pi / 2 / readings)). The library finds candidates only: whether
    a candidate changed is the one rule's (:mod:`rlbench.analysis.change`).
    """
    import ruptures  # the detection library (pyproject.toml): imported here only, when a history asks for it

    kept = [(i, _finite(g)) for i, g in enumerate(groups)]
    kept = [(i, g) for i, g in kept if len(g)]
    if len(kept) < 2:
        return []
    levels = np.array([float(np.median(g)) for _, g in kept])
    deviations = np.concatenate([g - np.median(g) for _, g in kept])
    sigma = 1.4826 * float(np.median(np.abs(deviations)))
    readings = float(np.median([len(g) for _, g in kept]))
    noise = sigma * math.sqrt(math.pi / 2 / readings)
    # a series without spread (a hand-made one) keeps every break that lowers the error at all
    pen = penalty * max(noise, 1e-12 * max(1.0, float(np.abs(levels).max()))) ** 2 * math.log(len(levels))
    ends = ruptures.Pelt(model="l2", min_size=1, jump=1).fit(levels.reshape(-1, 1)).predict(pen=pen)
    return [kept[e][0] for e in ends[:-1]]


# ---------------------------------------------------------------------------------------------
# Scaling


def amdahl_speedup(n: np.ndarray | float, serial_frac: float, n0: float = 1.0) -> np.ndarray | float:
    """Amdahl's speedup of ``n`` workers over ``n0`` workers when ``serial_frac`` of 1 worker's time is serial."""
    time = lambda k: serial_frac + (1.0 - serial_frac) / k  # noqa: E731
    return time(n0) / time(np.asarray(n, dtype=float))


@dataclass(frozen=True)
class AmdahlFit:
    """Least-squares fit of Amdahl's law to measured speedups."""

    serial_frac: float
    """Fitted serial fraction s in [0, 1] (of the time one worker would take)."""
    r2: float | None
    """Coefficient of determination of the fitted speedups (None with fewer than 3 points: one
    parameter through 2 points always fits)."""
    rmse: float
    """Root mean square error of the fitted speedups."""
    max_speedup: float | None
    """Amdahl's ceiling over n0 workers as n grows: (s + (1 - s)/n0) / s (None when s = 0)."""
    points: int
    """Points fitted."""


def fit_amdahl(n: Sequence[float], speedup: Sequence[float], n0: float | None = None) -> AmdahlFit | None:
    """Fit the serial fraction s of Amdahl's law to speedups measured at worker counts ``n``.

    Args:
        n: worker counts (> 0), one per speedup.
        speedup: throughput at n divided by throughput at ``n0``.
        n0: the base worker count the speedups are relative to (default min(n)).
    Returns:
        The fit, or None with fewer than 2 distinct positive n.
    """
    x, y = np.asarray(n, dtype=float), np.asarray(speedup, dtype=float)
    keep = (x > 0) & np.isfinite(y)
    x, y = x[keep], y[keep]
    if len(np.unique(x)) < 2:
        return None
    base = float(n0 if n0 is not None else x.min())
    from scipy import optimize

    res = optimize.minimize_scalar(
        lambda s: float(np.sum((amdahl_speedup(x, s, base) - y) ** 2)),
        bounds=(0.0, 1.0),
        method="bounded",
        options={"xatol": 1e-10},
    )
    s = float(res.x)
    residual = amdahl_speedup(x, s, base) - y
    ss_res = float(np.sum(residual**2))
    ss_tot = float(np.sum((y - y.mean()) ** 2))
    r2 = (1.0 - ss_res / ss_tot if ss_tot > 0 else None) if len(x) >= 3 else None
    ceiling = (s + (1 - s) / base) / s if s > 1e-9 else None
    return AmdahlFit(s, r2, math.sqrt(ss_res / len(x)), ceiling, len(x))


def knee(settings: Sequence, throughput: Sequence[float | None], margin: float):
    """The smallest setting whose throughput is within ``margin`` of the best (settings in ascending order).

    Returns:
        The setting, or None when no throughput is known.
    """
    values = [(s, t) for s, t in zip(settings, throughput) if t is not None and math.isfinite(t)]
    if not values:
        return None
    best = max(t for _, t in values)
    for s, t in values:
        if t >= (1.0 - margin) * best:
            return s
    return None  # unreachable: the best itself qualifies
