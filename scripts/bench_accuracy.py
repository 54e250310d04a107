"""Known-answer accuracy of rlbench's sampling split: measured env time against steps x cost.

Runs a small sweep of the synthetic env (every step and reset burns ``--cost-us`` of CPU time)
over env runners x envs per runner, then prints, per trial and over its steady-state iterations:
the env time all runners together spent inside the env (``env_step_s x runners``) against the
answer ``(steps + resets) x cost`` (exact on a quiet machine only) and against the env's own clock
(exact on any machine: the tests check that one), and the sampling wall time's speed-up over one
runner against what the free cores allow. The machine's load average and each trial's free cores
are printed beside the figures: read them before the errors.

    flock /tmp/rlbench-ray.lock python scripts/bench_accuracy.py [--cost-us 4000] [--out DIR]
"""

from __future__ import annotations

import argparse
import io
import os
import tempfile
import time
from pathlib import Path

SPEC = """
name: bench_accuracy
environment:
  env: envs.synthetic:SyntheticEnv
  env_config: {{step_cost_us: {cost_us}, episode_len: {episode_len}, obs_size: 8, self_timing_dir: {timing}}}
env_runners:
  num_cpus_per_env_runner: 1
resources:
  num_cpus_for_main_process: 0
training:
  train_batch_size_per_learner: {batch}
  minibatch_size: 64
  num_epochs: 1
rl_module:
  fcnet_hiddens: [16]
grid:
  num_env_runners: [1, 2]
  num_envs_per_env_runner: [1, 2]
cpus: 2
stop:
  iterations: {iterations}
warmup_iterations: 1
trial_timeout_s: 300
sample_hz: 10
"""


def free_cores(util, trial_id: str, start: float, end: float, cpus: int) -> float:
    """Cores not used by other processes of the machine during [start, end] (per-core minus the trial's)."""
    window = util[(util["trial_id"] == trial_id) & (util["t_s"] >= start) & (util["t_s"] <= end)]
    ticks = max(1, window["t_s"].nunique())
    busy = window[window["kind"] == "core"]["cpu_pct"].sum() / 100 / ticks
    trial = window[window["kind"] == "process"]["cpu_pct"].sum() / 100 / ticks
    return min(float(cpus), max(0.0, cpus - (busy - trial)))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cost-us", type=int, default=4000, help="env cost per step and reset (microseconds)")
    parser.add_argument("--episode-len", type=int, default=16)
    parser.add_argument("--batch", type=int, default=128)
    parser.add_argument("--iterations", type=int, default=6)
    parser.add_argument("--out", type=Path, default=None, help="result folder (default: a temporary one)")
    args = parser.parse_args()

    from rich.console import Console

    from rlbench.analysis.tables import build_tables
    from rlbench.run.sweep import run_sweep
    from rlbench.spec.load import load_spec

    out = args.out or Path(tempfile.mkdtemp(prefix="rlbench-accuracy-"))
    out.mkdir(parents=True, exist_ok=True)
    spec = out / "bench_accuracy.yaml"
    timing = out / "self_timing"
    timing.mkdir(exist_ok=True)
    spec.write_text(
        SPEC.format(
            cost_us=args.cost_us,
            episode_len=args.episode_len,
            batch=args.batch,
            iterations=args.iterations,
            timing=timing,
        )
    )
    load_before = os.getloadavg()
    t = time.perf_counter()
    outcome = run_sweep(load_spec(spec), out / "sweep", console=Console(file=io.StringIO()))
    sweep_s = time.perf_counter() - t
    tables = build_tables(out / "sweep")
    trials, its, util = tables["trials"], tables["iterations"], tables["utilization"]
    steady = its[~its["warmup"]]
    from envs.synthetic import read_self_timing

    own = read_self_timing(timing)
    print(f"sweep: {len(outcome.records)} trials in {sweep_s:.1f} s -> {out / 'sweep'}")
    print(
        f"machine load (1-min average, {os.cpu_count()} cores): {load_before[0]:.2f} before, "
        f"{os.getloadavg()[0]:.2f} after"
    )
    print(
        f"env cost {args.cost_us} us per step and per reset, episode_len {args.episode_len}, "
        f"batch {args.batch}, {args.iterations - 1} steady iterations per trial\n"
    )
    header = (
        f"{'trial':8} {'runners':>7} {'envs/r':>6} {'steps':>6} {'expected_s':>10} {'measured_s':>10} "
        f"{'error':>7} {'vs own':>7} {'sample_s':>8} {'speed-up':>8} {'allowed':>7} {'free':>5}"
    )
    print(header)
    print("-" * len(header))
    base: dict[int, float] = {}
    for _, row in trials.sort_values(["num_envs_per_env_runner", "num_env_runners"]).iterrows():
        if row["status"] != "ok":
            print(f"{row['trial_id']:8} {row['status']}: {row['reason']}")
            continue
        mine = steady[steady["trial_id"] == row["trial_id"]]
        runners = max(1, int(row["num_env_runners"]))
        steps = int(mine["env_steps_sampled"].sum())
        expected_s = (steps + steps / args.episode_len) * args.cost_us / 1e6
        measured_s = float(mine["env_step_s"].sum()) * runners
        every = its[its["trial_id"] == row["trial_id"]]  # the env's own clock counts every iteration
        pids = set(
            util[(util["trial_id"] == row["trial_id"]) & (util["role"] == "env_runner")]["pid"].dropna().astype(int)
        )
        own_s = sum(own[p][0] for p in pids if p in own)
        vs_own = 100 * (float(every["env_step_s"].sum()) * runners / own_s - 1) if own_s else float("nan")
        sample_s = float(mine["sample_s"].median())
        envs = int(row["num_envs_per_env_runner"])
        base.setdefault(envs, sample_s) if runners == 1 else None
        free = free_cores(util, row["trial_id"], mine["t_start_s"].min(), mine["t_end_s"].max(), int(row["cpus"]))
        speedup = base[envs] / sample_s if envs in base else float("nan")
        allowed = min(runners, free) / min(1.0, free) if free > 0 else float("nan")
        print(
            f"{row['trial_id']:8} {runners:7d} {envs:6d} {steps:6d} {expected_s:10.3f} {measured_s:10.3f} "
            f"{100 * (measured_s / expected_s - 1):+6.1f}% {vs_own:+6.1f}% {sample_s:8.3f} {speedup:8.2f} "
            f"{allowed:7.2f} {free:5.2f}"
        )
    print(
        "\nerror: measured env time (all runners) vs (steps + steps/episode_len resets) x cost; "
        "vs own: the same over every iteration vs the env's own clock (only the wrappers around step); "
        "speed-up: median sample_s of 1 runner / this trial's (same envs per runner); "
        "allowed: min(runners, free cores) / min(1, free cores); free: cpus less other processes' load."
    )


if __name__ == "__main__":
    main()
