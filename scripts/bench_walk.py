"""autoconfig's walk against the exhaustive grid over the knobs it may move: is its endpoint within 10% of the best,
in at most a quarter of the time? (issue 50)

For each workload (a spec with no grid, planted with a known bottleneck on 2 cores) and each of ``--runs`` runs:

1. the exhaustive grid over the knobs the walk may move there (two or more values each, every point that fits
   the trial's 2 cores), run by ``rlbench sweep`` with ``--repeats`` repeats a point: the truth, by median env
   steps/s;
2. ``rlbench autoconfig`` on the spec (no grid: it walks the verdicts), with ``--budget-frac`` (default 1) of that
   run's exhaustive wall as its budget: it stops by its own reasons, and the point it stood at once a quarter of the
   exhaustive wall was spent is read from its per-step seconds (``autoconfig_state.json``).

It prints the walk's path (each step's knob, from, to, outcome, speed-up), its endpoint's median in the exhaustive grid
as a share of the best's, both walls, and where it stood at a quarter of the exhaustive wall (the aim: within 10%
there), with the load (``uptime``) before and after each. Nothing is asserted: a benchmark's figures go in
docs/AUTOCONFIG.md with their commands and load, never in a test.

    python scripts/bench_walk.py [--workloads env_waits,inference,learner,env_bound] [--runs 1] [--repeats 3]
                                 [--budget-frac 1] [--out DIR] [--reuse]

Issue 57 added four grids of 20 points or more: ``inference_wide`` (the issue's case: a free env, a 1024x1024
policy; runners 0-2 x envs a runner 1-16 x the driver's 1-2 CPUs, the points that fit 2 cores), ``env_waits_wide``
(a 2 ms sleep, runners of a quarter CPU, 1-4 x 1-16 envs), ``shared_cores_limit`` (a 1.5 ms env, a runner of 1 CPU:
the cores' limit with a third of sample() outside the env) and ``learner_wide`` (the learner workload at half its
batch: 30 epochs in the driver, 0-2 runners x 1-64 envs a runner).

The workloads (``WORKLOADS``): ``env_waits``, an env that sleeps 2 ms a step (its runner idle inside ``sample()``: more
runners overlap the waits); ``inference``, a free env and a 256x256 network, one env a runner (the forward pass and
RLlib's per-step work dominate: more envs per runner); ``learner``, the driver's CPU learner on one thread with 30
epochs a batch (learning bounds the iteration: the driver's CPUs); ``env_bound``, an env that burns 1 ms of CPU a
step on 2 cores (the cores are the limit: a walk that stops at once is right).
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import re
import shutil
import sys
import tempfile
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

sys.path.insert(0, str(REPO / "scripts"))
from bench_autoconfig import _plain as plain  # noqa: E402  (the same key printing, sweep runner and medians)
from bench_autoconfig import medians as _medians  # noqa: E402
from bench_autoconfig import run  # noqa: E402

from rlbench.measure.machine import probe_machine  # noqa: E402
from rlbench.run.autoconfig_driver.space import parse_budget, prepare  # noqa: E402
from rlbench.spec.model import SpecError  # noqa: E402

_COMMON = """\
algo: PPO
cpus: 2
stop: {iterations: 3}
warmup_iterations: 1
env_ceiling_s: 0.5
trial_timeout_s: 300
"""

#: name -> (the spec the walk starts from, the exhaustive grid over the knobs it may move there).
WORKLOADS: dict[str, tuple[str, dict[str, list]]] = {
    "env_waits": (
        """\
name: walk_env_waits
environment:
  env: envs.synthetic:SyntheticEnv
  env_config: {step_sleep_us: 5000, obs_size: 8, episode_len: 50}
env_runners: {num_env_runners: 1, num_envs_per_env_runner: 1, num_cpus_per_env_runner: 0.33}
resources: {num_cpus_for_main_process: 1}
training: {train_batch_size_per_learner: 128, minibatch_size: 128, num_epochs: 1}
rl_module: {fcnet_hiddens: [16, 16]}
""",
        {"num_env_runners": [1, 2, 3], "num_envs_per_env_runner": [1, 2, 4]},
    ),
    "inference": (
        """\
name: walk_inference
environment:
  env: envs.synthetic:SyntheticEnv
  env_config: {step_cost_us: 0, obs_size: 64, episode_len: 100}
env_runners: {num_env_runners: 1, num_envs_per_env_runner: 1, num_cpus_per_env_runner: 0.5}
resources: {num_cpus_for_main_process: 1}
training: {train_batch_size_per_learner: 1024, minibatch_size: 1024, num_epochs: 1}
rl_module: {fcnet_hiddens: [256, 256]}
""",
        {"num_envs_per_env_runner": [1, 2, 4, 8], "num_env_runners": [1, 2]},
    ),
    "learner": (
        """\
