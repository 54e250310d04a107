"""The seam to the CPU's energy counters: Linux powercap RAPL (``/sys/class/powercap``), standard library only.

Each CPU package is a top-level powercap zone ``intel-rapl:N`` named ``package-M`` (AMD CPUs use
the same driver and names since Linux 5.11). Its ``energy_uj`` counts microjoules since some
earlier moment and wraps to 0 after ``max_energy_range_uj``. Subzones (``intel-rapl:N:K``: core,
uncore, dram) are parts of their package and ``psys`` covers more than the CPU, so neither is
added; nor is ``intel-rapl-mmio:N``, a second interface to the same package counter.

Since Linux 5.10 (the PLATYPUS side channel) ``energy_uj`` is readable by root only on most
distributions; :func:`open_rapl` then returns None and callers record nulls, never a guess.
Tests point ``root`` at a fake tree made in a temporary folder (tests/worker/test_rapl.py).
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from typing import Any

#: Where the kernel exposes powercap zones.
POWERCAP_ROOT = "/sys/class/powercap"

_PACKAGE_ZONE = re.compile(r"^intel-rapl:(\d+)$")
_PACKAGE_NAME = re.compile(r"^package-(\d+)$")


@dataclass(frozen=True)
class RaplZone:
    """One CPU package's energy counter."""

    package: int
    """The package number from the zone's name (``package-0`` -> 0)."""
    path: str
    """The zone's folder, e.g. ``/sys/class/powercap/intel-rapl:0``."""
    max_energy_range_uj: int
    """The counter wraps to 0 after this many microjoules."""


def _read_int(path: str) -> int:
    with open(path, "rb") as f:
        return int(f.read().strip())


def _read_text(path: str) -> str:
    with open(path, "rb") as f:
        return f.read().decode(errors="replace").strip()


def find_zones(root: str = POWERCAP_ROOT) -> list[RaplZone]:
    """Every package zone under ``root`` whose counter and range can be read now (sorted by package)."""
    try:
        names = os.listdir(root)
    except OSError:
        return []
    zones = []
    for entry in names:
        if not _PACKAGE_ZONE.match(entry):
            continue
        path = os.path.join(root, entry)
        try:
            name = _PACKAGE_NAME.match(_read_text(os.path.join(path, "name")))
            if name is None:
                continue  # psys or another non-package zone
            _read_int(os.path.join(path, "energy_uj"))
            zones.append(RaplZone(int(name.group(1)), path, _read_int(os.path.join(path, "max_energy_range_uj"))))
        except (OSError, ValueError):
            continue  # unreadable (root only) or malformed: no number rather than a wrong one
    return sorted(zones, key=lambda z: z.package)


def energy_delta_uj(start_uj: int, end_uj: int, max_energy_range_uj: int) -> int:
    """Energy between two readings of one counter; a decrease is one wrap at ``max_energy_range_uj``
    (the kernel's range; the true period is one counter unit, ~61 uJ, more, which this ignores)."""
    if end_uj >= start_uj:
        return end_uj - start_uj
    return max_energy_range_uj - start_uj + end_uj


class Rapl:
    """The CPU packages' energy counters; ``read()`` never raises (a counter that fails reads None)."""

    def __init__(self, zones: list[RaplZone]):
        self.zones = zones

    def describe(self) -> list[dict[str, Any]]:
        """Package, zone folder and counter range of every zone, for the manifest."""
        return [
            {"package": z.package, "zone": os.path.basename(z.path), "max_energy_range_uj": z.max_energy_range_uj}
            for z in self.zones
        ]

    def read(self) -> list[tuple[RaplZone, int | None]]:
        """(zone, raw ``energy_uj``) per zone; None for a counter that cannot be read now."""
        out: list[tuple[RaplZone, int | None]] = []
        for z in self.zones:
            try:
                out.append((z, _read_int(os.path.join(z.path, "energy_uj"))))
            except (OSError, ValueError):
                out.append((z, None))
        return out


def open_rapl(root: str = POWERCAP_ROOT) -> Rapl | None:
    """The readable package counters under ``root``, or None when there are none (no RAPL, a VM,
    or counters readable by root only)."""
    zones = find_zones(root)
    return Rapl(zones) if zones else None


class CpuEnergySinceStart:
    """Per package, the energy used since the first reading, from its wrapping counter."""

    def __init__(self) -> None:
        self._last: dict[Any, tuple[int, int]] = {}

    def update(self, key: Any, raw_uj: int | None, max_energy_range_uj: int) -> int | None:
        """Microjoules since the first reading of ``key``; None for a missing reading."""
        if raw_uj is None:
            return None
        last = self._last.get(key)
        total = 0 if last is None else last[1] + energy_delta_uj(last[0], raw_uj, max_energy_range_uj)
        self._last[key] = (raw_uj, total)
        return total
