"""``rlbench reproduce DIR TRIAL_ID``: the exact command that reruns one trial alone (``--run`` runs it).

Exit codes: 0 done (with ``--run``: the rerun's own exit code); 2 bad input.
"""

from __future__ import annotations

import argparse
import shlex
import subprocess
import sys
from pathlib import Path

from rich.console import Console

from rlbench.commands._common import bad_input
from rlbench.commands.exit_codes import EXIT_OK
from rlbench.report.reproduce import write_reproduction
from rlbench.results.layout import ResultsFolder

NAME = "reproduce"
HELP = "the exact command that reruns one trial alone"
EPILOG = """\
examples:
  rlbench reproduce results/smoke/20261123-010355 t002r0         # write the trial's one-point spec, print the command
  rlbench reproduce results/smoke/20261123-010355 t002r0 --run   # and run it now

Trial ids (t<grid point>r<repeat>) are in the sweep's final table, summary.csv and report.html. The spec
holds the trial's resolved config (values relative to the machine, like cpus-1, as the numbers they
were), its cpus, stop rule and seed; differences in installed versions or git commit are printed."""


def setup_arguments(reproduce: argparse.ArgumentParser) -> None:
    reproduce.add_argument("dir", type=Path, help="result folder of a sweep")
    reproduce.add_argument("trial_id", help="e.g. t002r0 (see trials.parquet)")
    reproduce.add_argument("--out", type=Path, default=None,
                           help="where the rerun writes (default: DIR-reproduce-TRIAL_ID next to DIR)")
    reproduce.add_argument("--run", action="store_true", help="run the command now")


def run(args: argparse.Namespace, console: Console) -> int:
    """Write the one-trial spec and print (or, with --run, run) the command that reruns the trial."""
    trial = ResultsFolder(args.dir).trial(args.trial_id)
    if not trial.plan.exists():
        return bad_input(console, f"no trial {args.trial_id} in {args.dir} (expected {trial.plan}); trial ids are "
                                  "in trials.parquet")
    rep = write_reproduction(args.dir, args.trial_id, args.out)
    console.print(f"# one-point spec: {rep.spec_path}", highlight=False)
    for d in rep.differences:
        console.print(f"# [yellow]differs from the original run:[/] {d}", highlight=False)
    if rep.cwd_note:
        console.print(f"# note: {rep.cwd_note}", highlight=False, soft_wrap=True)
    print(shlex.join(rep.command), flush=True)
    if args.run:
        return subprocess.call([sys.executable, "-m", "rlbench", *rep.command[1:]])
    return EXIT_OK
