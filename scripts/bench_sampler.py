"""Does measuring disturb what is measured? The sampler's cost and the harness's own overhead.

Three measurements, printed as a report (figures recorded in docs/MEASUREMENT.md):

1. Sampler on vs off: the same PPO trial (12 env runners x 1/6 CPU on 2 cores, a process tree of
   20+ processes) run in pairs, sampler on and off, interleaved (the order alternates per pair).
   Prints the sampler's own CPU (% of one core, at ``--hz``), the tree size, and the steady-state
   throughput ratio on/off per pair with its mean, spread and a 95% confidence interval.
2. Harness-added cost per trial: ``trial_wall_s - (ray_init_s + build_s + sum(wall_s) + shutdown_s)``
   for every trial of step 1 (process launch, plan/event I/O, the placement check, thread setup).
3. A whole sweep (``run_sweep`` + tables) against a hand-written loop doing the same work in one
   process (start Ray, build, train, shut down, per config), run one after the other.

    flock /tmp/rlbench-ray.lock python scripts/bench_sampler.py [--pairs 5] [--hz 10]
"""

from __future__ import annotations

import argparse
import io
import json
import math
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

TRIAL_SPEC = """
name: bench_sampler
environment:
  env: envs.synthetic:SyntheticEnv
  env_config: {{step_cost_us: 300, episode_len: 50, obs_size: 8}}
env_runners:
  num_env_runners: {runners}
  num_cpus_per_env_runner: {cpus_per_runner}
resources:
  num_cpus_for_main_process: 0
training:
  train_batch_size_per_learner: 512
  minibatch_size: 128
  num_epochs: 1
rl_module:
  fcnet_hiddens: [32, 32]
cpus: 2
stop:
  iterations: {iterations}
warmup_iterations: 1
trial_timeout_s: 600
sample_hz: {hz}
"""

SWEEP_SPEC = """
name: bench_harness
# one trial's processes at a time: the harness cost per trial is trial_wall_s less what it accounts
# for, and a trial launched early would count its wait for the previous one's shutdown
overlap_trial_start: false
environment:
  env: envs.tiny:TinyEnv
  env_config: {{episode_len: 20}}
resources:
  num_cpus_for_main_process: 0
training:
  train_batch_size_per_learner: 256
  minibatch_size: 64
  num_epochs: 1
rl_module:
  fcnet_hiddens: [32, 32]
grid:
  num_env_runners: {runners}
cpus: 2
stop:
  iterations: {iterations}
warmup_iterations: 1
trial_timeout_s: 300
sample_hz: 10
env_ceiling_s: 0  # the hand-written loop measures no env ceiling either: compare the same work
"""

#: The same work as the sweep, written by hand: one process, Ray started and stopped per config.
HAND_LOOP = r"""
import json, sys, time
t0 = time.perf_counter()
import logging, warnings
import ray
from ray.rllib.algorithms.ppo import PPOConfig
sys.path.insert(0, ".")
from envs.tiny import TinyEnv
for name in ("ray", "ray.rllib", "ray.tune", "ray.train", "ray.data"):
    logging.getLogger(name).setLevel(logging.ERROR)
warnings.filterwarnings("ignore")
import_s = time.perf_counter() - t0
runners, iterations = json.loads(sys.argv[1]), int(sys.argv[2])
per_config = []
for n in runners:
    t = time.perf_counter()
    ray.init(address="local", num_cpus=2, include_dashboard=False, log_to_driver=False, logging_level="ERROR")
    config = (PPOConfig().environment(env=TinyEnv, env_config={"episode_len": 20})
              .env_runners(num_env_runners=n, num_cpus_per_env_runner=1)
              .learners(num_learners=0)
              .training(train_batch_size_per_learner=256, minibatch_size=64, num_epochs=1)
              .rl_module(model_config={"fcnet_hiddens": [32, 32]})
              .fault_tolerance(restart_failed_env_runners=False)
              .debugging(log_level="ERROR"))
    algo = config.build_algo()
    for _ in range(iterations):
        algo.train()
    algo.stop()
    ray.shutdown()
    per_config.append(time.perf_counter() - t)
print(json.dumps({"import_s": import_s, "per_config_s": per_config, "total_s": time.perf_counter() - t0}))
"""


def _ci95(values: list[float]) -> tuple[float, float]:
    from scipy import stats

    if len(values) < 2:
        return (math.nan, math.nan)
    mean, sem = statistics.fmean(values), statistics.stdev(values) / math.sqrt(len(values))
    half = stats.t.ppf(0.975, len(values) - 1) * sem
    return mean - half, mean + half


