"""What share of a run's wall its readings are: the steady-state iterations every reading is a median of,
against the start-up, warm-up and shutdown around them, per results folder (a sweep's or an autoconfig run's).

    python scripts/bench_readings.py RESULTS_DIR [RESULTS_DIR ...]

Per folder, and per phase for an autoconfig folder (``probe``, ``search``, ``race``: ``trials.parquet``'s
``phase``), summed over its trials (failed and timed-out ones too: they cost wall as well):

- ``trial_wall_s``: launch to exit of the trial processes (``trials.parquet``);
- ``steady_s``: the steady-state iterations' ``wall_s`` (``iterations.parquet``, ``warmup`` false): the readings;
- ``warmup_s``: the warm-up iterations' ``wall_s`` (the first, with RLlib's lazy initialisation, among them);
- ``ray_init_s``, ``build_s``, ``shutdown_s``: the runtime's start, the algorithm's build, their stop;
- ``other_s``: the rest of ``trial_wall_s``: the process's start and imports, the harness's own work between
  phases;

each also as a share of ``trial_wall_s``; ``overlap_s`` is how much of that ran beside the previous trial's
shutdown (``overlap_trial_start``), and with the manifest's ``started_at``/``ended_at`` the run's own wall, whose
rest is the sweep's work between trials (checks, reaping, the tables). Reads the tables only (``rlbench report``
writes them where they are missing); runs nothing. A folder of warm trials (issue 56: several windows from one
built algorithm) is read the same way; its trials overlap in time, so the run's wall is its figure, and what the
trials kept built beside each measured window used of the cores is printed too (their utilization rows inside the
window: what a paused candidate costs the one measuring). Last, the launch floor (:func:`launch_floor`): the readings'
share with each launch's ``ray.init``, then the run's start before its first trial, then each launch's build taken off
its wall: the most a runtime kept across the trials, a harness ready before the command and a build shared by the
candidates could each give.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

import pandas as pd

from rlbench.results.layout import ITERATIONS_TABLE, MANIFEST_FILE, TRIALS_TABLE, UTILIZATION_TABLE, ResultsFolder

#: The parts of a trial's wall, in the order printed (``other_s`` is what is left of ``trial_wall_s``).
PARTS = ("steady_s", "warmup_s", "ray_init_s", "build_s", "shutdown_s", "other_s")


def parts(trials: pd.DataFrame, iterations: pd.DataFrame) -> dict[str, float]:
    """The summed seconds of each part of these trials' wall (:data:`PARTS`), their ``trial_wall_s`` and
    ``overlap_s``, and the trial count."""
    it = iterations[iterations["trial_id"].isin(trials["trial_id"])]
    steady = it.loc[~it["warmup"].astype(bool), "wall_s"]
    warm = it.loc[it["warmup"].astype(bool), "wall_s"]
    out = {
        "trials": float(len(trials)),
        "trial_wall_s": float(trials["trial_wall_s"].fillna(0).sum()),
        "overlap_s": float(trials["overlap_s"].fillna(0).sum()) if "overlap_s" in trials else 0.0,
        "steady_s": float(steady.sum()),
        "warmup_s": float(warm.sum()),
    }
    for col in ("ray_init_s", "build_s", "shutdown_s"):
        out[col] = float(trials[col].fillna(0).sum()) if col in trials else 0.0
    out["other_s"] = out["trial_wall_s"] - sum(out[p] for p in PARTS[:-1])
    return out


def run_span(folder: Path) -> tuple[float, float] | None:
    """The run's start and end (epoch seconds) from its manifest's ``started_at`` and ``ended_at``; None where either
    is missing."""
    path = folder / MANIFEST_FILE
    if not path.exists():
        return None
    m = json.loads(path.read_text())
    try:
        return datetime.fromisoformat(m["started_at"]).timestamp(), datetime.fromisoformat(m["ended_at"]).timestamp()
    except (KeyError, TypeError, ValueError):
        return None


def beside_windows(trials: pd.DataFrame, iterations: pd.DataFrame, utilization: pd.DataFrame) -> tuple[float, float]:
    """(trials kept beside a measured window, the cores they used then), each the mean over the run's steady windows:
    the other trials' process rows (the harness's left out) whose time falls inside the window, their CPU summed per
    sampling instant and averaged over the window's instants."""
    t0 = trials.set_index("trial_id")["started_epoch"]
    procs = utilization[(utilization["kind"] == "process") & (utilization["role"] != "harness")]
    procs = procs.assign(epoch=procs["t_s"] + procs["trial_id"].map(t0))
    kept, cores = [], []
    steady = iterations[~iterations["warmup"].astype(bool)].dropna(subset=["window"])
    for (tid, _), window in steady.groupby(["trial_id", "window"]):
        start, end = t0[tid] + window["t_start_s"].min(), t0[tid] + window["t_end_s"].max()
        others = procs[(procs["trial_id"] != tid) & (procs["epoch"] >= start) & (procs["epoch"] <= end)]
        kept.append(others["trial_id"].nunique())
        per_trial = others.groupby("trial_id").apply(lambda r: r["cpu_pct"].sum() / 100.0 / r["t_s"].nunique())
        cores.append(float(per_trial.sum()) if len(per_trial) else 0.0)
    return (sum(kept) / len(kept), sum(cores) / len(cores)) if kept else (0.0, 0.0)


