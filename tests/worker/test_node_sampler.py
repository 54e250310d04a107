"""Node samplers, the parts without Ray: which pids are the trial's on a node, and with which role."""

from __future__ import annotations

import os

import pytest

from rlbench.worker.node_sampler import actor_roles, node_system_pids, unnamed_owners
from rlbench.worker.procfs import parse_cpu_times, parse_stat

CLASS_ROLES = {"SingleAgentEnvRunner": "env_runner", "_WrappedExecutable": "learner"}
SYSTEM_TITLES = ["ray::DashboardAgent", "ray::RuntimeEnvAgent"]


def actor(cls: str, pid: int, node: str, state: str = "ALIVE") -> dict:
    return {"ActorClassName": cls, "Pid": pid, "State": state, "Address": {"NodeID": node}}


def test_actor_roles_keeps_alive_actors_of_the_node():
    table = [
        actor("SingleAgentEnvRunner", 11, "A"),
        actor("SingleAgentEnvRunner", 12, "B"),  # other node
        actor("_WrappedExecutable", 13, "A"),
        actor("SingleAgentEnvRunner", 14, "A", state="DEAD"),
        actor("NodeSampler", 15, "A"),  # the sampler itself: excluded by pid
        actor("MyHelper", 16, "A"),  # unknown class
        actor("SingleAgentEnvRunner", 0, "A", state="ALIVE"),  # not started yet: no pid
    ]
    assert actor_roles(table, "A", CLASS_ROLES, exclude_pids=[15]) == {11: "env_runner", 13: "learner", 16: "other"}
    assert actor_roles(table, "B", CLASS_ROLES) == {12: "env_runner"}


def test_system_pids_when_two_nodes_share_a_machine():
    s = "session_2026-01-01_00-00-00_1_1"
    procs = [
        (100, 1, ["/x/gcs_server", f"--log_dir=/t/{s}/logs", "--node-id=aaa"]),
        (101, 1, ["/x/raylet", f"--raylet_socket_name=/t/{s}/sockets/raylet", "--node_id=aaa"]),
        (102, 101, ["ray::DashboardAgent"]),
        (103, 101, ["ray::IDLE"]),  # a pooled worker: never a system process
        (104, 101, ["ray::SingleAgentEnvRunner.apply"]),
        (105, 1, ["python", "-u", "/x/_private/log_monitor.py", f"--session-dir=/t/{s}"]),  # names no node
        (106, 1, ["python", "-u", "/x/autoscaler/_private/monitor.py", f"--logs-dir=/t/{s}/logs"]),
        (201, 1, ["/x/raylet", f"--raylet_socket_name=/t/{s}/sockets/raylet_1", "--node_id=bbb"]),
        (202, 201, ["ray::RuntimeEnvAgent"]),
        (203, 1, ["python", "-u", "/x/_private/log_monitor.py", f"--session-dir=/t/{s}"]),
        (300, 1, ["/x/raylet", "--raylet_socket_name=/t/session_other/sockets/raylet", "--node_id=ccc"]),
        (301, 1, ["python", "/x/_private/log_monitor.py", "--session-dir=/t/session_other"]),
        (400, 1, ["bash"]),
    ]
    head = node_system_pids(procs, node_id="aaa", session_name=s, owns_unnamed=True, system_titles=SYSTEM_TITLES)
    worker = node_system_pids(procs, node_id="bbb", session_name=s, owns_unnamed=False, system_titles=SYSTEM_TITLES)
    assert head == {100, 101, 102, 105, 106, 203}
    assert worker == {201, 202}
    assert not head & worker  # nothing counted twice


def test_unnamed_owners_one_per_machine_head_first():
    nodes = [
        {"node_id": "b", "node_ip": "10.0.0.1", "is_head": False},
        {"node_id": "z", "node_ip": "10.0.0.1", "is_head": True},
        {"node_id": "d", "node_ip": "10.0.0.2", "is_head": False},
        {"node_id": "c", "node_ip": "10.0.0.2", "is_head": False},
    ]
    assert unnamed_owners(nodes) == {"z", "c"}


