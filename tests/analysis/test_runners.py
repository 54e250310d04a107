"""Inside an iteration: per-runner rows, the straggler rule, the driver's idle share (hand-computed)."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from rlbench.analysis.runners import (
    driver_idle,
    find_straggler,
    inside_columns,
    runner_iteration_rows,
    runner_iterations_frame,
)
from rlbench.results.events_file import BuildEvent, TrialEvent, parse_event


def _runner(index: int, sample_s: float, cpu_s: float, steps: int = 100) -> dict:
    return {
        "env_runner": index,
        "pid": 100 + index,
        "env_steps": steps,
        "env_step_s": sample_s / 2,
        "env_step_cpu_s": cpu_s / 2,
        "inference_s": 0.1,
        "sample_s": sample_s,
        "sample_cpu_s": cpu_s,
    }


def _events(per_iteration: list[list[dict]]) -> list[TrialEvent]:
    return [
        parse_event({"event": "iteration", "iteration": i + 1, "warmup": i == 0, "wall_s": 4.0, "runners": runners})
        for i, runners in enumerate(per_iteration)
    ]


def _iterations(n: int, wall_s: float = 4.0) -> pd.DataFrame:
    return pd.DataFrame(
        {
            "trial_id": "t",
            "iteration": range(1, n + 1),
            "warmup": [i == 0 for i in range(n)],
            "t_start_s": [wall_s * i for i in range(n)],
            "t_end_s": [wall_s * (i + 1) for i in range(n)],
            "wall_s": wall_s,
        }
    )


def test_rows_one_per_iteration_and_runner():
    rows = runner_iteration_rows("t", _events([[_runner(1, 1.0, 0.5), _runner(2, 3.0, 1.5)]]))
    assert [(r["trial_id"], r["iteration"], r["warmup"], r["env_runner"], r["pid"]) for r in rows] == [
        ("t", 1, True, 1, 101),
        ("t", 1, True, 2, 102),
    ]
    frame = runner_iterations_frame(rows)
    assert frame["sample_cpu_s"].tolist() == [0.5, 1.5]


def test_three_times_slower_runner_is_named_with_the_drivers_wait():
    warm = [_runner(1, 9.0, 9.0), _runner(2, 9.0, 9.0), _runner(3, 0.1, 0.1)]  # warm-up: left out
    steady = [_runner(1, 1.0, 0.5), _runner(2, 1.0, 0.5), _runner(3, 3.0, 1.5)]
    runners = runner_iterations_frame(runner_iteration_rows("t", _events([warm, steady, steady])))
    s = find_straggler(runners, _iterations(3))
    assert s.env_runner == 3
    assert s.step_ratio == pytest.approx(3.0)  # 3.0 s / 100 steps against the others' 1.0 s / 100
    assert s.cpu_ratio == pytest.approx(3.0)
    assert s.wait_s == pytest.approx(2.0)  # 3.0 - max(1.0, 1.0) per steady iteration
    assert s.wait_frac == pytest.approx(0.5)  # of a 4 s iteration


def test_no_straggler_below_the_ratio_or_with_one_runner():
    close = [_runner(1, 1.0, 1.0), _runner(2, 1.2, 1.2), _runner(3, 1.4, 1.4)]  # 1.4 / 1.1 = 1.27 < 1.5
    runners = runner_iterations_frame(runner_iteration_rows("t", _events([close, close])))
    assert find_straggler(runners, _iterations(2)) is None
    alone = runner_iterations_frame(runner_iteration_rows("t", _events([[_runner(1, 1.0, 1.0)]] * 2)))
    assert find_straggler(alone, _iterations(2)) is None


def test_a_runner_that_does_more_work_per_step_is_named_by_its_cpu_even_when_wall_time_hides_it():
    # a busy machine stretched the fast runner's wall time: equal walls, but 3x the CPU per step
    steady = [_runner(1, 2.0, 0.5), _runner(2, 2.0, 1.5)]
    runners = runner_iterations_frame(runner_iteration_rows("t", _events([steady, steady])))
    s = find_straggler(runners, _iterations(2))
    assert (s.env_runner, s.step_ratio, s.cpu_ratio, s.wait_s) == (2, 1.0, 3.0, 0.0)


def _utilization(rows: list[tuple[float, float]], role: str = "driver", node_id=None) -> pd.DataFrame:
    return pd.DataFrame(
        {
            "trial_id": "t",
            "t_s": [t for t, _ in rows],
            "kind": "process",
            "role": role,
            "pid": 7,
            "cpu_pct": [c for _, c in rows],
            "node_id": node_id,
        }
    )


def test_driver_idle_share_per_iteration():
    its = _iterations(3, wall_s=1.0)
    util = pd.concat(
        [
            _utilization(
                [
                    (0.25, 20.0),
                    (0.5, 20.0),
                    (0.75, 20.0),
                    (1.0, 20.0),  # iteration 1: 0.2 cores busy
                    (1.25, 100.0),
                    (1.5, 100.0),
                    (1.75, 150.0),
                    (2.0, 100.0),  # 2: busy (threads: capped at 1)
                    (2.5, 0.0),
                ]
            ),  # 3: one sample only
            _utilization([(0.5, 100.0)], role="env_runner"),
            _utilization([(0.5, 100.0)], node_id="n1"),  # a cluster node's row: not this driver
        ],
        ignore_index=True,
    )
    idle = driver_idle(its, util)
    assert idle.iloc[0] == pytest.approx(0.8)
    assert idle.iloc[1] == pytest.approx(0.0)
    assert math.isnan(idle.iloc[2])
    its["driver_idle_frac"] = idle
    its["weight_sync_s"], its["sync_bytes_per_s"] = 0.01, 1e6
    columns = inside_columns(
        "t", BuildEvent(weight_bytes=4000, weight_receivers=3, weight_params=1000), its, runner_iterations_frame([])
    )
    assert columns["driver_idle_frac"] == pytest.approx(0.0)  # steady iterations 2 (0.0) and 3 (no value)
    assert columns["sync_bytes_per_iter"] == 12000
    assert columns["straggler_env_runner"] is None


def test_configuration_names_the_runner_that_straggled_in_most_repeats():
    from rlbench.analysis.findings import straggler_finding
    from rlbench.analysis.runners import inside_by_config

    ok = pd.DataFrame(
        {
            "index": [0, 0, 0, 1],
            "straggler_env_runner": pd.array([2, 2, 3, None], dtype="Int64"),
            "straggler_step_ratio": [3.0, 2.0, 9.0, None],
            "straggler_cpu_ratio": [3.0, 3.0, 9.0, None],
            "straggler_wait_s": [0.5, 0.7, 9.0, None],
            "straggler_wait_frac": [0.2, 0.4, 0.9, None],
            "driver_idle_frac": [0.5, 0.7, 0.6, 0.1],
            "weight_bytes": 4000,
            "weight_receivers": 2,
            "sync_bytes_per_iter": 8000,
            "weight_sync_s": 0.01,
            "sync_bytes_per_s": 8e5,
        }
    )
    by = inside_by_config(ok)
    assert (by.loc[0, "straggler_env_runner"], by.loc[0, "straggler_repeats"]) == (2, 2)
    assert by.loc[0, "straggler_step_ratio"] == pytest.approx(2.5)  # median over the repeats naming runner 2
    assert by.loc[0, "driver_idle_frac"] == pytest.approx(0.6)  # median over all ok repeats
    assert pd.isna(by.loc[1, "straggler_env_runner"])
    row = {**by.loc[0].to_dict(), "n": 3}
    assert straggler_finding(row) == (
        "straggler: env runner 2 takes 2.5x the others' time per env step and 3.0x "
        "their CPU per env step; the driver waited 0.60 s per iteration on it after "
        "the others were done (30% of it) (in 2 of 3 repeats)"
    )
    assert straggler_finding({**by.loc[1].to_dict(), "n": 1}) is None
