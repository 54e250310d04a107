"""GPU energy from NVML's total-energy counter: wrap, a vanishing GPU, steady-window figures.

NVML is replaced by a fake module with scripted counter values (the seam of rlbench/nvml.py).
"""

from __future__ import annotations

import os
import time
from types import SimpleNamespace

import pandas as pd
import pytest

from rlbench.analysis.trial_rows import gpu_energy_j
from rlbench.measure.utilization import UtilizationSampler as Sampler
from rlbench.worker.nvml import ENERGY_COUNTER_MODULUS_MJ, open_gpus

WRAP = ENERGY_COUNTER_MODULUS_MJ


class ScriptedNvml:
    """A fake pynvml whose energy counters return scripted values, one per call; None = GPU gone."""

    NVML_CLOCK_SM = 1

    def __init__(self, energy: list[list[int | None]]):
        self.energy = [list(e) for e in energy]
        self.reads = [0] * len(energy)

    def nvmlInit(self):
        pass

    def nvmlShutdown(self):
        pass

    def nvmlDeviceGetCount(self):
        return len(self.energy)

    def nvmlDeviceGetHandleByIndex(self, i):
        return i

    def nvmlSystemGetDriverVersion(self):
        return "550"

    def _alive(self, h):
        if self.energy[h][min(self.reads[h], len(self.energy[h]) - 1)] is None:
            raise RuntimeError("GPU is lost")

    def nvmlDeviceGetUtilizationRates(self, h):
        self._alive(h)
        return SimpleNamespace(gpu=50, memory=0)

    def nvmlDeviceGetMemoryInfo(self, h):
        self._alive(h)
        return SimpleNamespace(total=2**30, used=2**20, free=0)

    def nvmlDeviceGetPowerUsage(self, h):
        self._alive(h)
        return 100_000

    def nvmlDeviceGetClockInfo(self, h, clock):
        self._alive(h)
        return 1500

    def nvmlDeviceGetTotalEnergyConsumption(self, h):
        value = self.energy[h][self.reads[h]]
        self.reads[h] += 1
        if value is None:
            raise RuntimeError("GPU is lost")
        return value


def _sampled(energy: list[list[int | None]]) -> pd.DataFrame:
    """The gpu rows a Sampler records reading ``energy``, re-timed to t_s = 0, 1, 2, ..."""
    gpus = open_gpus(ScriptedNvml(energy))
    s = Sampler(os.getpid(), t0_epoch=time.time(), hz=10, gpus=gpus, per_core=False)
    for _ in range(len(energy[0])):
        s.sample_once()
    s.close()
    frame = pd.DataFrame(s.columns)
    gpu = frame[frame["kind"] == "gpu"].copy()
    gpu["t_s"] = [float(i // len(energy)) for i in range(len(gpu))]
    return gpu


def test_sampler_turns_the_counter_into_energy_since_start_across_a_wrap():
    gpu = _sampled([[WRAP - 1500, WRAP - 500, 500, 1500]])
    assert list(gpu["gpu_energy_mj"]) == [0, 1000, 2000, 3000]
    assert list(gpu["gpu_sm_clock_mhz"]) == [1500] * 4 and list(gpu["gpu_power_w"]) == [100.0] * 4


def test_vanished_gpu_reads_null_and_voids_the_trial_energy():
    gpu = _sampled([[0, 1000, 2000, 3000], [10, 20, None, None]])
    lost = gpu[gpu["gpu_index"] == 1]
    assert list(lost["gpu_energy_mj"].iloc[:2]) == [0, 10]
    assert lost["gpu_energy_mj"].iloc[2:].isna().all() and lost["gpu_power_w"].iloc[2:].isna().all()
    gpu["kind"] = "gpu"
    assert gpu_energy_j(gpu, (0.0, 3.0)) is None  # GPU 1 has no reading at the window's end
    assert gpu_energy_j(gpu, (0.0, 1.0)) == pytest.approx(1.0 + 0.01)  # before it vanished: 1 J + 10 mJ


def _frame(rows):
    return pd.DataFrame([{"kind": "gpu", "t_s": t, "gpu_index": i, "gpu_energy_mj": e} for t, i, e in rows])


def test_energy_is_the_counter_difference_scaled_to_the_window():
    # two GPUs at 100 W and 50 W, sampled every 0.5 s; the window's ends fall between samples
    rows = [(t / 2, 0, 50_000 * t) for t in range(9)] + [(t / 2, 1, 25_000 * t) for t in range(9)]
    frame = _frame(rows)
    # samples inside (0.25, 3.75): 0.5 .. 3.5 s, 3 s apart; the window is 3.5 s long
    assert gpu_energy_j(frame, (0.25, 3.75)) == pytest.approx(100 * 3.5 + 50 * 3.5)


def test_no_gpu_rows_or_no_window_give_none():
    assert gpu_energy_j(pd.DataFrame({"kind": ["core"], "t_s": [1.0]}), (0.0, 2.0)) is None
    assert gpu_energy_j(_frame([(0.0, 0, 0), (1.0, 0, 1000)]), None) is None
    assert gpu_energy_j(_frame([(0.0, 0, 0), (1.0, 0, 1000)]), (0.5, 1.0)) is None  # one sample inside