def paired_sampler(out: Path, pairs: int, hz: float, runners: int, iterations: int):
    """Run ``pairs`` (on, off) pairs of one trial, alternating the order; returns the tables."""
    from rlbench.analysis.tables import build_tables
    from rlbench.measure.machine import probe_machine
    from rlbench.results.layout import ResultsFolder
    from rlbench.run.trial import TrialLauncher, run_trial
    from rlbench.spec.load import load_spec
    from rlbench.spec.plan import plan_trials, write_plan

    out.mkdir(parents=True, exist_ok=True)
    spec = out.parent / "bench_sampler.yaml"
    spec.write_text(TRIAL_SPEC.format(runners=runners, cpus_per_runner=2 / runners, iterations=iterations, hz=hz))
    (plan,) = plan_trials(load_spec(spec), probe_machine())
    if plan.skip_reason:
        raise SystemExit(f"trial cannot run here: {plan.skip_reason}")
    launcher = TrialLauncher()
    # The fork server imports Ray, RLlib and torch once per sweep; start it here so that the
    # first trial of the pairs does not pay it (it is reported apart).
    t = time.perf_counter()
    warm = launcher.context.Process(target=time.sleep, args=(0,))  # waits for the server's imports
    warm.start()
    warm.join()
    print(f"  fork server start (once per sweep, imports included): {time.perf_counter() - t:.2f} s", flush=True)
    for i in range(pairs):
        for mode in (("on", "off") if i % 2 == 0 else ("off", "on")):
            p = plan.model_copy(update={"trial_id": f"p{i}{mode}", "sample_hz": hz if mode == "on" else 0.0})
            record = run_trial(p, write_plan(ResultsFolder(out), p), launcher, None)
            print(f"  pair {i} sampler {mode:3}: {record.status}, {record.trial_wall_s:.1f} s", flush=True)
    return build_tables(out)


def report_sampler(tables, hz: float, paired_dir: Path) -> None:
    trials, util = tables["trials"], tables["utilization"]
    trials = trials.set_index("trial_id")
    pairs = sorted(int(t[1:-2]) for t in trials.index if t.endswith("on"))
    # Throughput of a trial: steady env steps / steady wall seconds (all its steady iterations).
    its = tables["iterations"]
    steady = its[~its["warmup"]].groupby("trial_id")[["env_steps_sampled", "wall_s"]].sum()
    rate = steady["env_steps_sampled"] / steady["wall_s"]
    ratios, costs = [], []
    for i in pairs:
        ratios.append(rate[f"p{i}on"] / rate[f"p{i}off"])
        costs.append(trials.loc[f"p{i}on", "sampler_cpu_pct"])
    records = [json.loads(p.read_text()) for p in sorted(paired_dir.glob("trials/p*on/record.json"))]
    per_tick_ms = [1000 * r["sampler_cpu_s"] / r["sampler_samples"] for r in records if r["sampler_samples"]]
    procs = util[util["kind"] == "process"]
    tree = procs.groupby(["trial_id", "t_s"])["pid"].nunique().groupby("trial_id").max()
    print(f"\n1. Sampler on vs off ({len(pairs)} pairs, interleaved; sampler at {hz:g} Hz)")
    print(f"   process tree sampled: {int(tree.min())}-{int(tree.max())} processes per tick")
    print(f"   sampler CPU over the whole trial: mean {statistics.fmean(costs):.3f}% of one core "
          f"(min {min(costs):.3f}, max {max(costs):.3f}); target < 1%")
    print(f"   sampler CPU per tick: mean {statistics.fmean(per_tick_ms):.3f} ms -> "
          f"{statistics.fmean(per_tick_ms) * hz / 10:.3f}% of one core at {hz:g} Hz")
    lo, hi = _ci95(ratios)
    print(f"   throughput ratio on/off per pair: {', '.join(f'{r:.3f}' for r in ratios)}")
    print(f"   mean {statistics.fmean(ratios):.3f}, median {statistics.median(ratios):.3f}, "
          f"sd {statistics.stdev(ratios) if len(ratios) > 1 else math.nan:.3f}, 95% CI [{lo:.3f}, {hi:.3f}]; "
          f"target >= 0.98")
    on, off = rate[rate.index.str.endswith("on")], rate[rate.index.str.endswith("off")]
    print(f"   steady env steps/s per trial: on {', '.join(f'{v:.0f}' for v in on)}; "
          f"off {', '.join(f'{v:.0f}' for v in off)}")


