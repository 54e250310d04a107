"""What ``rlbench history`` and ``rlbench bisect`` share: their package flags, the threshold, and the
check of versions against the index's listing (docs/VERSIONS.md)."""

from __future__ import annotations

import argparse
import re

from rich.console import Console

from rlbench.commands._common import say

#: Rounds by default: the fewest with which a paired comparison can give evidence
#: (:data:`rlbench.analysis.findings.ROUNDS_FOR_EVIDENCE`; imported lazily, so repeated and tested here).
DEFAULT_ROUNDS = 6
#: A change smaller than this is not flagged (history) or not searched for (bisect).
DEFAULT_THRESHOLD = 0.05


def add_package_arguments(p: argparse.ArgumentParser) -> None:
    """``--package``, ``--rounds``, ``--index``, ``--threshold``, ``--out``, ``--dry-run``."""
    p.add_argument("--package", required=True, help="the distribution whose versions are compared, e.g. ray")
    p.add_argument("--rounds", type=int, default=None,
                   help=f"rounds: every version runs every configuration once per round, interleaved (default "
                        f"{DEFAULT_ROUNDS}, the fewest that can give a verdict)")
    p.add_argument("--index", default=None,
                   help="where the versions come from: a package index URL, or a local folder of wheels "
                        "(default: pip's index)")
    p.add_argument("--threshold", default=None,
                   help=f"smallest change that counts: 5%%, or 0.05 (default {DEFAULT_THRESHOLD * 100:.0f}%%)")
    p.add_argument("--dry-run", action="store_true", help="print the plan and run nothing")


def fraction(text: str | None, default: float = DEFAULT_THRESHOLD) -> float:
    """``5%`` or ``0.05`` -> 0.05; ValueError with the fix for anything else."""
    if text is None:
        return default
    found = re.fullmatch(r"\s*([0-9]*\.?[0-9]+)\s*(%?)\s*", text)
    value = (float(found.group(1)) / (100 if found.group(2) else 1)) if found else -1.0
    if not 0 < value < 1:
        raise ValueError(f"--threshold {text!r}: give a share between 0 and 1, e.g. 5% or 0.05")
    return value


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
        say(console, f"note: the versions of {package} could not be listed ({e}); each is checked when it is "
                     "installed", "yellow")
        return None


def unknown_message(package: str, index: str | None, unknown: list[str], listed: list[str]) -> str:
    """``--versions 9.9.9: ray 9.9.9 is not in pip's index (it has 2.58.0, ...)``."""
    where = f"the index {index}" if index else "pip's index"
    shown = ", ".join(listed[-12:]) if listed else "no version of it"
    return (f"{', '.join(unknown)}: {package} {'/'.join(unknown)} {'is' if len(unknown) == 1 else 'are'} not in "
            f"{where} (it has {'..., ' if len(listed) > 12 else ''}{shown}): give versions it lists")
