"""Known answers, end to end with real Ray and RLlib: one small sweep of the synthetic env.

SyntheticEnv times itself (``self_timing_dir``): each env-runner process records the seconds it
spent inside the bodies of ``step`` and ``reset``, and how many of each it ran. rlbench's
``env_step_s`` wraps those calls from outside (the vector env around them), so it must equal the
env's own total plus a thin wrapper, whatever else the machine runs: a runner descheduled inside
``step`` stops both clocks alike. Steps x cost (SyntheticEnv burns ``step_cost_us`` of CPU time per
step and reset) stays a lower bound only; the tight figure against it belongs to
``scripts/bench_accuracy.py``, which prints it with the machine's load. The sweep also runs with a
fake NVML module (the seam of rlbench/nvml.py) whose one GPU draws a constant 50 W and whose energy
counter wraps during the sweep, and a fake powercap tree (the seam of rlbench/worker/rapl.py) whose
one CPU package draws 30 W with a counter that wraps every second, so the energy is known in advance too.
"""

from __future__ import annotations

import io
import threading
import time
from pathlib import Path
from types import SimpleNamespace

import pandas as pd
import pytest
from fakes import DrivenRapl
from rich.console import Console

from envs.synthetic import read_self_timing
from rlbench.worker.nvml import ENERGY_COUNTER_MODULUS_MJ

pytestmark = pytest.mark.slow

STEP_COST_US = 4000
EPISODE_LEN = 16
BATCH = 128
POWER_W = 50.0
CPU_POWER_W = 30.0
#: The fake package counter's range: 30 J, so it wraps every second of the sweep.
CPU_RANGE_UJ = 30_000_000

SPEC = f"""
name: accuracy
environment:
  env: envs.synthetic:SyntheticEnv
  env_config: {{step_cost_us: {STEP_COST_US}, episode_len: {EPISODE_LEN}, obs_size: 8,
               self_timing_dir: {{timing_dir}}}}
env_runners:
  num_cpus_per_env_runner: 1
resources:
  num_cpus_for_main_process: 0   # both cores to Ray: the driver only waits while the runners sample
training:
  train_batch_size_per_learner: {BATCH}
  minibatch_size: 64
  num_epochs: 1
rl_module:
  fcnet_hiddens: [16]
grid:
  num_env_runners: [1, 2]
cpus: 2
stop:
  iterations: 5
warmup_iterations: 1
trial_timeout_s: 180
sample_hz: 10
env_ceiling_s: 0
"""


class ConstantPowerNvml:
    """A fake pynvml with one GPU drawing POWER_W; its energy counter is 3 s short of a wrap at its
    first reading (the sweep may spend a while before sampling starts, e.g. measuring env ceilings)."""

    NVML_CLOCK_SM = 1

    def __init__(self):
        self.t0: float | None = None
        self.start_mj = ENERGY_COUNTER_MODULUS_MJ - int(3 * POWER_W * 1000)
        self.raw: list[int] = []
        self.lock = threading.Lock()

    def nvmlInit(self):
        pass

    def nvmlShutdown(self):
        pass

    def nvmlDeviceGetCount(self):
        return 1

    def nvmlDeviceGetHandleByIndex(self, i):
        return i

    def nvmlSystemGetDriverVersion(self):
        return "fake-550"

    def nvmlDeviceGetName(self, h):
        return b"Fake GPU"

    def nvmlDeviceGetUtilizationRates(self, h):
        return SimpleNamespace(gpu=10, memory=0)

    def nvmlDeviceGetMemoryInfo(self, h):
        return SimpleNamespace(total=2**34, used=2**30, free=2**34 - 2**30)

    def nvmlDeviceGetPowerUsage(self, h):
        return int(POWER_W * 1000)

    def nvmlDeviceGetClockInfo(self, h, clock):
        return 1410

    def nvmlDeviceGetTotalEnergyConsumption(self, h):
        if self.t0 is None:
            self.t0 = time.monotonic()
        value = (self.start_mj + int(POWER_W * 1000 * (time.monotonic() - self.t0))) % ENERGY_COUNTER_MODULUS_MJ
        with self.lock:
            self.raw.append(value)
        return value


@pytest.fixture(scope="module")
def sweep(tmp_path_factory):
    from rlbench.analysis.tables import build_tables
    from rlbench.report.trial_plots import write_plots
    from rlbench.run.sweep import run_sweep
    from rlbench.spec.load import load_spec

    root = tmp_path_factory.mktemp("accuracy")
    spec = root / "accuracy.yaml"
    timing = root / "timing"
    timing.mkdir()
    spec.write_text(SPEC.replace("{timing_dir}", str(timing)))
    nvml = ConstantPowerNvml()
    out = root / "out"
    with DrivenRapl(root / "powercap", CPU_POWER_W, CPU_RANGE_UJ) as rapl:
        outcome = run_sweep(
            load_spec(spec), out, console=Console(file=io.StringIO()), nvml=nvml, powercap_root=str(rapl.root)
        )
    assert [r.status for r in outcome.records] == ["ok", "ok"], [r.reason for r in outcome.records]
    tables = build_tables(out)
    write_plots(out, tables, ["num_env_runners"])
    return out, tables, nvml, read_self_timing(timing)


def _steady(tables) -> pd.DataFrame:
    its = tables["iterations"]
    return its[~its["warmup"]]


def _runner_pids(tables, trial_id: str) -> set[int]:
    util = tables["utilization"]
    rows = util[(util["trial_id"] == trial_id) & (util["role"] == "env_runner")]
    return set(rows["pid"].dropna().astype(int))