def test_parse_stat_and_cpu_times():
    tck, page = os.sysconf("SC_CLK_TCK"), os.sysconf("SC_PAGE_SIZE")
    fields = [
        "S",
        "1",
        "2",
        "3",
        "4",
        "5",
        "6",
        "7",
        "8",
        "9",
        "10",
        str(3 * tck),
        str(tck),
        "0",
        "0",
        "20",
        "0",
        "1",
        "0",
        "777",
        "1000",
        "50",
    ]
    stat = parse_stat(b"42 (ray::Some (odd) name) " + " ".join(fields).encode())
    assert (stat.cpu_s, stat.start_ticks, stat.rss_bytes) == (4.0, 777, 50 * page)
    stat = b"cpu  9 9 9 9 9 0 0 0 0 0\ncpu0 10 0 5 80 5 0 0 0 0 0\ncpu1 1 1 1 1 1 1 1 1 7 7\nintr 1\n"
    # busy = total - idle - iowait; guest fields are left out of total
    assert parse_cpu_times(stat) == {0: (15, 100), 1: (6, 8)}


def test_a_node_sampler_reads_its_machines_gpus_with_node_ids_and_a_wrapping_counter():
    from fakes import FakeNvml, h100

    from rlbench.results.layout import UTILIZATION_COLUMNS
    from rlbench.worker.node_sampler import NodeSampler
    from rlbench.worker.nvml import ENERGY_COUNTER_MODULUS_MJ

    fake = FakeNvml([h100(energy_mj=ENERGY_COUNTER_MODULUS_MJ - 1000)])
    sampler = NodeSampler(
        "n1", "10.0.0.2", "01000000", "session_x", False, {}, [], hz=10, per_core=False, read_gpus=True, nvml=fake
    )
    sampler.open_gpus()
    sampler._sample()
    fake.devices[0]["energy_mj"] = 1500  # the counter wrapped: 1000 + 1500 mJ later
    sampler._sample()
    rows = [dict(zip(UTILIZATION_COLUMNS, r)) for r in sampler.rows.gpu_rows]
    assert [r["gpu_energy_mj"] for r in rows] == [0, 2500]
    assert {(r["node_id"], r["node_ip"], r["gpu_index"], r["gpu_power_w"]) for r in rows} == {
        ("n1", "10.0.0.2", 0, 152.5)
    }
    assert sampler.stop()["columns"]["gpu_energy_mj"] == [0, 2500]


def test_a_node_sampler_without_read_gpus_reads_none():
    from fakes import FakeNvml, h100

    from rlbench.worker.node_sampler import NodeSampler

    fake = FakeNvml([h100()])
    sampler = NodeSampler("n1", "10.0.0.2", "01000000", "session_x", False, {}, [], hz=10, per_core=False, nvml=fake)
    sampler.open_gpus()
    sampler._sample()
    assert fake.calls == [] and sampler.rows.gpu_rows == []


def test_gpu_energy_counts_each_nodes_gpu_0_apart():
    import pandas as pd

    from rlbench.analysis.trial_rows import gpu_energy_j

    rows = []
    for node, watts in (("a", 100.0), ("b", 300.0)):  # both GPUs are index 0 on their node
        for t in (1.0, 2.0, 3.0):
            rows.append(
                {
                    "trial_id": "t",
                    "t_s": t,
                    "kind": "gpu",
                    "node_id": node,
                    "gpu_index": 0,
                    "gpu_energy_mj": int(watts * 1000 * (t - 1.0)),
                }
            )
    util = pd.DataFrame(rows)
    assert gpu_energy_j(util, (1.0, 3.0)) == pytest.approx(100.0 * 2 + 300.0 * 2)


def test_a_class_made_in_a_function_is_read_by_its_own_name():
    """Ray 2.60 lists RLlib's remote learner as create_executable_class.<locals>._WrappedExecutable (measured)."""
    table = [actor("create_executable_class.<locals>._WrappedExecutable", 21, "A"), actor("TrialActor", 22, "A")]
    assert actor_roles(table, "A", {**CLASS_ROLES, "TrialActor": "driver"}) == {21: "learner", 22: "driver"}
