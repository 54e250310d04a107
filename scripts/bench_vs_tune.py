"""Fidelity: does a configuration run as fast under rlbench as under Ray Tune (or a plain loop), and does a sweep take
as long?

Runs one grid of PPO configurations (CartPole-v1 by default: ``num_env_runners`` 0 and 1 x two
batch sizes) both ways, in rounds that alternate which goes first, each in a fresh process as a
user would start it:

- rlbench: ``python -m rlbench sweep SPEC --out DIR`` (one repeat of the grid per round);
- Tune: a fresh Python process that runs ``tune.Tuner`` over the same grid
  (``tune.grid_search``, one trial at a time, the same PPO settings, no rlbench code), stopping each
  trial after the same number of iterations;
- or, with ``--against loop``, a hand-written loop instead of Tune: one fresh process that, per
  configuration, starts Ray, builds the algorithm, calls ``train()`` and shuts Ray down (nothing of
  rlbench or Tune; normal priority, the libraries' own threads). Its wall against the rlbench
  sweep's is the harness's whole cost; the rlbench sweep's breakdown says where it went.

The pairing and the statistics are a variants sweep's (:func:`rlbench.analysis.change.paired`,
the other side the reference): this comparison cannot be a spec, since one side is not rlbench.

Throughput of a trial is, both ways, the median over its steady-state iterations (the first
``--warmup`` left out) of env steps sampled / the iteration's wall seconds (rlbench:
``env_steps_per_s``; Tune: ``env_runners/num_env_steps_sampled / time_this_iter_s``; the loop:
the same over ``train()``'s wall). Per configuration it prints the ratio of medians rlbench/Tune
and the paired ratio, each with a 95% bootstrap interval over the rounds, the Wilcoxon p-value
and the verdict a variants report would give, and the two wall times of every round.
``--pair configuration`` runs one configuration at a time each way instead of the whole grid, so
the two sides of a pair run about 20 s apart rather than a grid's minute or more: this machine
drifts by 5-10% over minutes (docs/MEASUREMENT.md 7), and a shorter pair meets less of it. Each
run prints the host's steal over it (``/proc/stat``: CPU time the hypervisor gave to other guests).

    flock /tmp/rlbench-ray.lock python scripts/bench_vs_tune.py [--rounds 3] [--iterations 6] [--out DIR]

``--switch-off NAME`` switches one of rlbench's own choices off in the rlbench runs (the spec key
``switch_off``: affinity, threads, callback, stats, forkserver, sampler, niceness), and
``--pin-driver`` turns ``pin_driver`` on. Which choice changes the workload is found without Tune
by ``configs/bench_switches.yaml`` (each choice a variant); here a choice's effect is seen against
Tune itself (docs/MEASUREMENT.md, "Fidelity"). Run it on a quiet machine: the machine's load
average is printed beside the figures.

``--busy N`` runs both sides on a busy machine, as another user's jobs would make it: N processes
at the bench's own niceness, each in a session of its own and busy ``--busy-duty`` of every 20 ms
with a CPU-bound loop, started before each side and stopped after it. Their own sessions matter:
with the kernel's autogroup scheduling (``/proc/sys/kernel/sched_autogroup_enabled``) each
session shares the CPU as one group, and a busy process in the bench's session would share the
Tune program's group (Tune's trial then runs at Ray's worker niceness, 15, against it) but not
rlbench's trial's, which is a session of its own.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

SPEC = """\
name: vs_tune
environment:
  env: {env}
env_runners: {{num_cpus_per_env_runner: 1}}
resources: {{num_cpus_for_main_process: 1, pin_driver: {pin_driver}}}
switch_off: {switch_off}
training: {{minibatch_size: {minibatch}, num_epochs: {epochs}}}
rl_module: {{fcnet_hiddens: [64, 64]}}
grid:
  num_env_runners: {runners}
  train_batch_size_per_learner: {batches}
