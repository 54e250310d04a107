"""Paired A/B of plain-RLlib setups a spec cannot express: one ``train()`` call per side per round.

A spec's variants pair whole trials seconds apart (``configs/bench_switches.yaml``), which resolves
about 5% on a machine that drifts 5-10% over minutes (docs/MEASUREMENT.md 7). The questions here
need either a finer grain or a setup no rlbench trial has, so each builds its sides itself and calls
them round-robin, the first side rotating each round; the comparison is a variants sweep's
(:func:`rlbench.analysis.change.paired`: ratio of medians and paired ratio, both with 95%
bootstrap intervals, Wilcoxon, and the sentence), every side against the first.

- ``instruments``: what rlbench's in-process instruments cost, resolved to about 1%: one PPO
  algorithm per side in one Ray runtime (``num_env_runners: 0``, so every instrumented call is in
  this process), ``train()`` interleaved. Sides: ``rllib`` (RLlib's own stats class, no callback, as a
  Tune trial has it), ``rllib-again`` (the A/A control: what two identical algorithms differ by here),
  ``mean-only`` (the per-iteration mean stats class rlbench had before, no EMA work per push),
  ``stats`` (rlbench's stats class: the mean plus RLlib's EMA on every push), ``rlbench`` (its stats
  class and its timing callback, as an rlbench trial has it).
- ``env-runner``: what rlbench adds inside an env runner, per env step: one local ``SingleAgentEnvRunner``
  per side in this process, no Ray, their ``sample()`` calls (``--batch`` steps) interleaved, each side's
  CPU per env step (``time.thread_time``). Sides: ``rllib`` (the config a Tune trial's runner gets: no
  seed, RLlib's callbacks and stats class), ``rllib-again`` (A/A), ``rlbench`` (what the trial's
  ``build_config`` gives it: rlbench's stats class, its timing callback, a seed; torch's deterministic mode
  off, as the trial sets it after the build), ``rlbench-deterministic`` (the same with the mode on, as
  RLlib's seeding of a CPU torch leaves it: trials before 2026-11-27), ``callback-off`` and ``stats-off``
  (``rlbench`` less its timing callback, or less its stats class). The mode is process-wide: it is set before
  each call as that side's process has it.
- ``ray-init``: what a private runtime's start costs a trial, as ``rlbench.worker.runtime`` starts it: each
  side a fresh process that imports what the fork server preloads, then ``ray.init``; its wall, the
  process's own CPU inside it, and the CPU of the runtime's processes (Ray's agents, GCS, raylet) by 3 s
  after it. Sides: ``preloaded`` (the fork server's preload, ``ray.dashboard.optional_deps`` included) and
  ``without-probe-deps`` (the preload trials had before 2026-11-27, without it).
- ``driver-vs-actor``: does an algorithm run slower in a Ray driver (rlbench's trial) than in a
  1-CPU actor (Tune's trial)? The same config, rlbench's instruments and the driver's threads
  (torch and every BLAS/OpenMP pool at 1) both ways, in one runtime of 4 logical CPUs.
- ``runtime-age``: does a trial run slower in a Ray runtime started just before it (rlbench) than in
  one that already ran a trial (a Tune grid's later trials)? Plain RLlib, each side a fresh process:
  ``fresh`` trains one algorithm, ``used`` first trains and stops one in the same runtime.

    flock /tmp/rlbench-ray.lock python scripts/bench_inprocess.py instruments [--rounds 40] [--batch 500]
    python scripts/bench_inprocess.py env-runner [--rounds 40] [--batch 500]
    flock /tmp/rlbench-ray.lock python scripts/bench_inprocess.py ray-init [--rounds 5]
    flock /tmp/rlbench-ray.lock python scripts/bench_inprocess.py driver-vs-actor [--rounds 40] [--batch 1000]
    flock /tmp/rlbench-ray.lock python scripts/bench_inprocess.py runtime-age [--rounds 5] [--batch 500]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace

REPO = Path(__file__).resolve().parents[1]


def interleave(sides: dict[str, Callable[[], float]], rounds: int, warmup: int) -> dict[str, dict[int, float]]:
    """Call every side once per round, round r starting at side r mod n; side -> round -> its rate
    (the ``warmup`` leading rounds left out)."""
    names = list(sides)
    rates: dict[str, dict[int, float]] = {n: {} for n in names}
    for r in range(warmup + rounds):
        for name in names[r % len(names) :] + names[: r % len(names)]:
            rate = sides[name]()
            if r >= warmup:
                rates[name][r - warmup] = rate
                print(f"round {r - warmup} {name:12}: {rate:,.0f} env steps/s", flush=True)
    return rates


def report(title: str, rates: dict[str, dict[int, float]], load_before: float) -> None:
    """Each side's median and, against the first side, the figures a variants report gives."""
    from rlbench.analysis.change import paired
    from rlbench.analysis.evidence import change_sentence
    from rlbench.analysis.stats import interval_text

    print(f"\n{title}; load (1-min, {os.cpu_count()} cores) {load_before:.2f} before, {os.getloadavg()[0]:.2f} after")
    reference, *others = rates
    print(f"{'side':<16} {'env steps/s':>12} {'/ ' + reference:>10} {'95% CI (paired)':>16}")
    print(f"{reference:<16} {statistics.median(rates[reference].values()):>12,.0f}")
    verdicts = []
    for name in others:
        c = paired(rates[reference], rates[name])
        print(
            f"{name:<16} {statistics.median(rates[name].values()):>12,.0f} {c.paired_ratio:>10.3f} "
            f"{interval_text(c.paired_ci_low, c.paired_ci_high):>16}"
        )
        verdicts.append(f"  {change_sentence(reference, name, c)}")
    print("\n".join(verdicts))


