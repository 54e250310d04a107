"""Where a test suite's time goes: its ``rlbench`` commands and the trials they ran.

    RLBENCH_CLI_LOG=/tmp/cli.log PYTHONPATH=scripts/suite_site python -m pytest -q --basetemp /tmp/suite
    python scripts/suite_accounting.py --cli-log /tmp/cli.log --basetemp /tmp/suite

Prints the commands' count, wall and CPU (their own and their reaped children's), the ten with the most wall, and
the trials found under the basetemp: real Ray trials (a ``ray_init`` event naming its session) with their summed
``ray_init_s``, ``build_s`` and iteration wall, and the Ray-free ones. A trial folder copied by a test is counted
once (its events' bytes); links, other files than regular ones and event files over 5 MB are skipped (a suite's
hostile-folder tests leave such things).
"""

from __future__ import annotations

import argparse
import hashlib
from pathlib import Path

from rlbench.results.events_file import BuildEvent, IterationEvent, RayInitEvent, StartEvent, first, parse_event
from rlbench.results.files import event_objects

MAX_EVENTS_BYTES = 5_000_000


def cli_summary(log: Path) -> list[str]:
    rows = []
    for line in log.read_text().splitlines():
        parts = line.split("\t")
        if len(parts) == 5:
            rows.append((float(parts[1]), float(parts[2]), float(parts[3]), parts[4]))
    wall = sum(r[0] for r in rows)
    out = [
        f"{len(rows)} rlbench commands: {wall:.0f} s of wall, {sum(r[1] for r in rows):.0f} s of their own CPU, "
        f"{sum(r[2] for r in rows):.0f} s of their reaped children's"
    ]
    out += [
        f"  {w:6.1f} s wall {own:5.1f} s own CPU {kids:6.1f} s children  {args[:80]}"
        for w, own, kids, args in sorted(rows, reverse=True)[:10]
    ]
    return out


def _seconds(value: float | None) -> float:
    """A duration as written, 0 where it is missing or no duration (a hand-made fixture's epoch, a negative)."""
    return float(value) if value is not None and 0 <= value < 1e5 else 0.0


def trial_summary(basetemp: Path) -> list[str]:
    seen: set[str] = set()
    ray = {"n": 0, "wall": 0.0, "ray_init": 0.0, "build": 0.0, "iterations": 0.0}
    free = {"n": 0, "wall": 0.0}
    for path in sorted(basetemp.rglob("events.jsonl")):
        if any(p.is_symlink() for p in (path, *path.parents) if basetemp in p.parents) or not path.is_file():
            continue
        if path.stat().st_size > MAX_EVENTS_BYTES:
            continue
        data = path.read_bytes()
        digest = hashlib.sha1(data).hexdigest()
        if digest in seen:
            continue
        seen.add(digest)
        events = [parse_event(e) for e in event_objects(data.splitlines())]  # typed, as rlbench reads them back
        init = first(events, RayInitEvent)
        if first(events, IterationEvent) is None and init is None:
            continue
        wall = max((_seconds(e.t_s) for e in events), default=0.0)
        if init is not None and init.session_dir:
            ray["n"] += 1
            ray["wall"] += wall
            ray["ray_init"] += _seconds(init.ray_init_s)
            ray["build"] += sum(_seconds(e.build_s) for e in events if isinstance(e, BuildEvent))
            ray["iterations"] += sum(_seconds(e.wall_s) for e in events if isinstance(e, IterationEvent))
        elif init is None and first(events, StartEvent) is not None:
            free["n"] += 1
            free["wall"] += wall
    n = max(ray["n"], 1)
    return [
        f"{ray['n']} real Ray trials: {ray['wall']:.0f} s of trial wall; ray_init {ray['ray_init']:.0f} s (mean "
        f"{ray['ray_init'] / n:.1f}), build {ray['build']:.0f} s (mean {ray['build'] / n:.1f}), iterations "
        f"{ray['iterations']:.0f} s",
        f"{free['n']} Ray-free trials: {free['wall']:.0f} s of trial wall",
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cli-log", type=Path, help="the file RLBENCH_CLI_LOG named")
    parser.add_argument("--basetemp", type=Path, help="the suite's pytest basetemp")
    args = parser.parse_args()
    lines = []
    if args.cli_log:
        lines += cli_summary(args.cli_log)
    if args.basetemp:
        lines += trial_summary(args.basetemp.resolve())
    print("\n".join(lines) if lines else "nothing to read: give --cli-log and/or --basetemp")


if __name__ == "__main__":
    main()
