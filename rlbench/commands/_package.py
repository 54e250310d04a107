"""What ``rlbench history`` and ``rlbench bisect`` share: their package options and flags (the threshold's, compare's
too, is in :mod:`rlbench.commands._common`), and the check of versions against the index's listing (docs/VERSIONS.md);
the ranges of releases are the index's (:mod:`rlbench.run.index`)."""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from pathlib import Path

from rich.console import Console

from rlbench.analysis.findings import ROUNDS_FOR_EVIDENCE
from rlbench.commands._common import add_threshold_argument, say

#: Rounds by default: the fewest with which a paired comparison can give evidence.
DEFAULT_ROUNDS = ROUNDS_FOR_EVIDENCE


@dataclass(frozen=True, kw_only=True)
class PackageOptions:
    """What ``rlbench history``'s and ``bisect``'s options share: the spec and :func:`add_package_arguments`' flags."""

    config: Path
    """The sweep spec (YAML), without ``variants:``."""
    package: str
    """The distribution whose versions are compared, e.g. ``ray``."""
    rounds: int | None = None
    """Every version runs every configuration once a round, interleaved; None: :data:`DEFAULT_ROUNDS`."""
    index: str | None = None
    """Where the versions come from: a package index URL or a local folder of wheels; None: pip's index."""
    threshold: str | None = None
    """The smallest change that counts, as typed (``5%`` or ``0.05``: ``threshold_of``); None: the default."""
    dry_run: bool = False
    """Print the plan and run nothing."""
    out: Path | None = None
    """The result folder; None: a new one under ``results/``."""


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


def rounds_of(options: PackageOptions) -> int:
    """``--rounds`` (ValueError below 1)."""
    rounds = DEFAULT_ROUNDS if options.rounds is None else options.rounds
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
