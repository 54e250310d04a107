"""Does the env-runner side cost more? Figures a busy machine stretches little: CPU seconds per env step.

Throughput against Tune (``scripts/bench_vs_tune.py``) is wall time, and on this shared 2-core machine other
work moves it by 20-50% from run to run. What a side costs per env step is its processes' CPU time, which
others' load stretches far less (a process waiting for a core accrues none). Two modes:

- ``cpu``: one configuration (default CartPole, 1 env runner, batch 500, PPO as ``bench_vs_tune.py`` runs it)
  as an ``rlbench sweep`` of each code tree given and as ``bench_vs_tune.py``'s Tune program, alternating, the
  order reversed every round. A poller reads every process's CPU ticks (``/proc/<pid>/stat``) five times a
  second; per run, over the steady iterations, the CPU per env step of the env runner, of the driver
  (rlbench's trial process; Tune's trial actor), of the rest of the trial's process tree (Ray's own
  processes), and of the controller (the sweep process; the Tune program), beside the throughput and the
  cores the rest of the machine used. rlbench's runs also give the runner's own timers (``sample_cpu_s``).
- ``straggler``: the straggler construction of ``tests/e2e/test_profiles_e2e.py`` (SyntheticEnv, two env
  runners, runner 2 burning three times the CPU a step, 4 ms against 12 ms, profiled at 100 Hz), swept with
  each code tree: the straggler figures rlbench reports (``straggler_step_ratio``, ``straggler_cpu_ratio``),
  each runner's CPU per step inside and outside its env, and the env's share of each runner's profile, of its
  sampling and of all its samples (a fast runner idles while the slow one samples).

    flock /tmp/rlbench-ray.lock python scripts/bench_env_runner.py cpu [--rounds 5] [--tree NAME=DIR[:PYTHON] ...]
    flock /tmp/rlbench-ray.lock python scripts/bench_env_runner.py straggler [--rounds 2] [--tree ...]

``--tree`` names a checkout of rlbench (an old commit: ``git worktree add DIR COMMIT``) and the Python to run it
with (default this one, PYTHONPATH set to DIR); default: this checkout alone.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "scripts"))
from bench_vs_tune import SPEC, TUNE_PROGRAM  # noqa: E402  (the same configuration and Tune program)

#: The Tune program, each result row stamped with the wall clock (the steady window's ends).
TUNE_STAMPED = TUNE_PROGRAM.replace(
    '"time_this_iter_s": result["time_this_iter_s"]}',
    '"time_this_iter_s": result["time_this_iter_s"], "epoch": time.time()}',
)
assert TUNE_STAMPED != TUNE_PROGRAM

#: A poller in its own process: every 0.2 s each process's utime+stime ticks, its command line when first seen
#: and again while it is a Ray worker that has not taken its actor's title yet (``.../workers/default_worker.py``,
#: ``setup_worker.py`` where Tune gives the trial a runtime env, ``ray::IDLE``).
POLLER = r"""
import json, os, sys, time
names, n = {}, 0
with open(sys.argv[1], "w") as f:
    while True:
        n, t, ticks = n + 1, time.time(), {}
        for pid in filter(str.isdigit, os.listdir("/proc")):
            try:
                stat = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
                ticks[pid] = int(stat[11]) + int(stat[12])
                if pid not in names or (n % 5 == 0 and ("/workers/" in names[pid] or "IDLE" in names[pid])):
                    cmd = open(f"/proc/{pid}/cmdline", "rb").read().replace(b"\0", b" ").decode(errors="replace")[:160]
                    if names.get(pid) != cmd:
                        names[pid] = cmd
                        f.write(json.dumps({"pid": pid, "cmd": cmd, "ppid": stat[1]}) + "\n")
            except (OSError, IndexError):
                pass
        f.write(json.dumps({"t": t, "ticks": ticks}) + "\n")
        f.flush()
        time.sleep(max(0.0, 0.2 - (time.time() - t)))
