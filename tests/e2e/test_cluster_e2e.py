"""End to end on a real two-node Ray cluster: ``rlbench sweep --address`` samples every node.

The test starts the cluster itself (``ray start --head`` with 1 CPU, a second node with 2 CPUs,
one private temp folder and token auth with a token of its own), runs one tiny trial whose 3 env
runners x 1 CPU must land on both nodes, and stops the cluster by killing exactly the processes
that name its temp folder (``ray stop`` would kill every Ray on the machine).
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import pandas as pd
import psutil
import pytest
from conftest import run_cli
from local_cluster import cluster_processes, local_cluster, stop_cluster

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def cluster_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("cluster") / "out"
    with local_cluster(head_args=("--num-cpus=1", '--resources={"head": 1}')) as cluster:
        # the sweep gets the token path only: rlbench must turn token mode on by itself
        sweep_env = {"RAY_AUTH_TOKEN_PATH": str(cluster.token)}
        t = time.monotonic()
        done = run_cli(
            "sweep", "configs/cluster_smoke.yaml", "--out", str(out), "--address", cluster.address, env=sweep_env
        )
        sweep_s = time.monotonic() - t
        assert done.returncode == 0, done.stdout + done.stderr
        yield {"out": out, "done": done, "temp": cluster.temp, "address": cluster.address, "sweep_s": sweep_s}


def _events(out: Path, trial: str) -> list[dict]:
    return [json.loads(line) for line in (out / "trials" / trial / "events.jsonl").read_text().splitlines()]


def test_manifest_lists_every_node(cluster_run):
    manifest = json.loads((cluster_run["out"] / "manifest.json").read_text())
    cluster = manifest["cluster"]
    nodes = cluster["nodes"]
    assert len(nodes) == 2 and len({n["node_id"] for n in nodes}) == 2
    assert sorted(n["resources"]["CPU"] for n in nodes) == [1.0, 2.0]
    head = next(n for n in nodes if n["is_head"])
    assert head["resources"]["CPU"] == 1.0 and head["resources"]["head"] == 1.0
    for n in nodes:
        assert n["probe_error"] is None and n["cpu_model"] and n["memory_bytes"] > 0 and n["logical_cores"] >= 1
    assert cluster["total_cpus"] == 3.0 and cluster["total_gpus"] == 0.0


def test_trial_ran_on_the_cluster(cluster_run):
    out = cluster_run["out"]
    trials = pd.read_parquet(out / "trials.parquet")
    assert list(trials["status"]) == ["ok"], trials[["status", "reason"]]
    plan = json.loads((out / "trials" / "t000r0" / "plan.json").read_text())
    assert plan["ray_address"] and plan["cores"] == [] and plan["ray_cpus"] == 3
    events = _events(out, "t000r0")
    init = next(e for e in events if e["event"] == "ray_init")
    assert init["session_dir"] is None and init["job_id"]
    # every actor of the trial's job was gone after its driver left, and the trial waited for their
    # processes (named by pid and start time, as the node samplers saw them) to be gone too
    release = next(e for e in events if e["event"] == "cluster_release")
    assert release["actors_left"] == [] and release["processes_unchecked"] == []
    sampling = next(e for e in events if e["event"] == "node_sampling")
    runner_pids = {a["pid"] for n in sampling["nodes"] for a in n["actors"] if a["role"] == "env_runner"}
    waited_for = {pid for procs in sampling["processes"].values() for pid, ticks in procs if ticks}
    assert len(runner_pids) == 3 and runner_pids < waited_for  # the runners and the samplers themselves
    assert len(pd.read_parquet(out / "iterations.parquet")) == 4


def test_utilization_from_both_nodes(cluster_run):
    out = cluster_run["out"]
    manifest = json.loads((out / "manifest.json").read_text())
    node_ids = {n["node_id"] for n in manifest["cluster"]["nodes"]}
    util = pd.read_parquet(out / "utilization.parquet")
    assert {"node_id", "node_ip"} <= set(util.columns)
    runners = util[(util["kind"] == "process") & (util["role"] == "env_runner")]
    assert set(runners["node_id"]) == node_ids  # 3 runners x 1 CPU on a 1-CPU and a 2-CPU node
    assert runners["pid"].nunique() == 3
    assert set(util.loc[util["kind"] == "core", "node_id"].dropna()) == node_ids
    raylets = util[(util["role"] == "ray_system") & util["node_id"].notna()]
    assert set(raylets["node_id"]) == node_ids
    # the driver is sampled by the sweep's own sampler (node_id null), never twice
    drivers = util[(util["kind"] == "process") & (util["role"] == "driver")]
    assert len(drivers) > 0 and drivers["node_id"].isna().all()


def test_node_roles(cluster_run):
    out = cluster_run["out"]
    roles = pd.read_parquet(out / "node_roles.parquet")
    runners = roles[roles["role"] == "env_runner"]
    assert sorted(runners["cpus_allocated"]) == [1.0, 2.0]
    assert (runners["cpus_used"] > 0).all()
    driver = roles[roles["role"] == "driver"]
    assert list(driver["cpus_allocated"]) == [1.0] and driver["node_id"].isna().all()
    trials = pd.read_parquet(out / "trials.parquet")
    assert trials["env_runner_cpus_allocated"].iloc[0] == 3.0
    assert trials["env_runner_cpus_used"].iloc[0] == pytest.approx(runners["cpus_used"].sum())


def _alive(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


def test_nothing_left_behind(cluster_run):
    out, temp = cluster_run["out"], cluster_run["temp"]
    util = pd.read_parquet(out / "utilization.parquet")
    # the trial's own processes: its driver tree (the sweep's sampler) and its actors on the nodes
    mine = util[util["node_id"].isna() | util["role"].isin(["env_runner", "learner"])]
    assert [pid for pid in set(mine["pid"].dropna().astype(int)) if _alive(pid)] == []
    stop_cluster(temp)
    assert cluster_processes(temp) == []
