"""Issue 56's proof for warm readings: do windows of one built trainer read what fresh trials read, and does the race's
rule, fed warm windows, keep its error rates? Runs real trials (rlbench's own harness: rlbench/run/warm.py).

    python scripts/bench_warm.py agree SPEC [SPEC ...] --readings 6 --windows 3 --out DIR
    python scripts/bench_warm.py race SPEC --races 40 --windows 3 --out DIR
    python scripts/bench_warm.py race SPEC --races 10 --windows 3 --plant env_config.step_sleep_us=1.3 --out DIR
    python scripts/bench_warm.py processes DIR     # a process's own offset and the walk's move rule, per race
    python scripts/bench_warm.py launch SPEC --trials 3 --repeats 3 --out DIR
    python scripts/bench_warm.py stop SPEC --trials 4 --repeats 3 --out DIR

``agree``: per spec (its first configuration), ``--readings`` fresh trials (each its own process: one window, then
it exits, as a cold trial) and as many warm readings (windows of processes of ``--windows`` windows each), taken in
turns (fresh, warm, fresh, ...) so drift falls on both; the one change rule (``rlbench.analysis.change.unpaired``)
on the two sets of readings says whether they differ; also each side's wall, its measured share, and what the
paused trials used of a CPU while another read (their utilization rows outside their own windows).

``race``: ``--races`` races of the spec's first configuration against itself (A against A), each as the walk races
two points with ``warm_windows`` = ``--windows``: each side a process of ``--windows`` windows, read in turns, the
order rotating a round, a new process after its last window; after round 3 (``min_rounds``) the race's sequential
rule (``rlbench.autoconfig.decide.verdict``) after each round, up to the walk's cap (6). Prints how many races
called the two different (the aim: at most 5% of 40). ``--plant KEY=FACTOR`` multiplies one ``env_config`` number
of side B (a slower env by a known factor: a 1.3x planted change), and counts races that found B below.

``launch``: ``--trials`` new trials of the spec's first configuration started one after another (each launched as
its first window is read, as before) against started together (:meth:`rlbench.run.warm.WarmPool.launch`, as a walk
step's new entrants are), in turns (one after another, together, ...) ``--repeats`` times a side: the seconds from
the first launch to the last first window read, and the steady iterations' share of them.

``stop``: ``--trials`` trials of the spec's first configuration launched together, one window read from each, then
the pool closed as on Ctrl-C (:meth:`rlbench.run.warm.WarmPool.close` with ``interrupted``), ``--repeats`` times: the
seconds the close took, and each trial's status.

Every figure is a median or a count over what ran, printed with the load it ran at; nothing is dropped. Writes each
race's or spec's trials under ``--out`` (results folders as a sweep's).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import pandas as pd

from rlbench.analysis.change import by_rounds, unpaired
from rlbench.analysis.findings import CHANGE_THRESHOLD, ROUNDS_FOR_EVIDENCE
from rlbench.analysis.trial_rows import steady_throughput
from rlbench.autoconfig.decide import MIN_ROUNDS, verdict
from rlbench.measure.machine import probe_machine
from rlbench.planning.plan import TrialPlan, plan_trials, write_plan
from rlbench.results.events import Event
from rlbench.results.layout import ResultsFolder
from rlbench.results.tables import iteration_rows, iterations_frame, read_utilization
from rlbench.run.raytoken import secure_ray
from rlbench.run.trial import TrialLauncher
from rlbench.run.warm import WarmPool
from rlbench.spec.load import load_spec


class Bench:
    """Plans of one configuration under ``out``, each launched through one warm pool."""

    def __init__(self, spec: Path, out: Path):
        from rich.console import Console

        self.loaded = load_spec(spec)
        self.template = plan_trials(self.loaded, probe_machine())[0]
        self.out = out
        out.mkdir(parents=True, exist_ok=True)
        self.folder = ResultsFolder(out)
        secure_ray(Console(stderr=True), create=True)
        self.launcher = TrialLauncher(frameworks=(self.template.config.framework,))
        self.launcher.warm()
        self.launcher.wait_ready()
        self.pool = WarmPool(self.folder, self.launcher, prepare=lambda p: write_plan(self.folder, p), on_record=list)
        self.n = 0

    def plan(self, windows: int, plant: tuple[str, float] | None = None) -> TrialPlan:
        """A new trial of the configuration read in ``windows`` windows (1: a fresh trial)."""
        self.n += 1
        t = self.template
        config = t.config
        if plant is not None:
            key, factor = plant
            env = config.environment
            value = env.env_config[key] * factor
            config = config.model_copy(
                update={"environment": env.model_copy(update={"env_config": {**env.env_config, key: value}})}
            )
        return t.model_copy(
            update={"trial_id": f"t{t.index:03d}r{self.n}", "repeat": self.n, "config": config}
        ).in_windows(windows)

    def reading(self, plan: TrialPlan) -> tuple[float | None, float, float]:
        """Read the next window of ``plan``'s trial: (its throughput, the seconds it cost, its steady iterations'
        seconds)."""
        got = self.pool.read(plan)
        its = iterations_frame(iteration_rows(plan.trial_id, self.folder.trial(plan.trial_id).events()))
        mine = its[(its["window"] == got.window) & ~its["warmup"].astype(bool)]
        return (steady_throughput(mine) if got.read else None), got.charged_s, float(mine["wall_s"].sum())

    def paused_cpus(self) -> float | None:
        """Cores a paused trial used, on average, while it was kept between its windows (its utilization rows after
        its first window ended, outside its windows)."""
        used = []
        for trial in self.folder.trials():
            events = trial.events()
            ends = [e for e in events if e.get("event") == Event.WINDOW_END]
            if len(ends) < 2 or not trial.utilization.exists():
                continue
            its = iterations_frame(iteration_rows(trial.trial_id, events))
            spans = its.groupby("window").agg(t0=("t_start_s", "min"), t1=("t_end_s", "max"))
            util = read_utilization([trial])
            procs = util[util["kind"] == "process"]
            first_end, last_start = float(spans["t1"].iloc[0]), float(spans["t0"].iloc[-1])
            mask = (procs["t_s"] > first_end) & (procs["t_s"] < last_start)
            for _, span in spans.iterrows():
                mask &= ~((procs["t_s"] >= span["t0"] - 0.5) & (procs["t_s"] <= span["t1"] + 0.5))
            paused = procs[mask]
            if paused["t_s"].nunique():
                used.append(float(paused["cpu_pct"].sum() / 100.0 / paused["t_s"].nunique()))
        return float(pd.Series(used).median()) if used else None

    def close(self) -> None:
        self.pool.close()


def agree(spec: Path, readings: int, windows: int, out: Path) -> None:
    bench = Bench(spec, out)
    t0 = time.monotonic()
    fresh, warm = [], []
    cost = {"fresh": [0.0, 0.0], "warm": [0.0, 0.0]}  # side -> [seconds charged, steady seconds]
    kept: TrialPlan | None = None
    try:
        for i in range(readings):
            value, charged, steady_s = bench.reading(bench.plan(1))
            fresh.append(value)
            cost["fresh"][0] += charged
            cost["fresh"][1] += steady_s
            if kept is None or not bench.pool.holds(kept.trial_id):
                kept = bench.plan(windows)
            value, charged, steady_s = bench.reading(kept)
            warm.append(value)
            cost["warm"][0] += charged
            cost["warm"][1] += steady_s
            print(f"  reading {i + 1}: fresh {fresh[-1]}, warm {warm[-1]} (load {os.getloadavg()[0]:.1f})", flush=True)
    finally:
        bench.close()
    a, b = [v for v in fresh if v is not None], [v for v in warm if v is not None]
    change = unpaired(a, b)
    print(
        f"{spec}: fresh median {pd.Series(a).median():.1f} env steps/s ({len(a)} of {len(fresh)}), warm median "
        f"{pd.Series(b).median():.1f} ({len(b)} of {len(warm)}); warm/fresh {change.ratio:.3f} "
        f"(95% CI {change.ci_low:.3f}-{change.ci_high:.3f}, p {change.p_value}), the rule: "
        f"{'different' if change.differs else 'no change'}"
    )
    print(
        f"  cost: fresh {cost['fresh'][0]:.0f} s for {len(fresh)} readings (measured "
        f"{100 * cost['fresh'][1] / max(cost['fresh'][0], 1e-9):.0f}%), warm {cost['warm'][0]:.0f} s (measured "
        f"{100 * cost['warm'][1] / max(cost['warm'][0], 1e-9):.0f}%); paused trials used "
        f"{bench.paused_cpus()} CPUs while kept; wall {time.monotonic() - t0:.0f} s, load {os.getloadavg()[0]:.1f}"
    )


def race(spec: Path, races: int, windows: int, out: Path, plant: tuple[str, float] | None) -> None:
    cap = max(MIN_ROUNDS, min(6, ROUNDS_FOR_EVIDENCE))
    outcomes: list[tuple[str, int, float]] = []
    t0 = time.monotonic()
    for r in range(races):
        bench = Bench(spec, out / f"race{r:02d}")
        sides = {"A": None, "B": None}
        rounds: dict[str, dict[int, float]] = {"A": {}, "B": {}}
        said = "unknown"
        try:
            for rnd in range(cap):
                order = ["A", "B"] if rnd % 2 == 0 else ["B", "A"]
                for side in order:
                    plan = sides[side]
                    if plan is None or not bench.pool.holds(plan.trial_id):
                        plan = sides[side] = bench.plan(windows, plant if side == "B" else None)
                    value, _, _ = bench.reading(plan)
                    if value is not None:
                        rounds[side][rnd] = value
                if rnd + 1 < MIN_ROUNDS:
                    continue
                a_med = pd.Series(list(rounds["A"].values())).median()
                b_med = pd.Series(list(rounds["B"].values())).median()
                lead, other = ("A", "B") if a_med >= b_med else ("B", "A")
                change = by_rounds(rounds[lead], rounds[other])
                said = verdict(change, CHANGE_THRESHOLD, rnd + 1 == MIN_ROUNDS)
                if said != "unknown":
                    said = f"{said} ({other} below)" if said == "different" else said
                    break
        finally:
            bench.close()
        ratio = pd.Series(list(rounds["B"].values())).median() / pd.Series(list(rounds["A"].values())).median()
        outcomes.append((said, rnd + 1, float(ratio)))
        print(
            f"race {r + 1}: {said} after {rnd + 1} rounds, B/A {ratio:.3f} (load {os.getloadavg()[0]:.1f})", flush=True
        )
    called = sum(1 for s, _, _ in outcomes if s.startswith("different"))
    found = sum(1 for s, _, _ in outcomes if s == "different (B below)")
    print(
        f"{races} races, windows {windows}{', plant ' + str(plant) if plant else ''}: different in {called} "
        f"({100 * called / races:.1f}%; B found below in {found}), same in "
        f"{sum(1 for s, _, _ in outcomes if s == 'same')}, unknown at the cap in "
        f"{sum(1 for s, _, _ in outcomes if s == 'unknown')}; rounds mean "
        f"{sum(n for _, n, _ in outcomes) / races:.2f}; wall {time.monotonic() - t0:.0f} s"
    )


def rounds_of(race_dir: Path, windows: int) -> dict[str, dict[int, float]]:
    """A race's readings by side and round, from its folder: its trials in launch order come in pairs, one a side,
    the pair launched at round ``j * windows``, A first in an even round (the order rotates a round); window k of
    pair j is round ``j * windows + k``."""
    folder = ResultsFolder(race_dir)
    trials = sorted(folder.trials(), key=lambda t: int(t.trial_id.rsplit("r", 1)[1]))
    out: dict[str, dict[int, float]] = {"A": {}, "B": {}}
    for j in range(0, len(trials) - 1, 2):
        first_round = (j // 2) * windows
        sides = ("A", "B") if first_round % 2 == 0 else ("B", "A")
        for side, trial in zip(sides, trials[j : j + 2]):
            its = iterations_frame(iteration_rows(trial.trial_id, trial.events()))
            for w, group in its[~its["warmup"].astype(bool)].groupby("window"):
                value = steady_throughput(group)
                if value is not None:
                    out[side][first_round + int(w)] = value
    return out


def replay(out: Path, windows: int) -> None:
    """Each race under ``out`` judged again from its folder: the walk's move rule (``walk.steps.gain``: B above A by
    the one change rule and by the tolerance) on all its rounds, each way; a move between identical configurations is
    an error."""
    from rlbench.autoconfig.walk.steps import gain
    from rlbench.results.records import read_record

    ups = downs = n = 0
    wall_s = steady_s = 0.0
    for race_dir in sorted(out.glob("race*")):
        rounds = rounds_of(race_dir, windows)
        if not rounds["A"] or not rounds["B"]:
            continue
        folder = ResultsFolder(race_dir)
        records = [r for t in folder.trials() if (r := read_record(t)) is not None and r.started_epoch]
        if records:  # the race's own wall: its first launch to its last trial's exit (its trials overlap)
            wall_s += max(r.started_epoch + (r.trial_wall_s or 0) for r in records) - min(
                r.started_epoch for r in records
            )
            for t in folder.trials():
                its = iterations_frame(iteration_rows(t.trial_id, t.events()))
                steady_s += float(its.loc[~its["warmup"].astype(bool), "wall_s"].sum())
        n += 1
        ups += gain(by_rounds(rounds["A"], rounds["B"]), CHANGE_THRESHOLD)
        downs += gain(by_rounds(rounds["B"], rounds["A"]), CHANGE_THRESHOLD)
    print(f"{out}: {n} races; the walk would have moved A -> B in {ups}, B -> A in {downs} (of {n} each way)")
    if wall_s:
        share = 100 * steady_s / wall_s
        print(f"  the races' wall {wall_s:.0f} s, of it steady iterations {steady_s:.0f} s ({share:.0f}%)")


def processes(out: Path) -> None:
    """How much a process's own offset is, from the races under ``out``: the window noise within a process (sd of
    log throughput, pooled) and, from the processes that read side by side (A's and B's i-th, launched in the same
    rounds), the sd of a process's offset: var(log A_i - log B_i) = 2 sd_process^2 + 2 sd_window^2 / windows."""
    import numpy as np

    within, diffs, k = [], [], []
    for race_dir in sorted(out.glob("race*")):
        folder = ResultsFolder(race_dir)
        means = []
        for trial in folder.trials():
            its = iterations_frame(iteration_rows(trial.trial_id, trial.events()))
            per = its[~its["warmup"].astype(bool)].groupby("window")["env_steps_per_s"].median().dropna()
            logs = np.log(per.to_numpy())
            if len(logs) > 1:
                within.append(float(np.var(logs, ddof=1)))
            means.append((trial.trial_id, float(logs.mean()) if len(logs) else None, len(logs)))
        means.sort(key=lambda m: int(m[0].rsplit("r", 1)[1]))  # launch order: A1, B1, then B2, A2 (rotated)
        for i in range(0, len(means) - 1, 2):
            (_, x, kx), (_, y, ky) = means[i], means[i + 1]
            if x is not None and y is not None:
                diffs.append(x - y)
                k.append((kx + ky) / 2)
    if not within or not diffs:
        print(f"{out}: no race with processes of several windows")
        return
    w2 = float(np.mean(within))
    d2 = float(np.mean(np.square(diffs)))
    p2 = max(0.0, (d2 - 2 * w2 / float(np.mean(k))) / 2)
    print(
        f"{out}: {len(diffs)} pairs of processes read side by side; window sd {w2**0.5:.3f}, sd of a side-by-side "
        f"pair's log ratio {d2**0.5:.3f}, so a process's own sd about {p2**0.5:.3f} (log units)"
    )


