"""The seed studies as ready-made experiments that are not RLlib sweeps: the env ceiling
(:mod:`rlbench.studies.envbench`) and async vs bulk-synchronous simulation
(:mod:`rlbench.studies.simbench`)."""
