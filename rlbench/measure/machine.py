"""What machine and software a sweep ran on: the identity stored next to every number.

A local sweep runs on one machine (:class:`MachineInfo`); a cluster sweep (``--address``) also
records every node (:class:`ClusterInfo`, filled by the probe in :mod:`rlbench.run.cluster`).
"""

from __future__ import annotations

import os
import platform
import re
import stat
import subprocess
import sys
from contextlib import suppress
from dataclasses import asdict, dataclass, field
from importlib import metadata
from pathlib import Path
from typing import Any

import psutil

from rlbench import SCHEMA_VERSION, __version__
from rlbench.worker.nvml import open_gpus


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
    with suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
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


#: git settings that make ``git status`` run a command, switched off for the one checkout rlbench asks.
_GIT_SAFE = ("-c", "core.fsmonitor=false", "-c", "core.hooksPath=/dev/null")


def git_commit(path: Path) -> str | None:
    """The commit of rlbench's own git checkout holding ``path`` (with ``-dirty``), or None.

    For rlbench's own source only: ``git status`` reads the checkout's config, which can make it
    run commands (``core.fsmonitor``, clean filters named in ``.gitattributes``). rlbench's own
    checkout is code that already runs; a spec's folder may be a received one, so it gets
    :func:`head_commit`, which runs nothing.
    """
    env = {**os.environ, "GIT_OPTIONAL_LOCKS": "0", "GIT_TERMINAL_PROMPT": "0"}

    def git(*args: str) -> subprocess.CompletedProcess[str]:
        command = ["git", *_GIT_SAFE, "-C", str(path), *args]
        return subprocess.run(command, capture_output=True, text=True, timeout=5, env=env)

    try:
        out = git("rev-parse", "HEAD")
        if out.returncode != 0:
            return None
        dirty = git("status", "--porcelain", "--untracked-files=no")
        return out.stdout.strip() + ("-dirty" if dirty.stdout.strip() else "")
    except (OSError, subprocess.SubprocessError):
        return None


_HASH = re.compile(r"[0-9a-f]{40}|[0-9a-f]{64}")
_REF = re.compile(r"refs/[A-Za-z0-9._/-]+")


