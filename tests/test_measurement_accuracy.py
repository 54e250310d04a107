"""Known answers, end to end with real Ray and RLlib: one small sweep of the synthetic env.

SyntheticEnv burns ``step_cost_us`` of CPU time in every step and every reset, so the time an
iteration spends inside the env is known in advance: (steps + resets) x cost. The sweep also runs
with a fake NVML module (the seam of rlbench/nvml.py) whose one GPU draws a constant 50 W and
whose energy counter wraps during the sweep, so the GPU energy is known in advance too.
"""

from __future__ import annotations

import io
import threading
import time
from pathlib import Path
from types import SimpleNamespace

import pandas as pd
import pytest
from rich.console import Console

from rlbench.nvml import ENERGY_COUNTER_MODULUS_MJ

pytestmark = pytest.mark.slow

STEP_COST_US = 4000
EPISODE_LEN = 16
BATCH = 128
POWER_W = 50.0

SPEC = f"""
name: accuracy
environment:
  env: envs.synthetic:SyntheticEnv
  env_config: {{step_cost_us: {STEP_COST_US}, episode_len: {EPISODE_LEN}, obs_size: 8}}
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

    def nvmlInit(self): pass
    def nvmlShutdown(self): pass
    def nvmlDeviceGetCount(self): return 1
    def nvmlDeviceGetHandleByIndex(self, i): return i
    def nvmlSystemGetDriverVersion(self): return "fake-550"
    def nvmlDeviceGetName(self, h): return b"Fake GPU"
    def nvmlDeviceGetUtilizationRates(self, h): return SimpleNamespace(gpu=10, memory=0)
    def nvmlDeviceGetMemoryInfo(self, h): return SimpleNamespace(total=2**34, used=2**30, free=2**34 - 2**30)
    def nvmlDeviceGetPowerUsage(self, h): return int(POWER_W * 1000)
    def nvmlDeviceGetClockInfo(self, h, clock): return 1410

    def nvmlDeviceGetTotalEnergyConsumption(self, h):
        if self.t0 is None:
            self.t0 = time.monotonic()
        value = (self.start_mj + int(POWER_W * 1000 * (time.monotonic() - self.t0))) % ENERGY_COUNTER_MODULUS_MJ
        with self.lock:
            self.raw.append(value)
        return value


@pytest.fixture(scope="module")
def sweep(tmp_path_factory):
    from rlbench.report import write_plots
    from rlbench.run import run_sweep
    from rlbench.spec import load_spec
    from rlbench.store import build_tables

    root = tmp_path_factory.mktemp("accuracy")
    spec = root / "accuracy.yaml"
    spec.write_text(SPEC)
    nvml = ConstantPowerNvml()
    out = root / "out"
    outcome = run_sweep(load_spec(spec), out, console=Console(file=io.StringIO()), nvml=nvml)
    assert [r.status for r in outcome.records] == ["ok", "ok"], [r.reason for r in outcome.records]
    tables = build_tables(out)
    write_plots(out, tables, ["num_env_runners"])
    return out, tables, nvml


def _steady(tables) -> pd.DataFrame:
    its = tables["iterations"]
    return its[~its["warmup"]]


def _free_cores(tables, trial_id: str) -> float:
    """The trial's 2 cores less what other processes of the machine kept busy in its steady window."""
    its = _steady(tables)
    its = its[its["trial_id"] == trial_id]
    util = tables["utilization"]
    window = util[(util["trial_id"] == trial_id) & (util["t_s"] >= its["t_start_s"].min())
                  & (util["t_s"] <= its["t_end_s"].max())]
    ticks = window["t_s"].nunique()
    busy_cores = window[window["kind"] == "core"]["cpu_pct"].sum() / 100 / ticks
    trial_cores = window[window["kind"] == "process"]["cpu_pct"].sum() / 100 / ticks
    return min(2.0, max(0.5, 2.0 - (busy_cores - trial_cores)))


