"""Does ``rlbench autoconfig --address`` work on a real Ray cluster? A check, not a test: it costs minutes.

Starts a two-node Ray cluster on this machine as tests/e2e/test_cluster_e2e.py does, with its helper
tests/local_cluster.py (``ray start --head`` with 1 CPU and a second node with 2 CPUs, one private temp
folder, token auth with a token of its own),
runs ``rlbench autoconfig`` on a small CartPole PPO space with ``--address``, prints what it answered and
where each trial's env runners ran, and stops exactly the cluster's processes (``ray stop`` would kill
every Ray on the machine).

    python scripts/autoconfig_on_cluster.py [--budget 2m30s] [--out DIR]
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

SPEC = """\
name: autoconfig_cluster
algo: PPO
environment: {env: CartPole-v1}
env_runners: {num_env_runners: 1, num_cpus_per_env_runner: 1}
learners: {num_learners: 0}
resources: {num_cpus_for_main_process: 0}
training: {train_batch_size_per_learner: 500, minibatch_size: 128, num_epochs: 2}
rl_module: {fcnet_hiddens: [32, 32]}
grid:
  num_env_runners: [1, 2]
stop: {seconds: 5}
warmup_iterations: 1
trial_timeout_s: 120
sample_hz: 5
autoconfig:
  trial_s: 5
  cold_start_s: 10
  baseline: {num_env_runners: 1}
  finalists: 2
  min_rounds: 2
  max_rounds: 3
"""


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--budget", default="2m30s")
    p.add_argument("--out", type=Path, default=None)
    args = p.parse_args()
    work = Path(tempfile.mkdtemp(prefix="rlbench-ac-cluster-"))
    out = args.out or work / "out"
    spec = work / "spec.yaml"
    spec.write_text(SPEC)
    with local_cluster() as cluster:
        t = time.monotonic()
        done = subprocess.run(
            [
                sys.executable,
                "-m",
                "rlbench",
                "autoconfig",
                str(spec),
                "--budget",
                args.budget,
                "--address",
                cluster.address,
                "--out",
                str(out),
            ],
            cwd=REPO,
            capture_output=True,
            text=True,
            env={**os.environ, "RAY_AUTH_TOKEN_PATH": str(cluster.token)},
        )
        wall_s = time.monotonic() - t
    print(done.stdout[-4000:], done.stderr[-2000:], sep="\n")
    print(f"exit {done.returncode} in {wall_s:.0f} s; results in {out}")
    answer = out / "autoconfig.json"
    if answer.is_file():
        data = json.loads(answer.read_text())
        print(
            f"answer: {data['best']['key'] if data.get('best') else None}; {data['trials_run']} trials, "
            f"{data['wall_s']:.0f} s of a {data['budget_s']:.0f} s budget"
        )
    for plan_file in sorted((out / "trials").glob("*/plan.json")):
        plan = json.loads(plan_file.read_text())
        events = [json.loads(x) for x in (plan_file.parent / "events.jsonl").read_text().splitlines()]
        sampling = next((e for e in events if e["event"] == "node_sampling"), None)
        nodes = (
            sorted({n["node_id"][:8] for n in sampling["nodes"] for a in n["actors"] if a["role"] == "env_runner"})
            if sampling
            else []
        )
        record = (
            json.loads((plan_file.parent / "record.json").read_text())
            if (plan_file.parent / "record.json").is_file()
            else {}
        )
        print(
            f"{plan['trial_id']}: {plan.get('phase')} ray_address={bool(plan.get('ray_address'))} "
            f"status={record.get('status')} env runners on nodes {nodes}"
        )
    return done.returncode


if __name__ == "__main__":
    sys.exit(main())
