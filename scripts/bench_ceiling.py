"""The ceiling's known answer (issue 49): an env and a learner of planted costs, so what they allow is computable.

Part ``plain``: the plain adapter steps ``envs.synthetic:SyntheticEnv`` at ``--step-us`` of CPU a step and its planted
learner (``env_config.plain_learn_cost_us``) burns ``--learn-us`` a step sampled, one after the other, in one process
on one core. Known: the env alone ``1e6 / step_us`` steps/s, the learner ``1e6 / learn_us``, together
``1e6 / (step_us + learn_us)``. rlbench's ``env_ceiling_steps_per_s`` (envbench), ``learner_steps_per_s`` (the
trial's steps over its learn time) and ``ceiling_env_steps_per_s`` (their composition) are printed against them,
with the trial's own throughput and ``ceiling_frac``.

Part ``rllib``: PPO on the same env (``--rllib-step-us``) with one env runner: the env half is known
(``1e6 / step_us`` in one process), the learner's rate is RLlib's own (a tiny network, one epoch); printed as above.

A figure is "within 10%" of its known answer or not; the busy loops count CPU time, so a machine whose other work
takes the core stretches every figure in wall time alike: run it quiet, and read the load printed beside it. The
env alone per CPU-second (env_ceilings.json's ``steps / cpu_s``) is printed beside its wall rate: load cannot move
it, so it says whether a miss is the machine's; so are the learner's rate per core its learn windows kept busy
(``learn_cpus_used``, from the utilization samples) and the two composed.

    flock /tmp/rlbench-ray.lock python scripts/bench_ceiling.py [--parts plain rllib] [--out DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import pandas as pd

REPO = Path(__file__).resolve().parents[1]

PLAIN = """\
name: ceiling_plain
framework: plain
environment:
  env: envs.synthetic:SyntheticEnv
  env_config: {{step_cost_us: {step_us}, obs_size: 8, episode_len: 200, plain_learn_cost_us: {learn_us}}}
env_runners:
  num_env_runners: 0
resources:
  num_cpus_for_main_process: 1
training:
  train_batch_size_per_learner: {steps}
cpus: 1
repeats: {repeats}
stop: {{iterations: {iterations}}}
warmup_iterations: 1
env_ceiling_s: 2
"""

RLLIB = """\
name: ceiling_rllib
algo: PPO
environment:
  env: envs.synthetic:SyntheticEnv
  env_config: {{step_cost_us: {step_us}, obs_size: 8, episode_len: 200}}
env_runners:
  num_env_runners: 1
resources:
  num_cpus_for_main_process: 1
training:
  train_batch_size_per_learner: {steps}
  minibatch_size: {steps}
  num_epochs: 1
rl_module:
  fcnet_hiddens: [32, 32]
