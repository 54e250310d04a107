"""rlbench: a benchmarking harness for distributed RL training (Ray RLlib first).

The package is the pipeline it runs, one module per stage:
spec -> plan -> run (trial) -> sample -> store -> analyze -> report.
Everything that knows RLlib's config names and result keys is in :mod:`rlbench.adapters.rllib`.
"""

__version__ = "0.1.0"

#: Version of the on-disk results format (docs/SCHEMA.md, "Format history"; rlbench.results.format). Bump on
#: any change to a file or column, with its line in rlbench.results.format.HISTORY.
SCHEMA_VERSION = 3
