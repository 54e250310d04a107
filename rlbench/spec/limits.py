"""Upper bounds of a spec's numbers and of its size.

No real machine, cluster or sweep reaches them, but they keep every figure finite: a value past one
is a typo, and would otherwise pass validation and fail deep inside Ray, RLlib or a table (an int64
column, a sleep, a thread count). ``.inf`` and ``.nan`` are refused everywhere besides.
"""

from __future__ import annotations

from rlbench.spec.seeds import SEED_LIMIT

MAX_TRIALS = 10_000
"""Trials one spec may plan (grid points x repeats): each starts its own Ray (2-7 s measured), so
10,000 trials are hours of start-up alone; counted before the grid is expanded."""
MAX_REPEATS = 1_000
"""Most repeats of a grid point."""
MAX_CPUS = 100_000
"""Most CPUs anything may ask for (``cpus``, per actor, the driver's)."""
MAX_GPUS = 10_000
"""Most GPUs anything may ask for."""
MAX_ACTORS = 10_000
"""Most env runners or learners."""
MAX_THREADS = 4_096
"""Most torch threads per role."""
MAX_BATCH = 2**31 - 1
"""Largest batch, minibatch, fragment or env count (a torch index)."""
MAX_ITERATIONS = 10**9
"""Most iterations (``stop.iterations``, ``warmup_iterations``, ``num_epochs``)."""
MAX_SECONDS = 30 * 86_400
"""Longest ``stop.seconds`` and ``trial_timeout_s``: 30 days."""
MAX_SEED = SEED_LIMIT - 1
"""Largest seed a spec may give (``seed:``, ``autoconfig.seed``): the one bound every seed rlbench derives is below
(:data:`rlbench.spec.seeds.SEED_LIMIT`: RLlib adds an env runner's index to it, numpy takes less than 2**32)."""