name: walk_learner
environment:
  env: envs.synthetic:SyntheticEnv
  env_config: {step_cost_us: 0, obs_size: 32, episode_len: 200}
env_runners: {num_env_runners: 0, num_cpus_per_env_runner: 0.5}
learners: {num_learners: 0}
resources: {num_cpus_for_main_process: 1}
training: {train_batch_size_per_learner: 2000, minibatch_size: 128, num_epochs: 30}
rl_module: {fcnet_hiddens: [256, 256]}
""",
        {"num_cpus_for_main_process": [1, 2], "num_env_runners": [0, 1], "num_envs_per_env_runner": [1, 4]},
    ),
    "env_bound": (
        """\
name: walk_env_bound
environment:
  env: envs.synthetic:SyntheticEnv
  env_config: {step_cost_us: 1000, obs_size: 8, episode_len: 100}
env_runners: {num_env_runners: 1, num_envs_per_env_runner: 1, num_cpus_per_env_runner: 0.33}
resources: {num_cpus_for_main_process: 1}
training: {train_batch_size_per_learner: 500, minibatch_size: 500, num_epochs: 1}
rl_module: {fcnet_hiddens: [16, 16]}
""",
        {"num_env_runners": [1, 2, 3], "num_envs_per_env_runner": [1, 4]},
    ),
}


# issue 57: four grids of 20 points or more (runners x envs a runner x the driver's CPUs on 2 cores), beside the four
# small ones above.
WORKLOADS.update(
    {
        "inference_wide": (  # issue 57's case: a nearly free env, a 1024x1024 policy, 1 runner x 1 env
            """\
name: walk_inference_wide
environment:
  env: envs.synthetic:SyntheticEnv
  env_config: {step_cost_us: 0, obs_size: 16, episode_len: 100}
env_runners: {num_env_runners: 1, num_envs_per_env_runner: 1, num_cpus_per_env_runner: 0.5}
resources: {num_cpus_for_main_process: 1}
training: {train_batch_size_per_learner: 1024, minibatch_size: 1024, num_epochs: 1}
rl_module: {fcnet_hiddens: [1024, 1024]}
""",
            {
                "num_env_runners": [0, 1, 2],
                "num_envs_per_env_runner": [1, 2, 4, 8, 16],
                "num_cpus_for_main_process": [1, 2],
            },
        ),
        "env_waits_wide": (  # a 2 ms sleep a step, runners of a quarter CPU: up to 4 beside the driver
            """\
name: walk_env_waits_wide
environment:
  env: envs.synthetic:SyntheticEnv
  env_config: {step_sleep_us: 2000, obs_size: 8, episode_len: 50}
env_runners: {num_env_runners: 1, num_envs_per_env_runner: 1, num_cpus_per_env_runner: 0.25}
resources: {num_cpus_for_main_process: 1}
training: {train_batch_size_per_learner: 256, minibatch_size: 256, num_epochs: 1}
rl_module: {fcnet_hiddens: [16, 16]}
""",
            {"num_env_runners": [1, 2, 3, 4], "num_envs_per_env_runner": [1, 2, 4, 8, 16]},
        ),
        "shared_cores_limit": (  # issue 57's cores-limit case: a 1.5 ms env, 1 runner of 1 CPU beside the driver's 1
            """\
name: walk_shared_cores_limit
environment:
  env: envs.synthetic:SyntheticEnv
  env_config: {step_cost_us: 1500, obs_size: 8, episode_len: 200}