def report_harness(tables) -> None:
    trials, its = tables["trials"], tables["iterations"]
    trained = its.groupby("trial_id")["wall_s"].sum()
    rows = []
    for _, r in trials.iterrows():
        accounted = r["ray_init_s"] + r["build_s"] + trained.get(r["trial_id"], 0.0) + r["shutdown_s"]
        rows.append((r["trial_id"], r["trial_wall_s"], accounted, r["trial_wall_s"] - accounted))
    added = [a for *_, a in rows]
    print("\n2. Harness-added cost per trial = trial_wall_s - (ray_init_s + build_s + sum(wall_s) + shutdown_s)")
    for trial_id, wall, accounted, a in rows:
        print(f"   {trial_id:7} trial_wall {wall:6.2f} s, accounted {accounted:6.2f} s, harness {a:5.2f} s")
    print(f"   mean {statistics.fmean(added):.2f} s, max {max(added):.2f} s; target < 1 s")


def sweep_vs_hand(out: Path, runners: list[int], iterations: int) -> None:
    from rich.console import Console

    from rlbench.analysis.tables import build_tables
    from rlbench.report.trial_plots import write_plots
    from rlbench.run.sweep import run_sweep
    from rlbench.spec.load import load_spec

    out.mkdir(parents=True, exist_ok=True)
    spec = out / "bench_harness.yaml"
    spec.write_text(SWEEP_SPEC.format(runners=json.dumps(runners), iterations=iterations))
    t = time.perf_counter()
    outcome = run_sweep(load_spec(spec), out / "sweep", console=Console(file=io.StringIO()))
    tables = build_tables(out / "sweep")
    sweep_s = time.perf_counter() - t
    write_plots(out / "sweep", tables, ["num_env_runners"])
    plots_s = time.perf_counter() - t - sweep_s
    statuses = [r.status for r in outcome.records]
    t = time.perf_counter()
    done = subprocess.run([sys.executable, "-c", HAND_LOOP, json.dumps(runners), str(iterations)],
                          capture_output=True, text=True, cwd=Path(__file__).resolve().parents[1])
    hand_s = time.perf_counter() - t
    if done.returncode != 0:
        raise SystemExit(f"hand-written loop failed:\n{done.stderr[-3000:]}")
    hand = json.loads(done.stdout.strip().splitlines()[-1])
    print(f"\n3. Whole sweep vs hand-written loop ({len(runners)} configs, num_env_runners={runners}, "
          f"{iterations} iterations each)")
    print(f"   rlbench sweep (run_sweep + tables): {sweep_s:6.1f} s  (trials: {statuses}; plots another {plots_s:.1f} s)")
    print(f"   hand-written loop, one process:     {hand_s:6.1f} s  (imports {hand['import_s']:.1f} s, "
          f"per config {', '.join(f'{s:.1f}' for s in hand['per_config_s'])} s)")
    print(f"   ratio sweep / hand: {sweep_s / hand_s:.3f}; per config: {(sweep_s - hand_s) / len(runners):+.2f} s")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=5, help="sampler on/off pairs (>= 5 for the report)")
    parser.add_argument("--hz", type=float, default=10.0)
    parser.add_argument("--runners", type=int, default=12, help="env runners of the paired trial (2 CPUs shared)")
    parser.add_argument("--iterations", type=int, default=16)
    parser.add_argument("--sweep-runners", default="[0, 1, 2]", help="JSON list: num_env_runners of part 3")
    parser.add_argument("--skip-sweep", action="store_true", help="leave out part 3")
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    out = args.out or Path(tempfile.mkdtemp(prefix="rlbench-bench-sampler-"))
    out.mkdir(parents=True, exist_ok=True)
    print(f"results under {out}")
    print(f"paired trials: PPO, SyntheticEnv 300 us/step, {args.runners} env runners x {2 / args.runners:g} CPU, "
          f"cpus 2, {args.iterations} iterations (1 warm-up)", flush=True)
    tables = paired_sampler(out / "paired", args.pairs, args.hz, args.runners, args.iterations)
    report_sampler(tables, args.hz, out / "paired")
    report_harness(tables)
    if not args.skip_sweep:
        sweep_vs_hand(out / "harness", json.loads(args.sweep_runners), 4)


if __name__ == "__main__":
    main()
