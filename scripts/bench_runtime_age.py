"""Does a trial run slower in a Ray runtime started just before it than in one that already ran a trial?

rlbench starts a runtime per trial; a Tune grid runs its second and later trials in the runtime
its first trial started. This measures the difference with plain RLlib, nothing of rlbench or Tune:
each run is a fresh Python process that starts Ray (2 CPUs) and builds the same PPO configuration
(CartPole-v1, batch 500, 1 env runner by default; the bench_vs_tune grid's), then

- ``fresh``: trains it ``--iterations`` times and reports the median env steps/s over the
  iterations after ``--warmup``;
- ``used``: first trains and stops one such algorithm in the same runtime, then builds a second
  and reports its median (the driver process is reused too, which a Tune trial actor is not).

Runs alternate fresh/used, the first alternating between rounds; prints both medians and the
paired ratio used/fresh with a 95% bootstrap interval.

    flock /tmp/rlbench-ray.lock python scripts/bench_runtime_age.py [--rounds 5] [--runners 1] [--batch 500]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
from pathlib import Path

PROGRAM = r"""
import json, os, sys, time, logging, statistics
args = json.loads(sys.argv[1])
import ray
from ray.rllib.algorithms.ppo import PPOConfig
logging.getLogger("ray").setLevel(logging.ERROR)
config = (PPOConfig().environment("CartPole-v1")
          .env_runners(num_env_runners=args["runners"], num_cpus_per_env_runner=1)
          .learners(num_learners=0).resources(num_cpus_for_main_process=1)
          .training(train_batch_size_per_learner=args["batch"], minibatch_size=250, num_epochs=2)
          .rl_module(model_config={"fcnet_hiddens": [64, 64]}))
ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, logging_level="ERROR")
def trial():
    algo = config.build_algo()
    rates = []
    for _ in range(args["iterations"]):
        t = time.perf_counter()
        r = algo.train()
        rates.append(r["env_runners"]["num_env_steps_sampled"] / (time.perf_counter() - t))
    log_dir = algo.logdir
    algo.stop()
    try:
        os.rmdir(log_dir)  # the empty folder RLlib leaves in ~/ray_results; never a link, never a full one
    except OSError:
        pass
    return statistics.median(rates[args["warmup"]:])
if args["mode"] == "used":
    trial()
print(json.dumps({"rate": trial()}))
ray.shutdown()
"""


def run(mode: str, args: argparse.Namespace) -> float:
    payload = json.dumps({"mode": mode, "runners": args.runners, "batch": args.batch,
                          "iterations": args.iterations, "warmup": args.warmup})
    done = subprocess.run([sys.executable, "-c", PROGRAM, payload], capture_output=True, text=True,
                          cwd=Path(__file__).resolve().parents[1])
    lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
    if done.returncode != 0 or not lines:
        raise SystemExit(f"{mode} run failed ({done.returncode}):\n{done.stderr[-3000:]}")
    return json.loads(lines[-1])["rate"]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--runners", type=int, default=1)
    parser.add_argument("--batch", type=int, default=500)
    parser.add_argument("--iterations", type=int, default=24)
    parser.add_argument("--warmup", type=int, default=2)
    args = parser.parse_args()
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from rlbench.analysis.stats import interval_text, median_ci

    rates: dict[str, list[float]] = {"fresh": [], "used": []}
    for k in range(args.rounds):
        order = ("fresh", "used") if k % 2 == 0 else ("used", "fresh")
        for mode in order:
            rates[mode].append(run(mode, args))
            print(f"round {k} {mode:5}: {rates[mode][-1]:,.0f} env steps/s", flush=True)
    ratios = [u / f for u, f in zip(rates["used"], rates["fresh"])]
    paired = median_ci(ratios)
    print(f"{args.runners} runner(s), batch {args.batch}: fresh {statistics.median(rates['fresh']):,.0f}, "
          f"used {statistics.median(rates['used']):,.0f} env steps/s; used/fresh paired {paired.median:.3f} "
          f"(95% CI {interval_text(paired.ci_low, paired.ci_high)}, {args.rounds} rounds)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
