"""End to end on one real multi-node Ray cluster: ``rlbench sweep --address --parallel auto``.

One cluster (a head with 0 CPUs and two nodes of 2 CPUs, one private temp folder and token; Ray's health
check every 1 s instead of 3 s, so a killed node is marked dead after 5 failed checks, about 5 s instead of
15; a live node still needs 5 checks in a row unanswered for 10 s each to be taken for dead) and one sweep,
run twice, for every case:

1. a tiny RLlib trial (1 env runner, the learner in its driver) and a plain one (the env stepped in its
   trial actor, long iterations) at once on disjoint nodes, while another job's busy actor runs pinned
   to one of the two nodes; two more grid points, whose driver asks 3 CPUs, are skipped (the cluster
   has 4, but no node set of one type holds 3). Ctrl-C once both train (the plain one inside its first
   iteration: its trial actor is killed at once, as a local trial's iteration ends where it is): exit 130,
   one resume line, nothing left on the nodes. Both trials fetched their node rows: the trial on the planted node read
   foreign CPU, exactly that actor's and no more than the actor's own /proc time; the other read none;
2. the resume reruns the two (the skipped ones kept), and the plain trial's node is killed as soon as
   both trial actors are up: that trial fails with "node lost", the RLlib one goes on to its end (last: a
   node fewer afterwards).
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
from conftest import REPO
from local_cluster import local_cluster

pytestmark = pytest.mark.slow

#: Another job on the cluster: one actor pinned to a worker node (no CPU reserved), busy a quarter of the time
#: until told to stop (it ends its loop before its driver leaves).
PLANTED = """
import os, sys, threading, time
import ray
from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy
ray.init(address=sys.argv[1], log_to_driver=False, logging_level="ERROR")
node = max(n["NodeID"] for n in ray.nodes() if n["Alive"] and n["Resources"].get("CPU", 0) > 0)

@ray.remote(num_cpus=0, max_concurrency=2)
class Busy:
    def __init__(self):
        self.done = threading.Event()
    def pid(self):
        return os.getpid()
    def spin(self):
        while not self.done.is_set():
            end = time.perf_counter() + 0.01
            while time.perf_counter() < end:
                pass
            time.sleep(0.03)
    def stop(self):
        self.done.set()

busy = Busy.options(scheduling_strategy=NodeAffinitySchedulingStrategy(node, soft=False)).remote()
print(node, ray.get(busy.pid.remote()), flush=True)
spinning = busy.spin.remote()
sys.stdin.read()
ray.get(busy.stop.remote())
ray.get(spinning)
"""

#: t000r0: RLlib, 12 short iterations; t001r0: plain, iterations of 400,000 steps of a 20 us env (8 s of CPU each:
#: it is still in its first when the other has run 3); t002r0, t003r0: a driver of 3 CPUs, skipped.
SPEC = """\
name: parallel_e2e
environment: {env: envs.synthetic:SyntheticEnv, env_config: {step_cost_us: 20, episode_len: 20}}
env_runners: {num_env_runners: 1, num_cpus_per_env_runner: 1}
learners: {num_learners: 0}
training: {train_batch_size_per_learner: 200, minibatch_size: 100, num_epochs: 1}
rl_module: {fcnet_hiddens: [8]}
grid: {resources.num_cpus_for_main_process: [1, 3]}
variants:
  - {name: rllib}
  - {name: plain, set: {framework: plain, num_env_runners: 0, training.train_batch_size_per_learner: 400000}}
stop: {iterations: 12}
warmup_iterations: 1
env_ceiling_s: 0
trial_timeout_s: 300
sample_hz: 10
"""
RLLIB, PLAIN = "t000r0", "t001r0"


def _events(out: Path, trial: str) -> list[dict]:
    path = out / "trials" / trial / "events.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def _event(out: Path, trial: str, name: str) -> dict:
    return next(e for e in _events(out, trial) if e["event"] == name)


def _count(out: Path, trial: str, name: str) -> int:
    return sum(e["event"] == name for e in _events(out, trial))


def _cpu_s(pid: int) -> float:
    times = psutil.Process(pid).cpu_times()
    return times.user + times.system


def _alive(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


def _trial_pids(out: Path) -> set[int]:
    """Every process of the trials on the nodes (their drivers, actors and node samplers) and here."""
    pids = set()
    for folder in (out / "trials").iterdir():
        for e in _events(out, folder.name):
            if e["event"] in ("start", "trial_actor"):
                pids.add(e["pid"])
            if e["event"] == "node_sampling":
                pids |= {int(p) for procs in e["processes"].values() for p, _ in procs}
    return pids


def _sweep(cluster, spec: Path, out: Path, *extra: str) -> subprocess.Popen:
    """The sweep as a terminal's foreground job (its own session, SIGINT at its default)."""
    env = {**os.environ, "RAY_AUTH_TOKEN_PATH": str(cluster.token)}
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "rlbench",
            "sweep",
            str(spec),
            "--address",
            cluster.address,
            "--parallel",
            "auto",
            "--out",
            str(out),
            *extra,
        ],
        cwd=REPO,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )


