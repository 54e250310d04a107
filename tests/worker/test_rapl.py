"""CPU package energy through the RAPL seam, on a fake powercap tree made in tmp_path (counters that wrap)."""

from __future__ import annotations

import os
import time

import pandas as pd

from rlbench.measure.utilization import UtilizationSampler
from rlbench.worker.rapl import (
    CpuEnergySinceStart,
    energy_delta_uj,
    find_zones,
    open_rapl,
)

RANGE = 262_143_328_850  # a real package's max_energy_range_uj


def zone(root, entry: str, name: str, energy_uj, max_uj: int = RANGE):
    path = root / entry
    path.mkdir(parents=True, exist_ok=True)
    (path / "name").write_text(name + "\n")
    if isinstance(energy_uj, int):
        (path / "energy_uj").write_text(f"{energy_uj}\n")
    else:
        (path / "energy_uj").mkdir()  # reads fail, as a root-only counter does for a user
    (path / "max_energy_range_uj").write_text(f"{max_uj}\n")
    return path


def set_energy(path, value: int) -> None:
    (path / "energy_uj").write_text(f"{value}\n")


def test_only_readable_package_zones_count(tmp_path):
    zone(tmp_path, "intel-rapl:0", "package-0", 100)
    zone(tmp_path, "intel-rapl:0:0", "core", 50)  # a part of package 0
    zone(tmp_path, "intel-rapl:1", "psys", 900)  # the platform, more than the CPU
    zone(tmp_path, "intel-rapl-mmio:0", "package-0", 100)  # the same counter through MMIO
    zone(tmp_path, "intel-rapl:2", "package-1", 7)
    zone(tmp_path, "intel-rapl:3", "package-2", "unreadable")
    (tmp_path / "intel-rapl").mkdir()  # the control type folder, no counter
    zones = find_zones(str(tmp_path))
    assert [(z.package, os.path.basename(z.path)) for z in zones] == [(0, "intel-rapl:0"), (1, "intel-rapl:2")]
    rapl = open_rapl(str(tmp_path))
    assert [(z.package, raw) for z, raw in rapl.read()] == [(0, 100), (1, 7)]
    assert rapl.describe()[1] == {"package": 1, "zone": "intel-rapl:2", "max_energy_range_uj": RANGE}


def test_no_counter_means_none(tmp_path):
    assert open_rapl(str(tmp_path / "missing")) is None
    zone(tmp_path, "intel-rapl:0", "package-0", "unreadable")
    assert open_rapl(str(tmp_path)) is None


def test_wrap_adds_the_range():
    assert energy_delta_uj(100, 350, 1000) == 250
    assert energy_delta_uj(900, 50, 1000) == 150  # 100 to the wrap, 50 after it
    e = CpuEnergySinceStart()
    assert [e.update("p0", raw, 1000) for raw in (900, 950, 20, 400)] == [0, 50, 120, 500]
    assert e.update("p0", None, 1000) is None


def test_sampler_records_energy_since_start_across_a_wrap(tmp_path):
    p0 = zone(tmp_path, "intel-rapl:0", "package-0", RANGE - 1_000_000)
    p1 = zone(tmp_path, "intel-rapl:1", "package-1", 5_000_000)
    s = UtilizationSampler(os.getpid(), t0_epoch=time.time(), hz=10, per_core=False, rapl=open_rapl(str(tmp_path)))
    for e0, e1 in ((RANGE - 1_000_000, 5_000_000), (RANGE - 250_000, 6_000_000), (750_000, 7_500_000)):
        set_energy(p0, e0)
        set_energy(p1, e1)
        s.sample_once()
    s.close()
    rows = pd.DataFrame(s.columns)
    cpu = rows[rows["kind"] == "cpu_energy"]
    assert list(cpu["cpu_package"]) == [0, 1, 0, 1, 0, 1]
    assert list(cpu[cpu["cpu_package"] == 0]["cpu_energy_uj"]) == [0, 750_000, 1_750_000]
    assert list(cpu[cpu["cpu_package"] == 1]["cpu_energy_uj"]) == [0, 1_000_000, 2_500_000]
    assert cpu["gpu_index"].isna().all() and cpu["pid"].isna().all()