def _env_own(tables, timing, trial_id: str) -> tuple[float, int, int, int]:
    """(seconds, steps, resets, processes) the trial's env runners timed and counted themselves."""
    own = [timing[pid] for pid in _runner_pids(tables, trial_id) if pid in timing]
    return sum(o[0] for o in own), sum(o[1] for o in own), sum(o[2] for o in own), len(own)


#: The vector env, RLlib's wrappers and the timing wrapper itself, around the env's own step: a few
#: tens of microseconds of CPU per call against a 4,000 us step, 3-5% here. The env's spin is exact
#: in CPU time, but the wrappers' Python is not: a busy process on the other hyperthread slows it in
#: CPU time too (under scripts/ci_under_load.sh 1 it read 5.1%: 2.86 s against 2.72 s, two runners).
#: A double count (2x) or the whole sampling thread's CPU counted as the env's (about 1.3x here)
#: stays far outside.
WRAPPER_REL = 0.15
#: The same wrappers in wall time: a runner descheduled inside the env's body stops both clocks alike,
#: but one descheduled in the wrappers stops only rlbench's. With a busy process beside the suite
#: that read 11.6% once (6.03 s against 5.40 s, two runners); what this bound catches is a double
#: count or a clock around the wrong call, the tight figure is the CPU one and scripts/bench_accuracy.py.
WRAPPER_WALL_REL = 0.5


@pytest.mark.parametrize("trial_id, runners", [("t000r0", 1), ("t001r0", 2)])
def test_env_time_equals_what_the_env_timed_itself(sweep, trial_id, runners):
    """Every iteration (warm-up included) against the env's own clock: load cannot move this answer."""
    _, tables, _, timing = sweep
    its = tables["iterations"]
    its = its[its["trial_id"] == trial_id]
    own_s, own_steps, own_resets, processes = _env_own(tables, timing, trial_id)
    assert processes == runners, (processes, timing)
    assert own_steps == its["env_steps_sampled"].sum()  # every step the env took was sampled in an iteration
    # env_step_s is wall-equivalent (per runner): all runners together spent `runners` times that
    measured_s = runners * its["env_step_s"].sum()
    assert own_s <= measured_s <= own_s * (1 + WRAPPER_WALL_REL), (measured_s, own_s)
    # steps x cost stays a lower bound: the env burns that much CPU time, so at least that much wall time
    cost_s = (own_steps + own_resets) * STEP_COST_US / 1e6
    assert own_s >= cost_s
    # in CPU time the env costs exactly its spin plus the thin wrappers, however busy the machine
    runner_its = tables["runner_iterations"]
    cpu_s = runner_its[runner_its["trial_id"] == trial_id]["env_step_cpu_s"].sum()
    assert cost_s <= cpu_s <= cost_s * (1 + WRAPPER_REL), (cpu_s, cost_s)


def test_the_split_adds_up(sweep):
    _, tables, _, _ = sweep
    one = _steady(tables)
    one = one[one["trial_id"] == "t000r0"]
    assert (one["env_step_s"] + one["inference_s"] + one["sample_other_s"] - one["sample_s"]).abs().max() < 1e-9
    assert (one[["inference_s", "sample_other_s", "learner_connector_s", "sgd_s"]] > 0).all().all()
    assert (one["learner_connector_s"] + one["sgd_s"] - one["learn_s"]).abs().max() < 1e-9


def test_two_runners_share_every_iteration_evenly(sweep):
    """RLlib asks each of 2 runners for half of the batch: their own step counts are equal (a count
    no load can move; the speed-up this buys is a timing figure, printed by scripts/bench_accuracy.py)."""
    _, tables, _, timing = sweep
    steps = [timing[pid][1] for pid in _runner_pids(tables, "t001r0")]
    assert len(steps) == 2 and steps[0] == steps[1] > 0, steps


def test_gpu_and_cpu_energy_from_wrapping_counters(sweep):
    _, tables, nvml, _ = sweep
    assert max(nvml.raw) > ENERGY_COUNTER_MODULUS_MJ // 2 and min(nvml.raw) < 10**9  # it wrapped during the sweep
    trials, steady = tables["trials"], _steady(tables)
    for _, row in trials.iterrows():
        its = steady[steady["trial_id"] == row["trial_id"]]
        window_s = its["t_end_s"].max() - its["t_start_s"].min()
        assert row["gpu_energy_j"] == pytest.approx(POWER_W * window_s, rel=0.05)
        assert row["cpu_energy_j"] == pytest.approx(CPU_POWER_W * window_s, rel=0.05)
        assert row["energy_j"] == row["gpu_energy_j"] + row["cpu_energy_j"] and row["energy_parts"] == "cpu+gpu"
        assert row["j_per_env_step"] == pytest.approx(row["energy_j"] / its["env_steps_sampled"].sum())
        assert row["env_steps_per_s_per_w"] == pytest.approx(row["env_steps_per_s"] / (POWER_W + CPU_POWER_W), rel=0.05)
    energy = tables["utilization"].query("kind == 'gpu'").groupby("trial_id")["gpu_energy_mj"]
    assert energy.apply(lambda e: e.is_monotonic_increasing).all()  # no wrap leaks into the series
    cpu = tables["utilization"].query("kind == 'cpu_energy'").groupby("trial_id")["cpu_energy_uj"]
    assert cpu.apply(lambda e: e.is_monotonic_increasing).all() and (cpu.max() > 2 * CPU_RANGE_UJ).all()


def test_cpu_plots_written(sweep):
    out, _, _, _ = sweep
    for name in ("cpu_alloc_vs_used.png", "cpu_heatmap_t000r0.png", "cpu_heatmap_t001r0.png"):
        assert (Path(out) / "plots" / name).is_file(), name
