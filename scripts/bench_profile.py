"""What does profiling cost? py-spy's own CPU and its effect on throughput, profile on vs off.

The same PPO trial (SyntheticEnv, 2 env runners x 1 CPU on 2 cores, nothing reserved for the
driver) runs in pairs, profiling on (``profile_hz``) and off, interleaved (the order alternates per
pair). Prints, per pair, the throughput ratio on/off over the iterations the profile covers (the
steady iterations but the last, in both modes) with its mean, median, spread and a 95% confidence
interval; py-spy's CPU (all its processes, % of one core over the profile window, from the
kernel's rusage of each py-spy), per profiled process, and the samples py-spy could not read; and
the machine's load average before and after. Figures recorded in docs/MEASUREMENT.md.

    flock /tmp/rlbench-ray.lock python scripts/bench_profile.py [--pairs 5] [--hz 100] [--native]
        [--roles driver,learner,env_runner]
"""

from __future__ import annotations

import argparse
import math
import os
import statistics
import tempfile
import time
from pathlib import Path

TRIAL_SPEC = """
name: bench_profile
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
  fcnet_hiddens: [64, 64]
cpus: 2
stop:
  iterations: {iterations}
warmup_iterations: 1
trial_timeout_s: 600
sample_hz: 10
env_ceiling_s: 0
"""


def _ci95(values: list[float]) -> tuple[float, float]:
    from scipy import stats

    if len(values) < 2:
        return (math.nan, math.nan)
    mean, sem = statistics.fmean(values), statistics.stdev(values) / math.sqrt(len(values))
    half = stats.t.ppf(0.975, len(values) - 1) * sem
    return mean - half, mean + half


def _load() -> str:
    return " ".join(f"{v:.2f}" for v in os.getloadavg())


def paired(out: Path, pairs: int, hz: int, native: bool, roles: list[str] | None, runners: int, iterations: int):
    """Run ``pairs`` (on, off) pairs of one trial, alternating the order; returns the tables."""
    from rlbench.analysis.tables import build_tables
    from rlbench.measure.machine import probe_machine
    from rlbench.results.layout import ResultsFolder
    from rlbench.run.trial import TrialLauncher, run_trial
    from rlbench.spec.load import load_spec
    from rlbench.spec.plan import plan_trials, write_plan

    out.mkdir(parents=True, exist_ok=True)
    spec = out.parent / "bench_profile.yaml"
    spec.write_text(TRIAL_SPEC.format(runners=runners, cpus_per_runner=2 / runners, iterations=iterations))
    (plan,) = plan_trials(load_spec(spec), probe_machine())
    if plan.skip_reason:
        raise SystemExit(f"trial cannot run here: {plan.skip_reason}")
    launcher = TrialLauncher()
    warm = launcher.context.Process(target=time.sleep, args=(0,))  # the fork server's imports, once
    warm.start()
    warm.join()
    on = {"profile_hz": hz, "profile_native": native, **({"profile_roles": roles} if roles else {})}
    for i in range(pairs):
        for mode in (("on", "off") if i % 2 == 0 else ("off", "on")):
            p = plan.model_copy(update={"trial_id": f"p{i}{mode}", **(on if mode == "on" else {"profile_hz": 0})})
            record = run_trial(p, write_plan(ResultsFolder(out), p), launcher, None)
            print(f"  pair {i} profile {mode:3}: {record.status}, {record.trial_wall_s:.1f} s, load {_load()}",
                  flush=True)
    return build_tables(out)


def report(out: Path, tables, hz: int, native: bool) -> None:
    from rlbench.results.layout import TrialFolder

    trials = tables["trials"].set_index("trial_id")
    its = tables["iterations"]
    # the iterations a profile covers: steady ones but the last (in both modes, to compare alike)
    last = its.groupby("trial_id")["iteration"].transform("max")
    covered = its[~its["warmup"] & (its["iteration"] < last)].groupby("trial_id")[["env_steps_sampled", "wall_s"]].sum()
    rate = covered["env_steps_sampled"] / covered["wall_s"]
    pairs = sorted(int(t[1:-2]) for t in trials.index if t.endswith("on"))
    ratios = [rate[f"p{i}on"] / rate[f"p{i}off"] for i in pairs]
    cpu = [trials.loc[f"p{i}on", "profile_cpu_pct"] for i in pairs]
    per_process, errors, samples, counts = [], 0, 0, []
    for i in pairs:
        event = TrialFolder(out / "trials" / f"p{i}on").event("profile")
        procs = [p for p in event.get("processes", []) if p.get("status") == "ok"]
        counts.append(len(procs))
        window = (event["t_stop_s"] - event["t_start_s"]) if event.get("t_stop_s") else math.nan
        per_process += [100 * p["cpu_s"] / window for p in procs if p.get("cpu_s") is not None]
        errors += sum(p.get("errors") or 0 for p in procs)
        samples += sum(p.get("samples") or 0 for p in procs)
    statuses = sorted(set(trials["profile_status"]))
    print(f"\nProfiling on vs off ({len(pairs)} pairs, interleaved; py-spy at {hz} Hz"
          f"{', native frames' if native else ', --nonblocking'}; profile status {statuses})")
    print(f"   processes profiled per trial: {min(counts)}-{max(counts)}")
    print(f"   py-spy CPU, all its processes: mean {statistics.fmean(cpu):.1f}% of one core "
          f"(min {min(cpu):.1f}, max {max(cpu):.1f}); per profiled process mean "
          f"{statistics.fmean(per_process):.2f}% (min {min(per_process):.2f}, max {max(per_process):.2f})")
    print(f"   samples written {samples:,}; samples py-spy could not read: {errors:,} "
          f"({100 * errors / max(1, samples + errors):.2f}%)")
    lo, hi = _ci95(ratios)
    print(f"   throughput ratio on/off per pair: {', '.join(f'{r:.3f}' for r in ratios)}")
    print(f"   mean {statistics.fmean(ratios):.3f}, median {statistics.median(ratios):.3f}, "
          f"sd {statistics.stdev(ratios) if len(ratios) > 1 else math.nan:.3f}, 95% CI [{lo:.3f}, {hi:.3f}]")
    on, off = rate[rate.index.str.endswith("on")], rate[rate.index.str.endswith("off")]
    print(f"   env steps/s over the covered iterations: on {', '.join(f'{v:.0f}' for v in on)}; "
          f"off {', '.join(f'{v:.0f}' for v in off)}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=5)
    parser.add_argument("--hz", type=int, default=100)
    parser.add_argument("--native", action="store_true", help="py-spy --native (pauses the targets)")
    parser.add_argument("--roles", default=None, help="comma-separated profile_roles (default: every role)")
    parser.add_argument("--runners", type=int, default=2)
    parser.add_argument("--iterations", type=int, default=10)
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    out = args.out or Path(tempfile.mkdtemp(prefix="rlbench-bench-profile-"))
    roles = args.roles.split(",") if args.roles else None
    print(f"results under {out}; load average before: {_load()} (cores: {os.cpu_count()})")
    print(f"paired trials: PPO, SyntheticEnv 300 us/step, {args.runners} env runners x {2 / args.runners:g} CPU, "
          f"cpus 2, {args.iterations} iterations (1 warm-up); profile_roles {roles or 'all'}", flush=True)
    tables = paired(out / "paired", args.pairs, args.hz, args.native, roles, args.runners, args.iterations)
    report(out / "paired", tables, args.hz, args.native)
    print(f"   load average after: {_load()}")


if __name__ == "__main__":
    main()
