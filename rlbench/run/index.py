"""The released versions of a package, as its index lists them: what ``rlbench bisect`` halves over and
what ``rlbench history`` checks its ``--versions`` against before anything is installed, and its ranges.

A local folder index (``--index DIR``, installed with ``--no-index --find-links``) lists the wheels and
source archives in it, read from their file names; a URL index (or PyPI, without ``--index``) is asked
with ``pip index versions`` (pip's own listing, the index it installs from).
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from packaging.version import InvalidVersion, Version

from rlbench.adapters.base import ordered_versions, release
from rlbench.run.envs import index_args
from rlbench.spec.variants import VERSION_PATTERN

#: Longest ``pip index versions`` may take (one request; no retries).
LISTING_TIMEOUT_S = 60.0
#: Archive endings a folder index is read for.
ARCHIVES = (".whl", ".tar.gz", ".zip")


class ListingError(RuntimeError):
    """The index could not be listed; the message holds why (pip's words for a URL index)."""


def canonical(dist: str) -> str:
    """PEP 503's name: lower case, runs of ``-_.`` as one ``-``."""
    return re.sub(r"[-_.]+", "-", dist).lower()


def folder_versions(package: str, folder: Path) -> list[str]:
    """Versions of ``package`` among the archives in ``folder`` (``slowstep-1.2.0-py3-none-any.whl``,
    ``slowstep-1.2.0.tar.gz``), from their names."""
    found = set()
    for path in Path(folder).iterdir():
        name = path.name
        ending = next((e for e in ARCHIVES if name.endswith(e)), None)
        if ending is None or not path.is_file():
            continue
        stem = name[: -len(ending)]
        if ending == ".whl":  # dist-version(-build)?-python-abi-platform
            dist, _, rest = stem.partition("-")
            version = rest.split("-", 1)[0]
        else:  # dist-version
            dist, _, version = stem.rpartition("-")
        if canonical(dist) == canonical(package) and _valid(version):
            found.add(version)
    return ordered_versions(found)


def _valid(version: str) -> bool:
    try:
        Version(version)
    except InvalidVersion:
        return False
    return True


def pip_versions(package: str, index: str | None) -> list[str]:
    """What ``pip index versions PACKAGE`` lists (pre-releases left out, as pip does); ListingError
    with pip's own words when it cannot (no network, unknown package)."""
    argv = [
        sys.executable,
        "-m",
        "pip",
        "index",
        "versions",
        package,
        "--disable-pip-version-check",
        "--retries",
        "0",
        "--timeout",
        "15",
        *index_args(index),
    ]
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=LISTING_TIMEOUT_S, stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        raise ListingError(f"pip index versions {package}: no answer within {LISTING_TIMEOUT_S:.0f} s") from None
    listed = re.search(r"^Available versions:\s*(.+)$", done.stdout, flags=re.M)
    if done.returncode != 0 or not listed:
        words = [line for line in (done.stderr or done.stdout).strip().splitlines() if line.strip()]
        raise ListingError(f"pip index versions {package} failed: " + " | ".join(words[-3:])[:600])
    return ordered_versions(v.strip() for v in listed.group(1).split(",") if _valid(v.strip()))


def available_versions(package: str, index: str | None) -> list[str]:
    """The versions of ``package`` the index offers, oldest first (ListingError if it cannot be listed)."""
    if index is not None and "://" not in index:
        return folder_versions(package, Path(index).expanduser())
    return pip_versions(package, index)


def unknown_versions(wanted: list[str], available: list[str]) -> list[str]:
    """The versions of ``wanted`` the index does not list (compared as versions: ``2.60`` is ``2.60.0``)."""
    have = {Version(v) for v in available}
    return [v for v in wanted if Version(v) not in have]


def between(available: list[str], good: str, bad: str) -> list[str]:
    """``good``, every listed version strictly between the two, and ``bad``, oldest first whichever way
    round they are given (a bisect may look for the release that made something faster)."""
    lo, hi = sorted((Version(good), Version(bad)))
    inner = [v for v in ordered_versions(available) if lo < Version(v) < hi]
    return [good, *inner, bad] if Version(good) < Version(bad) else [good, *reversed(inner), bad]


def pinnable_between(available: list[str], good: str, bad: str) -> list[str]:
    """:func:`between`, only what a variant may pin (no epochs, no local parts: the rest of a listing left out)."""
    return [v for v in between(available, good, bad) if re.fullmatch(VERSION_PATTERN, v)]


def every_minor(versions: list[str]) -> list[str]:
    """Each minor release's last patch, oldest first: ``2.42.0, 2.42.1, 2.43.0`` -> ``2.42.1, 2.43.0`` (a listing,
    oldest first)."""
    return list({release(v)[:2]: v for v in versions}.values())


def range_versions(listed: list[str], first: str, last: str, every: str) -> list[str]:
    """The releases the index lists from ``first`` to ``last`` (both included, oldest first; pre-releases and
    what a variant cannot pin left out), each one (``every`` ``release``) or each minor's last (``minor``: the
    ends kept); ValueError for an end the listing lacks or ends the wrong way round."""
    missing = unknown_versions([first, last], listed)
    if missing:
        raise ValueError(
            f"--from/--to: {', '.join(missing)} not in the index's listing (it has {', '.join(listed[-12:])})"
        )
    if Version(first) >= Version(last):
        raise ValueError(f"--from {first} --to {last}: --from must be the older release")
    picked = [v for v in pinnable_between(listed, first, last) if not Version(v).is_prerelease]
    if every == "minor":
        minors = every_minor(picked)
        picked = [first] + [v for v in minors if v not in (first, last)] + [last]
    return picked
