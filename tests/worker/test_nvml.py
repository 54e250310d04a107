"""The NVML seam, driven by a fake NVML module with scripted values."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from fakes import FakeNvml, NVMLError, h100

from rlbench.worker.nvml import (
    ENERGY_COUNTER_MODULUS_MJ,
    GpuReading,
    energy_delta_mj,
    open_gpus,
)


def test_no_gpus_when_init_fails():
    assert open_gpus(FakeNvml([h100()], init_error=NVMLError("Driver Not Loaded"))) is None


def test_no_gpus_when_count_is_zero_and_nvml_is_shut_down():
    fake = FakeNvml([])
    assert open_gpus(fake) is None
    assert fake.calls == ["init", "shutdown"]


def test_read_converts_units():
    gpus = open_gpus(FakeNvml([h100(), h100(util=0, power_mw=61_000, mem_used=0, sm_mhz=345, energy_mj=5)]))
    assert gpus is not None
    assert gpus.read() == [
        GpuReading(
            index=0, util_pct=37.0, mem_used_bytes=3 * 2**30, power_w=152.5, sm_clock_mhz=1980, energy_mj=123_456_789
        ),
        GpuReading(index=1, util_pct=0.0, mem_used_bytes=0, power_w=61.0, sm_clock_mhz=345, energy_mj=5),
    ]


def test_unsupported_fields_are_none():
    gpus = open_gpus(FakeNvml([h100(power_mw=NVMLError("Not Supported"), energy_mj=NVMLError("Not Supported"))]))
    [reading] = gpus.read()
    assert (reading.power_w, reading.energy_mj) == (None, None)
    assert (reading.util_pct, reading.sm_clock_mhz) == (37.0, 1980)


def test_nvml_without_energy_function():
    fake = FakeNvml([h100()])
    fake.nvmlDeviceGetTotalEnergyConsumption = None  # an old pynvml without the call
    [reading] = open_gpus(fake).read()
    assert reading.energy_mj is None
    assert reading.power_w == 152.5


def test_gpu_that_vanishes_mid_run_gives_none_fields():
    fake = FakeNvml([h100(), h100()])
    gpus = open_gpus(fake)
    fake.gone.add(1)
    first, second = gpus.read()
    assert first.power_w == 152.5
    assert second == GpuReading(
        index=1, util_pct=None, mem_used_bytes=None, power_w=None, sm_clock_mhz=None, energy_mj=None
    )


def test_describe_decodes_bytes():
    gpus = open_gpus(FakeNvml([h100(), h100(name="Tesla T4", mem_total=16 * 2**30)]))
    assert gpus.describe() == [
        {
            "index": 0,
            "name": "NVIDIA H100 80GB HBM3",
            "memory_bytes": 80 * 2**30,
            "driver": "550.54.15",
            "sm_count": None,
        },
        {"index": 1, "name": "Tesla T4", "memory_bytes": 16 * 2**30, "driver": "550.54.15", "sm_count": None},
    ]


def test_describe_of_a_vanished_gpu():
    fake = FakeNvml([h100()], driver="550.54.15")
    gpus = open_gpus(fake)
    fake.gone.add(0)
    assert gpus.describe() == [
        {"index": 0, "name": None, "memory_bytes": None, "driver": "550.54.15", "sm_count": None},
    ]


def test_close_shuts_nvml_down_and_swallows_errors():
    fake = FakeNvml([h100()])
    gpus = open_gpus(fake)
    gpus.close()
    assert fake.calls == ["init", "shutdown"]

    def broken():
        raise NVMLError("Uninitialized")

    fake.nvmlShutdown = broken
    gpus.close()  # must not raise


@pytest.mark.parametrize(
    ("start", "end", "delta"),
    [
        (1_000, 4_500, 3_500),
        (7, 7, 0),
        # the counter wrapped: 100 mJ to the top, then 50 past zero
        (2**64 - 100, 50, 150),
        (2**64 - 1, 0, 1),
    ],
)
def test_energy_delta_mj(start, end, delta):
    assert energy_delta_mj(start, end) == delta


def test_energy_counter_is_64_bit():
    assert ENERGY_COUNTER_MODULUS_MJ == 18_446_744_073_709_551_616


def test_sm_count_comes_from_device_attributes_not_cuda_cores():
    class WithAttributes(FakeNvml):
        def nvmlDeviceGetAttributes(self, h):
            return SimpleNamespace(multiprocessorCount=self._value(h, "sms"))

        def nvmlDeviceGetNumGpuCores(self, h):  # CUDA cores: must not be taken for SMs
            return 16896

    gpus = open_gpus(WithAttributes([h100(sms=132)]))
    assert gpus.describe()[0]["sm_count"] == 132


class WholeGpu(FakeNvml):
    """A whole (non-MIG) GPU as a real H100 answered: attributes NotSupported, CUDA cores and capability given."""

    def nvmlDeviceGetAttributes(self, h):
        raise NVMLError("Not Supported")

    def nvmlDeviceGetNumGpuCores(self, h):
        return self._value(h, "cores")

    def nvmlDeviceGetCudaComputeCapability(self, h):
        return self._value(h, "cc")


@pytest.mark.parametrize(
    "cores, cc, sms",
    [
        (16896, (9, 0), 132),  # H100 SXM: what the real one and torch said
        (6912, (8, 0), 108),  # A100: 64 cores per SM
        (2560, (7, 5), 40),  # T4
        (16896, (99, 0), None),  # an unknown capability: no guess
        (100, (9, 0), None),  # cores that do not divide into SMs: no guess
    ],
)
def test_sm_count_of_a_whole_gpu_from_cuda_cores_and_capability(cores, cc, sms):
    gpus = open_gpus(WholeGpu([h100(cores=cores, cc=cc)]))
    assert gpus.describe()[0]["sm_count"] == sms
