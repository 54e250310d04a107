"""Check that every shipped config runs here: ``rlbench sweep CONFIG --quick`` on each, one line each.

    python scripts/check_configs.py                      # every file under configs/ (configs/workloads/ too)
    python scripts/check_configs.py --only workloads     # the configs whose path holds this text
    python scripts/check_configs.py --keep /tmp/checked  # keep each result folder (default: a temp folder each)

Each config runs as a user runs it: ``python -m rlbench sweep CONFIG --quick --out DIR`` in its own temp
folder, from the repository's root (one repeat, no warm-up, one iteration on a cut train batch; an
``autoconfig:`` spec plans its search space and runs its baseline: docs/SPEC.md, "--quick"). One line per
config: ``ok`` (how many trials ran), ``ok, N skipped: why`` (points this machine cannot run, a GPU point on a
machine without one, said in the sweep's own words), ``needs the [X] extra`` with the ``pip install`` line when
the spec was refused because a framework or env it uses needs an extra this install lacks (the config is not
broken: this machine lacks a package; counted apart), or ``FAILED`` with the command's exit code, where its
whole output is (``DIR.log`` beside each result folder) and the first failure's message. Exit 1 if any config failed,
else 0. The wall of the whole check and the load average are
printed last (docs/MEASUREMENT.md has a dated figure). Run it whenever a config, the spec model, the plan or a
command changed.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from rlbench.commands.exit_codes import EXIT_BAD_INPUT

REPO = Path(__file__).resolve().parents[1]
#: How the spec's load refuses a framework or an env whose extra is not installed (rlbench.spec.envcheck).
NEEDS_EXTRA = re.compile(r"needs the \[(\w+)\] extra, which is not installed: (pip install .+?\))")


def configs(only: str | None) -> list[Path]:
    """Every shipped config (configs/ and its folders), in path order, those whose path holds ``only``."""
    found = sorted(REPO.glob("configs/**/*.yaml"))
    return [c for c in found if only is None or only in str(c.relative_to(REPO))]


def outcome(out: Path) -> tuple[dict[str, int], dict[str, int], list[str]]:
    """From a finished quick sweep's folder: trials per status, skipped trials per kind of reason (the sweep's own
    words, :func:`rlbench.planning.skips.skip_group`), and ``trial: reason`` of each failed or timed-out one."""
    from rlbench.planning.plan import PlanError, read_plan
    from rlbench.planning.skip_summary import skip_group
    from rlbench.results.layout import ResultsFolder
    from rlbench.results.records import read_record

    statuses: dict[str, int] = {}
    skipped: dict[str, int] = {}
    failures = []
    for trial in ResultsFolder(out).trials():
        record = read_record(trial)
        status = record.status if record is not None else "unfinished"
        statuses[status] = statuses.get(status, 0) + 1
        if status == "skipped":
            try:
                why = skip_group(read_plan(trial)) or record.reason
            except PlanError:
                why = record.reason
            skipped[str(why)] = skipped.get(str(why), 0) + 1
        elif status not in ("ok",):
            failures.append(f"{trial.trial_id} {status}: {record.reason if record else 'no verdict'}")
    return statuses, skipped, failures


def first_problem(text: str, failures: list[str]) -> str:
    """The line that says what went wrong: the command's ``error:`` line, else the first failed trial's reason,
    else the last exception a traceback ends with (a KeyboardInterrupt only when there is no other: the sweep
    stops its plotting child when its own drawing raised, and that child's traceback comes last), else the
    output's last line."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    errors = [line for line in lines if line.startswith("error:")]
    if errors or failures:
        return (errors or failures)[0]
    raised = [line for line in lines if re.match(r"[A-Za-z_][\w.]*(Error|Exception|Interrupt)(:|$)", line)]
    real = [line for line in raised if not line.startswith("KeyboardInterrupt")]
    if real:
        return real[-1][:300]
    if raised or any(line.startswith("Interrupted") for line in lines):
        return "interrupted by a signal (SIGINT, SIGTERM or SIGHUP)"
    return lines[-1][-300:] if lines else "no output"


def check(config: Path, out: Path, timeout_s: float) -> tuple[str, str]:
    """Run one config with --quick into ``out`` (its output in ``out``.log): (``ok``, ``extra`` or ``failed``, its
    line)."""
    name = str(config.relative_to(REPO))
    t = time.monotonic()
    try:
        done = subprocess.run(
            [sys.executable, "-m", "rlbench", "sweep", name, "--quick", "--out", str(out)],
            cwd=REPO,
            capture_output=True,
            text=True,
            timeout=timeout_s,
            env={**os.environ, "COLUMNS": "200"},
        )
    except subprocess.TimeoutExpired:
        return "failed", f"{name}: FAILED: still running after {timeout_s:g} s (--timeout), stopped"
    wall = time.monotonic() - t
    out.with_suffix(".log").write_text(done.stdout + done.stderr)
    statuses, skipped, failures = outcome(out) if out.exists() else ({}, {}, [])
    if (
        done.returncode == EXIT_BAD_INPUT
        and not out.exists()
        and (needs := NEEDS_EXTRA.search(" ".join((done.stderr + done.stdout).split())))
    ):
        return "extra", f"{name}: needs the [{needs.group(1)}] extra, not installed here: {needs.group(2)}"
    if done.returncode != 0:
        first = first_problem(done.stdout + done.stderr, failures)
        return (
            "failed",
            f"{name}: FAILED (exit {done.returncode}, {wall:.0f} s; log: {out.with_suffix('.log')}): {first}",
        )
    ran = statuses.get("ok", 0)
    if not skipped:
        return "ok", f"{name}: ok, {ran} trial{'s' if ran != 1 else ''} ran ({wall:.0f} s)"
    n = sum(skipped.values())
    return "ok", (
        f"{name}: ok, {n} skipped: "
        + "; ".join(f"{count} {why}" for why, count in skipped.items())
        + f"; {ran} ran ({wall:.0f} s)"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", default=None, help="check only the configs whose path holds this text")
    parser.add_argument("--keep", type=Path, default=None, help="keep each result folder under this folder")
    parser.add_argument("--timeout", type=float, default=900.0, help="seconds one config may take (default 900)")
    args = parser.parse_args()
    chosen = configs(args.only)
    if not chosen:
        print(f"no config under configs/ matches --only {args.only!r}", file=sys.stderr)
        return 2
    t0 = time.monotonic()
    counts = {"ok": 0, "extra": 0, "failed": 0}
    with tempfile.TemporaryDirectory(prefix="rlbench-check-") as tmp:
        root = args.keep or Path(tmp)
        for i, config in enumerate(chosen):
            out = root / f"{i:02d}-{config.stem}"
            status, line = check(config, out, args.timeout)
            counts[status] += 1
            print(line, flush=True)
    failed = counts["failed"]
    load = os.getloadavg()
    print(
        f"{len(chosen)} configs, {failed} failed, {counts['extra']} need an extra not installed here, "
        f"in {time.monotonic() - t0:.0f} s "
        f"(load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}, {os.cpu_count()} cores)"
    )
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
