"""``rlbench bisect SPEC --package ray --good 2.50.0 --bad 2.60.0``: the first release at which the spec's
configurations got slower (or faster), found by halving with interleaved probes (docs/VERSIONS.md).

Exit codes (rlbench.commands.exit_codes): 0 the first bad version was found and confirmed, or the ends do
not differ (said in a sentence); 1 no answer (a probe stayed unclear, or the final pair does not differ
alone); 2 bad input (nothing run or written); 130 interrupted.
"""

from __future__ import annotations

import argparse
import math
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.text import Text

from rlbench.analysis.findings import CONFIDENCE
from rlbench.commands._common import bad_input, options_from, own_path, say, threshold_of
from rlbench.commands._package import PackageOptions, add_package_arguments, listed_versions, rounds_of, unknown_message
from rlbench.commands.exit_codes import EXIT_FAILED, EXIT_INTERRUPTED, EXIT_OK
from rlbench.results.text import plain

NAME = "bisect"
HELP = "find the first release of a package (e.g. ray) at which the spec got slower, by halving"
EPILOG = f"""\
examples:
  rlbench bisect configs/smoke.yaml --package ray --good 2.50.0 --bad 2.60.0
  rlbench bisect SPEC --package ray --good 2.50.0 --bad 2.60.0 --metric time_to_target --threshold 10%
  rlbench bisect SPEC --package mysim --good 1.0.0 --bad 1.3.0 --index ./wheels --rounds 6
  rlbench bisect SPEC --package ray --good 2.50.0 --bad 2.60.0 --versions-from 2.50.0,2.54.0,2.57.0,2.60.0

first both ends are measured as two variants, interleaved; without a change of --threshold or more with evidence
it stops (exit 0) and says so. Then each probe compares the middle version with the good end (the versions
between: the index's listing, or --versions-from), and the final adjacent pair is compared with each other.

results (DIR: --out, default results/<name>_bisect/<timestamp>/):
  DIR/bisect.json   the answer (first bad version, its paired ratio and {CONFIDENCE:.0%} CI) and every probe
  DIR/NN-<a>-vs-<b>/  each probe's own sweep folder (trials.parquet: variant, round, versions)

exit codes: 0 found and confirmed, or no difference at the ends; 1 no answer; 2 bad input; 130 interrupted."""


@dataclass(frozen=True, kw_only=True)
class BisectOptions(PackageOptions):
    """``rlbench bisect``'s options, its flags typed."""

    good: str
    """A version without the change."""
    bad: str
    """A version with it."""
    metric: str = "throughput"
    """``throughput`` (env steps/s) or ``time_to_target`` (seconds to the spec's stop target, compared as speed)."""
    versions_from: str | None = None
    """The versions to search, in release order, comma-separated, as typed; None: the index's listing."""


def setup_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("config", type=Path, help="sweep spec (YAML) without variants:, best with one configuration")
    p.add_argument("--good", required=True, help="a version without the change, e.g. 2.50.0")
    p.add_argument("--bad", required=True, help="a version with it, e.g. 2.60.0")
    p.add_argument(
        "--metric",
        choices=("throughput", "time_to_target"),
        default="throughput",
        help="throughput: env steps/s; time_to_target: seconds to the spec's stop target (compared as speed)",
    )
    add_package_arguments(p)
    p.add_argument(
        "--versions-from",
        default=None,
        help="the versions to search, in release order, comma-separated (default: the index's listing)",
    )
    p.add_argument("--out", type=Path, default=None, help="result folder (default: results/<name>_bisect/<timestamp>/)")