stop: {{iterations: {iterations}}}
warmup_iterations: {warmup}
trial_timeout_s: 600
"""

#: The Tune side: the same PPO settings through tune.Tuner, one trial at a time, nothing of rlbench.
TUNE_PROGRAM = r"""
import json, sys, time, logging, resource
args = json.loads(sys.argv[1])
t0 = time.perf_counter()
import ray
from ray import tune
from ray.rllib.algorithms.ppo import PPOConfig
logging.getLogger("ray").setLevel(logging.ERROR)
config = (PPOConfig()
          .environment(args["env"])
          .env_runners(num_env_runners=tune.grid_search(args["runners"]), num_cpus_per_env_runner=1)
          .learners(num_learners=0)
          .resources(num_cpus_for_main_process=1)
          .training(train_batch_size_per_learner=tune.grid_search(args["batches"]),
                    minibatch_size=args["minibatch"], num_epochs=args["epochs"])
          .rl_module(model_config={"fcnet_hiddens": [64, 64]}))
ray.init(include_dashboard=False, log_to_driver=False, logging_level="ERROR")
rows = []
class Keep(tune.Callback):
    def on_trial_result(self, iteration, trials, trial, result, **info):
        c = trial.config
        rows.append({"runners": c["num_env_runners"],
                     "batch": c.get("train_batch_size_per_learner", c.get("_train_batch_size_per_learner")),
                     "iteration": result["training_iteration"],
                     "steps": result["env_runners"]["num_env_steps_sampled"],
                     "time_this_iter_s": result["time_this_iter_s"]})
cpu0 = resource.getrusage(resource.RUSAGE_SELF)
fit0 = time.perf_counter()
tune.Tuner("PPO", param_space=config,
           tune_config=tune.TuneConfig(max_concurrent_trials=1),
           run_config=tune.RunConfig(stop={"training_iteration": args["iterations"]}, verbose=0,
                                     callbacks=[Keep()], storage_path=args["storage"])).fit()
fit_s = time.perf_counter() - fit0
cpu1 = resource.getrusage(resource.RUSAGE_SELF)
ray.shutdown()
print(json.dumps({"rows": rows, "wall_s": time.perf_counter() - t0, "fit_s": fit_s,
                  "controller_cpu_s": cpu1.ru_utime + cpu1.ru_stime - cpu0.ru_utime - cpu0.ru_stime}))
"""


#: The loop side (``--against loop``): the same PPO settings, Ray started and stopped per configuration,
#: ``train()`` timed by hand, in one process; rows as the Tune side gives them.
LOOP_PROGRAM = r"""
import json, sys, time, logging, itertools
args = json.loads(sys.argv[1])
t0 = time.perf_counter()
import ray
from ray.rllib.algorithms.ppo import PPOConfig
logging.getLogger("ray").setLevel(logging.ERROR)
rows = []
fit0 = time.perf_counter()
for runners, batch in itertools.product(args["runners"], args["batches"]):
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, logging_level="ERROR")
    algo = (PPOConfig().environment(args["env"])
            .env_runners(num_env_runners=runners, num_cpus_per_env_runner=1)
            .learners(num_learners=0).resources(num_cpus_for_main_process=1)
            .training(train_batch_size_per_learner=batch, minibatch_size=args["minibatch"], num_epochs=args["epochs"])
            .rl_module(model_config={"fcnet_hiddens": [64, 64]})).build_algo()
    for i in range(args["iterations"]):
        t = time.perf_counter()
        result = algo.train()
        rows.append(
            {
                "runners": runners,
                "batch": batch,
                "iteration": i + 1,
                "time_this_iter_s": time.perf_counter() - t,
                "steps": result["env_runners"]["num_env_steps_sampled"],
            }
        )
    algo.stop()
    ray.shutdown()
print(json.dumps({"rows": rows, "wall_s": time.perf_counter() - t0, "fit_s": time.perf_counter() - fit0}))
"""


def run_rlbench(out: Path, spec_text: str) -> tuple[dict[tuple[int, int], float], float]:
    """One rlbench sweep of the grid; (runners, batch) -> steady throughput, and the sweep's wall seconds."""
    import pandas as pd

    spec = out.with_suffix(".yaml")
    spec.write_text(spec_text)
    t = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "rlbench", "sweep", str(spec), "--out", str(out)],
        cwd=REPO,
        capture_output=True,
        text=True,
    )
    wall_s = time.perf_counter() - t
    if done.returncode != 0:
        raise SystemExit(f"rlbench sweep failed ({done.returncode}):\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}")
    trials = pd.read_parquet(out / "trials.parquet")
    return (
        {
            (int(r.num_env_runners), int(r.train_batch_size_per_learner)): float(r.env_steps_per_s)
            for r in trials.itertuples()
        },
        wall_s,
    )


