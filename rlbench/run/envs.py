"""A Python environment per package set: where a variant's pinned packages (``packages:``) are installed.

Each environment is created once and cached under :func:`cache_dir`, keyed by the Python it is made
from, the pins and the index (asv keys its environments the same way; docs/SPEC.md, "Variants and
rounds"). It is a virtual environment of the sweep's own Python holding the pinned distributions; a
``.pth`` file puts this rlbench's source folder and then the sweep's own site-packages behind them, so
the trial finds this rlbench and everything it needs, and the pins shadow the sweep's versions of
the same distributions. uv makes it when it is installed (``uv venv`` + ``uv pip install``: links from
its cache; 0.38 s for one pure-Python pin from a local folder against 1.6 s with pip, test_envs), else
``python -m venv`` + this Python's pip (``pip --python``); ``rlbench-env.json`` in the environment
says which made it. The pins are installed with ``--no-deps``; then what they require and the sweep's own
packages do not meet (a dependency the sweep lacks, a version it does not have) is installed beside them,
held to the sweep's versions where they fit (:mod:`rlbench.run.dependencies`): everything else the trial
imports is the sweep's own, the same for every variant. ``rlbench-env.json`` records what was added and why.
Each trial checks the versions its process imported against the pins (:mod:`rlbench.worker.versions`).
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import json
import os
import shutil
import subprocess
import sys
import sysconfig
import time
from pathlib import Path
from typing import Literal

import rlbench
from rlbench.planning.plan import TrialPlan
from rlbench.results.files import write_atomic

#: Where environments are kept unless ``RLBENCH_ENV_CACHE`` names another folder.
DEFAULT_CACHE = Path("~/.cache/rlbench/envs")
#: How a pin's own dependencies are met (part of the cache key: an environment made another way is not reused):
#: the sweep's where they fit, else the release's own (:mod:`rlbench.run.dependencies`).
DEPENDENCIES = "sweep-where-met/1"
#: Longest an environment's creation may take (a large pin, e.g. torch, over a slow network).
INSTALL_TIMEOUT_S = 1800.0


#: How the reason of a trial whose variant's packages could not be installed begins.
INSTALL_FAILED = "its variant's packages could not be installed"


class EnvError(RuntimeError):
    """An environment could not be made; the message holds the installer's own words."""


def cache_dir() -> Path:
    """The folder environments are cached in (``RLBENCH_ENV_CACHE``, default ``~/.cache/rlbench/envs``)."""
    return Path(os.environ.get("RLBENCH_ENV_CACHE") or DEFAULT_CACHE).expanduser()


def env_key(pins: dict[str, str], index: str | None, python: str = sys.executable) -> str:
    """The cache key: a hash of the Python (its path and version), the pins and the index."""
    what = {
        "python": [str(Path(python).resolve()), sys.version],
        "pins": dict(sorted(pins.items())),
        "index": index,
        "rlbench_root": str(source_root()),
        "dependencies": DEPENDENCIES,
    }
    return hashlib.sha256(json.dumps(what, sort_keys=True).encode()).hexdigest()[:16]


def source_root() -> Path:
    """The folder that holds this rlbench package (what the environments import it from)."""
    return Path(rlbench.__file__).resolve().parent.parent


def index_args(index: str | None) -> list[str]:
    """pip's arguments for an index: a URL, or a local folder of wheels (no index then)."""
    if index is None:
        return []
    if "://" in index:
        return ["--index-url", index]
    return ["--no-index", "--find-links", str(Path(index).expanduser().resolve())]


def _python_in(env: Path) -> Path:
    return env / ("Scripts/python.exe" if os.name == "nt" else "bin/python")


def _run(argv: list[str], what: str) -> None:
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=INSTALL_TIMEOUT_S, stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        raise EnvError(f"{what}: no result within {INSTALL_TIMEOUT_S:.0f} s") from None
    if done.returncode != 0:
        words = [line for line in (done.stderr or done.stdout).strip().splitlines() if line.strip()]
        raise EnvError(f"{what} failed: " + " | ".join(words[-6:])[:1500])


def find_uv() -> str | None:
    """The uv binary: the one installed beside this Python (its wheel's script), else on PATH."""
    beside = Path(sys.executable).parent / "uv"
    return str(beside) if beside.is_file() and os.access(beside, os.X_OK) else shutil.which("uv")


