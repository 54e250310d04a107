"""Per-node CPU allocated vs used, on a tiny hand-made utilization frame from two samplers."""

from __future__ import annotations

import pandas as pd
import pytest

from rlbench.analysis.nodes import (
    allocated_by_node,
    multi_source_role_stats,
    node_roles_frame,
    source_role_use,
    trial_node_roles,
)
from rlbench.measure.machine import ClusterInfo, MachineInfo, NodeInfo
from rlbench.planning.plan import plan_cluster_trials, plan_trials
from rlbench.results.events_file import parse_event
from rlbench.spec.load import spec_from_dict

WINDOW = (1.0, 2.0)


def row(t_s, role, pid, cpu_pct, rss, node=None, kind="process"):
    return {
        "trial_id": "t000r0",
        "t_s": t_s,
        "kind": kind,
        "role": role,
        "pid": pid,
        "cpu_pct": cpu_pct,
        "rss_bytes": rss,
        "node_id": node,
        "node_ip": "10.0.0.1" if node else None,
    }


#: The sweep's sampler (node None) at 1.0/1.5/2.0; node n1's sampler at 1.2/1.7 and 2.5 (after the window).
UTIL = pd.DataFrame(
    [
        row(1.0, "driver", 7, 100.0, 10),
        row(1.5, "driver", 7, 100.0, 10),
        row(2.0, "driver", 7, 40.0, 20),
        row(1.2, "env_runner", 1, 50.0, 100, "n1"),
        row(1.2, "env_runner", 2, 50.0, 100, "n1"),
        row(1.2, "ray_system", 3, 10.0, 5, "n1"),
        row(1.7, "env_runner", 1, 100.0, 100, "n1"),
        row(1.7, "env_runner", 2, 0.0, 100, "n1"),
        row(1.7, "ray_system", 3, 10.0, 5, "n1"),
        row(2.5, "env_runner", 1, 100.0, 100, "n1"),
        row(2.5, "env_runner", 2, 100.0, 300, "n1"),
        row(1.2, None, None, 90.0, None, "n1", kind="core"),  # core rows never count as a role
    ]
)
ITERATIONS = pd.DataFrame(
    {"trial_id": ["t000r0"] * 2, "warmup": [True, False], "t_start_s": [0.5, 1.0], "t_end_s": [1.0, 2.0]}
)
SPEC = {
    "name": "c",
    "environment": {"env": "CartPole-v1"},
    "stop": {"iterations": 2},
    "env_runners": {"num_env_runners": 2},
}


def cluster_plan():
    info = ClusterInfo(
        address="auto",
        gcs_address="10.0.0.1:6379",
        total_resources={"CPU": 4.0},
        available_resources={"CPU": 4.0},
        nodes=[NodeInfo(node_id="n1", node_ip="10.0.0.1", is_head=True, resources={"CPU": 4.0})],
    )
    return plan_cluster_trials(spec_from_dict(SPEC, check_envs=False), info)[0]


SAMPLING = parse_event(
    {
        "event": "node_sampling",
        "nodes": [
            {
                "node_id": "n1",
                "node_ip": "10.0.0.1",
                "actors": [{"pid": 1, "role": "env_runner"}, {"pid": 2, "role": "env_runner"}],
            },
            {"node_id": "n2", "node_ip": "10.0.0.2", "actors": []},
        ],
    }
)


def test_source_role_use_averages_each_sampler_over_its_own_samples():
    got = source_role_use(UTIL, WINDOW).set_index(["node_id", "role"])
    # driver: (100 + 100 + 40) / 100 / 3 samples; env runners: (50 + 50 + 100 + 0) / 100 / 2; raylet: 20 / 100 / 2
    assert got.loc[(None, "driver"), "cpus_used"] == pytest.approx(0.8)
    assert got.loc[("n1", "env_runner"), "cpus_used"] == pytest.approx(1.0)
    assert got.loc[("n1", "ray_system"), "cpus_used"] == pytest.approx(0.1)
    # peak summed RSS over all samples (the 2.5 s one too): 100 + 300
    assert got.loc[("n1", "env_runner"), "peak_rss_bytes"] == 400
    assert got.loc[(None, "driver"), "peak_rss_bytes"] == 20
    assert got.loc[("n1", "env_runner"), "node_ip"] == "10.0.0.1"


def test_allocated_per_node_on_a_cluster_and_locally():
    assert allocated_by_node(cluster_plan(), [SAMPLING]) == {(None, "driver"): 1.0, ("n1", "env_runner"): 2.0}
    machine = MachineInfo(
        hostname="h", cpu_model="m", logical_cores=4, physical_cores=4, usable_cores=[0, 1, 2, 3], memory_bytes=1
    )
    local = plan_trials(spec_from_dict(SPEC, check_envs=False), machine)[0]
    assert allocated_by_node(local, []) == {(None, "driver"): 1.0, (None, "env_runner"): 2.0}


def test_trial_node_roles_rows():
    rows = trial_node_roles(cluster_plan(), [SAMPLING], UTIL, WINDOW)
    assert [(r["node_id"], r["role"], r["cpus_allocated"], round(r["cpus_used"], 6)) for r in rows] == [
        (None, "driver", 1.0, 0.8),
        ("n1", "env_runner", 2.0, 1.0),
        ("n1", "ray_system", 0.0, 0.1),
    ]
    frame = node_roles_frame([cluster_plan()], {"t000r0": [SAMPLING]}, ITERATIONS, UTIL)
    assert list(frame.columns) == [
        "trial_id",
        "node_id",
        "node_ip",
        "role",
        "cpus_allocated",
        "cpus_used",
        "peak_rss_bytes",
    ]
    assert len(frame) == 3 and frame["cpus_used"].sum() == pytest.approx(1.9)


def test_trial_totals_are_sums_over_samplers():
    cpu_use = {"t000r0": {"driver": 9.9}}
    peak = {}
    multi_source_role_stats(ITERATIONS, UTIL, cpu_use, peak)
    assert cpu_use["t000r0"] == pytest.approx(
        {
            "driver": 0.8,
            "learner": 0.0,
            "env_runner": 1.0,
            "aggregator": 0.0,
            "state_server": 0.0,
            "ray_system": 0.1,
            "other": 0.0,
        }
    )
    assert peak["t000r0"] == {
        "driver": 20,
        "learner": 0,
        "env_runner": 400,
        "aggregator": 0,
        "state_server": 0,
        "ray_system": 5,
        "other": 0,
    }
    untouched = {"t": {"driver": 1.0}}
    multi_source_role_stats(ITERATIONS, UTIL.assign(node_id=None), untouched, {})  # local mode: left as is
    assert untouched == {"t": {"driver": 1.0}}