def launch(spec: Path, trials: int, repeats: int, out: Path) -> None:
    bench = Bench(spec, out)
    walls: dict[str, list[float]] = {"one after another": [], "together": []}
    shares: dict[str, list[float]] = {k: [] for k in walls}
    try:
        for _ in range(repeats):
            for how in walls:
                plans = [bench.plan(3) for _ in range(trials)]
                t = time.monotonic()
                if how == "together":
                    bench.pool.launch(plans)
                steady = sum(bench.reading(plan)[2] for plan in plans)
                wall = time.monotonic() - t
                for plan in plans:
                    bench.pool.retire(plan.trial_id)
                walls[how].append(wall)
                shares[how].append(steady / wall)
                print(f"{how}: {trials} trials to their first window read in {wall:.1f} s, {steady / wall:.0%} steady")
    finally:
        bench.close()
    load = os.getloadavg()[0]
    for how, got in walls.items():
        print(
            f"{how}: median {pd.Series(got).median():.1f} s ({', '.join(f'{w:.1f}' for w in got)}), steady "
            f"{pd.Series(shares[how]).median():.0%}; load {load:.1f}"
        )
    ratio = pd.Series(walls["together"]).median() / pd.Series(walls["one after another"]).median()
    print(f"together / one after another: {ratio:.2f}")


