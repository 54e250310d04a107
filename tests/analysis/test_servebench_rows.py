"""servebench's rows and comparisons on hand-computed runs."""

from __future__ import annotations

import pytest

from rlbench.analysis.change import unpaired
from rlbench.analysis.servebench_rows import PathComparison, compare_paths, gap_change, paper_rows, summarize_rows


def run(path, repeat, rate, p50, p99, *, batch=64, size=4096, clients=1, cpu=None, error=None, nbytes=0):
    return {
        "path": path,
        "batch": batch,
        "input_bytes": size,
        "clients": clients,
        "repeat": repeat,
        "position": 0,
        "model": "residual",
        "states_per_s": None if error else rate,
        "p50_ms": p50,
        "p99_ms": p99,
        "requests": 10,
        "short": False,
        "bytes_per_request": nbytes,
        "error": error,
        "cpu_s_per_1000_states": cpu or {},
    }


RUNS = [
    run("inprocess", 0, 1000.0, 1.0, 2.0, cpu={"client": 0.010}),
    run("inprocess", 1, 1200.0, 1.2, 3.0, cpu={"client": 0.014}),
    run("inprocess", 2, 1100.0, 1.1, 4.0, cpu={"client": 0.012}),
    run("actor", 0, 500.0, 3.0, 5.0, cpu={"client": 0.02, "server": 0.05}, nbytes=262_267),
    run("actor", 1, 600.0, 3.2, 6.0, cpu={"client": 0.03, "server": 0.07}, nbytes=262_267),
    run("actor", 2, 550.0, 3.1, 7.0, cpu={"client": 0.04, "server": 0.06}, nbytes=262_267),
    run("rest_json", 0, 100.0, 9.0, 9.0),
    run("rest_json", 1, None, None, None, error="HTTP 500 from rest_json: b'boom'"),
]


def test_rows_are_medians_over_repeats_with_overhead_against_in_process():
    rows = {r.path: r for r in summarize_rows(RUNS)}
    inproc, actor, rest = rows["inprocess"], rows["actor"], rows["rest_json"]
    assert (
        inproc.states_per_s == 1100.0 and 1000.0 <= inproc.states_per_s_ci_low <= 1100.0 <= inproc.states_per_s_ci_high
    )
    assert inproc.p50_ms == pytest.approx(1.1) and inproc.p99_ms == 3.0 and inproc.overhead_ms == pytest.approx(0.0)
    assert actor.states_per_s == 550.0 and actor.p50_ms == pytest.approx(3.1)
    assert actor.overhead_ms == pytest.approx(2.0)  # 3.1 - 1.1
    assert actor.cpu_s_per_1000_states == {"client": pytest.approx(0.03), "server": pytest.approx(0.06)}
    assert actor.bytes_per_request == 262_267 and actor.runs == 3 and actor.failed == 0 and actor.error is None
    assert rest.runs == 1 and rest.failed == 1 and rest.states_per_s == 100.0 and rest.states_per_s_ci_low is None
    assert rest.error == "1 of 2 repeats failed: HTTP 500 from rest_json: b'boom'"
    assert [r.path for r in summarize_rows(RUNS)] == ["inprocess", "actor", "rest_json"]  # PATHS' order


def test_a_difference_needs_an_interval_off_1_and_the_rank_test():
    (c,) = compare_paths(RUNS, pairs=(("actor", "inprocess"),))
    assert c.change == unpaired([1000.0, 1200.0, 1100.0], [500.0, 600.0, 550.0])  # the rule's Change, as it is
    assert c.change.ratio == pytest.approx(0.5) and c.change.ci_high < 1 and c.change.p_value == pytest.approx(0.05)
    assert c.change.differs and c.verdict.startswith("actor is 50.0% slower than inprocess (3 runs a side; ratio")
    (few,) = compare_paths(RUNS, pairs=(("rest_json", "actor"),))
    assert not few.change.differs and few.verdict.startswith("no evidence of a difference (3 runs against 1; ")
    assert few.verdict.endswith("3 repeats a side could show one)")
    same = PathComparison("a", "b", 64, 4096, 1, unpaired([10.0, 11.0, 12.0], [11.0, 10.5, 12.5]))
    assert not same.change.differs and same.verdict.startswith("no evidence of a difference")


def test_the_gap_between_two_paths_compares_each_repeats_ratio_across_sizes():
    # actor / rest_json per repeat: 2, 2.2, 2.1 at 4 KB; 10, 11, 10.5 at 100 KB: every one above, p = 1/20
    runs = [
        run(p, k, rate, 1.0, 1.0, size=size)
        for size, rates in (
            (4096, {"actor": (200.0, 220.0, 210.0), "rest_json": (100.0, 100.0, 100.0)}),
            (102400, {"actor": (1000.0, 1100.0, 1050.0), "rest_json": (100.0, 100.0, 100.0)}),
        )
        for p, rs in rates.items()
        for k, rate in enumerate(rs)
    ]
    c = gap_change(runs, "actor", "rest_json", 64, 1, (4096, 102400))
    assert c.ratio == pytest.approx(10.5 / 2.1) and c.differs and c.p_value == pytest.approx(0.05)
    assert gap_change(runs, "actor", "rest_json", 64, 2, (4096, 102400)) is None  # no repeat with 2 clients


def test_the_paper_table_sits_beside_this_machines_batch_64():
    rows = summarize_rows(
        RUNS + [run("actor", 0, 2000.0, 1.0, 1.0, size=102400), run("rest_json", 0, 100.0, 1.0, 1.0, size=102400)]
    )
    small, large = paper_rows(rows)
    assert (small["paper_clipper"], small["paper_ray"]) == (4400, 6200)
    assert small["rest_json"] == 100.0 and small["actor"] == 550.0 and small["ratio"] == pytest.approx(5.5)
    assert large["paper_ratio"] == pytest.approx(6900 / 290) and large["ratio"] == pytest.approx(20.0)
    assert large["paths"]["actor"] == 2000.0
