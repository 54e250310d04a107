"""rlbench: a benchmarking harness for distributed RL training (Ray RLlib first).

The package is the pipeline it runs, one module per stage:
spec -> plan -> run (trial) -> sample -> store -> analyze -> report.
Everything that knows RLlib's config names and result keys is in :mod:`rlbench.adapters.rllib`.
"""

__version__ = "0.1.0"

#: Version of the on-disk result schema (docs/SCHEMA.md). Bump on any column change.
SCHEMA_VERSION = 1