def stop(spec: Path, trials: int, repeats: int, out: Path) -> None:
    bench = Bench(spec, out)
    took = []
    try:
        for _ in range(repeats):
            plans = [bench.plan(3) for _ in range(trials)]
            bench.pool.launch(plans)
            for plan in plans:
                bench.reading(plan)
            t = time.monotonic()
            records = bench.pool.close(interrupted=True)
            took.append(time.monotonic() - t)
            print(f"{trials} kept trials closed as on Ctrl-C in {took[-1]:.2f} s: {[r.status for r in records]}")
    finally:
        bench.close()
    each = ", ".join(f"{w:.2f}" for w in took)
    print(f"median {pd.Series(took).median():.2f} s ({each}); load {os.getloadavg()[0]:.1f}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="what", required=True)
    a = sub.add_parser("agree")
    a.add_argument("specs", nargs="+", type=Path)
    a.add_argument("--readings", type=int, default=6)
    a.add_argument("--windows", type=int, default=3)
    a.add_argument("--out", type=Path, required=True)
    r = sub.add_parser("race")
    r.add_argument("spec", type=Path)
    r.add_argument("--races", type=int, default=40)
    r.add_argument("--windows", type=int, default=3)
    r.add_argument("--plant", default=None, help="KEY=FACTOR: side B's env_config KEY times FACTOR")
    r.add_argument("--out", type=Path, required=True)
    la = sub.add_parser("launch")
    la.add_argument("spec", type=Path)
    la.add_argument("--trials", type=int, default=3)
    la.add_argument("--repeats", type=int, default=3)
    la.add_argument("--out", type=Path, required=True)
    st = sub.add_parser("stop")
    st.add_argument("spec", type=Path)
    st.add_argument("--trials", type=int, default=4)
    st.add_argument("--repeats", type=int, default=3)
    st.add_argument("--out", type=Path, required=True)
    p = sub.add_parser("processes")
    p.add_argument("out", type=Path)
    p.add_argument("--windows", type=int, default=3)
    args = parser.parse_args(argv)
    if args.what == "processes":
        processes(args.out)
        replay(args.out, args.windows)
        return 0
    if args.what == "launch":
        launch(args.spec, args.trials, args.repeats, args.out)
        return 0
    if args.what == "stop":
        stop(args.spec, args.trials, args.repeats, args.out)
        return 0
    if args.what == "agree":
        for spec in args.specs:
            agree(spec, args.readings, args.windows, args.out / spec.stem)
    else:
        plant = None
        if args.plant:
            key, _, factor = args.plant.partition("=")
            plant = (key.removeprefix("env_config."), float(factor))
        race(args.spec, args.races, args.windows, args.out, plant)
    return 0


if __name__ == "__main__":
    sys.exit(main())