#: A gap between consecutive steady iterations of different windows shorter than this is a handover (the pool seeing
#: one window's end, opening the next gate, that trial starting its first iteration); longer ones are launches.
HANDOVER_MAX_S = 1.0


def handovers(trials: pd.DataFrame, iterations: pd.DataFrame) -> list[float]:
    """The handovers between windows (seconds, in the run's order): the gaps under :data:`HANDOVER_MAX_S` from one
    steady iteration's end to the next one's start where the two are of different windows, on the run's clock."""
    t0 = trials.set_index("trial_id")["started_epoch"]
    steady = iterations[~iterations["warmup"].astype(bool)].dropna(subset=["window"])
    steady = steady.assign(
        start=steady["t_start_s"] + steady["trial_id"].map(t0), end=steady["t_end_s"] + steady["trial_id"].map(t0)
    ).sort_values("start")
    gaps = []
    prev = None
    for row in steady.itertuples():
        if prev is not None and (row.trial_id, row.window) != (prev.trial_id, prev.window):
            gap = row.start - prev.end
            if 0 <= gap < HANDOVER_MAX_S:
                gaps.append(float(gap))
        prev = row
    return gaps


#: Trials started within this many seconds of a launch's first are one launch (a walk step's new points, a history
#: round's releases: :meth:`rlbench.run.warm.WarmPool.launch` starts them together); a launch's runtime start and
#: build are on the run's path once, as long as its longest.
TOGETHER_S = 1.0


@dataclass
class LaunchFloor:
    """What a run's launches cost on its path, and the readings' share of its wall with each part gone: the most a
    runtime kept across the trials, a harness ready before the command, and a build shared by the candidates could
    each give (issue 56's aim of 75%, on 2026-11-30's walks: docs/MEASUREMENT.md 11)."""

    launches: list[int]
    """Trials in each launch, in the run's order."""
    ray_init_s: float
    """Each launch's longest ``ray_init_s``, summed."""
    start_s: float
    """The run's start to its first trial's (the command's imports, checks, env ceilings, the fork server)."""
    build_s: float
    """Each launch's longest ``build_s``, summed."""
    shares: tuple[float, float, float, float]
    """The readings' share of the run's wall: as it is, without the runtime starts, without the run's start too, and
    without the builds too."""


def launch_floor(trials: pd.DataFrame, steady_s: float, start: float, wall_s: float) -> LaunchFloor:
    """:class:`LaunchFloor` of a run that started at epoch ``start``, took ``wall_s`` and read ``steady_s``."""
    rows = trials.sort_values("started_epoch")
    launch, first, numbers = -1, float("-inf"), []
    for at in rows["started_epoch"]:
        if at - first >= TOGETHER_S:
            launch, first = launch + 1, at
        numbers.append(launch)
    launches = rows.groupby(numbers, sort=True)
    ray_init_s = float(launches["ray_init_s"].max().fillna(0).sum())
    build_s = float(launches["build_s"].max().fillna(0).sum())
    start_s = float(rows["started_epoch"].min() - start) if len(rows) else 0.0
    shares, left = [], wall_s
    for cut in (0.0, ray_init_s, start_s, build_s):
        left -= cut
        shares.append(steady_s / left if left > 0 else float("nan"))
    sizes = [int(n) for n in launches.size()]
    return LaunchFloor(sizes, ray_init_s, start_s, build_s, (shares[0], shares[1], shares[2], shares[3]))


