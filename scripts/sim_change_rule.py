"""Simulate the unpaired change rule: how often the interval alone, and the interval with the rank test, call
a change, with n repeats a side of made-up throughputs (normal noise of --noise around 1,000 env steps/s).

    python scripts/sim_change_rule.py                  # 3, 4, 5 repeats a side; no change and a 5% drop
    python scripts/sim_change_rule.py --pairs 2000 --noise 0.02

Prints, per repeats a side and true change, the share of pairs whose interval of B/A excludes 1 (the
rule of ``rlbench compare A B`` before issue 35), the share the one rule calls a change (that interval and
the one-sided exact rank test: :func:`rlbench.analysis.change.unpaired`), and how often the two disagree.
Statistics only: no timing, nothing measured on this machine.
"""

from __future__ import annotations

import argparse

import numpy as np

from rlbench.analysis.change import unpaired


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pairs", type=int, default=400, help="simulated comparisons per cell (default 400)")
    parser.add_argument("--noise", type=float, default=0.03, help="relative noise of one repeat (default 0.03)")
    parser.add_argument("--repeats", default="3,4,5", help="repeats a side, comma-separated (default 3,4,5)")
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
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