cpus: 2
repeats: {repeats}
stop: {{iterations: {iterations}}}
warmup_iterations: 1
env_ceiling_s: 2
trial_timeout_s: 600
"""


def load() -> str:
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


def sweep(spec: str, out: Path) -> pd.DataFrame:
    """Run ``rlbench sweep`` on ``spec`` into ``out``; its ok trials, each with ``env_steps_per_cpu_s``: the env
    ceiling's steps over its processes' CPU seconds (env_ceilings.json), which a core taken by others cannot move."""
    out.parent.mkdir(parents=True, exist_ok=True)
    path = out.parent / f"{out.name}.yaml"
    path.write_text(spec)
    env = {**os.environ, "PYTHONPATH": f"{REPO}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
    done = subprocess.run(
        [sys.executable, "-m", "rlbench", "sweep", str(path), "--out", str(out)],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
    )
    if done.returncode != 0:
        raise SystemExit(f"sweep {path} failed ({done.returncode}):\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}")
    trials = pd.read_parquet(out / "trials.parquet")
    ceilings = [c for c in json.loads((out / "env_ceilings.json").read_text()).values() if c.get("cpu_s")]
    per_cpu = ceilings[0]["steps"] / ceilings[0]["cpu_s"] if len(ceilings) == 1 else float("nan")
    return trials[trials["status"] == "ok"].assign(env_steps_per_cpu_s=per_cpu)


def line(name: str, measured: float, known: float | None) -> bool:
    """Print one figure against its known answer; whether it is within 10% (True without a known answer)."""
    if known is None:
        print(f"  {name:<28} {measured:>10,.1f}")
        return True
    ratio = measured / known
    ok = abs(ratio - 1) <= 0.10
    verdict = "within" if ok else "NOT within"
    print(f"  {name:<28} {measured:>10,.1f}   known {known:>10,.1f}   ratio {ratio:.3f}   {verdict} 10%")
    return ok


def report(trials: pd.DataFrame, known: dict[str, float | None]) -> tuple[bool, bool]:
    """Each trial's figures against the known answers: (every wall-time figure within 10%, every per-CPU one)."""
    ok = per_cpu_ok = True
    for _, t in trials.iterrows():
        print(f" trial {t['trial_id']}:")
        ok &= line("env alone (steps/s)", t["env_ceiling_steps_per_s"], known["env"])
        ok &= line("learner (steps/s)", t["learner_steps_per_s"], known["learner"])
        ok &= line("ceiling (steps/s)", t["ceiling_env_steps_per_s"], known["ceiling"])
        # the same per CPU-second the processes got (the env ceiling's CPU time; the learn windows' cores busy,
        # learn_cpus_used): what a core taken by others cannot move
        learner_cpu = t["learner_steps_per_s"] / t["learn_cpus_used"] if t.get("learn_cpus_used") else None
        per_cpu_ok &= line("env alone (steps/CPU-s)", t["env_steps_per_cpu_s"], known["env"])
        if learner_cpu is not None and known["learner"] is not None:
            per_cpu_ok &= line("learner (steps/CPU-s)", learner_cpu, known["learner"])
            composed = 1 / (1 / t["env_steps_per_cpu_s"] + 1 / learner_cpu)
            per_cpu_ok &= line("ceiling (steps/CPU-s)", composed, known["ceiling"])
        line("the trial (steps/s)", t["env_steps_per_s"], None)
        print(f"  {'ceiling_frac':<28} {t['ceiling_frac']:>10.3f}")
    return ok, per_cpu_ok


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--parts", nargs="+", choices=("plain", "rllib"), default=["plain", "rllib"])
    p.add_argument("--step-us", type=float, default=2000.0, help="the plain part's env cost a step (CPU us)")
    p.add_argument("--learn-us", type=float, default=2000.0, help="the planted learner's cost a step (CPU us)")
    p.add_argument("--rllib-step-us", type=float, default=1000.0, help="the RLlib part's env cost a step (CPU us)")
    p.add_argument("--steps", type=int, default=500, help="env steps an iteration")
    p.add_argument("--iterations", type=int, default=6)
    p.add_argument("--repeats", type=int, default=2)
    p.add_argument("--out", type=Path, default=None, help="where the sweeps go (default: a temporary folder)")
    args = p.parse_args()
    root = args.out or Path(tempfile.mkdtemp(prefix="bench_ceiling_"))
    print(f"load before: {load()}; results under {root}")
    ok = per_cpu_ok = True
    if "plain" in args.parts:
        env, learner = 1e6 / args.step_us, 1e6 / args.learn_us
        known = {"env": env, "learner": learner, "ceiling": 1e6 / (args.step_us + args.learn_us)}
        print(
            f"plain: env {args.step_us:g} us a step, planted learner {args.learn_us:g} us a step, one after the other"
        )
        spec = PLAIN.format(
            step_us=args.step_us,
            learn_us=args.learn_us,
            steps=args.steps,
            repeats=args.repeats,
            iterations=args.iterations,
        )
        wall, cpu = report(sweep(spec, root / "plain"), known)
        ok, per_cpu_ok = ok and wall, per_cpu_ok and cpu
    if "rllib" in args.parts:
        known = {"env": 1e6 / args.rllib_step_us, "learner": None, "ceiling": None}
        print(f"rllib: PPO, env {args.rllib_step_us:g} us a step in 1 env runner; the learner's rate is RLlib's own")
        spec = RLLIB.format(
            step_us=args.rllib_step_us, steps=args.steps, repeats=args.repeats, iterations=args.iterations
        )
        wall, cpu = report(sweep(spec, root / "rllib"), known)
        ok, per_cpu_ok = ok and wall, per_cpu_ok and cpu
    print(f"load after: {load()}")
    print("wall time: " + ("every known answer within 10%" if ok else "some figure NOT within 10% of its known answer"))
    print("per CPU-second: " + ("every known answer within 10%" if per_cpu_ok else "some figure NOT within 10%"))
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