env_runners: {num_env_runners: 1, num_envs_per_env_runner: 1, num_cpus_per_env_runner: 1}
resources: {num_cpus_for_main_process: 1}
training: {train_batch_size_per_learner: 500, minibatch_size: 500, num_epochs: 1}
rl_module: {fcnet_hiddens: [64, 64]}
""",
            {
                "num_env_runners": [0, 1],
                "num_envs_per_env_runner": [1, 2, 4, 8, 16, 32, 64],
                "num_cpus_for_main_process": [1, 2],
            },
        ),
        # The learner workload at half its batch, over runners and envs a runner (21 points). Not over the driver's
        # CPUs: at 2 CPUs the driver's torch takes 2 threads on 2 shared cores, and the small learner grid read 19 env
        # steps/s there (about 100 s an iteration; 2026-11-29), which made this grid over an hour here; the walk never
        # gives a learner every core (`space.all_cores_threads`), so those points are not ones it could end at.
        "learner_wide": (
            WORKLOADS["learner"][0]
            .replace("walk_learner", "walk_learner_wide")
            .replace("train_batch_size_per_learner: 2000", "train_batch_size_per_learner: 1000"),
            {"num_env_runners": [0, 1, 2], "num_envs_per_env_runner": [1, 2, 4, 8, 16, 32, 64]},
        ),
    }
)


def load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def start_values(spec: dict, knobs: list[str]) -> dict:
    """The start's value of each knob, from the spec's sections (RLlib's defaults where it is silent)."""
    defaults = {"num_env_runners": 0, "num_envs_per_env_runner": 1, "num_cpus_for_main_process": 1}
    found = {}
    for knob in knobs:
        found[knob] = next(
            (section[knob] for section in spec.values() if isinstance(section, dict) and knob in section),
            defaults.get(knob),
        )
    return found


def exhaustive(spec: dict, grid: dict[str, list], repeats: int, out: Path) -> Path:
    sweep = {**spec, "name": f"{spec['name']}_exhaustive", "grid": grid, "repeats": repeats}
    path = out / "exhaustive.yaml"
    path.write_text(yaml.safe_dump(sweep, sort_keys=False))
    return path


def point_of(start: dict, knobs: list[str], axes: dict):
    """A walk's point as a key of the exhaustive grid: its axes over the start's values."""
    values = tuple({**start, **axes}.get(k) for k in knobs)
    return values[0] if len(values) == 1 else values


def step_seconds(walk: Path) -> list[float]:
    """Seconds charged to the start's readings and to each step (``autoconfig_state.json``: each request's charge)."""
    state = json.loads((walk / "autoconfig_state.json").read_text())
    spent: dict[int, float] = {}
    for request, t in state["trials"].items():
        step = int(request.split("/", 1)[0].removeprefix("walk"))
        spent[step] = spent.get(step, 0.0) + float(t.get("charged_s") or 0.0)
    return [spent.get(k, 0.0) for k in range(max(spent) + 1)] if spent else []


def beyond_grid_share(answer: dict, start: dict, knobs: list[str], best_key, truth=None) -> float:
    """An endpoint outside the exhaustive grid (the walk went past its values) against the grid's best, by the walk's
    own readings (its points' medians, ``walk_points``) where the walk stood at that best too; else, with ``truth``
    (the exhaustive medians), as speed-ups over the start, each by its own readings (the walk's endpoint over its start
    against the grid's best over its start); else NaN."""
    key_of, axes = {"base": point_of(start, knobs, {})}, {}
    for step in answer.get("path") or []:
        if step["outcome"] != "stay":
            axes = {**axes, step["axis"]: step["to_value"]}
            if step.get("partner_axis"):  # a trade (issue 57) moved two knobs
                axes[step["partner_axis"]] = step["partner_to"]
            key_of[step["to_key"]] = point_of(start, knobs, axes)
    median = {key_of.get(p["key"]): p["median"] for p in answer.get("walk_points") or [] if p.get("median")}
    end = key_of.get((answer.get("best") or {}).get("key"))
    if end in median and best_key in median:
        return float(median[end]) / float(median[best_key])
    base = key_of["base"]
    if truth is not None and end in median and base in median and base in truth.index:
        return (float(median[end]) / float(median[base])) / (float(truth.max()) / float(truth[base]))
    return float("nan")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--workloads", default=",".join(WORKLOADS))
    p.add_argument("--runs", type=int, default=1)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument(
        "--budget-frac",
        type=float,
        default=1.0,
        help="the walk's budget as a share of the exhaustive wall (default 1: it stops by its own reasons; the "
        "point it stood at when a quarter was spent is printed beside)",
    )
    p.add_argument("--out", type=Path, default=None)
    p.add_argument("--reuse", action="store_true", help="reuse the exhaustive sweeps already in --out")
    args = p.parse_args()
    out = args.out or Path(tempfile.mkdtemp(prefix="bench_walk_"))
    out.mkdir(parents=True, exist_ok=True)
    print(f"bench_walk -> {out}; load {load()}", flush=True)
    machine = probe_machine()
    rows = []
    for name in args.workloads.split(","):
        text, grid = WORKLOADS[name]
        spec = yaml.safe_load(text + _COMMON)
        knobs = list(grid)
        start = start_values(spec, knobs)
        spec_path = out / f"{name}.yaml"
        spec_path.write_text(yaml.safe_dump(spec, sort_keys=False))
        for i in range(args.runs):
            base = out / name / f"run{i}"
            base.mkdir(parents=True, exist_ok=True)
            before = load()
            walled = base / "exhaustive_wall_s.txt"
            if args.reuse and walled.exists():
                ex_wall = float(walled.read_text())
            else:
                ex_wall, _ = run(
                    "sweep", str(exhaustive(spec, grid, args.repeats, base)), "--out", str(base / "exhaustive")
                )
                walled.write_text(f"{ex_wall}\n")
            truth = _medians(base / "exhaustive", knobs, "throughput")
            best_key, best = plain(truth.idxmax()), float(truth.max())
            budget = args.budget_frac * ex_wall
            mid = load()
            try:  # a budget below the walk's smallest plan (the start's readings and one step): what it asks, said
                prepare(spec_path, budget=f"{budget:.0f}s", objective=None, machine=machine)
            except SpecError as e:
                more = re.search(r"give --budget (\S+) or more", str(e))
                if more is None:
                    raise
                print(f"{name} run {i}: {budget:.0f} s is below the walk's smallest plan: given {more[1]}", flush=True)
                budget = parse_budget(more[1])
            walk = base / f"walk_{int(round(100 * args.budget_frac))}"
            if walk.exists():
                shutil.rmtree(walk)
            walk_wall, done = run("autoconfig", str(spec_path), "--budget", f"{budget:.0f}s", "--out", str(walk))
            after = load()
            answer = json.loads((walk / "autoconfig.json").read_text())

            end = point_of(start, knobs, (answer.get("best") or {}).get("axes") or {})
            got = float(truth.get(end, float("nan")))
            beyond = end not in truth.index  # the walk went past the grid's values: compared by its own readings
            # where it stood when a quarter of the exhaustive wall was spent: the last point whose step had ended
            spent, quarter = step_seconds(walk), None
            moves = [s for s in answer.get("path") or [] if s["outcome"] != "stay"]
            axes_so_far: dict = {}
            for k, seconds in enumerate(itertools.accumulate(spent)):
                if seconds > 0.25 * ex_wall:
                    break
                if k >= 1 and k - 1 < len(answer.get("path") or []):
                    step = answer["path"][k - 1]
                    if step["outcome"] != "stay":
                        axes_so_far[step["axis"]] = step["to_value"]
                        if step.get("partner_axis"):
                            axes_so_far[step["partner_axis"]] = step["partner_to"]
                quarter = point_of(start, knobs, axes_so_far)
            q_share = float(truth.get(quarter, float("nan"))) / best if quarter is not None else float("nan")
            path = "; ".join(
                f"{s.get('kind', 'verdict')} {s['axis']} {s['from_value']}->{s['to_value']}"
                + (f" & {s['partner_axis']} {s['partner_from']}->{s['partner_to']}" if s.get("partner_axis") else "")
                + (f" [raced {', '.join(map(str, s.get('values') or []))}]" if s["outcome"] == "stay" else "")
                + (f" ({s['outcome']}, {s['speedup']:.2f}x)" if isinstance(s.get("speedup"), (int, float)) else "")
                for s in answer.get("path") or []
            )
            share, frac = got / best, walk_wall / ex_wall
            if beyond:
                share = beyond_grid_share(answer, start, knobs, best_key, truth)
            rows.append(
                (
                    name,
                    i,
                    best_key,
                    best,
                    end,
                    share,
                    ex_wall,
                    walk_wall,
                    frac,
                    answer.get("stop_reason"),
                    len(moves),
                    quarter,
                    q_share,
                )
            )
            print(
                f"{name} run {i}: exhaustive best {best_key} {best:,.0f} env steps/s ({len(truth)} points x "
                f"{args.repeats}, {ex_wall:.0f} s, load {before} -> {mid}); the walk: {path or 'no step'}; stopped: "
                f"{answer.get('stop_text')}; endpoint {end} = "
                + (
                    "outside the exhaustive grid, against its best by the walk's own readings: "
                    if beyond
                    else f"{got:,.0f} by the exhaustive readings, "
                )
                + f"{100 * share:.0f}% of the best ({'within' if share >= 0.9 else 'NOT within'} 10%), in "
                f"{walk_wall:.0f} s = {100 * frac:.0f}% of the exhaustive wall (budget {budget:.0f} s; load -> "
                f"{after}); at a quarter of the exhaustive wall it stood at {quarter} "
                f"({100 * q_share:.0f}% of the best)",
                flush=True,
            )
    print(
        "\n| workload | exhaustive best (env steps/s) | walk: moves, stop | endpoint (share of best) | walk s / "
        "exhaustive s | at a quarter of the exhaustive wall (share) |"
    )
    print("|---|---|---|---|---|---|")
    for name, i, bk, b, end, share, ew, ww, frac, stop, moves, quarter, q_share in rows:
        print(
            f"| {name} (run {i}) | {bk}: {b:,.0f} | {moves}, {stop} | {end} ({100 * share:.0f}%) | {ww:.0f} / {ew:.0f} "
            f"= {100 * frac:.0f}% | {quarter} ({100 * q_share:.0f}%) |"
        )


if __name__ == "__main__":
    main()
