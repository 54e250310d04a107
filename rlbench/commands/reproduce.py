"""``rlbench reproduce DIR TRIAL_ID``: the exact command that reruns one trial alone (``--run`` runs it).

Exit codes: 0 done (with ``--run``: the rerun's own exit code); 2 bad input.
"""

from __future__ import annotations

import argparse
import shlex
import subprocess
import sys
from pathlib import Path

from pydantic import ValidationError
from rich.console import Console
from rich.text import Text

from rlbench.commands._common import bad_input, own_path, read_folder, say
from rlbench.commands.exit_codes import EXIT_OK
from rlbench.planning.plan import TRIAL_ID
from rlbench.report.reproduce import write_reproduction
from rlbench.results.layout import ResultsFolder
from rlbench.results.lock import OutDirError
from rlbench.results.session import open_for_write
from rlbench.results.text import plain
from rlbench.spec.load import load_spec
from rlbench.spec.model import SpecError

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
    reproduce.add_argument(
        "--out", type=Path, default=None, help="where the rerun writes (default: DIR-reproduce-TRIAL_ID next to DIR)"
    )
    reproduce.add_argument("--run", action="store_true", help="run the command now")


def run(args: argparse.Namespace, console: Console) -> int:
    """Write the one-trial spec and print (or, with --run, run) the command that reruns the trial.

    The folder may come from someone else: the trial id must be one it planned and look like
    rlbench's (``t003r1``: no path in it), the folder must hold no link, FIFO or device, and with
    ``--run`` the one-point spec is validated here first (its env must be a gymnasium.Env
    subclass or a registered id) so nothing starts when it is not.
    """
    args.dir, args.out = own_path(args.dir), own_path(args.out)
    folder = ResultsFolder(args.dir)
    if not TRIAL_ID.fullmatch(args.trial_id):
        return bad_input(console, f"{args.trial_id!r} is not a trial id (they look like t003r1; see trials.parquet)")
    try:  # a results format this rlbench cannot read, a link in it, a damaged manifest, ...
        planned = read_folder(args.dir, console).manifest.trial_ids
    except OutDirError as e:
        return bad_input(console, str(e))
    trial = folder.trial(args.trial_id)
    if not trial.plan.exists() or (planned is not None and args.trial_id not in planned):
        return bad_input(
            console,
            f"no trial {args.trial_id} in {args.dir} (expected {trial.plan}, and the id in "
            "its manifest.json); trial ids are in trials.parquet",
        )
    try:
        rep = write_reproduction(args.dir, args.trial_id, args.out)
        if args.run:
            open_for_write(rep.out_dir, "new")  # the rerun's folder, checked as the sweep will (nothing written)
            load_spec(rep.spec_path)  # the env named by the folder's plan is checked before anything runs
    except (OutDirError, SpecError, ValidationError, RuntimeError, OSError, ValueError) as e:
        return bad_input(console, f"cannot reproduce {args.trial_id} of {args.dir}: {e}")
    say(console, f"# one-point spec: {rep.spec_path}")
    for d in rep.differences:
        console.print(Text.assemble("# ", ("differs from the original run:", "yellow"), " ", plain(d)), soft_wrap=True)
    if rep.cwd_note:
        say(console, f"# note: {rep.cwd_note}")
    print(plain(shlex.join(rep.command)), flush=True)
    if args.run:
        return subprocess.call([sys.executable, "-m", "rlbench", *rep.command[1:]])
    return EXIT_OK