def _read_small(path: Path, limit: int = 1 << 16) -> str | None:
    """A small regular file's text, or None (a FIFO, a device or a big file is not read)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        return os.read(fd, limit).decode("utf-8", errors="replace")
    except OSError:
        return None
    finally:
        os.close(fd)


def _git_dir(path: Path) -> Path | None:
    for folder in (path, *path.parents):
        dot_git = folder / ".git"
        if dot_git.is_dir():
            return dot_git
        text = _read_small(dot_git)  # a worktree's or submodule's .git file: "gitdir: <path>"
        if text is not None and text.startswith("gitdir:"):
            return (folder / text[len("gitdir:") :].strip()).resolve()
    return None


def head_commit(path: Path) -> str | None:
    """The commit checked out in the git checkout holding ``path``, read from its ``.git`` files
    without running git (no ``-dirty``: that needs ``git status``, which a received folder's
    config could make run a command). None when there is none or it cannot be read."""
    git_dir = _git_dir(Path(path).resolve())
    if git_dir is None:
        return None
    head = (_read_small(git_dir / "HEAD") or "").strip()
    if _HASH.fullmatch(head):
        return head
    ref = head.removeprefix("ref:").strip()
    if not head.startswith("ref:") or not _REF.fullmatch(ref) or ".." in ref:
        return None
    common = (_read_small(git_dir / "commondir") or "").strip()
    roots = [git_dir] + ([(git_dir / common).resolve()] if common else [])
    for root in roots:
        value = (_read_small(root / ref) or "").strip()
        if _HASH.fullmatch(value):
            return value
    for root in roots:
        for line in (_read_small(root / "packed-refs", 1 << 24) or "").splitlines():
            commit, _, name = line.partition(" ")
            if name.strip() == ref and _HASH.fullmatch(commit):
                return commit
    return None


def software_versions() -> dict[str, str | None]:
    """Versions of rlbench and the libraries whose behaviour the numbers depend on, every framework's own
    distributions (its adapter's ``requires``: ``stable-baselines3``) after the stack's."""
    from rlbench.adapters import FRAMEWORKS, get_adapter

    frameworks = {dist: _version(dist) for f in FRAMEWORKS for dist in get_adapter(f).requires if dist != "ray"}
    return {
        "rlbench": __version__,
        "schema_version": str(SCHEMA_VERSION),
        "python": sys.version.split()[0],
        "ray": _version("ray"),
        "torch": _version("torch"),
        "gymnasium": _version("gymnasium"),
        "numpy": _version("numpy"),
        **frameworks,
        "platform": platform.platform(),
    }


def machine_dict(info: MachineInfo) -> dict[str, Any]:
    """MachineInfo as plain JSON-able data."""
    return asdict(info)


# ---------------------------------------------------------------------------------------------
# A Ray cluster (--address)


@dataclass
class NodeInfo:
    """One alive node of the cluster, with its hardware as seen by a task pinned to it."""

    node_id: str
    """Ray node id (hex)."""
    node_ip: str
    """The node's IP address (``NodeManagerAddress``)."""
    is_head: bool
    """True for the head node."""
    resources: dict[str, float]
    """The node's total Ray resources (``CPU``, ``GPU``, ``memory``, custom ones)."""
    hostname: str | None = None
    """The machine's network name."""
    cpu_model: str | None = None
    """CPU model string from /proc/cpuinfo."""
    logical_cores: int | None = None
    """Hardware threads of the machine (the node may be given fewer CPUs)."""
    physical_cores: int | None = None
    """Physical cores of the machine."""
    memory_bytes: int | None = None
    """Total RAM of the machine."""
    gpus: list[dict[str, Any]] = field(default_factory=list)
    """One entry per GPU NVML sees on the machine (name, memory_bytes, ...); empty without."""
    probe_error: str | None = None
    """Why the hardware probe of this node failed; None when it worked."""


@dataclass
class ClusterInfo:
    """What the probe found: the address it resolved, the nodes and the resource totals."""

    address: str
    """The address as given (``auto``, ``host:port``)."""
    gcs_address: str
    """The cluster's GCS address the trials connect to (``auto`` resolved)."""
    nodes: list[NodeInfo]
    """Alive nodes, head first."""
    total_resources: dict[str, float]
    """``ray.cluster_resources()`` at probe time."""
    available_resources: dict[str, float]
    """``ray.available_resources()`` at probe time (less when other jobs hold some)."""
    ray_version: str | None = None
    """Ray version the cluster's head runs (as the probe's driver sees it)."""

    @property
    def total_cpus(self) -> float:
        """Logical CPUs over all nodes."""
        return float(self.total_resources.get("CPU", 0.0))

    @property
    def total_gpus(self) -> float:
        """GPUs over all nodes."""
        return float(self.total_resources.get("GPU", 0.0))

    @property
    def max_node_cpus(self) -> float:
        """The most CPUs any one node has (an actor cannot span nodes)."""
        return max((n.resources.get("CPU", 0.0) for n in self.nodes), default=0.0)


def node_type(node: NodeInfo) -> str:
    """The node's hardware type, ``<cpu model> | <logical cores> | <memory GiB> | <GPU model or none> x <count>``:
    nodes of one type are interchangeable for a trial (``--parallel`` runs each trial on nodes of one type, and
    the report compares a configuration across types only saying so). From the probe's hardware reading; Ray's
    own resources (a head given 0 CPUs) are not part of it."""
    memory = f"{node.memory_bytes / 2**30:.0f}" if node.memory_bytes else "?"
    names = sorted({str(g.get("name") or "GPU") for g in node.gpus})
    gpu = " + ".join(names) if names else "none"
    return f"{node.cpu_model or '?'} | {node.logical_cores or '?'} | {memory} | {gpu} x {len(node.gpus)}"


def cluster_dict(info: ClusterInfo) -> dict[str, Any]:
    """ClusterInfo as plain JSON-able data (the manifest's ``cluster`` entry)."""
    out = asdict(info)
    out["total_cpus"], out["total_gpus"] = info.total_cpus, info.total_gpus
    return out


def cluster_from_dict(data: dict[str, Any]) -> ClusterInfo:
    """Inverse of :func:`cluster_dict`."""
    nodes = [NodeInfo(**n) for n in data["nodes"]]
    keep = {k: v for k, v in data.items() if k in ClusterInfo.__dataclass_fields__ and k != "nodes"}
    return ClusterInfo(nodes=nodes, **keep)