def _wait(proc: subprocess.Popen, ready, timeout_s: float = 240) -> None:
    deadline = time.monotonic() + timeout_s
    while not ready():
        assert proc.poll() is None, proc.communicate()[0]
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.1)


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    """The cluster, and the sweep interrupted once both trials train (another job's actor beside them)."""
    folder = tmp_path_factory.mktemp("parallel")
    spec, out = folder / "spec.yaml", folder / "out"
    spec.write_text(SPEC)
    with local_cluster(
        head_args=("--num-cpus=0",), node_args=("--num-cpus=2",), nodes=2, env={"RAY_health_check_period_ms": "1000"}
    ) as cluster:
        env = {**os.environ, "RAY_AUTH_TOKEN_PATH": str(cluster.token), "RAY_AUTH_MODE": "token"}
        planted = subprocess.Popen(
            [sys.executable, "-c", PLANTED, cluster.address],
            cwd=cluster.temp,
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            start_new_session=True,
        )
        try:
            node, pid = planted.stdout.readline().split()
            before = _cpu_s(int(pid))
            proc = _sweep(cluster, spec, out)
            _wait(proc, lambda: _count(out, RLLIB, "iteration") >= 3 and _count(out, PLAIN, "build") == 1)
            os.killpg(proc.pid, signal.SIGINT)
            stdout, _ = proc.communicate(timeout=180)
            planted_cpu_s = _cpu_s(int(pid)) - before
        finally:
            planted.stdin.close()
            planted.wait(60)
        yield {
            "cluster": cluster,
            "spec": spec,
            "out": out,
            "proc": proc,
            "stdout": stdout,
            "node": node,
            "pid": int(pid),
            "planted_cpu_s": planted_cpu_s,
        }


def test_ctrl_c_stops_every_running_trial_with_one_resume_line(run):
    out, proc = run["out"], run["proc"]
    assert proc.returncode == 130, run["stdout"]
    text = " ".join(run["stdout"].split())
    assert text.count("Resume with:") == 1 and f"--parallel auto --out {out} --resume" in text
    records = {
        t: json.loads((out / "trials" / t / "record.json").read_text()) for t in (RLLIB, PLAIN, "t002r0", "t003r0")
    }
    assert {t: r["status"] for t, r in records.items()} == {
        RLLIB: "interrupted",
        PLAIN: "interrupted",
        "t002r0": "skipped",
        "t003r0": "skipped",
    }
    # a driver of 3 CPUs: the cluster has 4, but no node set of one type holds them together
    assert records["t002r0"]["reason"].startswith("needs 4 CPUs and 0 GPUs (driver 3 CPU + 1 env runners x 1 CPU)")
    assert records["t003r0"]["reason"].startswith("needs 3 CPUs and 0 GPUs (driver 3 CPU + no actors)")
    for trial in (RLLIB, PLAIN):  # stopped cleanly: its node rows fetched, its release check run
        assert _event(out, trial, "cluster_release")["actors_left"] == []
    assert [p for p in _trial_pids(out) if _alive(p)] == []


def test_the_two_ran_at_once_on_disjoint_nodes_of_one_type(run):
    out = run["out"]
    trials = pd.read_parquet(out / "trials.parquet").set_index("trial_id").loc[[RLLIB, PLAIN]]
    nodes = {t: json.loads(trials.loc[t, "node_ids"]) for t in trials.index}
    assert all(len(n) == 1 for n in nodes.values()) and nodes[RLLIB] != nodes[PLAIN]
    assert trials["started_epoch"].max() < trials["ended_epoch"].min()  # they overlapped in time
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["parallel"] == "auto"
    assert set(trials["node_type"]) == {
        f"{n['cpu_model']} | {n['logical_cores']} | {n['memory_bytes'] / 2**30:.0f} | none x 0"
        for n in manifest["cluster"]["nodes"]
    }
    for trial in trials.index:  # the driver ran on its trial's node, in the group placed there
        plan = json.loads((out / "trials" / trial / "plan.json").read_text())
        assert plan["placement"]["node_ids"] == nodes[trial] and plan["cpus"] == 2
        assert _event(out, trial, "placement")["placed"] is True
        assert _event(out, trial, "trial_actor")["node_id"] == nodes[trial][0]


