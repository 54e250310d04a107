"""Foreign processes on a node, and their CPU time, on a hand-made process list (no Ray)."""

from __future__ import annotations

from rlbench.worker.foreign import ForeignCpu, foreign_pids

SESSION = "session_2026-01-01_00-00-00_1_1"
PROCS = [
    (2, 0, []),  # a kernel thread: the machine's own
    (10, 1, ["/x/raylet", f"--store=/t/{SESSION}/p", "--node_id=aa"]),
    (11, 10, ["ray::Busy"]),  # another job's actor on node aa
    (12, 10, ["ray::SingleAgentEnvRunner"]),  # the trial's actor
    (13, 10, ["ray::IDLE"]),  # the node's pool
    (14, 10, ["ray::DashboardAgent"]),  # Ray's own agent
    (15, 10, ["/py", "/x/ray/_private/workers/default_worker.py"]),  # a worker starting
    (20, 1, ["/x/raylet", f"--store=/t/{SESSION}/p.1", "--node_id=bb"]),
    (21, 20, ["ray::Other"]),  # node bb's business
    (30, 1, ["stress", "--cpu", "1"]),  # a stray job on the machine
    (31, 1, ["/py", "monitor.py", f"--logs-dir=/t/{SESSION}/logs"]),  # the cluster session's own
    (40, 1, ["/py", "-m", "rlbench", "sweep"]),  # the trial's process here ...
    (41, 40, ["/py", "-I", "-S", "reaper.py"]),  # ... and its child
    (50, 1, ["/y/raylet", "--node_id=zz"]),  # another Ray on the machine: a stray
    (51, 50, ["ray::X"]),
]
KW = dict(
    cluster_nodes=["aa", "bb"],
    session_name=SESSION,
    exclude_trees=[40],
    system_titles=["ray::DashboardAgent", "ray::RuntimeEnvAgent"],
)


def test_another_jobs_worker_under_the_nodes_raylet_is_foreign():
    assert foreign_pids(PROCS, node_id="aa", owns_unnamed=False, ours=[12], **KW) == {11: "ray::Busy"}
    assert foreign_pids(PROCS, node_id="bb", owns_unnamed=False, ours=[], **KW) == {21: "ray::Other"}


def test_the_owner_of_the_machine_also_counts_every_stray():
    got = foreign_pids(PROCS, node_id="aa", owns_unnamed=True, ours=[12], **KW)
    assert got == {11: "ray::Busy", 30: "stress", 50: "/y/raylet", 51: "ray::X"}
    # the trial's own process tree here is never foreign, with or without its exclusion
    assert 40 in foreign_pids(PROCS, node_id="aa", owns_unnamed=True, ours=[12], **{**KW, "exclude_trees": []})


def test_foreign_cpu_counts_each_process_from_its_first_to_its_last_reading():
    cpu = ForeignCpu()
    cpu.read(11, 500, 10.0, "ray::Busy")
    cpu.read(11, 500, 10.5, "ray::Busy")
    cpu.read(11, 500, 12.25, "ray::Busy")
    cpu.read(30, 700, 3.0, "stress")  # read once: no interval, nothing counted
    cpu.read(11, 900, 1.0, "ray::Reused")  # the pid reused by a later process: its own count
    cpu.read(11, 900, 1.5, "ray::Reused")
    assert cpu.processes() == [
        {"pid": 11, "title": "ray::Busy", "cpu_s": 2.25},
        {"pid": 11, "title": "ray::Reused", "cpu_s": 0.5},
    ]
    assert cpu.cpu_s == 2.75
    cpu.drop(11)  # the GCS listed it as the trial's actor late: none of it was foreign
    cpu.read(11, 500, 20.0, "ray::Busy")
    assert cpu.processes() == [] and cpu.cpu_s == 0
