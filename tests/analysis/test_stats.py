"""Statistics and fits on hand-computed data."""

from __future__ import annotations

import math

import numpy as np
import pytest

from rlbench.analysis.findings import KNEE_MARGIN
from rlbench.analysis.stats import (
    amdahl_speedup,
    cv,
    fit_amdahl,
    knee,
    median_ci,
    ratio_ci,
)


def test_cv_by_hand():
    # mean 5, squared deviations sum to 32, sample variance 32/7
    assert cv([2, 4, 4, 4, 5, 5, 7, 9]) == pytest.approx(math.sqrt(32 / 7) / 5)
    assert cv([3.0]) is None
    assert cv([1.0, 1.0]) == 0.0


def test_median_ci_contains_median_and_shrinks_with_n():
    e = median_ci([1, 2, 3, 4, 5])
    assert e.median == 3 and e.n == 5
    assert 1 <= e.ci_low <= 3 <= e.ci_high <= 5
    rng = np.random.default_rng(7)
    small = median_ci(rng.normal(100, 10, 10))
    large = median_ci(rng.normal(100, 10, 1000))
    assert large.ci_high - large.ci_low < (small.ci_high - small.ci_low) / 3
    assert large.ci_low <= large.median <= large.ci_high


def test_median_ci_edge_cases():
    one = median_ci([7.0])
    assert (one.median, one.ci_low, one.ci_high, one.cv, one.n) == (7.0, None, None, None, 1)
    same = median_ci([4.0, 4.0, 4.0])
    assert (same.ci_low, same.ci_high, same.cv) == (4.0, 4.0, 0.0)
    assert median_ci([]).median is None
    assert median_ci([1.0, None, float("nan"), 3.0]).n == 2


def test_ratio_of_identical_samples_is_one_and_not_significant():
    r = ratio_ci([10, 11, 12, 13, 14], [10, 11, 12, 13, 14])
    assert r.ratio == 1.0 and r.ci_low <= 1.0 <= r.ci_high  # the interval holds 1: no change


def test_ratio_of_doubled_samples_is_significant():
    a = [10, 11, 12, 13, 14]
    r = ratio_ci(a, [2 * x for x in a])
    # any resampled median of b lies in [20, 28], of a in [10, 14]: the ratio stays in [20/14, 28/10]
    assert r.ratio == 2.0 and 20 / 14 <= r.ci_low <= 2.0 <= r.ci_high <= 2.8  # the interval excludes 1


def test_ratio_needs_two_values_for_an_interval():
    r = ratio_ci([10.0], [12.0])
    assert r.ratio == pytest.approx(1.2) and r.ci_low is None


def test_amdahl_speedup_by_hand():
    # s = 0.2: time(n) = 0.2 + 0.8/n; time(1) = 1, time(4) = 0.4 -> 2.5x
    assert amdahl_speedup(4, 0.2) == pytest.approx(2.5)
    # over a base of 2 workers: time(2) = 0.6, time(8) = 0.3 -> 2x
    assert amdahl_speedup(8, 0.2, n0=2) == pytest.approx(2.0)


def test_fit_recovers_known_serial_fraction():
    n = [1, 2, 4, 8, 16]
    fit = fit_amdahl(n, [1 / (0.2 + 0.8 / k) for k in n])
    assert fit.serial_frac == pytest.approx(0.2, abs=1e-6)
    assert fit.r2 == pytest.approx(1.0) and fit.rmse < 1e-6 and fit.points == 5
    assert fit.max_speedup == pytest.approx(5.0, rel=1e-5)  # 1/s


def test_fit_relative_to_a_base_above_one():
    n = [2, 4, 8, 16]
    fit = fit_amdahl(n, [amdahl_speedup(k, 0.1, n0=2) for k in n])
    assert fit.serial_frac == pytest.approx(0.1, abs=1e-6)


def test_fit_on_noisy_data_reports_worse_goodness():
    n = [1, 2, 4, 8]
    exact = [amdahl_speedup(k, 0.3) for k in n]
    noisy = [y * f for y, f in zip(exact, [1.0, 1.08, 0.93, 1.05])]
    fit = fit_amdahl(n, noisy)
    assert 0.2 < fit.serial_frac < 0.4 and fit.r2 < 1.0 and fit.rmse > 0.01


def test_fit_with_two_points_has_no_goodness_and_linear_scaling_has_no_ceiling():
    fit = fit_amdahl([1, 2], [1.0, 2.0])
    assert fit.serial_frac == pytest.approx(0.0, abs=1e-6) and fit.r2 is None and fit.max_speedup is None
    assert fit_amdahl([1, 1], [1.0, 1.0]) is None


def test_knee_on_a_hand_made_curve():
    settings, tp = [1, 2, 4, 8, 16], [100, 180, 240, 250, 252]
    assert knee(settings, tp, KNEE_MARGIN) == 4  # best 252; 5% margin: >= 239.4
    assert knee(settings, tp, margin=0.01) == 8  # >= 249.48
    assert knee(settings, [100, None, 90], KNEE_MARGIN) == 1
    assert knee([], [], KNEE_MARGIN) is None


def test_interval_text_by_hand():
    from rlbench.analysis.stats import interval_text

    assert interval_text(0.9512, 1.0049) == "0.951-1.005"
    assert interval_text(12.25, 13.75, digits=1) == "12.2-13.8"  # Python's round-half-even on 12.25
    assert interval_text(None, None) == "-" and interval_text(0.9, None) == "-"


def test_the_rank_test_of_independent_samples_is_exact_also_with_ties():
    from rlbench.analysis.stats import rank_p, smallest_rank_p

    assert rank_p([1.0, 2.0, 3.0], [4.0, 5.0, 6.0]) == pytest.approx(1 / 20)  # ranks 1-3 of 6: 1 of C(6, 3)
    assert rank_p([500.0, 500.0], [1000.0, 1000.0, 1000.0]) == pytest.approx(1 / 10)  # scipy's default: 0.04
    assert rank_p([1.0, 2.0, 4.0], [3.0, 5.0, 6.0]) == pytest.approx(2 / 20)  # U = 1: orders with U <= 1, 2 of 20
    # every value of one side below every value of the other: 1 / C(n_a + n_b, n_a)
    assert smallest_rank_p(1, 1) == 0.5 and smallest_rank_p(2, 2) == pytest.approx(1 / 6)
    assert smallest_rank_p(3, 3) == pytest.approx(1 / 20) and smallest_rank_p(1, 19) == pytest.approx(1 / 20)
    assert smallest_rank_p(0, 3) == 1.0
    assert smallest_rank_p(1092, 1092) == 0.0 and 0 < smallest_rank_p(400, 400) < 1e-200  # past a float: 0


def test_the_signed_rank_test_of_paired_rounds():
    from rlbench.analysis.stats import signed_rank_p, smallest_signed_rank_p

    assert signed_rank_p([1.1, 1.2, 1.3, 1.4, 1.5]) == pytest.approx(2 / 32)  # all above 1: 2 of 2**5 sign patterns
    assert signed_rank_p([1.0, 1.0]) == 1.0 and signed_rank_p([]) is None
    assert smallest_signed_rank_p(5) == 0.0625 and smallest_signed_rank_p(6) == 0.03125
    assert smallest_signed_rank_p(1) == 1.0 and smallest_signed_rank_p(0) == 1.0
