"""Does an algorithm run slower in a Ray driver (rlbench's trial) than in an actor (a Tune trial)?

Builds the same PPO configuration twice in one Ray runtime, with rlbench's instruments and the
driver's threads (torch and every BLAS/OpenMP pool at 1, as a trial gets them): once in this
process, which is the Ray driver, and once inside a 1-CPU actor, as Tune's trial actor holds it.
Their ``train()`` calls alternate, the first of each pair alternating too, so both meet the same
machine moments; prints each one's median env steps/s and the paired ratio driver/actor with a 95%
bootstrap interval. The runtime has 4 logical CPUs so both algorithms' env runners fit (only one
trains at a time).

    flock /tmp/rlbench-ray.lock python scripts/bench_driver_vs_actor.py [--rounds 40] [--batch 1000] [--runners 1]
"""

from __future__ import annotations

import argparse
import statistics
import time


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=40)
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--batch", type=int, default=1000, help="train_batch_size_per_learner (default 1000)")
    parser.add_argument("--runners", type=int, default=1, help="num_env_runners (default 1)")
    args = parser.parse_args()

    import ray
    import torch
    from threadpoolctl import threadpool_limits

    from bench_instruments import ppo_config

    from rlbench.adapters.rllib.config import build_config, quiet_logging
    from rlbench.analysis.stats import interval_text, median_ci

    quiet_logging()
    torch.set_num_threads(1)
    threadpool_limits(limits=1)
    config = ppo_config(args.batch, args.runners)
    ray.init(num_cpus=4, include_dashboard=False, log_to_driver=False, logging_level="ERROR")
    try:
        algo_config = build_config(config, seed=1)

        @ray.remote(num_cpus=1)
        class Trial:
            def __init__(self, algo_config):
                import torch

                torch.set_num_threads(1)  # Ray exported OMP_NUM_THREADS=1 to this actor already
                self.algo = algo_config.build_algo()

            def train(self) -> float:
                t = time.perf_counter()
                result = self.algo.train()
                return result["env_runners"]["num_env_steps_sampled"] / (time.perf_counter() - t)

        actor = Trial.remote(algo_config)
        algo = algo_config.build_algo()

        def in_driver() -> float:
            t = time.perf_counter()
            result = algo.train()
            return result["env_runners"]["num_env_steps_sampled"] / (time.perf_counter() - t)

        rates: dict[str, list[float]] = {"driver": [], "actor": []}
        for r in range(args.warmup + args.rounds):
            for side in (("driver", "actor") if r % 2 == 0 else ("actor", "driver")):
                rate = in_driver() if side == "driver" else ray.get(actor.train.remote())
                if r >= args.warmup:
                    rates[side].append(rate)
        algo.stop()
    finally:
        ray.shutdown()
    paired = median_ci([d / a for d, a in zip(rates["driver"], rates["actor"])])
    print(f"PPO CartPole-v1, {args.runners} env runner(s), batch {args.batch}, {args.rounds} rounds: "
          f"driver {statistics.median(rates['driver']):,.0f} env steps/s, actor {statistics.median(rates['actor']):,.0f}; "
          f"driver/actor {paired.median:.3f} (95% CI {interval_text(paired.ci_low, paired.ci_high)}, paired per round)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
