"""One grid on a local Ray cluster with ``--parallel 1`` and ``--parallel auto``: the walls side by side.

A benchmark, not a test: it prints figures that depend on the machine. Starts a cluster on this machine
with tests/local_cluster.py (a head with 0 CPUs and ``--nodes`` nodes of ``--node-cpus`` CPUs, one private
temp folder and token), runs the same 4-trial grid twice into two folders (``--parallel 1``: one trial at
a time, each still on a node of its own with its driver an actor there; ``--parallel auto``: as many at
once as there are nodes), and prints each sweep's wall, then per trial its nodes and its
``started_epoch``/``ended_epoch`` (seconds from the sweep's first launch), so overlapping trials can be
seen on disjoint nodes. Stops exactly the cluster's processes (``ray stop`` would stop every Ray here).

    python scripts/bench_parallel.py [--nodes 2] [--node-cpus 2] [--framework rllib|plain] [--out DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tests"))

from local_cluster import local_cluster  # noqa: E402

#: The grid: 2 configurations x 2 repeats of a tiny CartPole PPO (1 env runner, the learner in the driver: one
#: 2-CPU node each), or the same shape on the plain framework (the env stepped in the trial actor).
SPECS = {
    "rllib": """\
name: bench_parallel
algo: PPO
environment: {env: CartPole-v1}
env_runners: {num_env_runners: 1, num_cpus_per_env_runner: 1}
learners: {num_learners: 0}
resources: {num_cpus_for_main_process: 1}
training: {train_batch_size_per_learner: 1000, minibatch_size: 250, num_epochs: 2}
rl_module: {fcnet_hiddens: [32, 32]}
grid: {training.lr: [0.0003, 0.001]}
repeats: 2
seed: 1
stop: {iterations: 10}
warmup_iterations: 2
trial_timeout_s: 600
""",
    "plain": """\
name: bench_parallel
framework: plain
environment: {env: envs.synthetic:SyntheticEnv, env_config: {step_cost_us: 50}}
env_runners: {num_env_runners: 0}
resources: {num_cpus_for_main_process: 1}
training: {train_batch_size_per_learner: 4000}
grid: {training.lr: [0.0003, 0.001]}
repeats: 2
seed: 1
stop: {iterations: 20}
warmup_iterations: 2
trial_timeout_s: 600
""",
}


def sweep(cluster, spec: Path, out: Path, parallel: str) -> float:
    """Run the sweep; its wall seconds (the command's, probe, tables and report included)."""
    env = {**os.environ, "RAY_AUTH_TOKEN_PATH": str(cluster.token)}
    t = time.monotonic()
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "rlbench",
            "sweep",
            str(spec),
            "--address",
            cluster.address,
            "--parallel",
            parallel,
            "--out",
            str(out),
        ],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
    )
    wall = time.monotonic() - t
    if done.returncode != 0:
        sys.exit(f"--parallel {parallel} failed ({done.returncode}):\n{done.stdout[-3000:]}\n{done.stderr[-2000:]}")
    return wall


def trials(out: Path) -> list[dict]:
    import pandas as pd

    frame = pd.read_parquet(out / "trials.parquet")
    first = frame["started_epoch"].min()
    return [
        {
            "trial": r.trial_id,
            "nodes": ",".join(n[:8] for n in json.loads(r.node_ids)),
            "start_s": r.started_epoch - first,
            "end_s": r.ended_epoch - first,
            "wall_s": r.trial_wall_s,
            "env_steps_per_s": r.env_steps_per_s,
            "foreign_cpu_s": r.foreign_cpu_s,
        }
        for r in frame.sort_values("started_epoch").itertuples()
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=2, help="worker nodes besides the 0-CPU head (default 2)")
    parser.add_argument("--node-cpus", type=int, default=2, help="Ray CPUs of each worker node (default 2)")
    parser.add_argument("--framework", choices=sorted(SPECS), default="rllib")
    parser.add_argument("--out", type=Path, default=None, help="folder for the two result folders (default: temp)")
    args = parser.parse_args()
    root = args.out or Path(tempfile.mkdtemp(prefix="bench_parallel_"))
    root.mkdir(parents=True, exist_ok=True)
    spec = root / "spec.yaml"
    spec.write_text(SPECS[args.framework])
    load = os.getloadavg()[0]
    with local_cluster(
        head_args=("--num-cpus=0",), node_args=(f"--num-cpus={args.node_cpus}",), nodes=args.nodes
    ) as cluster:
        walls = {p: sweep(cluster, spec, root / f"parallel-{p}", p) for p in ("1", "auto")}
    print(
        f"{args.framework} grid, 4 trials, head (0 CPUs) + {args.nodes} nodes x {args.node_cpus} CPUs on this "
        f"machine ({os.cpu_count()} cores; load average {load:.1f} before, {os.getloadavg()[0]:.1f} after)"
    )
    print(f"{'--parallel':>10} {'sweep wall s':>13}  trials: nodes, start..end s from the first launch")
    for p, wall in walls.items():
        rows = trials(root / f"parallel-{p}")
        spans = "; ".join(f"{t['trial']} {t['nodes']} {t['start_s']:.1f}..{t['end_s']:.1f}" for t in rows)
        print(f"{p:>10} {wall:>13.1f}  {spans}")
    print(f"ratio auto / 1: {walls['auto'] / walls['1']:.2f}")
    for p in walls:
        for t in trials(root / f"parallel-{p}"):
            print(
                f"  --parallel {p} {t['trial']}: {t['env_steps_per_s']:,.0f} env steps/s, trial wall "
                f"{t['wall_s']:.1f} s, foreign_cpu_s {t['foreign_cpu_s']}"
            )
    print(f"results: {root}")


if __name__ == "__main__":
    main()