def ppo_config(batch: int, runners: int = 0):
    """The trial config these measurements train: bench_vs_tune's PPO on CartPole-v1."""
    from rlbench.spec.model import TrialConfig

    return TrialConfig.model_validate(
        {
            "environment": {"env": "CartPole-v1"},
            "env_runners": {"num_env_runners": runners},
            "training": {"train_batch_size_per_learner": batch, "minibatch_size": 250, "num_epochs": 2},
            "rl_module": {"fcnet_hiddens": [64, 64]},
        }
    )


def _rate(algo) -> float:
    t = time.perf_counter()
    result = algo.train()
    return result["env_runners"]["num_env_steps_sampled"] / (time.perf_counter() - t)


def _mean_only_stats() -> dict:
    """The stats lookup rlbench used before: a plain mean, without RLlib's EMA work per push."""
    from ray.rllib.utils.metrics.metrics_logger import DEFAULT_STATS_CLS_LOOKUP
    from ray.rllib.utils.metrics.stats.mean import MeanStats

    class MeanOnlyStats(MeanStats):
        stats_cls_identifier = "ema"

        def __init__(self, ema_coeff: float | None = None, *args, **kwargs):
            super().__init__(*args, **kwargs)

    return {**DEFAULT_STATS_CLS_LOOKUP, "ema": MeanOnlyStats}


def instruments(args: argparse.Namespace) -> None:
    import ray
    import torch

    from rlbench.adapters.rllib.config import build_config, quiet_logging

    without = {
        "rllib": {"stats", "callback"},
        "rllib-again": {"stats", "callback"},
        "mean-only": {"stats", "callback"},
        "stats": {"callback"},
        "rlbench": set(),
    }
    quiet_logging()
    torch.set_num_threads(1)  # the driver's threads in both a Tune trial actor and an rlbench trial here
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, logging_level="ERROR")
    load_before = os.getloadavg()[0]
    try:
        algos = {}
        for side in args.sides:
            config = build_config(ppo_config(args.batch), seed=1, without=frozenset(without[side]))
            if side == "mean-only":
                config = config.reporting(custom_stats_cls_lookup=_mean_only_stats())
            algos[side] = config.build_algo()
        rates = interleave({s: (lambda a=a: _rate(a)) for s, a in algos.items()}, args.rounds, args.warmup)
        for algo in algos.values():
            algo.stop()
    finally:
        ray.shutdown()
    report(
        f"PPO CartPole-v1, 0 env runners, batch {args.batch}, {args.rounds} interleaved iterations per side",
        rates,
        load_before,
    )


