"""What machine and software a sweep ran on: the identity stored next to every number."""

from __future__ import annotations

import os
import platform
import subprocess
import sys
from dataclasses import asdict, dataclass, field
from importlib import metadata
from pathlib import Path
from typing import Any

import psutil

from rlbench import SCHEMA_VERSION, __version__
from rlbench.nvml import open_gpus


@dataclass
class MachineInfo:
    """Hardware of the machine the sweep runs on."""

    hostname: str
    """Network name."""
    cpu_model: str
    """CPU model string from /proc/cpuinfo (or platform)."""
    logical_cores: int
    """Hardware threads on the machine."""
    physical_cores: int | None
    """Physical cores."""
    usable_cores: list[int]
    """Cores this process may run on (its affinity mask); trials are pinned within these."""
    memory_bytes: int
    """Total RAM."""
    gpus: list[dict[str, Any]] = field(default_factory=list)
    """One entry per NVML GPU (name, memory_bytes, driver, sm_count); empty without a GPU."""

    @property
    def gpu_count(self) -> int:
        """GPUs NVML sees."""
        return len(self.gpus)


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def usable_cores() -> list[int]:
    """Cores this process may use, sorted."""
    try:
        return sorted(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return list(range(os.cpu_count() or 1))


def probe_machine(nvml=None) -> MachineInfo:
    """Read this machine's hardware (NVML through the seam in :mod:`rlbench.nvml`)."""
    gpus = open_gpus(nvml)
    described = gpus.describe() if gpus else []
    if gpus:
        gpus.close()
    return MachineInfo(
        hostname=platform.node(),
        cpu_model=_cpu_model(),
        logical_cores=psutil.cpu_count(logical=True) or 1,
        physical_cores=psutil.cpu_count(logical=False),
        usable_cores=usable_cores(),
        memory_bytes=psutil.virtual_memory().total,
        gpus=described,
    )


def _version(package: str) -> str | None:
    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        return None


def git_commit(path: Path) -> str | None:
    """The commit of the git checkout holding ``path`` (with ``-dirty``), or None."""
    try:
        out = subprocess.run(["git", "-C", str(path), "rev-parse", "HEAD"], capture_output=True, text=True, timeout=5)
        if out.returncode != 0:
            return None
        dirty = subprocess.run(["git", "-C", str(path), "status", "--porcelain", "--untracked-files=no"],
                               capture_output=True, text=True, timeout=5)
        return out.stdout.strip() + ("-dirty" if dirty.stdout.strip() else "")
    except (OSError, subprocess.SubprocessError):
        return None


def software_versions() -> dict[str, str | None]:
    """Versions of rlbench and the libraries whose behaviour the numbers depend on."""
    return {
        "rlbench": __version__,
        "schema_version": str(SCHEMA_VERSION),
        "python": sys.version.split()[0],
        "ray": _version("ray"),
        "torch": _version("torch"),
        "gymnasium": _version("gymnasium"),
        "numpy": _version("numpy"),
        "platform": platform.platform(),
    }


def machine_dict(info: MachineInfo) -> dict[str, Any]:
    """MachineInfo as plain JSON-able data."""
    return asdict(info)
