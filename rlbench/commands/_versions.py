"""What ``rlbench history`` and ``rlbench bisect`` share: their package flags (the threshold's, compare's too, is in
:mod:`rlbench.commands._common`), and the
check of versions against the index's listing (docs/VERSIONS.md)."""

from __future__ import annotations

import argparse

from rich.console import Console

from rlbench.analysis.findings import ROUNDS_FOR_EVIDENCE
from rlbench.commands._common import add_threshold_argument, say

#: Rounds by default: the fewest with which a paired comparison can give evidence.
DEFAULT_ROUNDS = ROUNDS_FOR_EVIDENCE


def add_package_arguments(p: argparse.ArgumentParser) -> None:
    """``--package``, ``--rounds``, ``--index``, ``--threshold``, ``--out``, ``--dry-run``."""
    p.add_argument("--package", required=True, help="the distribution whose versions are compared, e.g. ray")
    p.add_argument(
        "--rounds",
        type=int,
        default=None,
        help=f"rounds: every version runs every configuration once per round, interleaved (default "
        f"{DEFAULT_ROUNDS}, the fewest that can give a verdict)",
    )
    p.add_argument(
        "--index",
        default=None,
        help="where the versions come from: a package index URL, or a local folder of wheels (default: pip's index)",
    )
    add_threshold_argument(p, "smallest change that counts")
    p.add_argument("--dry-run", action="store_true", help="print the plan and run nothing")


def rounds_of(args: argparse.Namespace) -> int:
    """``--rounds`` (ValueError below 1)."""
    rounds = DEFAULT_ROUNDS if args.rounds is None else args.rounds
    if rounds < 1:
        raise ValueError(f"--rounds {rounds}: give a whole number >= 1 (default {DEFAULT_ROUNDS})")
    return rounds


def listed_versions(package: str, index: str | None, console: Console) -> list[str] | None:
    """The versions the index lists, oldest first; None (said on the console) when it cannot be listed."""
    from rlbench.run.index import ListingError, available_versions

    try:
        return available_versions(package, index)
    except (ListingError, OSError) as e:
        say(
            console,
            f"note: the versions of {package} could not be listed ({e}); each is checked when it is installed",
            "yellow",
        )
        return None


def unknown_message(package: str, index: str | None, unknown: list[str], listed: list[str]) -> str:
    """``--versions 9.9.9: ray 9.9.9 is not in pip's index (it has 2.58.0, ...)``."""
    where = f"the index {index}" if index else "pip's index"
    shown = ", ".join(listed[-12:]) if listed else "no version of it"
    return (
        f"{', '.join(unknown)}: {package} {'/'.join(unknown)} {'is' if len(unknown) == 1 else 'are'} not in "
        f"{where} (it has {'..., ' if len(listed) > 12 else ''}{shown}): give versions it lists"
    )


def every_minor(versions: list[str]) -> list[str]:
    """Each minor release's last patch, oldest first: ``2.42.0, 2.42.1, 2.43.0`` -> ``2.42.1, 2.43.0`` (a listing,
    oldest first)."""
    from packaging.version import Version

    last: dict[tuple[int, int], str] = {}
    for v in versions:
        release = Version(v).release
        last[(release[0], release[1] if len(release) > 1 else 0)] = v
    return list(last.values())


def range_versions(listed: list[str], first: str, last: str, every: str) -> list[str]:
    """The releases the index lists from ``first`` to ``last`` (both included, oldest first; pre-releases and
    what a variant cannot pin left out), each one (``every`` ``release``) or each minor's last (``minor``: the
    ends kept); ValueError for an end the listing lacks or ends the wrong way round."""
    import re

    from packaging.version import Version

    from rlbench.run.index import between, unknown_versions
    from rlbench.spec.variants import VERSION_PATTERN

    missing = unknown_versions([first, last], listed)
    if missing:
        raise ValueError(
            f"--from/--to: {', '.join(missing)} not in the index's listing (it has {', '.join(listed[-12:])})"
        )
    if Version(first) >= Version(last):
        raise ValueError(f"--from {first} --to {last}: --from must be the older release")
    picked = [
        v for v in between(listed, first, last) if re.fullmatch(VERSION_PATTERN, v) and not Version(v).is_prerelease
    ]
    if every == "minor":
        minors = every_minor(picked)
        picked = [first] + [v for v in minors if v not in (first, last)] + [last]
    return picked
