"""``rlbench simbench``: async tasks vs bulk-synchronous rounds for simulation (Ray OSDI'18, Table 4)."""

from __future__ import annotations

import argparse
from pathlib import Path

from rich.console import Console
from rich.table import Table

from rlbench.commands._common import bad_input, int_list, own_file, say
from rlbench.commands.exit_codes import EXIT_OK
from rlbench.measure.machine import usable_cores
from rlbench.results.files import write_json
from rlbench.run.raytoken import secure_ray, warn_if_auth_disabled
from rlbench.studies.simbench import DEFAULT_REPEATS, PAPER_TABLE4, result_dict, run_simbench
from rlbench.worker.ray_auth import bind_local_runtime_to_loopback

NAME = "simbench"
HELP = "async tasks vs bulk-synchronous rounds (Ray OSDI'18 Table 4)"
EPILOG = f"""\
examples:
  rlbench simbench                       # every CPU count from 1 to all cores, {DEFAULT_REPEATS} repeats per mode
  rlbench simbench --cpus 1,2 --mean-steps 5000 --repeats 1 --out sim.json

The table puts this machine's timesteps/s beside the paper's; docs/STUDIES.md explains the differences."""


def setup_arguments(simbench: argparse.ArgumentParser) -> None:
    simbench.add_argument("--cpus", default=None, help="comma-separated CPU counts (default 1..all cores)")
    simbench.add_argument(
        "--mean-steps", type=int, default=20_000, help="mean rollout length in timesteps (default 20000)"
    )
    simbench.add_argument(
        "--repeats", type=int, default=DEFAULT_REPEATS, help=f"alternating repeats per mode (default {DEFAULT_REPEATS})"
    )
    simbench.add_argument("--out", type=Path, default=None, help="also write the results as JSON here")


def run(args: argparse.Namespace, console: Console) -> int:
    """Run both modes at each CPU count; print (and write) the results beside the paper's."""
    try:
        cores = len(usable_cores())
        counts = int_list(args.cpus, "--cpus") or list(range(1, cores + 1))
        if max(counts) > cores:
            raise ValueError(f"--cpus {max(counts)}: this machine has {cores} usable cores")
        if args.mean_steps < 10 or args.repeats < 1:
            raise ValueError("--mean-steps must be >= 10 and --repeats >= 1")
    except ValueError as e:
        return bad_input(console, str(e))
    console.print(
        f"simbench: 3n Pendulum-v1 rollouts (mean {args.mean_steps} steps) on n CPUs, "
        f"n in {counts}, {args.repeats} repeats per mode"
    )
    warn_if_auth_disabled(console)
    secure_ray(console, create=True)
    bind_local_runtime_to_loopback()  # its private Ray runtimes listen on 127.0.0.1 only
    results = run_simbench(counts, mean_steps=args.mean_steps, repeats=args.repeats)
    table = Table(title="timesteps per second: bulk-synchronous rounds vs async tasks")
    for column in ("CPUs", "BSP", "async", "async/BSP", "paper BSP (MPI)", "paper async (Ray)", "paper ratio"):
        table.add_column(column, justify="right")
    for r in results:
        paper = PAPER_TABLE4.get(r.cpus)
        table.add_row(
            str(r.cpus),
            f"{r.bsp_steps_per_s:,.0f}",
            f"{r.async_steps_per_s:,.0f}",
            f"{r.async_over_bsp:.2f}x",
            *((f"{paper[0]:,.0f}", f"{paper[1]:,.0f}", f"{paper[1] / paper[0]:.2f}x") if paper else ("-", "-", "-")),
        )
    console.print(table)
    console.print(
        "paper (Pendulum-v0, 2018): 1 CPU 22.6K / 22.3K, 16 CPUs 208K / 290K, 256 CPUs 2.16M / 4.03M "
        "(BSP / async); see docs/STUDIES.md for why this machine differs"
    )
    if args.out:
        write_json(own_file(args.out), [result_dict(r) for r in results])
        say(console, f"written: {args.out}")
    return EXIT_OK
