"""Check rlbench's GPU paths on a real GPU: NVML through the seam, the sampler's GPU rows, energy.

Tests cover these paths with a fake NVML module; this script runs them against the real driver.
It describes every GPU (name, memory, driver, SM count), then samples a child process that keeps
the first GPU busy with matrix products for ``--seconds`` (idle before and after), and prints:

- the sampler's GPU rows over time (utilization, power, SM clock, energy since its first reading);
- energy over the busy window two ways: from NVML's total-energy counter (what rlbench reports as
  ``gpu_energy_j``) and from integrating the power readings (a cross-check; NVML averages power
  over about a second, so the two agree only roughly on short windows);
- ``cpu_threads_per_gpu_sm`` for this machine's cores.

    python scripts/check_gpu.py [--seconds 8] [--hz 10]

With ``--learner`` it then checks why a learner is slow (issue 43) on the real GPU: it runs
configs/ppo_gpu.yaml and a Pong grid (configs/workloads/pong_ppo.yaml with RLlib's Atari CNN), each cut to a CPU
and a GPU learner (``learner_gpus: [0, 1]``) so they fit a short session, and prints per configuration the
learner's split (``learn_batch_s``, ``learn_update_s``, ``learn_other_s``, ``learn_copy_s``, ``learn_device_s``),
the learn windows' ``gpu_busy_pct`` and ``learn_cpus_used``, the bottleneck with its verdicts (the sampler's
first where sampling limits the iteration, issue 49), what its env and learner allow (the ceiling line), and the
``next.yaml`` each report wrote (the limiting side's knob); ``--follow`` then runs each ``next.yaml``
(``--follow-repeats 1`` cuts its 3 repeats to fit a session; say so beside the figures) and prints the speed-up per
value over the current one:

    bash .device-pack/install.sh && export PYTHONPATH=/tmp/site     # a machine without network (device-pack)
    python3 scripts/check_gpu.py --learner --out /tmp/gpu [--follow --follow-repeats 1] [--skip-nvml]

The Pong grid needs ale-py (pack it: ../shared/tools/device-pack .device-pack ale-py==0.11.2). Measured figures go
in docs/MEASUREMENT.md, "The learner's split", dated, with this command.

Needs torch with CUDA and nvidia-ml-py; prints what it could not do otherwise.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

LOAD = """
import sys, time, torch
seconds = float(sys.argv[1])
a = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
torch.cuda.synchronize()
print("ready", flush=True)
time.sleep(1.0)                       # idle: the window starts low
end = time.monotonic() + seconds
n = 0
while time.monotonic() < end:
    for _ in range(20):
        a = (a @ a).clamp_(-1, 1)
    torch.cuda.synchronize()
    n += 20
