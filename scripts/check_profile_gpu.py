"""Profiling a GPU learner on a bigger machine: rlbench's py-spy profiler on a CUDA training process.

A child process trains an MLP with Adam on the GPU (CPU when there is none), pinned to cores 0-1
as a trial with ``cpus: 2`` would be; rlbench's :class:`~rlbench.measure.profiler.TrialProfiler`
profiles it as the ``learner`` role. Windows of ``--seconds`` alternate: unprofiled, py-spy
``--nonblocking``, unprofiled, py-spy ``--native``, and so on (``--rounds`` times). Prints, per
window, the training steps per second, py-spy's CPU (% of one core) and the cores py-spy was
allowed to run on (the machine's cores outside the trial's: ``Cpus_allowed_list``), then the top
functions by self time of each profile. Needs no Ray (the lent GPU machine has none).

    python scripts/check_profile_gpu.py [--seconds 6] [--rounds 2] [--pyspy PATH]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

LOOP = """
import os, sys, time
os.sched_setaffinity(0, [0, 1])
import torch
dev = "cuda" if torch.cuda.is_available() else "cpu"
torch.set_num_threads(1)
net = torch.nn.Sequential(torch.nn.Linear(2048, 4096), torch.nn.Tanh(), torch.nn.Linear(4096, 4096), torch.nn.Tanh(),
                          torch.nn.Linear(4096, 16)).to(dev)
opt = torch.optim.Adam(net.parameters(), lr=1e-4)
x = torch.randn(1024 if dev == "cuda" else 64, 2048, device=dev)


def sgd_step():
    opt.zero_grad(set_to_none=True)
    loss = net(x).pow(2).mean()
    loss.backward()
    opt.step()


steps = 0
while True:
    sgd_step()
    steps += 1
    if dev == "cpu" or steps % 10 == 0:
        if dev == "cuda":
            torch.cuda.synchronize()
        print(steps, time.monotonic(), flush=True)
"""


class _Sampler:
    def __init__(self, pid: int):
        self.pid = pid

    def processes(self) -> dict[int, str]:
        return {self.pid: "learner"}

    def adopt(self, pid: int) -> None:
        pass


class _Progress(threading.Thread):
    """Reads the child's (steps, time) lines as they come."""

    def __init__(self, stream):
        super().__init__(daemon=True)
        self.stream, self.points = stream, []

    def run(self) -> None:
        for line in self.stream:
            steps, t = line.split()
            self.points.append((int(steps), float(t)))

    def rate(self, t0: float, t1: float) -> float:
        inside = [(s, t) for s, t in self.points if t0 <= t <= t1]
        if len(inside) < 2:
            return float("nan")
        return (inside[-1][0] - inside[0][0]) / (inside[-1][1] - inside[0][1])


def _allowed(pid: int | None) -> str:
    if pid is None:
        return "-"
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("Cpus_allowed_list"):
                return line.split(":")[1].strip()
    except OSError:
        pass
    return "gone"


def main() -> None:
    from rlbench.analysis.profiles import profile_rows, read_speedscope, short_file
    from rlbench.measure.profiler import TrialProfiler
    from rlbench.results.layout import TrialFolder

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=6.0)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--pyspy", default=None)
    args = parser.parse_args()
    child = subprocess.Popen([sys.executable, "-c", LOOP], stdout=subprocess.PIPE, text=True)
    progress = _Progress(child.stdout)
    progress.start()
    root = Path(tempfile.mkdtemp(prefix="rlbench-check-profile-"))
    print(f"machine: {os.cpu_count()} cores; trial pinned to 0-1; load {os.getloadavg()[0]:.2f}", flush=True)
    try:
        while len(progress.points) < 3:  # CUDA start-up
            time.sleep(0.5)
        time.sleep(args.seconds)
        profiles = []
        for r in range(args.rounds):
            for mode in ("off", "nonblocking", "off", "native"):
                t0 = time.monotonic()
                trial = TrialFolder(root / f"r{r}-{mode}-{int(t0)}")
                trial.path.mkdir()
                profiler = None
                if mode != "off":
                    profiler = TrialProfiler(
                        trial,
                        _Sampler(child.pid),
                        hz=100,
                        native=mode == "native",
                        warmup_iterations=0,
                        stop_iterations=None,
                        stop_seconds=None,
                        t0_epoch=time.time(),
                        cores=[0, 1],
                        pyspy=args.pyspy,
                    )
                    profiler.start()
                time.sleep(0.5)
                allowed = _allowed(profiler.processes[0].profiler_pid) if profiler else "-"
                time.sleep(args.seconds - 0.5)
                t1 = time.monotonic()
                line = f"  round {r} {mode:11} steps/s {progress.rate(t0 + 1.0, t1):7.2f}"
                if profiler:
                    profiler.stop()
                    event = profiler.finish()
                    proc = event["processes"][0]
                    window = event["t_stop_s"] - event["t_start_s"]
                    line += (
                        f"  py-spy: {proc['status']}, {100 * (proc['cpu_s'] or 0) / window:.1f}% of one core, "
                        f"samples {proc['samples']}, unreadable {proc['errors']}, allowed cores {allowed}"
                    )
                    if proc["status"] == "ok":
                        profiles.append((mode, trial.profile_file("learner", child.pid)))
                print(line, flush=True)
        for mode, path in profiles[-2:]:
            profile = read_speedscope(path)
            rows = sorted(profile_rows("x", "learner", child.pid, profile), key=lambda r: -r["self_samples"])
            print(f"\n{mode}: {profile.samples} samples; top functions by self time")
            for row in rows[:8]:
                print(
                    f"  {row['self_frac']:6.1%} self {row['total_frac']:6.1%} total  {row['function'][:70]} "
                    f"({short_file(row['file'])}:{row['line']})"
                )
    finally:
        child.kill()
        child.wait()


if __name__ == "__main__":
    main()
