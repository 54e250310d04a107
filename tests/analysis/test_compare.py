"""The compare verdict's rule: no verdict from fewer repeats than a rank test needs (hand-computed)."""

from __future__ import annotations

from rlbench.analysis.compare import throughput_verdict


def test_one_run_a_side_gives_no_verdict_however_far_apart():
    # B at 0.8 of A with an interval below 1 (iterations of one run each): p could be 1/2 at best
    assert throughput_verdict(0.8, True, 0.05, 1, 1) == \
        "no evidence yet: 1 run a side; 3 repeats a side could show it"
    # 2 a side: the rank test's smallest p is 1 / C(4, 2) = 1/6 > 0.05
    assert throughput_verdict(1.3, True, 0.05, 2, 2) == \
        "no evidence yet: 2 runs a side; 3 repeats a side could show it"
    # 1 against 3: 1 / C(4, 1) = 1/4
    assert throughput_verdict(1.0, False, 0.05, 1, 3).startswith("no evidence yet: 1 run against 3;")


def test_enough_repeats_give_the_verdict_the_interval_says():
    assert throughput_verdict(0.8, True, 0.05, 3, 3) == "regressed"  # 1 / C(6, 3) = 0.05
    assert throughput_verdict(0.8, True, 0.05, 2, 6) == "regressed"  # 1 / C(8, 2) = 1/28 = 0.036
    assert throughput_verdict(0.8, True, 0.25, 3, 3) == "small change"
    assert throughput_verdict(1.3, True, 0.05, 3, 3) == "improved"
    assert throughput_verdict(0.8, False, 0.05, 3, 3) == "no significant change"
    assert throughput_verdict(None, False, 0.05, 0, 3) == "no data"
