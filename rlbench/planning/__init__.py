"""The plan of a sweep: what the user's words (``rlbench.spec``) become on this machine or cluster.

One :class:`~rlbench.planning.plan.TrialPlan` per trial (``plan.json``), its seed per repeat, a ``--parallel``
trial's bundles packed onto nodes (``placement.py``), why a planned trial cannot run here (``skips.py``) and the
skipped trials said once per reason (``skip_summary.py``). This room reads the machine (``rlbench.measure``); the
spec does not, so the user's words validate the same on any machine, and nothing of the spec imports the plan.
"""
