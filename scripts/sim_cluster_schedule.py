"""Past this machine, by simulation: the ``--parallel`` scheduler on a simulated cluster, with measured trial lengths.

Replays trial lengths (``trial_wall_s`` of the ok trials in the results folders given with ``--results``, or
the lengths measured by scripts/bench_parallel.py listed in :data:`MEASURED_S`) on a simulated cluster of two
node types, calling the scheduler the sweep calls (:func:`rlbench.run.schedule.choose`, with the sweep's
:class:`~rlbench.run.parallel.NodePool` and node history), and prints per scenario the makespan against the
serial sum (one trial at a time) and against a lower bound:
``max(longest trial, sum over trials of its length x its nodes / the nodes that can hold anything)``. A
scenario can lose a share of its nodes at random times: the trials on a lost node fail then (their time
spent, as a real sweep's trial fails with "node lost"), the node never comes back, and trials that no node
set left can hold fail as the sweep fails them. A trial on a type-B node runs ``--b-speed`` times as fast.

    python scripts/sim_cluster_schedule.py [--results DIR ...] [--trials 500] [--seed 0]
"""

from __future__ import annotations

import argparse
import heapq
import math
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from rlbench.measure.machine import ClusterInfo, NodeInfo  # noqa: E402
from rlbench.planning.placement import NodeRoom, pack  # noqa: E402
from rlbench.run.parallel import NodePool  # noqa: E402
from rlbench.run.schedule import NodeHistory, Waiting, choose  # noqa: E402

#: Trial walls (s), launch to exit, of the tiny CartPole PPO grid of scripts/bench_parallel.py with --parallel 1
#: (2026-11-27, 2-core VM, load average 7.7-11.5 from other work: `python scripts/bench_parallel.py`).
MEASURED_S = (45.4, 34.9, 29.0, 33.4)

#: The simulated configurations: (name, env runners of 1 CPU beside a 1-CPU driver, relative length).
CONFIGS = (("1 runner", 1, 1.0), ("7 runners", 7, 0.7), ("15 runners", 15, 0.6), ("31 runners", 31, 0.55))


@dataclass(frozen=True)
class Scenario:
    """A simulated cluster: ``a`` nodes of type A with ``a_cpus`` CPUs, ``b`` of type B with ``b_cpus``."""

    name: str
    a: int
    a_cpus: float
    b: int
    b_cpus: float
    lost_frac: float
    limit: int | None = None


SCENARIOS = (
    Scenario("64 nodes, 2 types", 48, 8, 16, 16, 0.0),
    Scenario("64 nodes, 2 types, 5% lost", 48, 8, 16, 16, 0.05),
    Scenario("64 nodes, --parallel 8", 48, 8, 16, 16, 0.0, limit=8),
    Scenario("16 nodes, 1 type", 16, 8, 0, 16, 0.0),
)


def cluster_of(s: Scenario) -> ClusterInfo:
    nodes = [
        NodeInfo(
            node_id=f"a{i:03d}",
            node_ip=f"10.0.0.{i}",
            is_head=False,
            resources={"CPU": s.a_cpus},
            cpu_model="A",
            logical_cores=int(s.a_cpus),
            memory_bytes=32 * 2**30,
        )
        for i in range(s.a)
    ]
    nodes += [
        NodeInfo(
            node_id=f"b{i:03d}",
            node_ip=f"10.1.0.{i}",
            is_head=False,
            resources={"CPU": s.b_cpus},
            cpu_model="B",
            logical_cores=int(s.b_cpus),
            memory_bytes=64 * 2**30,
        )
        for i in range(s.b)
    ]
    total = {"CPU": float(s.a * s.a_cpus + s.b * s.b_cpus)}
    return ClusterInfo(
        address="sim", gcs_address="sim:6379", nodes=nodes, total_resources=total, available_resources=total
    )


