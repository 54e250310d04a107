"""Node samplers, the parts without Ray: which pids are the trial's on a node, and with which role."""

from __future__ import annotations

import os

from rlbench.node_sampler import actor_roles, node_system_pids, parse_cpu_times, parse_stat, unnamed_owners

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
    fields = ["S", "1", "2", "3", "4", "5", "6", "7", "8", "9", "10", str(3 * tck), str(tck), "0", "0", "20", "0",
              "1", "0", "777", "1000", "50"]
    cpu_s, start, rss = parse_stat(b"42 (ray::Some (odd) name) " + " ".join(fields).encode())
    assert (cpu_s, start, rss) == (4.0, 777, 50 * page)
    stat = b"cpu  9 9 9 9 9 0 0 0 0 0\ncpu0 10 0 5 80 5 0 0 0 0 0\ncpu1 1 1 1 1 1 1 1 1 7 7\nintr 1\n"
    # busy = total - idle - iowait; guest fields are left out of total
    assert parse_cpu_times(stat) == {0: (15, 100), 1: (6, 8)}
