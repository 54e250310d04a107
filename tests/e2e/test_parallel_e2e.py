"""End to end on one real multi-node Ray cluster: ``rlbench sweep --address --parallel auto``.

One cluster for the whole module (a head with 0 CPUs and two nodes of 2 CPUs, one private temp
folder and token; Ray's health check every 1 s, so a killed node is noticed in about 5 s, keeping its
default 10 s timeout: with a 0.5 s period and a 1 s timeout, the next sweep's probe once found a live node
gone from the cluster's CPUs under a load of 8-20 on this 2-core machine), and tiny trials
(the plain framework where RLlib is not what is tested):

1. an RLlib trial (1 env runner, the learner in its driver) and a plain one at once, on disjoint nodes,
   while another job's busy actor runs pinned to one of the two nodes: the trial on that node reads
   foreign CPU, and exactly that actor's, no more than the actor's own CPU time read from /proc; the
   other trial reads none;
2. Ctrl-C while two trials run (a third, whose driver needs 3 CPUs, is skipped: the cluster has 4, but
   no node set of one type holds them): exit 130, one resume line, nothing left on the nodes; the
   resume keeps the skipped trial and reruns the other two, and one's node is killed under it: that
   trial fails with "node lost", the other one goes on (last: the cluster has one node fewer afterwards).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import psutil
import pytest
from conftest import REPO, run_cli
from local_cluster import local_cluster

pytestmark = pytest.mark.slow

#: Another job on the cluster: one actor pinned to a worker node (no CPU reserved), busy a quarter of the time.
PLANTED = """
import os, sys, time
import ray
from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy
ray.init(address=sys.argv[1], log_to_driver=False, logging_level="ERROR")
node = max(n["NodeID"] for n in ray.nodes() if n["Alive"] and n["Resources"].get("CPU", 0) > 0)

@ray.remote(num_cpus=0)
class Busy:
    def pid(self):
        return os.getpid()
    def spin(self):
        while True:
            end = time.perf_counter() + 0.01
            while time.perf_counter() < end:
                pass
            time.sleep(0.03)

busy = Busy.options(scheduling_strategy=NodeAffinitySchedulingStrategy(node, soft=False)).remote()
print(node, ray.get(busy.pid.remote()), flush=True)
busy.spin.remote()
sys.stdin.read()
"""

SPEC = """\
name: parallel_e2e
environment: {env: envs.tiny:TinyEnv, env_config: {episode_len: 20}}
env_runners: {num_env_runners: 1, num_cpus_per_env_runner: 1}
learners: {num_learners: 0}
resources: {num_cpus_for_main_process: 1}
training: {train_batch_size_per_learner: 200, minibatch_size: 100, num_epochs: 1}
rl_module: {fcnet_hiddens: [8]}
variants:
  - {name: rllib}
  - {name: plain, set: {framework: plain, num_env_runners: 0, training.train_batch_size_per_learner: 20000}}
stop: {iterations: 8}
warmup_iterations: 1
trial_timeout_s: 240
sample_hz: 10
"""

PLAIN = """\
name: parallel_plain
framework: plain
environment: {env: envs.synthetic:SyntheticEnv, env_config: {step_cost_us: 20}}
env_runners: {num_env_runners: 0}
training: {train_batch_size_per_learner: 4000}
grid: {resources.num_cpus_for_main_process: [1, 2, 3]}
stop: {iterations: 50}
warmup_iterations: 1
trial_timeout_s: 240
sample_hz: 10
"""


def _events(out: Path, trial: str) -> list[dict]:
    return [json.loads(line) for line in (out / "trials" / trial / "events.jsonl").read_text().splitlines()]


def _event(out: Path, trial: str, name: str) -> dict:
    return next(e for e in _events(out, trial) if e["event"] == name)


def _cpu_s(pid: int) -> float:
    times = psutil.Process(pid).cpu_times()
    return times.user + times.system


def _alive(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


def _trial_pids(out: Path) -> set[int]:
    """Every process of the trials on the nodes: their drivers (trial actors), actors and node samplers."""
    pids = set()
    for folder in (out / "trials").iterdir():
        for e in _events(out, folder.name) if (folder / "events.jsonl").exists() else []:  # a skipped one has none
            if e["event"] == "trial_actor":
                pids.add(e["pid"])
            if e["event"] == "node_sampling":
                pids |= {int(p) for procs in e["processes"].values() for p, _ in procs}
    return pids


def _sweep(cluster, spec: Path, out: Path, *extra: str) -> subprocess.Popen:
    """The sweep as a terminal's foreground job (its own session, SIGINT at its default)."""
    env = {**os.environ, "RAY_AUTH_TOKEN_PATH": str(cluster.token)}
    return subprocess.Popen([sys.executable, "-m", "rlbench", "sweep", str(spec), "--address", cluster.address,
                             "--parallel", "auto", "--out", str(out), *extra], cwd=REPO, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))