def _check_env_time(measured_s: float, expected_s: float, runners: int, free: float, rel: float) -> None:
    """The known answer holds when each runner has a core to itself.

    SyntheticEnv spins until it has used its CPU cost, so on a machine other work keeps busy (a
    shared developer box) a runner descheduled inside ``step`` takes longer than its cost in wall
    time and the env time rises (measured: +25-40% with 1.2 cores taken by others). Then only the lower bound is a known
    answer; CI runs nothing beside the test, so there the full check applies.
    """
    assert measured_s >= expected_s * (1 - rel), (measured_s, expected_s)
    if free >= min(1.9, runners + 0.5):  # others took at most half a core (a tenth with 2 runners on 2)
        assert measured_s == pytest.approx(expected_s, rel=rel), (measured_s, expected_s, free)


def test_env_time_matches_steps_times_cost_with_one_runner(sweep):
    _, tables, _ = sweep
    steady = _steady(tables)
    one = steady[steady["trial_id"] == "t000r0"]
    steps = one["env_steps_sampled"].sum()
    expected_s = (steps + steps / EPISODE_LEN) * STEP_COST_US / 1e6  # every step plus one reset per episode
    measured_s = one["env_step_s"].sum()
    _check_env_time(measured_s, expected_s, 1, _free_cores(tables, "t000r0"), rel=0.05)
    # the split adds up and every part is a real, positive time
    assert (one["env_step_s"] + one["inference_s"] + one["sample_other_s"] - one["sample_s"]).abs().max() < 1e-9
    assert (one[["inference_s", "sample_other_s", "learner_connector_s", "sgd_s"]] > 0).all().all()
    assert (one["learner_connector_s"] + one["sgd_s"] - one["learn_s"]).abs().max() < 1e-9


def test_env_time_summed_over_two_runners_is_the_same_known_answer(sweep):
    _, tables, _ = sweep
    steady = _steady(tables)
    two = steady[steady["trial_id"] == "t001r0"]
    steps = two["env_steps_sampled"].sum()
    expected_total_s = (steps + steps / EPISODE_LEN) * STEP_COST_US / 1e6
    # env_step_s is wall-equivalent (per runner): the two runners together spent twice that
    _check_env_time(2 * two["env_step_s"].sum(), expected_total_s, 2, _free_cores(tables, "t001r0"), rel=0.10)


def test_sampling_wall_time_falls_with_a_second_runner_as_far_as_free_cores_allow(sweep):
    """Expected speed-up: min(R, free cores) from 1 to 2 runners; free = cpus less what others used."""
    _, tables, _ = sweep
    steady = _steady(tables)
    sample_s = {t: steady[steady["trial_id"] == t]["sample_s"].median() for t in ("t000r0", "t001r0")}
    free = {t: _free_cores(tables, t) for t in ("t000r0", "t001r0")}
    expected = min(2.0, free["t001r0"]) / min(1.0, free["t000r0"])
    speedup = sample_s["t000r0"] / sample_s["t001r0"]
    assert speedup >= 0.6 * expected, (speedup, expected, free)


def test_gpu_energy_from_a_wrapping_counter(sweep):
    _, tables, nvml = sweep
    assert max(nvml.raw) > ENERGY_COUNTER_MODULUS_MJ // 2 and min(nvml.raw) < 10**9  # it wrapped during the sweep
    trials, steady = tables["trials"], _steady(tables)
    for _, row in trials.iterrows():
        its = steady[steady["trial_id"] == row["trial_id"]]
        window_s = its["t_end_s"].max() - its["t_start_s"].min()
        assert row["gpu_energy_j"] == pytest.approx(POWER_W * window_s, rel=0.05)
        assert row["j_per_env_step"] == pytest.approx(row["gpu_energy_j"] / its["env_steps_sampled"].sum())
        assert row["env_steps_per_s_per_w"] == pytest.approx(row["env_steps_per_s"] / POWER_W, rel=0.05)
    energy = tables["utilization"].query("kind == 'gpu'").groupby("trial_id")["gpu_energy_mj"]
    assert energy.apply(lambda e: e.is_monotonic_increasing).all()  # no wrap leaks into the series


def test_cpu_plots_written(sweep):
    out, _, _ = sweep
    for name in ("cpu_alloc_vs_used.png", "cpu_heatmap_t000r0.png", "cpu_heatmap_t001r0.png"):
        assert (Path(out) / "plots" / name).is_file(), name