def candidates_of(opts: BisectOptions, index: str | None, console: Console) -> list[str]:
    """good, the versions between, bad; ValueError for an end the list lacks."""
    from rlbench.run.index import pinnable_between, unknown_versions
    from rlbench.spec.versions import parse_versions

    if opts.versions_from is not None:
        given = parse_versions(opts.versions_from, "--versions-from")
        missing = [v for v in (opts.good, opts.bad) if v not in given]
        if missing:
            raise ValueError(f"--versions-from does not list {' and '.join(missing)}: give the ends in it too")
        i, j = given.index(opts.good), given.index(opts.bad)
        return given[i : j + 1] if i < j else given[j : i + 1][::-1]
    listed = listed_versions(opts.package, index, console)
    if listed is None:
        raise ValueError(
            f"the versions of {opts.package} between {opts.good} and {opts.bad} could not be listed: give "
            "them with --versions-from"
        )
    unknown = unknown_versions([opts.good, opts.bad], listed)
    if unknown:
        raise ValueError("--good/--bad " + unknown_message(opts.package, index, unknown, listed))
    return pinnable_between(listed, opts.good, opts.bad)


def run(args: argparse.Namespace, console: Console) -> int:
    from rlbench.analysis.bisect import FIRST_LOOK_ROUNDS
    from rlbench.analysis.findings import ROUNDS_FOR_EVIDENCE
    from rlbench.spec.model import SpecError
    from rlbench.spec.versions import load_versions, parse_versions

    opts = options_from(BisectOptions, args)
    try:
        if opts.good == opts.bad:
            raise ValueError(f"--good and --bad are both {opts.good}: give two different versions")
        parse_versions(f"{opts.good},{opts.bad}", "--good/--bad")
        threshold, rounds = threshold_of(opts.threshold), rounds_of(opts)
        if rounds < ROUNDS_FOR_EVIDENCE:
            raise ValueError(
                f"--rounds {rounds}: a probe needs {ROUNDS_FOR_EVIDENCE} rounds to give evidence either way"
            )
        loaded = load_versions(
            opts.config, opts.package, [opts.good, opts.bad], rounds, opts.index, rounds_per_process=1
        )
        if opts.metric == "time_to_target" and loaded.spec.stop.target is None:
            raise ValueError(
                f"--metric time_to_target: {opts.config} has no stop target (stop: {{target: ...}}; docs/SPEC.md)"
            )
        index = loaded.spec.variants[0].index
        candidates = candidates_of(opts, index, console)
    except (SpecError, ValueError) as e:
        return bad_input(console, str(e))
    probes = 1 + math.ceil(math.log2(max(1, len(candidates) - 1))) + (len(candidates) > 2)
    say(
        console,
        f"bisect {opts.package} over {len(candidates)} versions ({', '.join(candidates)}): about {probes} "
        f"probes of {rounds * len(loaded.points)} trials (each stops after its first "
        f"{FIRST_LOOK_ROUNDS * len(loaded.points)} where they are clear either way), threshold {threshold:.0%}, "
        f"{opts.metric}",
    )
    if opts.dry_run:
        from rlbench.commands.sweep import SweepOptions, sweep_loaded

        say(console, "the first probe, the ends:")
        return sweep_loaded(loaded, SweepOptions(opts.config, dry_run=True), console)
    from rlbench.run.sweep import default_out_dir
    from rlbench.worker.interrupts import received

    out_dir = own_path(opts.out) or default_out_dir(f"{loaded.spec.name}_bisect")
    seen = received()
    try:
        code = _bisect(opts, out_dir, candidates, threshold, rounds, console)
        if (
            received() == seen
        ):  # else a signal came and something caught its KeyboardInterrupt: interrupted all the same
            return code
    except KeyboardInterrupt:  # bisect does not resume: its probes are kept, a new run starts afresh
        pass
    console.print(
        Text.assemble(
            ("Interrupted", "yellow"),
            plain(f": the probes so far are in {out_dir}; bisect does not resume: run it again with another --out"),
        ),
        soft_wrap=True,
    )
    return EXIT_INTERRUPTED