def sweep_breakdown(out: Path, wall_s: float) -> dict[str, float]:
    """Where an rlbench sweep's wall time went (seconds): before the first trial (Ray token, machine
    probe, env ceilings); each phase summed over the trials (process start, ``ray.init``, build, which
    includes a gated trial's wait for the previous one's shutdown, training, shutdown, the sweep's
    work after the trial process ended); the trials' span from the first launch to the last exit
    (less than the phases' sum where starts overlapped shutdowns); the rest (imports, tables, report)."""
    manifest = json.loads((out / "manifest.json").read_text())
    records = [json.loads(p.read_text()) for p in (out / "trials").glob("*/record.json")]
    parts = dict.fromkeys(("process start", "ray.init", "build", "train", "shutdown", "after exit"), 0.0)
    for record in records:
        events = {}
        for line in (out / "trials" / record["trial_id"] / "events.jsonl").read_text().splitlines():
            e = json.loads(line)
            events.setdefault(e["event"], e)
            if e["event"] == "iteration":
                events["last_iteration"] = e
        parts["process start"] += events["start"]["t_s"]
        parts["ray.init"] += events["ray_init"]["t_s"] - events["start"]["t_s"]
        parts["build"] += events["build"]["t_s"] - events["ray_init"]["t_s"]
        parts["train"] += events["last_iteration"]["t_s"] - events["build"]["t_s"]
        parts["shutdown"] += events["end"]["t_s"] - events["last_iteration"]["t_s"]
        parts["after exit"] += record["trial_wall_s"] - events["end"]["t_s"]
    import datetime as dt

    started = dt.datetime.fromisoformat(manifest["started_at"]).timestamp()
    before = min(r["started_epoch"] for r in records) - started
    # trials overlap (a trial starts while the previous one shuts down): their span, not their sum
    in_trials = max(r["started_epoch"] + r["trial_wall_s"] for r in records) - min(r["started_epoch"] for r in records)
    return {
        "before trials": before,
        **parts,
        "trials' span": in_trials,
        "imports, tables, report": wall_s - before - in_trials,
    }


def run_other(
    out: Path, args: argparse.Namespace, runners: list[int], batches: list[int]
) -> tuple[dict[tuple[int, int], float], float]:
    """One run of the grid by Tune (or the loop) in a fresh process; (runners, batch) -> steady throughput,
    and its wall seconds."""
    payload = json.dumps(
        {
            "env": args.env,
            "runners": runners,
            "batches": batches,
            "minibatch": args.minibatch,
            "epochs": args.epochs,
            "iterations": args.iterations,
            "storage": str(out),
        }
    )
    program = TUNE_PROGRAM if args.against == "tune" else LOOP_PROGRAM
    t = time.perf_counter()
    done = subprocess.run([sys.executable, "-c", program, payload], cwd=out, capture_output=True, text=True)
    wall_s = time.perf_counter() - t
    lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
    if done.returncode != 0 or not lines:
        raise SystemExit(
            f"{args.against} run failed ({done.returncode}):\n{done.stdout[-2000:]}\n{done.stderr[-3000:]}"
        )
    rates: dict[tuple[int, int], list[float]] = {}
    got = json.loads(lines[-1])
    if "controller_cpu_s" in got:
        print(
            f"  Tune's controller (the process running Tuner.fit) used {got['controller_cpu_s']:.1f} CPU s in "
            f"{got['fit_s']:.1f} s of fit ({got['controller_cpu_s'] / got['fit_s']:.0%} of a core)",
            flush=True,
        )
    for row in got["rows"]:
        if row["iteration"] > args.warmup and row["time_this_iter_s"] > 0:
            rates.setdefault((row["runners"], row["batch"]), []).append(row["steps"] / row["time_this_iter_s"])
    return {k: statistics.median(v) for k, v in rates.items()}, wall_s


