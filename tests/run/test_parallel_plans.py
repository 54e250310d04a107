"""--parallel without Ray: plans against node sets, what a resume compares, the node pool, the flag's errors."""

from __future__ import annotations

import pytest

from rlbench.measure.machine import ClusterInfo, NodeInfo
from rlbench.planning.placement import node_rooms, placement, trial_bundles
from rlbench.planning.plan import check_spec_for_cluster, placed, plan_cluster_trials, write_plan
from rlbench.results.layout import ResultsFolder
from rlbench.results.records import TrialRecord, write_record
from rlbench.run.cluster import ClusterError, parse_parallel, prepare_cluster
from rlbench.run.parallel import NodePool
from rlbench.run.resume import plan_resume
from rlbench.spec.load import spec_from_dict

SPEC = {
    "name": "p",
    "environment": {"env": "CartPole-v1"},
    "resources": {"num_cpus_for_main_process": 1},
    "grid": {"num_env_runners": [1, 3, 5]},
    "stop": {"iterations": 2},
    "seed": 1,
}


def cluster(*cpus: float) -> ClusterInfo:
    """A head with 0 CPUs and one node per entry of ``cpus``, all of one hardware type."""
    nodes = [
        NodeInfo(
            node_id=f"n{i}",
            node_ip="10.0.0.1",
            is_head=i == 0,
            resources={"CPU": c},
            cpu_model="X",
            logical_cores=8,
            memory_bytes=16 * 2**30,
        )
        for i, c in enumerate((0.0, *cpus))
    ]
    total = {"CPU": float(sum(cpus))}
    return ClusterInfo(
        address="a", gcs_address="10.0.0.1:6379", nodes=nodes, total_resources=total, available_resources=total
    )


def test_plans_against_the_node_sets_a_trial_can_get_not_the_totals():
    plans = plan_cluster_trials(spec_from_dict(SPEC, check_envs=False), cluster(2, 2, 2), parallel=True)
    # 1 runner + driver: one 2-CPU node; 3 runners + driver: two nodes; 5 + 1 = 6 CPUs: all three nodes
    assert [p.skip_reason for p in plans] == [None, None, None]
    assert [p.cpus for p in plans] == [2, 4, 6] and all(p.parallel and p.placement is None for p in plans)
    smaller = plan_cluster_trials(spec_from_dict(SPEC, check_envs=False), cluster(2, 2, 1), parallel=True)
    # 5 runners + driver = 6 CPUs on nodes of 2, 2 and 1: no node set holds them
    assert smaller[2].skip_reason.startswith("needs 6 CPUs and 0 GPUs (driver 1 CPU + 5 env runners x 1 CPU)")
    # one at a time, the same trial is judged against the totals (its driver beside rlbench): 5 actor CPUs fit 5
    serial = plan_cluster_trials(spec_from_dict(SPEC, check_envs=False), cluster(2, 2, 1))
    assert serial[2].skip_reason is None and not serial[2].parallel


def test_a_resume_compares_whether_a_trial_is_skipped_not_the_nodes_it_got(tmp_path):
    loaded = spec_from_dict(SPEC, check_envs=False)
    plans = plan_cluster_trials(loaded, cluster(2, 2, 2), parallel=True)
    folder = ResultsFolder(tmp_path)
    where = placement(trial_bundles(plans[0].demand()), [r for r in node_rooms(cluster(2, 2, 2)) if r.node_id == "n2"])
    run = placed(plans[0], where)
    assert run.placement.node_ids == ["n2"] and run.cpus == 2
    write_record(write_plan(folder, run), TrialRecord(trial_id=run.trial_id, status="ok"))
    write_record(write_plan(folder, plans[1]), TrialRecord(trial_id=plans[1].trial_id, status="interrupted"))
    # one node lost since: the first trial's node set and the words of every skip reason may differ
    again = plan_cluster_trials(loaded, cluster(2, 2), parallel=True)
    decision = plan_resume(folder, again, retry_failed=False)
    assert decision.keep == {"t000r0": "ok"} and set(decision.rerun) == {"t001r0"}
    # a trial that would now be skipped is refused: its earlier run would not compare
    write_record(write_plan(folder, plans[2]), TrialRecord(trial_id=plans[2].trial_id, status="ok"))
    with pytest.raises(Exception, match="t002r0 would now run differently"):
        plan_resume(folder, again, retry_failed=False)


def test_the_pool_never_gives_a_held_or_lost_node():
    pool = NodePool(cluster(2, 2, 2))
    assert [r.node_id for r in pool.free()] == ["n0", "n1", "n2", "n3"]
    where = placement(
        trial_bundles(
            plan_cluster_trials(spec_from_dict(SPEC, check_envs=False), cluster(2, 2, 2), parallel=True)[1].demand()
        ),
        pool.free(),
    )
    pool.take("t001r0", where)
    assert [r.node_id for r in pool.free()] == ["n0", "n3"]
    pool.give_back("t001r0", lost=["n1"])
    assert [r.node_id for r in pool.free()] == ["n0", "n2", "n3"]


def test_the_flag_without_a_cluster_or_with_a_bad_value_is_bad_input(monkeypatch):
    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    loaded = spec_from_dict(SPEC, check_envs=False)
    with pytest.raises(ClusterError, match=r"^--parallel auto runs trials at once.*give --address HOST:PORT"):
        prepare_cluster(None, loaded, console=None, parallel="auto")
    assert prepare_cluster(None, loaded, console=None) is None  # no flag: local, as before
    for bad in ("0", "-1", "two", "1.5"):
        with pytest.raises(ClusterError, match="--parallel"):
            parse_parallel(bad)
    assert parse_parallel("3") == "3" and parse_parallel("auto") == "auto" and parse_parallel(None) is None
    script = spec_from_dict({**SPEC, "execution": "script"}, check_envs=False)
    assert "execution: script" in check_spec_for_cluster(script, parallel=True)
    assert check_spec_for_cluster(script) is None
