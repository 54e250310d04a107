"""The one derivation of every seed rlbench derives (standard library only: the decision core imports it too).

A seed is the first 4 bytes of SHA-256 of a text that names its place, below :data:`SEED_LIMIT`. A hash rather
than ``base + n``: RLlib seeds env runner i with ``seed + i``, so neighbouring seeds would give one trial's
driver the random stream of another's env runner.

Three sequences were written before there was one derivation, each with its own spelling; the folders they wrote
must rerun with the same seeds (resume, reproduce, autoconfig's resume, a servebench rerun), so each keeps it
(:data:`SEQUENCES`, :data:`LINEAR`), pinned by value in tests/spec/test_seeds.py. A new sequence takes a new
entry, never a change to one.

One bound: every seed a trial runs with is below :data:`SEED_LIMIT`, a spec's own seeds too
(``rlbench.spec.limits.MAX_SEED``): RLlib seeds env runner i with ``seed + i`` (and gymnasium sub-env j with
``+ j``), and numpy refuses a seed of 2**32 or more, so a user's 4294967295 would have passed the spec and
overflowed in the trial.
"""

from __future__ import annotations

import hashlib
from typing import Literal

#: numpy takes seeds below this (``np.random.default_rng``, ``np.random.seed``).
NUMPY_SEEDS = 2**32
#: Seeds are drawn, derived and given in [0, SEED_LIMIT): RLlib adds the env runner's index (and gymnasium the
#: sub-env's) to the seed, which must stay below :data:`NUMPY_SEEDS`; half of numpy's range leaves room for any
#: count of either (``MAX_RUNNERS``).
SEED_LIMIT = 2**31

Sequence = Literal["repeat", "request", "cell"]

#: Sequence -> (the words before the base, the separator, the digest's byte order):
#: ``repeat``: a sweep's repeat r under ``seed: base``, ``"rlbench-seed:<base>:<r>"`` read big-endian;
#: ``request``: an autoconfig trial, ``"<run seed>/<stage>/<rung or round>/<slot>"`` read little-endian (its
#: value was 32 bits and the trial's plan took it modulo 2**31: the same seed as this one).
SEQUENCES: dict[str, tuple[tuple[str, ...], str, Literal["big", "little"]]] = {
    "repeat": (("rlbench-seed",), ":", "big"),
    "request": ((), "/", "little"),
}

#: The sequences spelled as arithmetic before the one derivation: sequence -> (a multiplier for the base and for
#: each part of the place, the modulus). ``cell``: servebench's states of one cell (its batch and input bytes) under
#: the run's seed, ``(base * 1_000_003 + batch * 7_919 + input_bytes) % 2**32``: numpy's generator alone draws them
#: (no runner index is added), so its bound is numpy's, :data:`NUMPY_SEEDS`.
LINEAR: dict[str, tuple[tuple[int, ...], int]] = {"cell": ((1_000_003, 7_919, 1), NUMPY_SEEDS)}


def derive_seed(base: int, *place: int | str, sequence: Sequence = "repeat") -> int:
    """The seed of ``place`` (a repeat's index; a request's stage, rung and slot; a servebench cell's batch and input
    bytes) under the run's seed ``base``, in ``sequence``'s spelling (:data:`SEQUENCES`, :data:`LINEAR`), in
    [0, :data:`SEED_LIMIT`) (``cell``: [0, :data:`NUMPY_SEEDS`))."""
    if sequence in LINEAR:
        factors, modulus = LINEAR[sequence]
        if len(place) != len(factors) - 1:
            raise ValueError(f"the {sequence} sequence's place has {len(factors) - 1} parts, not {len(place)}")
        return sum(f * int(x) for f, x in zip(factors, (base, *place))) % modulus
    words, separator, order = SEQUENCES[sequence]
    text = separator.join(map(str, (*words, base, *place)))
    return int.from_bytes(hashlib.sha256(text.encode()).digest()[:4], order) % SEED_LIMIT