def _wait(proc: subprocess.Popen, ready, timeout_s: float = 180) -> None:
    deadline = time.monotonic() + timeout_s
    while not ready():
        assert proc.poll() is None, proc.communicate()[0]
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.1)


def _iterated(out: Path, trial: str) -> bool:
    events = out / "trials" / trial / "events.jsonl"
    return events.exists() and '"event": "iteration"' in events.read_text()


@pytest.fixture(scope="module")
def cluster():
    with local_cluster(head_args=("--num-cpus=0",), node_args=("--num-cpus=2",), nodes=2,
                       env={"RAY_health_check_period_ms": "1000"}) as c:
        yield c


@pytest.fixture(scope="module")
def at_once(cluster, tmp_path_factory):
    """Sweep 1: an RLlib and a plain trial at once, another job's busy actor on one of the nodes."""
    folder = tmp_path_factory.mktemp("parallel")
    spec = folder / "spec.yaml"
    spec.write_text(SPEC)
    env = {**os.environ, "RAY_AUTH_TOKEN_PATH": str(cluster.token), "RAY_AUTH_MODE": "token"}
    planted = subprocess.Popen([sys.executable, "-c", PLANTED, cluster.address], cwd=cluster.temp, env=env,
                               stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        node, pid = planted.stdout.readline().split()
        before = _cpu_s(int(pid))
        t = time.monotonic()
        done = run_cli("sweep", str(spec), "--out", str(folder / "out"), "--address", cluster.address,
                       "--parallel", "auto", env={"RAY_AUTH_TOKEN_PATH": str(cluster.token)})
        wall_s = time.monotonic() - t
        planted_cpu_s = _cpu_s(int(pid)) - before
    finally:
        planted.stdin.close()
        planted.wait(60)
    assert done.returncode == 0, done.stdout + done.stderr
    yield {"out": folder / "out", "done": done, "node": node, "pid": int(pid), "planted_cpu_s": planted_cpu_s,
           "wall_s": wall_s}


def test_trials_ran_at_once_on_disjoint_nodes_of_one_type(at_once):
    out = at_once["out"]
    trials = pd.read_parquet(out / "trials.parquet").set_index("trial_id")
    assert list(trials["status"]) == ["ok", "ok"]
    nodes = {t: json.loads(trials.loc[t, "node_ids"]) for t in trials.index}
    assert all(len(n) == 1 for n in nodes.values()) and len({n[0] for n in nodes.values()}) == 2
    starts, ends = trials["started_epoch"], trials["ended_epoch"]
    assert starts.max() < ends.min()  # they overlapped in time
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["parallel"] == "auto"
    assert set(trials["node_type"]) == {
        f"{n['cpu_model']} | {n['logical_cores']} | {n['memory_bytes'] / 2**30:.0f} | none x 0"
        for n in manifest["cluster"]["nodes"]}
    for trial in trials.index:  # the driver ran on its trial's node, in the group placed there
        plan = json.loads((out / "trials" / trial / "plan.json").read_text())
        assert plan["placement"]["node_ids"] == nodes[trial] and plan["cpus"] == 2
        assert _event(out, trial, "placement")["placed"] is True
        assert _event(out, trial, "trial_actor")["node_id"] == nodes[trial][0]


def test_the_rllib_trials_env_runner_was_captured_by_its_group(at_once):
    out = at_once["out"]
    trials = pd.read_parquet(out / "trials.parquet").set_index("trial_id")
    rllib = trials.index[trials["framework"] == "rllib"][0]
    node = json.loads(trials.loc[rllib, "node_ids"])[0]
    sampling = _event(out, rllib, "node_sampling")
    roles = {(n["node_id"], a["role"]) for n in sampling["nodes"] for a in n["actors"]}
    assert roles == {(node, "driver"), (node, "env_runner")}
    util = pd.read_parquet(out / "utilization.parquet")
    mine = util[(util["trial_id"] == rllib) & (util["kind"] == "process")]
    assert set(mine.loc[mine["role"].isin(["driver", "env_runner"]), "node_id"]) == {node}
    assert set(mine.loc[mine["node_id"].isna(), "role"]) == {"harness"}  # its process here carries events only
    assert trials.loc[rllib, "iterations"] == 8 and trials.loc[rllib, "env_runner_cpus_used"] > 0


def test_foreign_cpu_is_the_planted_actors_on_its_node_only(at_once):
    out, node, pid = at_once["out"], at_once["node"], at_once["pid"]
    trials = pd.read_parquet(out / "trials.parquet").set_index("trial_id")
    on_it = [t for t in trials.index if json.loads(trials.loc[t, "node_ids"]) == [node]]
    assert len(on_it) == 1
    other = next(t for t in trials.index if t != on_it[0])
    assert trials.loc[other, "foreign_cpu_s"] == 0.0
    assert [n["foreign"] for n in _event(out, other, "node_sampling")["nodes"]] == [[]]
    foreign = [p for n in _event(out, on_it[0], "node_sampling")["nodes"] for p in n["foreign"]]
    assert [p["pid"] for p in foreign] == [pid] and foreign[0]["title"].startswith("ray::Busy")
    # known answer: read from the actor's own /proc counters over a window inside the sweep's
    assert 0 < trials.loc[on_it[0], "foreign_cpu_s"] <= at_once["planted_cpu_s"] + 0.02
    assert "## Nodes" in (out / "report.md").read_text()


def test_nothing_of_the_trials_is_left(at_once):
    out = at_once["out"]
    for trial in ("t000r0", "t001r0"):
        assert _event(out, trial, "cluster_release")["actors_left"] == []
    assert [p for p in _trial_pids(out) if _alive(p)] == []
    util = pd.read_parquet(out / "utilization.parquet")  # the trials' processes here: every one sampled is gone
    assert [p for p in set(util.loc[util["node_id"].isna(), "pid"].dropna().astype(int)) if _alive(p)] == []


def test_ctrl_c_stops_every_running_trial_and_resume_reruns_them_past_a_killed_node(cluster, tmp_path):
    spec = tmp_path / "plain.yaml"
    spec.write_text(PLAIN)
    out = tmp_path / "out"
    proc = _sweep(cluster, spec, out)
    _wait(proc, lambda: _iterated(out, "t000r0") and _iterated(out, "t001r0"))
    os.killpg(proc.pid, signal.SIGINT)
    stdout, _ = proc.communicate(timeout=120)
    assert proc.returncode == 130, stdout
    text = " ".join(stdout.split())
    assert text.count("Resume with:") == 1 and f"--parallel auto --out {out} --resume" in text
    records = {t: json.loads((out / "trials" / t / "record.json").read_text()) for t in ("t000r0", "t001r0", "t002r0")}
    assert {t: r["status"] for t, r in records.items()} == {"t000r0": "interrupted", "t001r0": "interrupted",
                                                            "t002r0": "skipped"}
    # 3 CPUs for the driver: the cluster has 4, but no node set of one type holds them together
    assert records["t002r0"]["reason"].startswith("needs 3 CPUs and 0 GPUs (driver 3 CPU")
    for trial in ("t000r0", "t001r0"):  # stopped cleanly: its release check ran, nothing of it is left
        assert _event(out, trial, "cluster_release")["actors_left"] == []
    assert [p for p in _trial_pids(out) if _alive(p)] == []

    # the resume reruns both; one's node is killed under it: that one fails with "node lost", the other goes on
    proc = _sweep(cluster, spec, out, "--resume")
    _wait(proc, lambda: _iterated(out, "t000r0") and _iterated(out, "t001r0"))
    node = _event(out, "t000r0", "placement")["node_ids"][0]
    raylet = next(p for p in psutil.process_iter(["cmdline"])
                  if cluster.temp in " ".join(p.info["cmdline"] or []) and f"--node_id={node}" in " ".join(p.info["cmdline"]))
    for p in [raylet, *raylet.children(recursive=True)]:  # the node dies: its raylet, workers and agents
        p.kill()
    stdout, _ = proc.communicate(timeout=300)
    assert proc.returncode == 1, stdout  # a trial failed; the sweep ran the other
    assert "resuming: 1 finished trials kept, 2 to run" in " ".join(stdout.split())
    assert (out / "attempts" / "t000r0" / "1").is_dir() and (out / "attempts" / "t001r0" / "1").is_dir()
    failed = json.loads((out / "trials" / "t000r0" / "record.json").read_text())
    assert failed["status"] == "failed" and "node lost" in failed["reason"] and node[:12] in failed["reason"]
    assert _event(out, "t000r0", "node_lost")["node_ids"] == [node]
    trials = pd.read_parquet(out / "trials.parquet").set_index("trial_id")
    assert list(trials["status"]) == ["failed", "ok", "skipped"] and trials.loc["t001r0", "iterations"] == 50
