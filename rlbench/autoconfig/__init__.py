"""The decision core of ``rlbench autoconfig`` (docs/AUTOCONFIG.md): pure, seeded, driven by the sweep.

``model`` predicts an iteration's cost from probes and prunes what cannot win; ``search`` runs
successive halving on confidence intervals (ask/tell); ``decide`` races the finalists against the
baseline and picks the cheapest configuration indistinguishable from the best; ``outputs`` writes
the answer. Nothing here starts a process: the driver runs the requests as trials and tells results.
"""