print(f"products {n}", flush=True)
time.sleep(1.0)                       # idle again
"""


#: The learner grids: (name, spec file, what is cut so that each runs in a few minutes on a 16-core GPU machine).
LEARNER_GRIDS = (
    (
        "ppo_gpu",
        "configs/ppo_gpu.yaml",
        {
            "grid": {"learner_gpus": [0, 1], "num_env_runners": [4]},
            "repeats": 1,
            "stop": {"iterations": 5},
            "warmup_iterations": 2,
        },
    ),
    (
        "pong",
        "configs/workloads/pong_ppo.yaml",
        {
            "grid": {"learner_gpus": [0, 1]},
            "cpus": None,
            "repeats": 1,
            "stop": {"iterations": 4},
            "warmup_iterations": 1,
            "env_runners": {"num_env_runners": 8, "num_envs_per_env_runner": 2},
            "resources": {"num_cpus_for_main_process": 4},
        },
    ),
)
#: The learner split's columns, per configuration (medians of the repeats' steady medians).
SPLIT = (
    "learn_s_per_iteration",
    "learn_batch_s",
    "learn_update_s",
    "learn_other_s",
    "learn_copy_s",
    "learn_device_s",
    "gpu_busy_pct",
    "learn_cpus_used",
    "sgd_steps_per_iteration",
    "sgd_step_s",
)


def sweep(spec: Path, out: Path) -> bool:
    """``rlbench sweep SPEC --out OUT`` in a child process (its output shown); whether it ran every trial."""
    print(f"\n$ python3 -m rlbench sweep {spec} --out {out}", flush=True)
    return subprocess.run([sys.executable, "-m", "rlbench", "sweep", str(spec), "--out", str(out)]).returncode == 0


def show_split(out: Path) -> None:
    """Per configuration: throughput, the learner's split, the bottleneck and the verdicts; the next.yaml."""
    import pandas as pd

    from rlbench.analysis import analyze
    from rlbench.analysis.sampling import ceiling_text
    from rlbench.results.layout import ResultsFolder

    analysis = analyze(out)
    columns = [*analysis.axes, "env_steps_per_s", *SPLIT, "bottleneck"]
    with pd.option_context("display.width", 250, "display.max_columns", 40):
        print(analysis.configs[[c for c in columns if c in analysis.configs]].round(4).to_string(index=False))
    for _, row in analysis.configs.iterrows():
        print(f"- {', '.join(f'{a}={row[a]}' for a in analysis.axes)}: {row['verdict']}")
        print(f"  ceiling: {ceiling_text(row.to_dict())}")  # issue 49: what its env and learner allow here
    next_spec = ResultsFolder(out).next_spec
    none = f"none ({analysis.next_stop})" if analysis.next_stop else "none (no verdict names a knob)"
    print(f"next.yaml: {next_spec if next_spec.exists() else none}")


def follow(out: Path, repeats: int | None) -> None:
    """Run the folder's next.yaml (its repeats cut to ``repeats`` when given) and print the throughput per value."""
    import yaml

    from rlbench.analysis import analyze
    from rlbench.results.layout import ResultsFolder

    path = ResultsFolder(out).next_spec
    if not path.exists():
        return
    spec = yaml.safe_load(path.read_text())
    if repeats is not None:
        spec["repeats"] = repeats
        path = out.parent / f"{out.name}-next.yaml"
        path.write_text(yaml.safe_dump(spec, sort_keys=False))
    done = out.parent / f"{out.name}-next"
    if sweep(path, done):
        configs = analyze(done).configs
        (knob,) = spec["grid"]
        base = configs.loc[configs[knob] == configs[knob].min(), "env_steps_per_s"].iloc[0]
        for _, row in configs.sort_values(knob).iterrows():
            print(
                f"  {knob}={row[knob]}: {row['env_steps_per_s']:,.0f} env steps/s "
                f"[{row['env_steps_per_s_ci_low']:,.0f}, "
                f"{row['env_steps_per_s_ci_high']:,.0f}], {row['env_steps_per_s'] / base:.2f}x the smallest; "
                f"{row['bottleneck']}"
            )


def learner_checks(args) -> int:
    """The learner grids on this GPU, their split and verdicts, and (``--follow``) their next.yaml."""
    import yaml

    root = Path(args.out)
    root.mkdir(parents=True, exist_ok=True)
    failed = 0
    for name, source, cut in LEARNER_GRIDS:
        spec = yaml.safe_load(Path(source).read_text())
        for key, value in cut.items():
            if isinstance(value, dict) and isinstance(spec.get(key), dict) and key != "grid":
                spec[key] = {**spec[key], **value}
            elif value is None:
                spec.pop(key, None)
            else:
                spec[key] = value
        spec["name"] = f"check_gpu_{name}"
        path = root / f"{name}.yaml"
        path.write_text(yaml.safe_dump(spec, sort_keys=False))
        out = root / name
        if not sweep(path, out):
            failed += 1
        if (out / "trials.parquet").exists():
            show_split(out)
            if args.follow:
                follow(out, args.follow_repeats)
    return 1 if failed else 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=8.0, help="busy seconds (default 8)")
    parser.add_argument("--hz", type=float, default=10.0, help="samples per second (default 10)")
    parser.add_argument("--learner", action="store_true", help="also run the learner grids and print the split")
    parser.add_argument("--skip-nvml", action="store_true", help="skip the NVML and energy check")
    parser.add_argument("--follow", action="store_true", help="run each next.yaml the learner grids wrote")
    parser.add_argument("--follow-repeats", type=int, default=None, help="cut next.yaml's repeats to this")
    parser.add_argument(
        "--out", default="/tmp/check_gpu", help="where the learner grids write (default /tmp/check_gpu)"
    )
    args = parser.parse_args()
    nvml = 0 if args.skip_nvml else nvml_check(args)
    return max(nvml, learner_checks(args) if args.learner else 0)