def _bisect(
    opts: BisectOptions, out_dir: Path, candidates: list[str], threshold: float, rounds: int, console: Console
) -> int:
    from rlbench.analysis.bisect import FIRST_LOOK_ROUNDS, bisect
    from rlbench.analysis.history.trends import first_look_changes, history_trends, rounds_after
    from rlbench.analysis.tables import build_tables
    from rlbench.report.versions import bisect_table
    from rlbench.results.files import write_json
    from rlbench.results.layout import BISECT_JSON
    from rlbench.results.lock import OutDirError
    from rlbench.results.session import open_for_write
    from rlbench.run.forkserver import release_fork_server
    from rlbench.run.sweep import run_sweep
    from rlbench.spec.versions import load_versions, variant_name

    try:  # a new folder (bisect does not resume), held for the whole bisect: its probes' folders go inside
        session = open_for_write(out_dir, "new").lock()
    except OutDirError as e:
        return bad_input(console, str(e))
    folders: list[str] = []

    first = FIRST_LOOK_ROUNDS if rounds > FIRST_LOOK_ROUNDS else None
    looked: dict[tuple[str, str], tuple[Path, Any]] = {}  # a pair's first rounds (its trials), until the rest run
    axes: list[str] = []
    probes = 0

    def sweep(reference: str, candidate: str, n: int, rest: Path | None = None) -> tuple[Path, Any]:
        """``n`` interleaved rounds of the pair in a probe folder of their own (``rest``: the rest of a looked pair's
        rounds, beside its first ones); their trials table."""
        nonlocal probes
        loaded = load_versions(opts.config, opts.package, [reference, candidate], n, opts.index, rounds_per_process=1)
        axes[:] = list(loaded.points[0].axes) if loaded.points else []
        probes += rest is None
        probe_dir = rest or out_dir / f"{probes:02d}-{reference}-vs-{candidate}"
        what = "the rest of its rounds" if rest else f"{opts.package} {candidate} against {reference}"
        say(console, f"probe {probes}: {what} ({n} rounds) -> {probe_dir}", "bold")
        folders.append(str(probe_dir))
        if run_sweep(loaded, probe_dir, console=console, argv=sys.argv).interrupted:
            raise KeyboardInterrupt  # the probe stopped: no answer can come from it, nor any probe after it
        return probe_dir, build_tables(probe_dir)["trials"]

    def steps(trials, reference: str, candidate: str):
        trends = history_trends(
            trials, axes, [(v, variant_name(opts.package, v)) for v in (reference, candidate)], threshold=threshold
        )
        return {t.label: s for t in trends for s in t.steps if s.metric == opts.metric}

    def look(reference: str, candidate: str):
        probe_dir, trials = sweep(reference, candidate, first or rounds)
        looked[(reference, candidate)] = (probe_dir, trials)
        names = (variant_name(opts.package, reference), variant_name(opts.package, candidate))
        return steps(trials, reference, candidate), first_look_changes(trials, axes, names, opts.metric)

    def measure(reference: str, candidate: str):
        earlier = looked.pop((reference, candidate), None)
        if earlier is None or first is None:
            return steps(sweep(reference, candidate, rounds)[1], reference, candidate)
        _, more = sweep(reference, candidate, rounds - first, rest=earlier[0].with_name(earlier[0].name + "-rest"))
        return steps(rounds_after(earlier[1], more, first), reference, candidate)

    with session:
        result = bisect(
            candidates, measure, threshold=threshold, package=opts.package, look=look if first is not None else None
        )
    release_fork_server()
    write_json(
        out_dir / BISECT_JSON,
        {
            "package": opts.package,
            "good": opts.good,
            "bad": opts.bad,
            "metric": opts.metric,
            "threshold": threshold,
            "rounds": rounds,
            "first_look_rounds": first,
            "probe_folders": folders,
            **result.as_json(),
        },
    )
    console.print(bisect_table(result))
    style = {"found": "bold green", "no_difference": "bold"}.get(result.status, "bold yellow")
    say(console, result.sentence, style)
    say(console, f"bisect: {out_dir / BISECT_JSON}")
    return EXIT_OK if result.status in ("found", "no_difference") else EXIT_FAILED