def env_runner(args: argparse.Namespace) -> None:
    import torch
    from ray.rllib.algorithms.ppo import PPOConfig
    from ray.rllib.env.single_agent_env_runner import SingleAgentEnvRunner

    from rlbench.adapters.rllib.config import build_config, quiet_logging

    quiet_logging()
    torch.set_num_threads(1)  # an env runner's torch threads, under Tune (OMP_NUM_THREADS=1) and rlbench alike
    tune = (
        PPOConfig()
        .environment("CartPole-v1")
        .env_runners(num_env_runners=0)
        .training(train_batch_size_per_learner=args.batch, minibatch_size=250, num_epochs=2)
        .rl_module(model_config={"fcnet_hiddens": [64, 64]})
    )
    ours = build_config(ppo_config(args.batch), seed=1)
    configs = {
        "rllib": (tune, False),
        "rllib-again": (tune, False),
        "rlbench": (ours, False),
        "rlbench-deterministic": (ours, True),
        "callback-off": (build_config(ppo_config(args.batch), seed=1, without=frozenset({"callback"})), False),
        "stats-off": (build_config(ppo_config(args.batch), seed=1, without=frozenset({"stats"})), False),
    }
    load_before = os.getloadavg()[0]
    runners = {}
    for side in args.sides:  # RLlib's seeding turns torch's deterministic mode on as a runner is made
        config, deterministic = configs[side]
        runners[side] = (SingleAgentEnvRunner(config=config), deterministic)

    def sample(runner, deterministic: bool) -> float:
        torch.use_deterministic_algorithms(deterministic)
        cpu = time.thread_time()
        episodes = runner.sample(num_timesteps=args.batch)
        cpu = time.thread_time() - cpu
        runner.get_metrics()  # reduced once a sample() call, as the driver asks every iteration
        return sum(len(e) for e in episodes) / cpu  # env steps per CPU second: higher is cheaper

    rates = interleave({s: (lambda r=r, d=d: sample(r, d)) for s, (r, d) in runners.items()}, args.rounds, args.warmup)
    report(
        f"one CartPole env runner's sample() of {args.batch} steps, {args.rounds} rounds; env steps per CPU second "
        "of the sampling thread",
        rates,
        load_before,
    )


def driver_vs_actor(args: argparse.Namespace) -> None:
    import ray
    import torch
    from threadpoolctl import threadpool_limits

    from rlbench.adapters.rllib.config import build_config, quiet_logging

    quiet_logging()
    torch.set_num_threads(1)
    threadpool_limits(limits=1)
    ray.init(num_cpus=4, include_dashboard=False, log_to_driver=False, logging_level="ERROR")
    load_before = os.getloadavg()[0]
    try:
        algo_config = build_config(ppo_config(args.batch, args.runners), seed=1)

        @ray.remote(num_cpus=1)
        class Trial:
            def __init__(self, algo_config):
                import torch

                torch.set_num_threads(1)  # Ray exported OMP_NUM_THREADS=1 to this actor already
                self.algo = algo_config.build_algo()

            def train(self) -> float:
                return _rate(self.algo)

        actor = Trial.remote(algo_config)
        algo = algo_config.build_algo()
        rates = interleave(
            {"actor": lambda: ray.get(actor.train.remote()), "driver": lambda: _rate(algo)}, args.rounds, args.warmup
        )
        algo.stop()
    finally:
        ray.shutdown()
    report(
        f"PPO CartPole-v1, {args.runners} env runner(s), batch {args.batch}, {args.rounds} rounds", rates, load_before
    )


#: One side of ``runtime-age``, in a fresh process: plain RLlib, nothing of rlbench or Tune.
RUNTIME_AGE_PROGRAM = r"""
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


def runtime_age(args: argparse.Namespace) -> None:
    def run(mode: str) -> float:
        payload = json.dumps(
            {
                "mode": mode,
                "runners": args.runners,
                "batch": args.batch,
                "iterations": args.iterations,
                "warmup": args.warmup,
            }
        )
        done = subprocess.run(
            [sys.executable, "-c", RUNTIME_AGE_PROGRAM, payload], capture_output=True, text=True, cwd=REPO
        )
        lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
        if done.returncode != 0 or not lines:
            raise SystemExit(f"{mode} run failed ({done.returncode}):\n{done.stderr[-3000:]}")
        return json.loads(lines[-1])["rate"]

    load_before = os.getloadavg()[0]
    rates = interleave({"fresh": lambda: run("fresh"), "used": lambda: run("used")}, args.rounds, 0)
    report(
        f"{args.runners} runner(s), batch {args.batch}, median of {args.iterations - args.warmup} iterations a run, "
        f"{args.rounds} rounds",
        rates,
        load_before,
    )


#: One side of ``ray-init``, in a fresh process: the fork server's preload (argv[2]: with Ray's dashboard probe's
#: packages or not), then ``ray.init`` as a trial calls it.
RAY_INIT_PROGRAM = r"""
import json, sys, time, psutil
preload = json.loads(sys.argv[1])
for name in preload:
    try:
        __import__(name)
    except ImportError:
        pass
import ray
kwargs = json.loads(sys.argv[2])
me = psutil.Process()
cpu, t = time.process_time(), time.perf_counter()
ray.init(**kwargs)
init_s, driver_cpu_s = time.perf_counter() - t, time.process_time() - cpu
time.sleep(3)
runtime_cpu_s = 0.0
for p in me.children(recursive=True):
    try:
        times = p.cpu_times()
        runtime_cpu_s += times.user + times.system
    except psutil.Error:
        pass
