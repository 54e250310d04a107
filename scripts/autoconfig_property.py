"""autoconfig's promises counted over many simulated worlds (issue 34): the counts behind the property test.

Generates ``--worlds`` spaces (1-40 configurations on 1-3 axes, baselines on and off the grid, about 10%
of configurations always failing, trials of iterations or seconds; tests/autoconfig/simulated.py) and runs
the session on each at every budget multiple of the exhaustive sweep with 2 repeats. Prints, per budget:
runs refused before any trial, answered, over budget + 10% (must be 0), ended without an answer while a
trial gave a reading (must be 0), and, where the budget buys two readings of every configuration, picks
within the tolerance of the known best (and within 5%); then the plans the budgets bought.

    python scripts/autoconfig_property.py [--worlds 1000]

Simulated trials: milliseconds a run, the same counts on any machine for the same arguments.
"""

from __future__ import annotations

import argparse
import collections
import math
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(REPO), str(REPO / "tests"), str(REPO / "tests" / "autoconfig")]

from test_autoconfig_property import BUDGETS, PICK_TOLERANCE, outcome, two_readings_each_s  # noqa: E402


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--worlds", type=int, default=1000)
    args = p.parse_args()
    print(
        f"{args.worlds} worlds x {len(BUDGETS)} budgets (multiples of the exhaustive sweep with 2 repeats); "
        f"pick tolerance {100 * PICK_TOLERANCE:.0f}%"
    )
    print(
        "| budget | refused up front | answered | over budget +10% | no answer with a reading | "
        "buys 2 readings each | of those, picks within tolerance | within 5% | any answer within 5% |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    steps = collections.Counter()
    for multiple in BUDGETS:
        c = collections.Counter()
        for seed in range(args.worlds):
            w, budget, s, runner, answer = outcome(seed, multiple)
            if runner is None:
                c["refused"] += 1
                continue
            steps[(multiple, s.plan.step)] += 1
            c["over"] += runner.clock_s > budget * 1.1
            if answer.chosen_key is None:
                c["silent"] += any(r.value is not None for r in runner.results.values())
                continue
            c["answered"] += 1
            best = max(v for v in w.truth.values() if not math.isnan(v))
            c["any5"] += w.truth[answer.chosen_key] >= 0.95 * best
            if budget >= two_readings_each_s(w):
                c["two"] += 1
                c["within"] += w.truth[answer.chosen_key] >= (1 - PICK_TOLERANCE) * best
                c["within5"] += w.truth[answer.chosen_key] >= 0.95 * best
        print(
            f"| {multiple:g}x | {c['refused']} | {c['answered']} | {c['over']} | {c['silent']} | {c['two']} | "
            f"{c['within']} | {c['within5']} | {c['any5']} |"
        )
    print("\nplans bought:")
    for multiple in BUDGETS:
        row = {step: n for (m, step), n in steps.items() if m == multiple}
        print(f"  {multiple:g}x: " + ", ".join(f"{k} {v}" for k, v in sorted(row.items())))


if __name__ == "__main__":
    main()
