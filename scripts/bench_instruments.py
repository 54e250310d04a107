"""What rlbench's in-process instruments cost a trial, resolved to about 1%: interleaved in one process.

A sweep against Tune (``scripts/bench_vs_tune.py``) or one factor per sweep
(``scripts/bench_switches.py``) meets this machine's drift between runs, 5-10% on a shared 2-core
VM. The instruments rlbench puts inside RLlib (its stats class and its timing callback) can be
measured without that drift: this script builds one PPO algorithm per variant in one Ray runtime
(``num_env_runners: 0``, so the driver samples and learns: every instrumented call is in this
process) and calls their ``train()`` round-robin, the order rotating each round, so every variant
meets the same machine moments. Variants:

- ``rllib``: RLlib's own config (its EMA stats class, no callback), as a trial under Tune has it;
- ``rllib-again``: the same, a second instance: the A/A control, whose ratio shows what two
  identical algorithms differ by in this setup (the floor of what the others can show);
- ``mean-only``: the per-iteration mean stats class rlbench had before (no EMA work per push);
- ``stats``: rlbench's stats class (the mean, plus RLlib's own EMA on every push);
- ``rlbench``: rlbench's stats class and its timing callback, as a trial under rlbench has it.

Per variant it prints the median env steps per second of an iteration and the paired ratio to
``rllib`` (the median of the per-round ratios, with a 95% bootstrap interval).

    flock /tmp/rlbench-ray.lock python scripts/bench_instruments.py [--rounds 40] [--batch 500]
"""

from __future__ import annotations

import argparse
import os
import statistics
import time


def _mean_only_stats() -> dict:
    """The stats lookup rlbench used before: a plain mean, without RLlib's EMA work per push."""
    from ray.rllib.utils.metrics.metrics_logger import DEFAULT_STATS_CLS_LOOKUP
    from ray.rllib.utils.metrics.stats.mean import MeanStats

    class MeanOnlyStats(MeanStats):
        stats_cls_identifier = "ema"

        def __init__(self, ema_coeff: float | None = None, *args, **kwargs):
            super().__init__(*args, **kwargs)

    return {**DEFAULT_STATS_CLS_LOOKUP, "ema": MeanOnlyStats}


def ppo_config(batch: int, runners: int = 0):
    """The trial config these benchmarks train: bench_vs_tune's PPO on CartPole-v1."""
    from rlbench.spec.model import TrialConfig

    return TrialConfig.model_validate({
        "environment": {"env": "CartPole-v1"}, "env_runners": {"num_env_runners": runners},
        "training": {"train_batch_size_per_learner": batch, "minibatch_size": 250, "num_epochs": 2},
        "rl_module": {"fcnet_hiddens": [64, 64]}})


def build(variant: str, batch: int):
    from rlbench.adapters.rllib.config import build_config

    config = ppo_config(batch)
    without = {"rllib": {"stats", "callback"}, "rllib-again": {"stats", "callback"}, "mean-only": {"stats", "callback"}, "stats": {"callback"},
               "rlbench": set()}[variant]
    algo_config = build_config(config, seed=1, without=frozenset(without))
    if variant == "mean-only":
        algo_config = algo_config.reporting(custom_stats_cls_lookup=_mean_only_stats())
    return algo_config.build_algo()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=40, help="interleaved iterations per variant (default 40)")
    parser.add_argument("--warmup", type=int, default=3, help="leading iterations per variant left out (default 3)")
    parser.add_argument("--batch", type=int, default=500, help="train_batch_size_per_learner (default 500)")
    variants = ["rllib", "rllib-again", "mean-only", "stats", "rlbench"]
    parser.add_argument("--variants", nargs="+", default=variants, choices=variants)
    args = parser.parse_args()

    import ray
    import torch

    from rlbench.adapters.rllib.config import quiet_logging
    from rlbench.analysis.stats import interval_text, median_ci

    quiet_logging()
    torch.set_num_threads(1)  # the driver's threads in both a Tune trial actor and an rlbench trial here
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, logging_level="ERROR")
    try:
        algos = {v: build(v, args.batch) for v in args.variants}
        rates: dict[str, list[float]] = {v: [] for v in args.variants}
        load_before = os.getloadavg()[0]
        for r in range(args.warmup + args.rounds):
            order = args.variants[r % len(args.variants):] + args.variants[:r % len(args.variants)]
            for v in order:
                t = time.perf_counter()
                result = algos[v].train()
                wall_s = time.perf_counter() - t
                if r >= args.warmup:
                    rates[v].append(result["env_runners"]["num_env_steps_sampled"] / wall_s)
        for algo in algos.values():
            algo.stop()
    finally:
        ray.shutdown()
    print(f"PPO CartPole-v1, 0 env runners, batch {args.batch}, {args.rounds} interleaved iterations per variant; "
          f"load (1-min, {os.cpu_count()} cores) {load_before:.2f} before, {os.getloadavg()[0]:.2f} after")
    print(f"{'variant':<12} {'env steps/s':>12} {'/ rllib':>8}  95% CI (paired, per round)")
    for v in args.variants:
        ratio = median_ci([x / b for x, b in zip(rates[v], rates["rllib"])]) if "rllib" in rates else None
        ci = interval_text(ratio.ci_low, ratio.ci_high) if ratio else "-"
        print(f"{v:<12} {statistics.median(rates[v]):>12,.0f} {ratio.median if ratio else float('nan'):>8.3f}  {ci}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
