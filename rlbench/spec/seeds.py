"""The one derivation of every seed rlbench derives (standard library only: the decision core imports it too).

A seed is the first 4 bytes of SHA-256 of a text that names its place, below :data:`SEED_LIMIT`. A hash rather
than ``base + n``: RLlib seeds env runner i with ``seed + i``, so neighbouring seeds would give one trial's
driver the random stream of another's env runner.

Two sequences were written before there was one derivation, each with its own text and byte order; the folders
they wrote must rerun with the same seeds (resume, reproduce, autoconfig's resume), so each keeps its spelling
(:data:`SEQUENCES`), pinned by value in tests/spec/test_seeds.py. A new sequence takes a new entry, never a
change to one.
"""

from __future__ import annotations

import hashlib
from typing import Literal

#: Seeds are drawn and derived in [0, SEED_LIMIT): RLlib adds the env runner's index (and gymnasium the
#: sub-env's) to the seed, and numpy takes seeds below 2**32.
SEED_LIMIT = 2**31

Sequence = Literal["repeat", "request"]

#: Sequence -> (the words before the base, the separator, the digest's byte order):
#: ``repeat``: a sweep's repeat r under ``seed: base``, ``"rlbench-seed:<base>:<r>"`` read big-endian;
#: ``request``: an autoconfig trial, ``"<run seed>/<stage>/<rung or round>/<slot>"`` read little-endian (its
#: value was 32 bits and the trial's plan took it modulo 2**31: the same seed as this one).
SEQUENCES: dict[str, tuple[tuple[str, ...], str, Literal["big", "little"]]] = {
    "repeat": (("rlbench-seed",), ":", "big"),
    "request": ((), "/", "little"),
}


def derive_seed(base: int, *place: object, sequence: Sequence = "repeat") -> int:
    """The seed of ``place`` (a repeat's index; a request's stage, rung and slot) under the run's seed ``base``,
    in ``sequence``'s spelling (:data:`SEQUENCES`), in [0, :data:`SEED_LIMIT`)."""
    words, separator, order = SEQUENCES[sequence]
    text = separator.join(map(str, (*words, base, *place)))
    return int.from_bytes(hashlib.sha256(text.encode()).digest()[:4], order) % SEED_LIMIT