ray.shutdown()
print(json.dumps({"init_s": init_s, "driver_cpu_s": driver_cpu_s, "runtime_cpu_s": runtime_cpu_s}))
"""


def ray_init(args: argparse.Namespace) -> None:
    from rlbench.adapters import get_adapter
    from rlbench.worker.runtime import ray_init_kwargs

    preload = list(get_adapter("rllib").preload_modules)
    probe = "ray.dashboard.optional_deps"
    sides = {"preloaded": preload, "without-probe-deps": [m for m in preload if m != probe]}
    # a 1-runner trial's local runtime on 2 cores: one CPU for Ray after the driver's
    kwargs = ray_init_kwargs(SimpleNamespace(ray_address=None, ray_cpus=1, gpus=0, include_dashboard=False))
    load_before = os.getloadavg()[0]
    got: dict[str, list[dict[str, float]]] = {name: [] for name in sides}
    for r in range(args.rounds):
        for name in list(sides) if r % 2 == 0 else list(sides)[::-1]:
            done = subprocess.run(
                [sys.executable, "-c", RAY_INIT_PROGRAM, json.dumps(sides[name]), json.dumps(kwargs)],
                capture_output=True,
                text=True,
                cwd=REPO,
            )
            lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
            if done.returncode != 0 or not lines:
                raise SystemExit(f"{name} failed ({done.returncode}):\n{done.stderr[-3000:]}")
            got[name].append(json.loads(lines[-1]))
            print(f"round {r} {name:18}: " + ", ".join(f"{k} {v:.2f}" for k, v in got[name][-1].items()), flush=True)
    print(
        f"\nmedians over {args.rounds} rounds (seconds); load (1-min, {os.cpu_count()} cores) "
        f"{load_before:.2f} before, "
        f"{os.getloadavg()[0]:.2f} after; {probe} importable: {_importable(probe)}"
    )
    for name, rows in got.items():
        print(f"  {name:18} " + ", ".join(f"{k} {statistics.median(row[k] for row in rows):.2f}" for k in rows[0]))


def _importable(module: str) -> bool:
    try:
        __import__(module)
    except ImportError:
        return False
    return True


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="question", required=True)
    sides = ["rllib", "rllib-again", "mean-only", "stats", "rlbench"]
    p = sub.add_parser("instruments", help="rlbench's stats class and timing callback against RLlib's own")
    p.add_argument("--rounds", type=int, default=40, help="interleaved iterations per side (default 40)")
    p.add_argument("--warmup", type=int, default=3, help="leading rounds left out (default 3)")
    p.add_argument("--batch", type=int, default=500, help="train_batch_size_per_learner (default 500)")
    p.add_argument("--sides", nargs="+", default=sides, choices=sides, help="the first is the reference")
    runner_sides = ["rllib", "rllib-again", "rlbench", "rlbench-deterministic", "callback-off", "stats-off"]
    p = sub.add_parser("env-runner", help="an env runner as rlbench makes it against the one a Tune trial has")
    p.add_argument("--rounds", type=int, default=40, help="interleaved sample() calls per side (default 40)")
    p.add_argument("--warmup", type=int, default=3, help="leading rounds left out (default 3)")
    p.add_argument("--batch", type=int, default=500, help="env steps a sample() call (default 500)")
    p.add_argument("--sides", nargs="+", default=runner_sides, choices=runner_sides, help="the first is the reference")
    p = sub.add_parser(
        "ray-init", help="a private runtime's start, with the fork server's preload and without its probe"
    )
    p.add_argument("--rounds", type=int, default=5)
    p = sub.add_parser("driver-vs-actor", help="the same algorithm in the Ray driver and in a 1-CPU actor")
    p.add_argument("--rounds", type=int, default=40)
    p.add_argument("--warmup", type=int, default=3)
    p.add_argument("--batch", type=int, default=1000, help="train_batch_size_per_learner (default 1000)")
    p.add_argument("--runners", type=int, default=1, help="num_env_runners (default 1)")
    p = sub.add_parser("runtime-age", help="a trial in a fresh Ray runtime against one that already ran a trial")
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--runners", type=int, default=1)
    p.add_argument("--batch", type=int, default=500)
    p.add_argument("--iterations", type=int, default=24)
    p.add_argument("--warmup", type=int, default=2, help="leading iterations of a run left out (default 2)")
    args = parser.parse_args()
    questions = {
        "instruments": instruments,
        "env-runner": env_runner,
        "ray-init": ray_init,
        "driver-vs-actor": driver_vs_actor,
        "runtime-age": runtime_age,
    }
    questions[args.question](args)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
