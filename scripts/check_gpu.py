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


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=8.0, help="busy seconds (default 8)")
    parser.add_argument("--hz", type=float, default=10.0, help="samples per second (default 10)")
    args = parser.parse_args()

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
        print(f"GPU {g['index']}: {g['name']}, {g['memory_bytes'] / 2**30:.1f} GiB, driver {g['driver']}, "
              f"{g['sm_count']} SMs")
    sm = machine.gpus[0]["sm_count"]
    if sm:
        print(f"cpu_threads_per_gpu_sm with all {len(machine.usable_cores)} usable cores and 1 GPU: "
              f"{len(machine.usable_cores) / sm:.3f}")

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
    print(gpu[["t_s", "gpu_util_pct", "gpu_power_w", "gpu_sm_clock_mhz", "gpu_mem_used_bytes", "gpu_energy_mj"]]
          .iloc[::5].to_string(index=False))
    busy = gpu[gpu["gpu_util_pct"] >= 50]
    if len(busy) < 2:
        print("the GPU never looked busy: no window to check")
        return 1
    window = (float(busy["t_s"].iloc[0]), float(busy["t_s"].iloc[-1]))
    counter_j = gpu_energy_j(gpu.assign(node_id=None), window)
    inside = gpu[(gpu["t_s"] >= window[0]) & (gpu["t_s"] <= window[1])]
    t, p = inside["t_s"].to_numpy(), inside["gpu_power_w"].to_numpy()
    power_j = float(((p[1:] + p[:-1]) / 2 * (t[1:] - t[:-1])).sum())
    print(f"\nbusy window {window[0]:.2f}-{window[1]:.2f} s ({window[1] - window[0]:.2f} s), mean utilization "
          f"{inside['gpu_util_pct'].mean():.0f}%, mean power {inside['gpu_power_w'].mean():.0f} W")
    print(f"energy from NVML's counter (gpu_energy_j): {counter_j:.1f} J")
    print(f"energy from integrated power readings:     {power_j:.1f} J (ratio counter/power "
          f"{counter_j / power_j:.3f})")
    procs = cols[cols["kind"] == "process"]
    print(f"\nprocess rows: {len(procs)} (roles {sorted(set(procs['role']))}), mean CPU "
          f"{procs['cpu_pct'].mean():.0f}% of a core; sampler used {sampler.cpu_s:.3f} CPU s in "
          f"{sampler.samples} samples; pid {os.getpid()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