def _uv_version(uv: str) -> str:
    """What ``uv --version`` prints, for the record (a uv on PATH is no distribution of this Python's, so
    it is asked); what failed when it cannot say."""
    try:
        done = subprocess.run([uv, "--version"], capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
        return (done.stdout or done.stderr).strip().splitlines()[0][:200]
    except (OSError, subprocess.SubprocessError, IndexError) as e:
        return f"unknown ({type(e).__name__})"


def _pip_version() -> str:
    """The version of this Python's pip (the one ``python -m pip`` runs), read without starting it."""
    try:
        return importlib.metadata.version("pip")
    except importlib.metadata.PackageNotFoundError:
        return "unknown (not installed)"  # pip install then fails in pip's own words


def _install(uv: str | None, python: Path, args: list[str], what: str) -> None:
    """One install into the environment of ``python``, with uv or this Python's pip."""
    if uv:
        _run([uv, "pip", "install", "--quiet", "--python", str(python), *args], f"uv pip install {what}")
    else:
        _run(
            [sys.executable, "-m", "pip", "--python", str(python), "install", "--quiet", "--disable-pip-version-check"]
            + args,
            f"pip install {what}",
        )


def _install_unmet(
    uv: str | None, python: Path, site: Path, pins: dict[str, str], index: str | None, folder: Path
) -> dict[str, object]:
    """Install what the pinned releases require and the sweep does not meet (:mod:`rlbench.run.dependencies`),
    their own dependencies held to the sweep's versions; when that cannot be resolved, resolved freely (said in
    ``constrained``). Returns what ``rlbench-env.json`` records: the extras, each need with the sweep's version,
    and the versions the environment holds beyond the pins."""
    from rlbench.run import dependencies as deps

    sweep = deps.installed_versions()
    needed: list[deps.Needed] = []
    extras: dict[str, list[str]] = {}
    for name, metadata in deps.pinned_metadata(site, pins).items():
        try:
            mine = importlib.metadata.distribution(name).metadata
            extras[name] = deps.used_extras(mine, sweep)
        except importlib.metadata.PackageNotFoundError:
            extras[name] = []
        needed += [n for n in deps.unmet(metadata, extras[name], sweep, pins) if n.name not in {m.name for m in needed}]
    record: dict[str, object] = {"extras": extras, "needed": [n.__dict__ for n in needed], "constrained": None}
    if needed:
        wanted = [n.requirement for n in needed]
        held = folder / "sweep-constraints.txt"
        held.write_text(deps.constraints(sweep, [*pins, *(n.name for n in needed)]))
        try:
            _install(uv, python, [*index_args(index), "--constraint", str(held), *wanted], " ".join(wanted))
            record["constrained"] = True
        except EnvError as e:
            record["constrained"] = f"resolved without the sweep's versions: {e}"[:800]
            _install(uv, python, [*index_args(index), *wanted], " ".join(wanted))
    record["added"] = {k: v for k, v in deps.installed_versions([str(site)]).items() if k not in pins}
    return record


def ensure_env(
    pins: dict[str, str],
    index: str | None = None,
    *,
    cache: Path | None = None,
    installer: Literal["auto", "uv", "pip"] = "auto",
) -> Path:
    """The interpreter of the environment holding ``pins`` (made now when it is not cached); raises
    :class:`EnvError` with the installer's message when it cannot be made. ``installer``: ``auto`` takes
    uv when :func:`find_uv` finds it, else pip; ``uv`` and ``pip`` force one (``uv`` missing is an error)."""
    cache = cache or cache_dir()
    env = cache / env_key(pins, index)
    if (env / "rlbench-env.json").exists():
        return _python_in(env)
    uv = find_uv() if installer != "pip" else None
    if installer == "uv" and uv is None:
        raise EnvError("uv was asked for but is not installed (pip install uv, or leave the installer to auto)")
    cache.mkdir(parents=True, exist_ok=True)
    building = cache / f".{env.name}.{os.getpid()}.{time.time_ns()}"
    requirements = [f"{dist}=={version}" for dist, version in sorted(pins.items())]
    try:
        if uv:
            made_by = _uv_version(uv)
            _run([uv, "venv", "--quiet", "--python", sys.executable, str(building)], "uv venv")
        else:
            made_by = f"pip {_pip_version()}"
            _run([sys.executable, "-m", "venv", "--without-pip", str(building)], "python -m venv")
        python = _python_in(building)
        _install(uv, python, ["--no-deps", *index_args(index), *requirements], " ".join(requirements))
        site = Path(
            subprocess.run(
                [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                capture_output=True,
                text=True,
                check=True,
            ).stdout.strip()
        )
        dependencies = _install_unmet(uv, python, site, pins, index, building)
        # this rlbench first, then what the sweep's Python has: behind the pins, which site-packages holds
        write_atomic(site / "rlbench-sweep.pth", f"{source_root()}\n{sysconfig.get_paths()['purelib']}\n".encode())
        write_atomic(
            building / "rlbench-env.json",
            json.dumps(
                {"pins": pins, "index": index, "python": sys.executable, "installer": made_by, **dependencies}
            ).encode(),
        )
        try:
            building.rename(env)
        except OSError:  # made meanwhile by another sweep: use that one
            shutil.rmtree(building, ignore_errors=True)
    except BaseException:
        shutil.rmtree(building, ignore_errors=True)
        raise
    return _python_in(env)


def with_environments(plans: list[TrialPlan], say=lambda text: None) -> list[TrialPlan]:
    """``plans`` with each pinned variant's environment made (or found in the cache) and named in its
    plans (``packages.python``). A package set that cannot be installed keeps its trials from starting,
    the installer's message as their reason (the sweep records them ``failed``: a variant that never ran
    must not pass as a choice, exit 0); every other trial runs."""
    made: dict[str, str | EnvError] = {}
    out = []
    for plan in plans:
        if plan.packages is None or plan.skip_reason is not None:
            out.append(plan)
            continue
        key = env_key(plan.packages.pins, plan.packages.index)
        if key not in made:
            pins = ", ".join(f"{d}=={v}" for d, v in sorted(plan.packages.pins.items()))
            try:
                t = time.perf_counter()
                made[key] = python = str(ensure_env(plan.packages.pins, plan.packages.index))
                say(f"environment for {pins}: {Path(python).parent.parent} ({time.perf_counter() - t:.1f} s)")
            except EnvError as e:
                made[key] = e
                say(f"environment for {pins} could not be made: {e}")
        got = made[key]
        if isinstance(got, EnvError):
            out.append(plan.model_copy(update={"skip_reason": f"{INSTALL_FAILED}: {got}"}))
        else:
            out.append(plan.model_copy(update={"packages": plan.packages.model_copy(update={"python": got})}))
    return out
