"""Simulate the unpaired change rule: how often the interval alone, and the interval with the rank test, call
a change, with n repeats a side of made-up throughputs (normal noise of --noise around 1,000 env steps/s).

    python scripts/sim_change_rule.py                  # 3, 4, 5 repeats a side; no change and a 5% drop
    python scripts/sim_change_rule.py --pairs 2000 --noise 0.02

Prints, per repeats a side and true change, the share of pairs whose interval of B/A excludes 1 (the
rule of ``rlbench compare A B`` before issue 35), the share the one rule calls a change (that interval and
the one-sided exact rank test: :func:`rlbench.analysis.change.unpaired`), and how often the two disagree.

``--race`` (issue 56) runs autoconfig's race itself (:class:`rlbench.autoconfig.decide.Race`, its sequential
rule :func:`~rlbench.autoconfig.decide.verdict`) on two entrants, B at 1.0x, 1.3x and 1.6x A's true throughput,
each reading normal noise of CV ``--cvs`` around it, ``--races`` races a cell, from ``min_rounds`` to
``--max-rounds``:

    python scripts/sim_change_rule.py --race --races 1000              # the race's cap (20 rounds)
    python scripts/sim_change_rule.py --race --races 1000 --max-rounds 6   # the walk's step race
    python scripts/sim_change_rule.py --race --rule plain              # the rule before issue 56, to compare
    python scripts/sim_change_rule.py --race --max-rounds 6 --cvs 0.14 --process-cv 0.095 --warm-windows 3

and prints per CV and true ratio: how often the race called them different (one left the race: for 1.0x an
error; ``wrong way``: the faster left), the same (settled, nobody left), or ran to the cap unknown; the rounds it
took on average; and, for 1.0x, how often the answer still tells them apart (not in one indistinguishable set).

``--walk`` (issue 57) runs the walk's step race (:class:`rlbench.autoconfig.walk.session.WalkRace`, the current point A
against one value B at ``--ratios`` times it) and its move (:func:`rlbench.autoconfig.walk.steps.decide_step`), with
``--extend-to`` the rounds past ``--max-rounds`` the race may go on while the rule cannot say and B leads:

    python scripts/sim_change_rule.py --walk --races 400 --max-rounds 6 --cvs 0.14,0.20                 # cap 6
    python scripts/sim_change_rule.py --walk --races 400 --max-rounds 6 --extend-to 12 --cvs 0.14,0.20  # past it

and prints per CV and true ratio how often the walk moved to B (for 1.0x an error), at the cap or past it, how
often the race went past its cap, and the rounds on average (all races; those past the cap: the rounds past it).
Statistics only: no timing, nothing measured on this machine.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

from rlbench.analysis.change import Change, equivalent, unpaired
from rlbench.analysis.findings import SEQUENTIAL_SIGNIFICANCE
from rlbench.autoconfig import decide
from rlbench.autoconfig.ask_tell import TrialResult, below
from rlbench.autoconfig.walk.session import WalkRace
from rlbench.autoconfig.walk.steps import decide_step

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests" / "autoconfig"))
from helpers import cand  # noqa: E402

#: True ratios of B over A the race is run at.
RATIOS = (1.0, 1.3, 1.6)


def plain(change: Change, threshold: float, first_look: bool) -> decide.Verdict:
    """The race's rule before issue 56: below by the one rule at every look, or within the threshold."""
    return "different" if below(change) else "same" if equivalent(change, threshold) else "unknown"