def nvml_check(args) -> int:
    """NVML through the seam, the sampler's GPU rows and the energy over a busy window."""

    from rlbench.analysis.trial_rows import gpu_energy_j
    from rlbench.measure.machine import probe_machine
    from rlbench.measure.utilization import UtilizationSampler
    from rlbench.worker.nvml import open_gpus

    machine = probe_machine()
    print(f"machine: {machine.cpu_model}, {machine.logical_cores} logical cores, {len(machine.usable_cores)} usable")
    if not machine.gpus:
        print("NVML found no GPU: nothing to check")
        return 1
    for g in machine.gpus:
        print(
            f"GPU {g['index']}: {g['name']}, {g['memory_bytes'] / 2**30:.1f} GiB, driver {g['driver']}, "
            f"{g['sm_count']} SMs"
        )
    sm = machine.gpus[0]["sm_count"]
    if sm:
        print(
            f"cpu_threads_per_gpu_sm with all {len(machine.usable_cores)} usable cores and 1 GPU: "
            f"{len(machine.usable_cores) / sm:.3f}"
        )

    gpus = open_gpus()
    child = subprocess.Popen([sys.executable, "-c", LOAD, str(args.seconds)], stdout=subprocess.PIPE, text=True)
    line = child.stdout.readline().strip()
    if line != "ready":
        print(f"the load process did not start (torch with CUDA?): {line!r}")
        return 1
    t0 = time.time()
    sampler = UtilizationSampler(child.pid, t0_epoch=t0, hz=args.hz, gpus=gpus).start()
    rest = child.stdout.read()
    child.wait()
    sampler.stop()
    gpus.close()
    print(rest.strip())

    import pandas as pd

    cols = pd.DataFrame(sampler.columns)
    gpu = cols[(cols["kind"] == "gpu") & (cols["gpu_index"] == 0)].sort_values("t_s")
    print(f"\n{len(gpu)} GPU rows at {args.hz:g} Hz; every 5th:")
    print(
        gpu[["t_s", "gpu_util_pct", "gpu_power_w", "gpu_sm_clock_mhz", "gpu_mem_used_bytes", "gpu_energy_mj"]]
        .iloc[::5]
        .to_string(index=False)
    )
    busy = gpu[gpu["gpu_util_pct"] >= 50]
    if len(busy) < 2:
        print("the GPU never looked busy: no window to check")
        return 1
    window = (float(busy["t_s"].iloc[0]), float(busy["t_s"].iloc[-1]))
    counter_j = gpu_energy_j(gpu.assign(node_id=None), window)
    inside = gpu[(gpu["t_s"] >= window[0]) & (gpu["t_s"] <= window[1])]
    t, p = inside["t_s"].to_numpy(), inside["gpu_power_w"].to_numpy()
    power_j = float(((p[1:] + p[:-1]) / 2 * (t[1:] - t[:-1])).sum())
    print(
        f"\nbusy window {window[0]:.2f}-{window[1]:.2f} s ({window[1] - window[0]:.2f} s), mean utilization "
        f"{inside['gpu_util_pct'].mean():.0f}%, mean power {inside['gpu_power_w'].mean():.0f} W"
    )
    print(f"energy from NVML's counter (gpu_energy_j): {counter_j:.1f} J")
    print(f"energy from integrated power readings:     {power_j:.1f} J (ratio counter/power {counter_j / power_j:.3f})")
    procs = cols[cols["kind"] == "process"]
    print(
        f"\nprocess rows: {len(procs)} (roles {sorted(set(procs['role']))}), mean CPU "
        f"{procs['cpu_pct'].mean():.0f}% of a core; sampler used {sampler.cpu_s:.3f} CPU s in "
        f"{sampler.samples} samples; pid {os.getpid()}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
