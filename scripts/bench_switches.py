"""Which of rlbench's own choices changes a workload? Each switched off, side by side with none off.

Runs the grid of ``scripts/bench_vs_tune.py`` (PPO on CartPole-v1, ``num_env_runners`` 0 and 1)
under rlbench only, in rounds: per round one sweep with nothing switched off (the base) and one
per factor, in an order that rotates each round, each a fresh ``python -m rlbench sweep``. A
factor is a name of :mod:`rlbench.run.switches` (affinity, threads, callback, stats, forkserver,
sampler), switched off through ``RLBENCH_SWITCH_OFF``, ``pin_driver`` (switched on), or ``omp1``
(OMP_NUM_THREADS=1 exported, as Ray gives Tune's trial actor). Per factor
and configuration it prints the median ratio factor/base of steady throughput with a 95% bootstrap
interval over the rounds: a factor whose interval excludes 1 changes the workload.

    flock /tmp/rlbench-ray.lock python scripts/bench_switches.py [--rounds 3] [--factors affinity threads ...]

Cheaper than a run against Tune per factor (no Tune side) and every factor meets the same machine
noise within a round. Run it on a quiet machine: the load average is printed beside the figures.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_vs_tune import SPEC, run_rlbench  # noqa: E402

from rlbench.run.switches import SWITCHES  # noqa: E402

#: Not a choice of rlbench's, but what Tune's trial actor has and rlbench's driver has not: Ray sets
#: OMP_NUM_THREADS to the actor's CPUs (1 here), which also sizes numpy's BLAS pool; torch's
#: threads are 1 both ways. ``omp1`` exports it for the whole rlbench sweep (fork server included).
ENV_FACTORS = {"omp1": {"OMP_NUM_THREADS": "1"}}

#: A sweep setting, for the wall time: ``overlap_off`` runs one trial's processes at a time.
SPEC_FACTORS = {"overlap_off": "overlap_trial_start: false\n"}

FACTORS = [*SWITCHES, "pin_driver", *ENV_FACTORS, *SPEC_FACTORS]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--iterations", type=int, default=6)
    parser.add_argument("--warmup", type=int, default=1)
    parser.add_argument("--runners", type=int, nargs="+", default=[0, 1])
    parser.add_argument("--batches", type=int, nargs="+", default=[1000])
    parser.add_argument("--factors", nargs="+", default=FACTORS, choices=FACTORS)
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()

    from rlbench.analysis.stats import interval_text, median_ci, ratio_ci

    root = args.out or Path(tempfile.mkdtemp(prefix="rlbench-switches-"))
    root.mkdir(parents=True, exist_ok=True)
    variants = ["base", *args.factors]
    rates: dict[str, dict[tuple[int, int], list[float]]] = {v: {} for v in variants}
    walls: dict[str, list[float]] = {v: [] for v in variants}
    load_before = os.getloadavg()
    for r in range(args.rounds):
        order = variants[r % len(variants):] + variants[:r % len(variants)]
        for variant in order:
            spec = SPEC.format(env="CartPole-v1", minibatch=250, epochs=2, runners=args.runners, batches=args.batches,
                               iterations=args.iterations, warmup=args.warmup,
                               pin_driver=str(variant == "pin_driver").lower()) + SPEC_FACTORS.get(variant, "")
            env = {"RLBENCH_SWITCH_OFF": variant} if variant in SWITCHES else ENV_FACTORS.get(variant, {})
            got, wall_s = run_rlbench(root / f"round{r}-{variant}", spec, env)
            walls[variant].append(wall_s)
            for key, rate in got.items():
                rates[variant].setdefault(key, []).append(rate)
            print(f"round {r} {variant:10}: {wall_s:5.1f} s  " + "  ".join(
                f"{k[0]}r/{k[1]}: {v:,.0f}" for k, v in sorted(got.items())), flush=True)
    print(f"\nmachine load (1-min average, {os.cpu_count()} cores): {load_before[0]:.2f} before, "
          f"{os.getloadavg()[0]:.2f} after")
    print("factor/base: the ratio of the medians (95% CI resampling each side), and the median of the per-round "
          "ratios (the paired figure)")
    print(f"{'factor':>10} {'runners':>7} {'batch':>6} {'base steps/s':>12} {'factor/base':>11} {'95% CI':>13} "
          f"{'paired':>7} {'95% CI':>13} {'n':>3}")
    for factor in args.factors:
        for key in sorted(rates["base"]):
            c = ratio_ci(rates["base"][key], rates[factor].get(key, []))
            ci = interval_text(c.ci_low, c.ci_high)
            p = median_ci([f / b for f, b in zip(rates[factor].get(key, []), rates["base"][key])])
            pci = interval_text(p.ci_low, p.ci_high)
            print(f"{factor:>10} {key[0]:>7} {key[1]:>6} {statistics.median(rates['base'][key]):>12,.0f} "
                  f"{c.ratio:>11.3f} {ci:>13} {p.median:>7.3f} {pci:>13} {c.n_b:>3}")
    print("sweep wall, median over rounds: " + ", ".join(f"{v} {statistics.median(w):.1f} s" for v, w in walls.items())
          + "; paired factor/base: " + ", ".join(
              f"{v} {statistics.median(a / b for a, b in zip(walls[v], walls['base'])):.3f}" for v in args.factors))
    print(f"runs kept in {root}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
