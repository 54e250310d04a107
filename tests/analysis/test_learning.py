"""A trial's learning outcome and CPU + GPU energy, on hand-made iterations and utilization rows."""

from __future__ import annotations

import pandas as pd
import pytest

from rlbench.analysis.energy import cpu_energy_j, total_energy_j
from rlbench.analysis.learning import learning_outcome
from rlbench.measure.machine import MachineInfo
from rlbench.planning.plan import plan_trials
from rlbench.spec.load import spec_from_dict

MACHINE = MachineInfo(
    hostname="h", cpu_model="c", logical_cores=2, physical_cores=2, usable_cores=[0, 1], memory_bytes=2**30, gpus=[]
)


def _plan(stop):
    data = {"name": "t", "environment": {"env": "envs.tiny:TinyEnv"}, "stop": stop, "seed": [42]}
    return plan_trials(spec_from_dict(data, check_envs=False), MACHINE)[0]


def _its(values, returns=None):
    n = len(values)
    return pd.DataFrame(
        {
            "iteration": range(1, n + 1),
            "wall_s": [2.0, 1.0, 1.5, 0.5][:n],
            "env_steps_sampled": [100, 200, 300, 400][:n],
            "t_start_s": [10.0, 12.0, 13.0, 14.5][:n],
            "t_end_s": [12.0, 13.0, 14.5, 15.0][:n],
            "target_value": values,
            "episode_return_mean": returns if returns is not None else values,
        }
    )


def _cpu_rows(points):
    """cpu_energy rows: (t_s, package, energy_uj since start)."""
    return pd.DataFrame(
        {
            "kind": "cpu_energy",
            "t_s": [p[0] for p in points],
            "cpu_package": [p[1] for p in points],
            "cpu_energy_uj": [p[2] for p in points],
            "node_id": None,
        }
    )


ROW = {"ray_init_s": 3.0, "build_s": 4.0}


def test_reached_target_columns_follow_from_the_iterations():
    plan = _plan({"iterations": 9, "episode_return_mean": 20})
    # 10 J per second of package energy, sampled every second from t=10 to t=15
    util = _cpu_rows([(t, 0, (t - 10) * 10_000_000) for t in range(10, 16)])
    out = learning_outcome(plan, "ok", ROW, _its([None, 15.0, 20.0, 30.0]), util)
    assert out["reached_target"] is True and out["seed"] == 42
    assert (out["target_metric"], out["target_threshold"], out["target_mode"]) == (
        "episode_return_mean",
        20.0,
        "at_least",
    )
    assert out["iterations_to_target"] == 3
    assert out["time_to_target_s"] == 2.0 + 1.0 + 1.5
    assert out["time_to_target_total_s"] == 4.5 + 3.0 + 4.0
    assert out["env_steps_to_target"] == 100 + 200 + 300
    assert out["energy_to_target_j"] == pytest.approx(10 * (14.5 - 10.0))  # iteration 1 start to iteration 3 end
    assert out["final_episode_return_mean"] == 30.0


def test_not_reached_gives_false_and_nulls_and_no_target_gives_nulls():
    plan = _plan({"iterations": 4, "episode_return_mean": {"at_most": 1}})
    out = learning_outcome(plan, "ok", ROW, _its([5.0, 4.0, 3.0, None], returns=[5.0, 4.0, 3.0, None]), pd.DataFrame())
    assert out["reached_target"] is False and out["target_mode"] == "at_most"
    assert all(
        out[c] is None
        for c in (
            "iterations_to_target",
            "time_to_target_s",
            "time_to_target_total_s",
            "env_steps_to_target",
            "energy_to_target_j",
        )
    )
    assert out["final_episode_return_mean"] == 3.0  # the last iteration in which an episode ended
    none = learning_outcome(_plan({"iterations": 4}), "ok", ROW, _its([1.0, 2.0]), pd.DataFrame())
    assert none["reached_target"] is None and none["target_metric"] is None and none["final_episode_return_mean"] == 2.0
    skipped = learning_outcome(plan, "skipped", ROW, _its([])[:0], pd.DataFrame())
    assert skipped["reached_target"] is None and skipped["final_episode_return_mean"] is None


def test_cpu_energy_over_a_window_scales_to_its_length_and_sums_packages():
    util = _cpu_rows(
        [(0.0, 0, 0), (1.0, 0, 5_000_000), (2.0, 0, 10_000_000), (0.0, 1, 0), (1.0, 1, 1_000_000), (2.0, 1, 2_000_000)]
    )
    assert cpu_energy_j(util, (0.0, 2.0)) == pytest.approx(10.0 + 2.0)
    assert cpu_energy_j(util, (0.5, 2.5)) == pytest.approx(5.0 * 2 + 1.0 * 2)  # one second of samples, scaled to 2 s
    gappy = util.copy()
    gappy.loc[4, "cpu_energy_uj"] = None
    assert cpu_energy_j(gappy, (0.0, 2.0)) is None  # a package with a missing reading: no partial sum
    assert total_energy_j(util, (0.0, 2.0)) == (pytest.approx(12.0), "cpu")
    assert total_energy_j(pd.DataFrame({"kind": ["core"], "t_s": [0.0]}), (0.0, 2.0)) == (None, None)