def simulate(s: Scenario, trials: list[tuple[str, str, tuple, float]], seed: int, b_speed: float) -> dict:
    """Run ``trials`` ((trial id, config, bundles, length s on type A)) on ``s``; the figures of the run."""
    rng = np.random.default_rng(seed)
    pool, history = NodePool(cluster_of(s)), NodeHistory()
    lost_at = {}
    if s.lost_frac:
        ids = [r.node_id for r in pool.rooms]
        horizon = sum(t[3] for t in trials) / max(1, len(ids))  # about the makespan with every node busy
        for node in rng.choice(ids, size=int(round(s.lost_frac * len(ids))), replace=False):
            lost_at[str(node)] = float(rng.uniform(0, horizon))
    events: list[tuple[float, int, str, str]] = [(t, 1, "lost", n) for n, t in lost_at.items()]
    heapq.heapify(events)
    waiting = [Waiting(tid, cfg, bundles) for tid, cfg, bundles, _ in trials]
    length = {tid: ln for tid, _, _, ln in trials}
    running: dict[str, tuple[float, list[str]]] = {}
    now, done, failed = 0.0, 0, 0
    while waiting or running:
        room = None if s.limit is None else s.limit - len(running)
        for trial, where in choose(waiting, pool.free(), history, room):
            waiting = [w for w in waiting if w.trial_id != trial.trial_id]
            history.add(trial.config, where)
            pool.take(trial.trial_id, where)
            speed = b_speed if where.node_type.startswith("B") else 1.0
            end = now + length[trial.trial_id] / speed
            running[trial.trial_id] = (end, where.node_ids)
            heapq.heappush(events, (end, 0, "end", trial.trial_id))
        if not running:  # nothing runs and nothing fits: the nodes that could hold them were lost
            failed += len(waiting)
            break
        now, _, kind, what = heapq.heappop(events)
        if kind == "end" and what in running:
            running.pop(what)
            pool.give_back(what, [])
            done += 1
        elif kind == "lost":
            pool.lost.add(what)
            for tid, (_, nodes) in list(running.items()):
                if what in nodes:  # it fails with "node lost" now; its other nodes go back
                    running.pop(tid)
                    pool.give_back(tid, [what])
                    failed += 1
    return {"makespan_s": now, "done": done, "failed": failed}


def cheapest(s: Scenario, bundles, length_s: float, b_speed: float) -> tuple[float, float]:
    """(seconds, node-seconds) of a trial on the type where it takes the fewest node-seconds (inf when none holds
    it)."""
    best = (math.inf, math.inf)
    for kind, count, cpus, speed in (("A", s.a, s.a_cpus, 1.0), ("B", s.b, s.b_cpus, b_speed)):
        where = pack(bundles, [NodeRoom(f"{kind}{i}", kind, cpus, 0.0) for i in range(count)])
        if where is not None:
            seconds = length_s / speed
            best = min(best, (seconds * len(set(where)), seconds), key=lambda p: p[0])
    return best[1], best[0]


def lower_bound_s(s: Scenario, trials, b_speed: float) -> float:
    """No schedule ends sooner: the longest trial at its best, and every trial's fewest node-seconds spread
    over all the nodes."""
    costs = [cheapest(s, bundles, ln, b_speed) for _, _, bundles, ln in trials]
    return max(max(c[0] for c in costs), sum(c[1] for c in costs) / (s.a + s.b))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--results",
        type=Path,
        action="append",
        default=[],
        help="a results folder whose ok trials' trial_wall_s are the lengths replayed (repeatable)",
    )
    parser.add_argument("--trials", type=int, default=500)
    parser.add_argument("--b-speed", type=float, default=1.3, help="how much faster a type-B node runs a trial")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    lengths = list(MEASURED_S)
    if args.results:
        import pandas as pd

        frames = [pd.read_parquet(r / "trials.parquet") for r in args.results]
        lengths = [float(v) for f in frames for v in f.loc[f["status"] == "ok", "trial_wall_s"].dropna()]
        if not lengths:
            sys.exit("no ok trial with a trial_wall_s in the --results folders")
    rng = np.random.default_rng(args.seed)
    trials = []
    for i in range(args.trials):
        name, runners, factor = CONFIGS[i % len(CONFIGS)]
        bundles = (("driver", 1.0, 0.0),) + (("env_runner", 1.0, 0.0),) * runners
        trials.append(
            (
                f"t{i % len(CONFIGS):03d}r{i // len(CONFIGS)}",
                name,
                bundles,
                float(rng.choice(lengths)) * factor * (1 + runners / 8),
            )
        )
    print(
        f"{args.trials} trials of {len(CONFIGS)} configurations (1, 7, 15, 31 env runners of 1 CPU + a 1-CPU driver), "
        f"lengths replayed from {len(lengths)} measured trial walls (median {np.median(lengths):.1f} s), "
        f"type-B nodes {args.b_speed:g}x as fast; seed {args.seed}"
    )
    print(
        f"{'scenario':<30} {'makespan s':>11} {'serial s':>10} {'speed-up':>9} {'lower bound s':>14} "
        f"{'/ bound':>8} {'failed':>7}"
    )
    for s in SCENARIOS:
        serial = sum(ln for *_, ln in trials)  # one at a time, each on type A (as the scheduler prefers by name)
        got = simulate(s, trials, args.seed, args.b_speed)
        bound = lower_bound_s(s, trials, args.b_speed)
        print(
            f"{s.name:<30} {got['makespan_s']:>11.0f} {serial:>10.0f} {serial / got['makespan_s']:>9.1f} "
            f"{bound:>14.0f} {got['makespan_s'] / bound:>8.2f} {got['failed']:>7}"
        )
    print(
        "serial: the same lengths one at a time (as without --parallel); lower bound: max(longest trial, "
        "node-seconds / nodes); failed: trials on a node when it was lost, or left with no node set to hold them"
    )


if __name__ == "__main__":
    main()