def race(
    ratio: float,
    cv: float,
    seed: int,
    max_rounds: int,
    process_cv: float = 0.0,
    windows: int = 1,
    spread: int = 1,
    extend_to: int | None = None,
    past_level: float = SEQUENTIAL_SIGNIFICANCE,
) -> decide.Race:
    """One race of A (the baseline, 1,000 env steps/s) against B (``ratio`` times it), readings of noise ``cv``;
    with ``extend_to``, the walk's step race (:class:`~rlbench.autoconfig.walk.session.WalkRace`, A the current
    point) that may go on past ``max_rounds`` up to it (0: it does not).

    Warm readings (issue 56): each side's reading of round r is a window of one of its processes, each process
    off the truth by its own factor, lognormal of sd ``process_cv``; ``windows`` a process, and with ``spread``
    processes read in turns (round r: the (r mod spread)-th of the current set), else one after another. 1 window:
    every reading a process of its own (cold)."""
    rng = np.random.default_rng(seed)
    a, b = cand(1), cand(2)
    truth = {a.key: 1000.0, b.key: 1000.0 * ratio}
    offsets: dict[tuple[str, int], float] = {}
    kw = dict(objective="throughput", budget_s=1e12, trial_s=10, max_rounds=max_rounds)
    r = (
        decide.Race([b], a, **kw)
        if extend_to is None
        else WalkRace(1, [b], a, extend_to=extend_to, past_level=past_level, **kw)
    )
    while requests := r.ask():
        results = []
        for q in requests:
            block, slot = divmod(q.rung, spread * windows)
            process = (block, slot % spread) if spread > 1 else (q.rung // windows, 0)
            key = (q.candidate_key, hash(process))
            if key not in offsets:
                offsets[key] = float(np.exp(process_cv * rng.standard_normal()))
            value = truth[q.candidate_key] * offsets[key] * (1 + cv * float(rng.standard_normal()))
            results.append(TrialResult(q.request_id, value, 10.0, 0.0))
        r.tell(results)
    return r


def races(args: argparse.Namespace) -> None:
    """The race's error rates and rounds (``--race``)."""
    if args.rule == "plain":
        decide.verdict = plain  # the race calls its module's verdict once a round
    print(
        f"rule {args.rule}, {args.races} races a cell, rounds {decide.MIN_ROUNDS}-{args.max_rounds}; a process off "
        f"by sd {args.process_cv:.0%}, {args.warm_windows} window(s) a process, {args.spread} read in turns"
    )
    header = ("cv", 5), ("ratio", 5), ("different", 9), ("wrong way", 9), ("same", 6), ("unknown", 7), ("rounds", 6)
    print(" ".join(f"{h:>{w}}" for h, w in header), f"{'told apart':>10}")
    for cv in (float(x) for x in args.cvs.split(",")):
        for ratio in RATIOS:
            different = wrong = same = apart = 0
            rounds = []
            for i in range(args.races):
                r = race(
                    ratio,
                    cv,
                    args.seed * 1_000_003 + i,
                    args.max_rounds,
                    args.process_cv,
                    args.warm_windows,
                    args.spread,
                )
                rounds.append(r.rounds_done)
                different += bool(r.left)
                wrong += any(e.key == cand(2).key for e in r.left)
                same += not r.left and (r.stop_reason or "").startswith("settled")
                apart += len(r.answer().indistinguishable) < 2
            n = args.races
            told = f"{apart / n:.1%}" if ratio == 1.0 else "-"
            print(
                f"{cv:>5.0%} {ratio:>5.1f} {different / n:>9.1%} {wrong / n:>9.1%} {same / n:>6.1%} "
                f"{(n - different - same) / n:>7.1%} {np.mean(rounds):>6.2f} {told:>10}",
                flush=True,
            )


def walks(args: argparse.Namespace) -> None:
    """The walk's step race and move (``--walk``): how often the walk moves from A to B, and in how many rounds."""
    threshold = decide.CHANGE_THRESHOLD
    print(
        f"the walk's step race, {args.races} races a cell, rounds {decide.MIN_ROUNDS}-{args.max_rounds}, "
        f"past it up to {args.extend_to or args.max_rounds} (a move there at p <= {args.past_level:g}); "
        f"a process off by sd {args.process_cv:.0%}, {args.warm_windows} window(s) a process, "
        f"{args.spread} read in turns"
    )
    header = ("cv", 5), ("ratio", 5), ("moved", 6), ("at cap", 6), ("past it", 7), ("later", 6), ("rounds", 6)
    print(" ".join(f"{h:>{w}}" for h, w in header), f"{'rounds past':>11}")
    a, b = cand(1).key, cand(2).key
    for cv in (float(x) for x in args.cvs.split(",")):
        for ratio in (float(x) for x in args.ratios.split(",")):
            moved = at_cap = past = later = 0
            rounds, extra = [], []
            for i in range(args.races):
                r = race(
                    ratio,
                    cv,
                    args.seed * 1_000_003 + i,
                    args.max_rounds,
                    args.process_cv,
                    args.warm_windows,
                    args.spread,
                    extend_to=args.extend_to,
                    past_level=args.past_level,
                )
                assert isinstance(r, WalkRace)
                to, outcome = decide_step(a, r.standings(), r.versus, threshold, level=r.level)
                went = outcome == "gain" and to == b
                moved += went
                rounds.append(r.rounds_done)
                if r.extra_rounds:
                    past += 1
                    later += went
                    extra.append(r.extra_rounds)
                else:
                    at_cap += went
            n = args.races
            print(
                f"{cv:>5.0%} {ratio:>5.2f} {moved / n:>6.1%} {at_cap / n:>6.1%} {past / n:>7.1%} {later / n:>6.1%} "
                f"{np.mean(rounds):>6.2f} {np.mean(extra) if extra else 0.0:>11.2f}",
                flush=True,
            )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pairs", type=int, default=400, help="simulated comparisons per cell (default 400)")
    parser.add_argument("--noise", type=float, default=0.03, help="relative noise of one repeat (default 0.03)")
    parser.add_argument("--repeats", default="3,4,5", help="repeats a side, comma-separated (default 3,4,5)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--race", action="store_true", help="race two entrants by the race's sequential rule")
    parser.add_argument("--races", type=int, default=400, help="--race: races a cell (default 400)")
    parser.add_argument("--cvs", default="0.02,0.05,0.10,0.15", help="--race: noise CVs, comma-separated")
    parser.add_argument("--max-rounds", type=int, default=decide.MAX_ROUNDS, help="--race: the round cap")
    parser.add_argument("--rule", choices=("sequential", "plain"), default="sequential", help="--race: the rule")
    parser.add_argument("--process-cv", type=float, default=0.0, help="--race: sd of a process's own offset")
    parser.add_argument("--warm-windows", type=int, default=1, help="--race: readings a process (1: cold)")
    parser.add_argument("--spread", type=int, default=1, help="--race: processes a side read in turns")
    parser.add_argument("--walk", action="store_true", help="the walk's step race and its move (issue 57)")
    parser.add_argument("--extend-to", type=int, default=0, help="--walk: rounds past --max-rounds up to (0: none)")
    parser.add_argument(
        "--past-level",
        type=float,
        default=SEQUENTIAL_SIGNIFICANCE,
        help="--walk: the rank test's level for a move once past --max-rounds (0.05: the one rule's own)",
    )
    parser.add_argument("--ratios", default="1.0,1.15,1.3", help="--walk: true ratios of B over A")
    args = parser.parse_args()
    if args.walk:
        walks(args)
        return
    if args.race:
        races(args)
        return
    rng = np.random.default_rng(args.seed)
    print(f"{'repeats':>7} {'change':>7} {'interval off 1':>15} {'one rule':>9} {'disagree':>9}")
    for n in (int(x) for x in args.repeats.split(",")):
        for drop in (0.0, 0.05):
            interval = rule = 0
            for _ in range(args.pairs):
                a = 1000 * (1 + args.noise * rng.standard_normal(n))
                b = 1000 * (1 - drop + args.noise * rng.standard_normal(n))
                c = unpaired(a, b)
                off = c.ci_low is not None and (c.ci_low > 1 or c.ci_high < 1)
                interval += off
                rule += c.differs
            print(
                f"{n:>7} {-drop:>7.0%} {interval / args.pairs:>15.1%} {rule / args.pairs:>9.1%} "
                f"{(interval - rule) / args.pairs:>9.1%}"
            )


if __name__ == "__main__":
    main()