"""


def cpu_per_step(poll: Path, t_a: float, t_b: float, root: int, controller: int, steps: int) -> dict[str, float]:
    """CPU microseconds per env step between the poller's samples nearest ``t_a`` and ``t_b``, by part:
    ``runner``, ``driver`` (``root`` itself for rlbench, Ray's PPO actor for Tune), ``ray`` (the rest of
    ``root``'s tree), ``controller``; and ``others_cores``, the rest of the machine."""
    time.sleep(0.5)  # the poller's sample after t_b
    cmds, parent, samples = {}, {}, []
    for line in poll.read_text().splitlines():
        try:
            d = json.loads(line)
        except ValueError:  # the line being written
            continue
        if "pid" in d:
            cmds[d["pid"]], parent[d["pid"]] = d["cmd"], d["ppid"]
        else:
            samples.append(d)
    a = min(samples, key=lambda s: abs(s["t"] - t_a))
    b = min(samples, key=lambda s: abs(s["t"] - t_b))

    def under_root(pid: str) -> bool:
        for _ in range(64):
            if pid == str(root):
                return True
            if pid not in parent:
                return False
            pid = parent[pid]
        return False

    hz, parts = os.sysconf("SC_CLK_TCK"), collections.Counter()
    for pid, ticks in b["ticks"].items():
        used = (ticks - a["ticks"].get(pid, 0)) / hz
        cmd = cmds.get(pid, "")
        if pid == str(controller):
            parts["controller"] += used
        elif under_root(pid):
            part = (
                "runner"
                if "SingleAgentEnvRunner" in cmd
                else "driver"
                if pid == str(root) or "ray::PPO" in cmd
                else "ray"
            )
            parts[part] += used
        else:
            parts["others"] += used
    out = {f"{k}_us": v / steps * 1e6 for k, v in parts.items() if k != "others"}
    return {**out, "others_cores": parts["others"] / (b["t"] - a["t"])}


def run_rlbench(tree: tuple[str, str, str], spec: Path, out: Path, poll: Path) -> dict[str, float]:
    """One rlbench sweep of the configuration with a code tree; its row."""
    import pandas as pd

    _, code, python = tree
    proc = subprocess.Popen(
        [python, "-m", "rlbench", "sweep", str(spec), "--out", str(out)],
        cwd=code,
        env={**os.environ, "PYTHONPATH": code},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    _, err = proc.communicate()
    if proc.returncode != 0:
        raise SystemExit(f"rlbench sweep failed ({proc.returncode}): {err.decode()[-2000:]}")
    trial = next((out / "trials").iterdir())
    record = json.loads((trial / "record.json").read_text())
    events = [json.loads(line) for line in (trial / "events.jsonl").read_text().splitlines()]
    iterations = [e for e in events if e["event"] == "iteration"]
    root = next(e for e in events if e["event"] == "start")["pid"]
    its = pd.read_parquet(out / "iterations.parquet")
    steady = its[~its["warmup"]]
    row = {"env_steps_per_s": float(steady["env_steps_per_s"].median())}
    runners = pd.read_parquet(out / "runner_iterations.parquet")
    runners = runners[~runners["warmup"]]
    if len(runners):
        row["runner_timer_sample_cpu_us"] = runners["sample_cpu_s"].sum() / runners["env_steps"].sum() * 1e6
    t0 = record["started_epoch"]  # the steady window: the warm-up iteration's end to the last one's
    return {
        **row,
        **cpu_per_step(
            poll,
            t0 + iterations[0]["t_s"],
            t0 + iterations[-1]["t_s"],
            root,
            proc.pid,
            int(steady["env_steps_sampled"].sum()),
        ),
    }


def run_tune(args: argparse.Namespace, out: Path, poll: Path) -> dict[str, float]:
    """One run of the Tune program over the configuration; its row."""
    out.mkdir(parents=True, exist_ok=True)
    payload = json.dumps(
        {
            "env": args.env,
            "runners": [args.runners],
            "batches": [args.batch],
            "minibatch": 250,
            "epochs": 2,
            "iterations": args.iterations,
            "storage": str(out),
        }
    )
    proc = subprocess.Popen(
        [sys.executable, "-c", TUNE_STAMPED, payload],
        cwd=out,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    stdout, _ = proc.communicate()
    lines = [line for line in stdout.splitlines() if line.startswith("{")]
    if proc.returncode != 0 or not lines:
        raise SystemExit(f"Tune run failed ({proc.returncode})")
    rows = json.loads(lines[-1])["rows"]
    steady = [r for r in rows if r["iteration"] > 1]
    first = next(r for r in rows if r["iteration"] == 1)
    return {
        "env_steps_per_s": statistics.median(r["steps"] / r["time_this_iter_s"] for r in steady),
        **cpu_per_step(poll, first["epoch"], steady[-1]["epoch"], proc.pid, proc.pid, sum(r["steps"] for r in steady)),
    }


def cpu_mode(args: argparse.Namespace, root: Path) -> None:
    spec = root / "spec.yaml"
    spec.write_text(
        SPEC.format(
            env=args.env,
            minibatch=250,
            epochs=2,
            runners=[args.runners],
            batches=[args.batch],
            iterations=args.iterations,
            warmup=1,
            pin_driver="false",
            switch_off="[]",
        )
    )
    poll = root / "poll.jsonl"
    poller = subprocess.Popen([sys.executable, "-c", POLLER, str(poll)])
    rows: dict[str, list[dict[str, float]]] = collections.defaultdict(list)
    try:
        sides = [*args.tree, ("tune", "", "")]
        for r in range(args.rounds):
            for side in sides if r % 2 == 0 else sides[::-1]:
                load = os.getloadavg()[0]
                row = (
                    run_tune(args, root / f"r{r}-tune", poll)
                    if side[0] == "tune"
                    else run_rlbench(side, spec, root / f"r{r}-{side[0]}", poll)
                )
                rows[side[0]].append(row)
                print(
                    f"round {r} {side[0]:10} load {load:5.2f}: " + "  ".join(f"{k} {v:,.3g}" for k, v in row.items()),
                    flush=True,
                )
    finally:
        poller.terminate()
    print(
        f"\nmedians over {args.rounds} rounds ({args.runners} runner(s), batch {args.batch}, {args.env}; CPU us per "
        "env step over the steady iterations):"
    )
    for side, got in rows.items():
        keys = sorted({k for row in got for k in row})
        print(
            f"  {side:10} "
            + "  ".join(f"{k} {statistics.median(row[k] for row in got if k in row):,.3g}" for k in keys)
        )


STRAGGLER = """
name: straggler
environment:
  env: envs.synthetic:SyntheticEnv
  env_config: {{step_cost_us: 4000, episode_len: 40, obs_size: 8, slow_worker_index: 2, slow_factor: 3}}
env_runners: {{num_env_runners: 2, num_cpus_per_env_runner: 1}}
resources: {{num_cpus_for_main_process: 0}}
training: {{train_batch_size_per_learner: 240, minibatch_size: 60, num_epochs: 1}}
rl_module: {{fcnet_hiddens: [32, 32]}}
cpus: 2
stop: {{iterations: {iterations}}}
warmup_iterations: 1
trial_timeout_s: 600
profile_hz: 100
profile_roles: [driver, learner, env_runner]
env_ceiling_s: 0
"""


def straggler_mode(args: argparse.Namespace, root: Path) -> None:
    import pandas as pd

    spec = root / "straggler.yaml"
    spec.write_text(STRAGGLER.format(iterations=args.iterations))
    for r in range(args.rounds):
        for name, code, python in args.tree if r % 2 == 0 else args.tree[::-1]:
            out, load = root / f"r{r}-{name}", os.getloadavg()[0]
            subprocess.run(
                [python, "-m", "rlbench", "sweep", str(spec), "--out", str(out)],
                cwd=code,
                check=True,
                env={**os.environ, "PYTHONPATH": code},
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
            trial = pd.read_parquet(out / "trials.parquet").iloc[0]
            runners = pd.read_parquet(out / "runner_iterations.parquet")
            per = runners[~runners["warmup"]].groupby("env_runner").sum(numeric_only=True)
            pids = runners.groupby("env_runner")["pid"].first()
            profiles = pd.read_parquet(out / "profiles.parquet")
            parts = [
                f"round {r} {name:10} load {load:5.2f}: straggler {trial['straggler_env_runner']}, step ratio "
                f"{trial['straggler_step_ratio']:.2f}, CPU ratio {trial['straggler_cpu_ratio']:.2f}"
            ]
            for i in (1, 2):
                steps = per.loc[i, "env_steps"]
                mine = profiles[profiles["pid"] == pids[i]]
                env = mine[mine["function"].isin(["SyntheticEnv.step", "SyntheticEnv.reset"])]["total_samples"].sum()
                sampling = mine[mine["function"] == "SingleAgentEnvRunner.sample"]["total_samples"].sum()
                parts.append(
                    f"runner {i}: env CPU {per.loc[i, 'env_step_cpu_s'] / steps * 1e6:,.0f} us/step, the rest "
                    f"{(per.loc[i, 'sample_cpu_s'] - per.loc[i, 'env_step_cpu_s']) / steps * 1e6:,.0f}; env "
                    f"{env / max(sampling, 1):.2f} of its profile's sampling, "
                    f"{env / max(mine['self_samples'].sum(), 1):.2f} "
                    "of all its samples"
                )
            print("\n  ".join(parts), flush=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("mode", choices=("cpu", "straggler"))
    parser.add_argument(
        "--tree",
        action="append",
        default=[],
        metavar="NAME=DIR[:PYTHON]",
        help="an rlbench checkout to sweep with (repeat; default: this one as 'rlbench')",
    )
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--iterations", type=int, default=12, help="iterations a trial, the first one warm-up")
    parser.add_argument("--env", default="CartPole-v1")
    parser.add_argument("--runners", type=int, default=1)
    parser.add_argument("--batch", type=int, default=500)
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    trees = []
    for text in args.tree or [f"rlbench={REPO}"]:
        name, _, rest = text.partition("=")
        code, _, python = rest.partition(":")
        trees.append((name, str(Path(code).resolve()), python or sys.executable))
    args.tree = trees
    root = args.out or Path(tempfile.mkdtemp(prefix="rlbench-env-runner-"))
    root.mkdir(parents=True, exist_ok=True)
    print(f"load (1-min average, {os.cpu_count()} cores) {os.getloadavg()[0]:.2f}; runs kept in {root}", flush=True)
    (cpu_mode if args.mode == "cpu" else straggler_mode)(args, root)
    print(f"load {os.getloadavg()[0]:.2f} at the end")
    return 0


if __name__ == "__main__":
    sys.exit(main())