def sizes(launches: list[int]) -> str:
    """How many launches started how many trials, smallest first: ``"2 of 1 trial, 1 of 3 trials"``."""
    return ", ".join(f"{n} of {k} trial{'s' if k > 1 else ''}" for k, n in sorted(Counter(launches).items()))


def line(label: str, p: dict[str, float]) -> str:
    """One row: the trials, their wall, and each part in seconds with its share of that wall."""
    wall = p["trial_wall_s"] or float("nan")
    cells = " ".join(f"{p[k]:>8.1f} {p[k] / wall:>5.0%}" for k in PARTS)
    return f"{label:<10} {int(p['trials']):>6} {p['trial_wall_s']:>9.1f} {cells} {p['overlap_s']:>9.1f}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("folders", nargs="+", type=Path, help="results folders (a sweep's or an autoconfig run's)")
    args = parser.parse_args()
    header = " ".join(f"{k:>14}" for k in PARTS)
    missing = 0
    for path in args.folders:
        folder = ResultsFolder(path)
        tables = {name: folder.table(name) for name in (TRIALS_TABLE, ITERATIONS_TABLE)}
        if not all(t.exists() for t in tables.values()):
            print(f"{path}: no {TRIALS_TABLE} / {ITERATIONS_TABLE}; run `rlbench report {path}` first", file=sys.stderr)
            missing += 1
            continue
        trials, iterations = (pd.read_parquet(t) for t in tables.values())
        span = run_span(path)
        wall = None if span is None else span[1] - span[0]
        print(f"\n{path}" + ("" if wall is None else f": the run's wall {wall:.1f} s"))
        print(f"{'':<10} {'trials':>6} {'wall_s':>9} {header} {'overlap_s':>9}")
        if "phase" in trials and trials["phase"].notna().any():
            for phase, group in trials.groupby(trials["phase"].fillna("-"), sort=False):
                print(line(str(phase), parts(group, iterations)))
        total = parts(trials, iterations)
        print(line("all", total))
        if "window" in iterations and iterations["window"].notna().any():
            warm = iterations.dropna(subset=["window"])
            windows = warm.groupby(["trial_id", "window"]).ngroups
            print(
                f"warm trials (issue 56): {windows} windows read from {warm['trial_id'].nunique()} processes; a warm "
                "trial's wall spans its pauses, so the per-trial sums above overlap: the run's wall is the figure"
            )
            gaps = handovers(trials, iterations)
            if gaps:
                print(
                    f"handovers between windows (gaps under {HANDOVER_MAX_S:.0f} s): {len(gaps)}, median "
                    f"{pd.Series(gaps).median():.3f} s, {sum(gaps):.1f} s in all"
                )
            if folder.table(UTILIZATION_TABLE).exists():
                kept, cores = beside_windows(trials, iterations, pd.read_parquet(folder.table(UTILIZATION_TABLE)))
                print(
                    f"beside a measured window: {kept:.1f} other trials kept built on average, using {cores:.3f} "
                    f"cores together ({cores / kept if kept else 0.0:.3f} each)"
                )
        if wall:
            share = total["steady_s"] / wall
            print(f"readings (steady iterations) {total['steady_s']:.1f} s of the run's {wall:.1f} s: {share:.0%}")
            if span is not None and "started_epoch" in trials:
                floor = launch_floor(trials, total["steady_s"], span[0], wall)
                now, no_init, no_start, no_build = floor.shares
                print(
                    f"launches: {len(floor.launches)} ({sizes(floor.launches)}); the readings' "
                    f"share without each launch's ray.init ({floor.ray_init_s:.1f} s on the path) {no_init:.0%}, "
                    f"and without the run's start before its first trial ({floor.start_s:.1f} s) {no_start:.0%}, and "
                    f"without the builds ({floor.build_s:.1f} s) {no_build:.0%}"
                )
    return 1 if missing else 0


if __name__ == "__main__":
    sys.exit(main())