#: A busy process for ``--busy``: CPU-bound for ``duty`` of every 20 ms period, asleep the rest.
BUSY_PROGRAM = r"""
import sys, time
busy_s = 0.02 * float(sys.argv[1])
while True:
    end = time.perf_counter() + busy_s
    while time.perf_counter() < end:
        pass
    time.sleep(0.02 - busy_s)
"""


class Busy:
    """``n`` busy processes while the block runs (none for 0)."""

    def __init__(self, n: int, duty: float):
        self.n, self.duty, self.procs = n, duty, []

    def __enter__(self) -> Busy:
        self.procs = [
            subprocess.Popen([sys.executable, "-c", BUSY_PROGRAM, str(self.duty)], start_new_session=True)
            for _ in range(self.n)
        ]
        return self

    def __exit__(self, *exc) -> None:
        for proc in self.procs:
            proc.kill()
            proc.wait()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3, help="alternating rounds (default 3)")
    parser.add_argument("--iterations", type=int, default=6, help="iterations per trial, warm-up included (default 6)")
    parser.add_argument("--warmup", type=int, default=1, help="leading iterations left out of throughput (default 1)")
    parser.add_argument("--env", default="CartPole-v1")
    parser.add_argument("--runners", type=int, nargs="+", default=[0, 1])
    parser.add_argument("--batches", type=int, nargs="+", default=[500, 1000])
    parser.add_argument("--minibatch", type=int, default=250)
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument(
        "--against",
        choices=("tune", "loop"),
        default="tune",
        help="the other side: Ray Tune (default) or a hand-written algo.train() loop",
    )
    parser.add_argument(
        "--switch-off",
        action="append",
        default=[],
        metavar="NAME",
        help="one of rlbench's own choices switched off in the rlbench runs (the spec's switch_off: "
        "affinity, threads, callback, stats, forkserver, sampler, niceness); repeat for several",
    )
    parser.add_argument("--pin-driver", action="store_true", help="rlbench runs with pin_driver: true")
    parser.add_argument(
        "--busy",
        type=int,
        default=0,
        metavar="N",
        help="N busy processes beside both sides (a busy machine; default 0)",
    )
    parser.add_argument(
        "--busy-duty",
        type=float,
        default=0.5,
        metavar="F",
        help="the share of each 20 ms a busy process spins (default 0.5)",
    )
    parser.add_argument(
        "--pair",
        choices=("grid", "configuration"),
        default="grid",
        help="what runs back to back each way: the whole grid (default; its wall is a sweep's) or "
        "one configuration (pairs about 20 s apart instead of a grid's minute or more: the "
        "machine's drift between them is smaller; each wall then holds a sweep's fixed costs)",
    )
    parser.add_argument("--out", type=Path, default=None, help="keep the runs here (default: a temporary folder)")
    args = parser.parse_args()

    from rlbench.analysis.change import paired
    from rlbench.analysis.evidence import change_sentence
    from rlbench.analysis.stats import interval_text
    from rlbench.worker.procfs import read_steal, steal_pct

    root = args.out or Path(tempfile.mkdtemp(prefix="rlbench-vs-tune-"))
    root.mkdir(parents=True, exist_ok=True)
    other = args.against

    def spec_text(runners: list[int], batches: list[int]) -> str:
        return SPEC.format(
            env=args.env,
            minibatch=args.minibatch,
            epochs=args.epochs,
            runners=runners,
            batches=batches,
            iterations=args.iterations,
            warmup=args.warmup,
            pin_driver=str(args.pin_driver).lower(),
            switch_off=json.dumps(args.switch_off),
        )

    # what runs back to back: the whole grid each way, or one configuration at a time
    if args.pair == "grid":
        units = [(list(args.runners), list(args.batches))]
    else:
        units = [([n], [b]) for n in args.runners for b in args.batches]
    load_before = os.getloadavg()
    # (runners, batch) -> round -> steady throughput, per side
    ours: dict[tuple[int, int], dict[int, float]] = {}
    theirs: dict[tuple[int, int], dict[int, float]] = {}
    walls = []
    breakdowns = []
    steals: dict[str, list[float]] = {}
    for r in range(args.rounds):
        for u in range(len(units)):
            runners, batches = units[(u + r) % len(units)]  # the configurations' order rotates too
            order = ("rlbench", other) if (r + u) % 2 == 0 else (other, "rlbench")
            wall = {}
            name = f"round{r}" + (f"-{runners[0]}r{batches[0]}" if args.pair == "configuration" else "")
            for side in order:
                out = root / f"{name}-{side}"
                out.mkdir(exist_ok=True)
                steal0 = read_steal()
                with Busy(args.busy, args.busy_duty):
                    if side == "rlbench":
                        rates, wall[side] = run_rlbench(out / "sweep", spec_text(runners, batches))
                        target = ours
                    else:
                        rates, wall[side] = run_other(out, args, runners, batches)
                        target = theirs
                stolen = steal_pct(steal0, read_steal())
                steals.setdefault(side, []).append(stolen if stolen is not None else float("nan"))
                if side == "rlbench":
                    breakdowns.append(sweep_breakdown(out / "sweep", wall[side]))
                for key, rate in rates.items():
                    target.setdefault(key, {})[r] = rate
                print(
                    f"{name} {side:7}: {wall[side]:6.1f} s  steal {stolen or 0:4.1f}%  "
                    + "  ".join(f"{k[0]}r/{k[1]}: {v:,.0f}" for k, v in sorted(rates.items())),
                    flush=True,
                )
            walls.append(wall)
    print(
        f"\nmachine load (1-min average, {os.cpu_count()} cores): {load_before[0]:.2f} before, "
        f"{os.getloadavg()[0]:.2f} after; rlbench runs: switched off: {', '.join(args.switch_off) or 'nothing'}, "
        f"pin_driver: {args.pin_driver}"
        + (f"; {args.busy} busy process(es) beside both sides, {args.busy_duty:.0%} busy" if args.busy else "")
    )
    print(
        f"rlbench/{other}: the ratio of the medians over rounds (95% CI resampling each side), and the median of "
        "the per-round ratios (both sides of a round ran back to back: the paired figure; "
        f"back to back: {'the whole grid' if args.pair == 'grid' else 'one configuration'} each way), "
        "as a variants sweep compares them (rlbench.analysis.variants)"
    )
    print(
        f"{'runners':>7} {'batch':>6} {other + ' steps/s':>13} {'rlbench':>9} {'rlbench/' + other:>13} {'95% CI':>13} "
        f"{'paired':>7} {'95% CI':>13} {'n':>3}"
    )
    verdicts = []
    for key in sorted(theirs):
        c = paired(theirs[key], ours.get(key, {}))
        mine = statistics.median(ours[key].values()) if ours.get(key) else float("nan")
        print(
            f"{key[0]:>7} {key[1]:>6} {statistics.median(theirs[key].values()):>13,.0f} {mine:>9,.0f} "
            f"{c.ratio or float('nan'):>13.3f} {interval_text(c.ci_low, c.ci_high):>13} "
            f"{c.paired_ratio or float('nan'):>7.3f} {interval_text(c.paired_ci_low, c.paired_ci_high):>13} "
            f"{c.runs_a:>3}"
        )
        verdicts.append(f"  {key[0]}r/{key[1]}: {change_sentence(other, 'rlbench', c)}")
    print("\n".join(verdicts))
    ratio = [w["rlbench"] / w[other] for w in walls]
    print(
        f"\nwall per {'round' if args.pair == 'grid' else 'pair'}, rlbench / {other}: "
        + ", ".join(f"{w['rlbench']:.1f}/{w[other]:.1f} s" for w in walls)
        + f"; median ratio {statistics.median(ratio):.3f}"
    )
    print(
        "rlbench sweep wall, median over rounds (s): "
        + ", ".join(f"{k} {statistics.median(b[k] for b in breakdowns):.1f}" for k in breakdowns[0])
    )
    print(
        "the host's steal (CPU time the hypervisor gave to other guests, % of all cores' time), median over runs: "
        + ", ".join(f"{side} {statistics.median(v):.1f}% (max {max(v):.1f}%)" for side, v in steals.items())
    )
    print(f"runs kept in {root}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
