"""Where a release's iteration time goes: each phase per 1,000 sampled env steps, per trial.

A history compares releases on throughput; when a step between two releases changes it, the split says which
phase moved. Per trial, over its steady iterations (:func:`~rlbench.analysis.windows.steady`), each phase's
seconds are summed and divided by the env steps those iterations sampled: milliseconds per 1,000 env steps, so
trials whose iterations sample different amounts (APPO's are bounded by steps, not batches) compare. The phases
are the iteration's own columns (docs/SCHEMA.md): the driver's split (sample, learn, sync, other) adds up to the
iteration's wall time; sampling splits into env step, inference and the rest; learning into the learner's batch
build, its minibatch updates and the rest. A phase a release does not report (a column null in every steady
iteration: the adapter could not read it there) is None for that trial, never 0.
"""

from __future__ import annotations

import pandas as pd

from rlbench.analysis.windows import steady

#: (iterations column, its words): the driver's split first, then the parts of sampling and of learning.
PHASES: tuple[tuple[str, str], ...] = (
    ("sample_s", "sample"),
    ("learn_s", "learn"),
    ("sync_s", "weight sync"),
    ("other_s", "other"),
    ("env_step_s", "env step"),
    ("inference_s", "inference"),
    ("sample_other_s", "sampling's rest"),
    ("learn_batch_s", "learner: batch build"),
    ("learn_update_s", "learner: updates"),
    ("learn_other_s", "learner: rest"),
)
#: The phases that add up to an iteration's wall time (the stacked bars of the page).
DRIVER_PHASES = ("sample_s", "learn_s", "sync_s", "other_s")


def split_column(phase: str) -> str:
    """The trials-frame column of a phase's milliseconds per 1,000 env steps: ``sample_ms_per_k``."""
    return f"{phase.removesuffix('_s')}_ms_per_k"


def phase_rates(iterations: pd.DataFrame) -> pd.DataFrame:
    """Per trial (index ``trial_id``): each phase's milliseconds per 1,000 env steps over its steady iterations;
    None where the trial's steady iterations sampled nothing or never reported the phase."""
    columns = [split_column(p) for p, _ in PHASES]
    if iterations.empty:
        return pd.DataFrame(columns=columns, index=pd.Index([], name="trial_id"))
    its = steady(iterations)
    rows = {}
    for trial_id, mine in its.groupby("trial_id"):
        steps = pd.to_numeric(mine["env_steps_sampled"], errors="coerce").sum()
        row = {}
        for phase, _ in PHASES:
            values = pd.to_numeric(mine[phase], errors="coerce") if phase in mine else pd.Series(dtype=float)
            row[split_column(phase)] = (
                float(values.sum()) * 1e6 / float(steps) if steps > 0 and values.notna().any() else None
            )
        rows[str(trial_id)] = row
    out = pd.DataFrame.from_dict(rows, orient="index", columns=columns)
    out.index.name = "trial_id"
    return out