def test_the_rllib_trials_env_runner_was_captured_by_its_group(run):
    out = run["out"]
    node = _event(out, RLLIB, "placement")["node_ids"][0]
    roles = {(n["node_id"], a["role"]) for n in _event(out, RLLIB, "node_sampling")["nodes"] for a in n["actors"]}
    assert roles == {(node, "driver"), (node, "env_runner")}
    util = pd.read_parquet(out / "utilization.parquet")
    mine = util[(util["trial_id"] == RLLIB) & (util["kind"] == "process")]
    assert set(mine.loc[mine["role"].isin(["driver", "env_runner"]), "node_id"]) == {node}
    assert set(mine.loc[mine["node_id"].isna(), "role"]) == {"harness"}  # its process here carries events only


def test_foreign_cpu_is_the_planted_actors_on_its_node_only(run):
    out, node, pid = run["out"], run["node"], run["pid"]
    trials = pd.read_parquet(out / "trials.parquet").set_index("trial_id")
    on_it = next(t for t in (RLLIB, PLAIN) if json.loads(trials.loc[t, "node_ids"]) == [node])
    other = PLAIN if on_it == RLLIB else RLLIB
    assert trials.loc[other, "foreign_cpu_s"] == 0.0
    assert [n["foreign"] for n in _event(out, other, "node_sampling")["nodes"]] == [[]]
    foreign = [p for n in _event(out, on_it, "node_sampling")["nodes"] for p in n["foreign"]]
    assert [p["pid"] for p in foreign] == [pid] and foreign[0]["title"].startswith("ray::Busy")
    # known answer: the actor's own /proc counters over a window that holds the samplers'
    assert 0 < trials.loc[on_it, "foreign_cpu_s"] <= run["planted_cpu_s"] + 0.02
    figures = (trials.loc[on_it, "foreign_cpu_s"], run["planted_cpu_s"], trials.loc[other, "foreign_cpu_s"])
    print(
        f"foreign_cpu_s: {on_it} (on the planted node) {figures[0]:.2f} s, the planted actor's own /proc CPU over "
        f"the sweep {figures[1]:.2f} s; "
        f"{other} {figures[2]:.2f} s"
    )  # docs/CLUSTER.md's figure
    assert "## Nodes" in (out / "report.md").read_text()


def test_the_resume_reruns_both_and_a_killed_node_fails_its_trial_only(run):
    cluster, out = run["cluster"], run["out"]
    proc = _sweep(cluster, run["spec"], out, "--resume")
    # the earlier attempts are moved aside when each trial's turn comes: until then the old events are there
    _wait(
        proc,
        lambda: (
            all((out / "attempts" / t / "1").is_dir() for t in (RLLIB, PLAIN))
            and _count(out, RLLIB, "trial_actor") == 1
            and _count(out, PLAIN, "trial_actor") == 1
        ),
    )
    node = _event(out, PLAIN, "placement")["node_ids"][0]
    raylet = next(
        p
        for p in psutil.process_iter(["cmdline"])
        if cluster.temp in " ".join(p.info["cmdline"] or []) and f"--node_id={node}" in " ".join(p.info["cmdline"])
    )
    for p in [raylet, *raylet.children(recursive=True)]:  # the node dies: its raylet, workers and agents
        p.kill()
    stdout, _ = proc.communicate(timeout=300)
    assert proc.returncode == 1, stdout  # a trial failed; the sweep ran the other to its end
    assert "resuming: 2 finished trials kept, 2 to run" in " ".join(stdout.split())
    assert (out / "attempts" / RLLIB / "1").is_dir() and (out / "attempts" / PLAIN / "1").is_dir()
    failed = json.loads((out / "trials" / PLAIN / "record.json").read_text())
    assert failed["status"] == "failed" and "node lost" in failed["reason"] and node[:12] in failed["reason"]
    assert _event(out, PLAIN, "node_lost")["node_ids"] == [node]
    trials = pd.read_parquet(out / "trials.parquet").set_index("trial_id")
    assert list(trials["status"]) == ["ok", "failed", "skipped", "skipped"]
    assert trials.loc[RLLIB, "iterations"] == 12 and json.loads(trials.loc[RLLIB, "node_ids"]) != [node]
