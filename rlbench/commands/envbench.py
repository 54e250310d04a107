"""``rlbench envbench ENV``: the env's own step rate, alone, in 1..N parallel processes (the env ceiling)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import yaml
from rich.console import Console
from rich.table import Table
from rich.text import Text

from rlbench.commands._common import bad_input, int_list, own_file, say
from rlbench.commands.exit_codes import EXIT_OK
from rlbench.measure.machine import usable_cores
from rlbench.results.files import write_json
from rlbench.results.text import plain
from rlbench.spec.envcheck import check_env
from rlbench.studies.envbench import default_proc_counts, measure_ceiling, result_dict

NAME = "envbench"
HELP = "raw env step rate alone, in 1..N parallel processes"
EPILOG = """\
examples:
  rlbench envbench CartPole-v1                                   # 1, 2, 4, ... processes, 3 s each
  rlbench envbench envs.synthetic:SyntheticEnv --env-config step_cost_us=500 --procs 1,2 --out env.json

The figure is the most env steps/s the env can give with no RLlib around it (the 'env ceiling'); a
sweep's sampling_efficiency column is its trials' sampling rate over this."""


def setup_arguments(envbench: argparse.ArgumentParser) -> None:
    envbench.add_argument("env", help="gymnasium id (CartPole-v1) or package.module:Class, as in a sweep spec")
    envbench.add_argument(
        "--env-config",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="an env_config entry (value parsed as YAML); repeat for several",
    )
    envbench.add_argument("--procs", default=None, help="comma-separated process counts (default 1,2,4,...,all cores)")
    envbench.add_argument("--seconds", type=float, default=3.0, help="measured seconds per count (default 3)")
    envbench.add_argument("--out", type=Path, default=None, help="also write the results as JSON here")


def run(args: argparse.Namespace, console: Console) -> int:
    """Measure the env's own step rate at each process count; print (and write) the results."""
    try:
        check_env(args.env)
        config = {}
        for item in args.env_config:
            key, sep, value = item.partition("=")
            if not sep or not key:
                raise ValueError(f"--env-config takes KEY=VALUE (got {item!r})")
            config[key] = yaml.safe_load(value)
        cores = usable_cores()
        counts = int_list(args.procs, "--procs") or default_proc_counts(len(cores))
        if max(counts) > len(cores):
            raise ValueError(f"--procs {max(counts)}: this machine has {len(cores)} usable cores")
    except ValueError as e:
        return bad_input(console, str(e))
    table = Table(title=Text(plain(f"env ceiling: {args.env} {json.dumps(config) if config else ''}")))
    for column in ("processes", "env steps/s", "per process", "scaling vs 1"):
        table.add_column(column, justify="right")
    results = []
    for n in counts:
        r = measure_ceiling(args.env, config, procs=n, seconds=args.seconds, cores=cores)
        results.append(r)
        base = results[0].steps_per_s_per_proc * results[0].procs if results[0].procs == 1 else None
        table.add_row(
            str(n),
            f"{r.steps_per_s:,.0f}",
            f"{r.steps_per_s_per_proc:,.0f}",
            f"{r.steps_per_s / base:.2f}x" if base else "-",
        )
    console.print(table)
    if args.out:
        write_json(own_file(args.out), [result_dict(r) for r in results])
        say(console, f"written: {args.out}")
    return EXIT_OK
