"""What a resume reruns, and when it must refuse.

The folder is opened, and its manifest checked against the run (format, spec, machine, software), by
:func:`rlbench.results.session.open_for_write`. Here, trial by trial: :func:`plan_resume` decides which
trials a resume runs again and refuses (:func:`~rlbench.results.session.incomparable`) when one the folder
holds would now be planned differently. Every refusal is raised before anything is written (CLI exit code 2).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from rlbench.planning.plan import PLACED_KEYS, PlanError, TrialPlan, read_plan
from rlbench.results.layout import ResultsFolder
from rlbench.results.lock import OutDirError
from rlbench.results.manifest import Manifest
from rlbench.results.records import read_record
from rlbench.results.session import differences, incomparable
from rlbench.spec.seeds import NUMPY_SEEDS

#: Spec keys a resume may change: they add trials or only affect trials not yet finished.
RESUMABLE_SPEC_KEYS = ("grid", "repeats", "trial_timeout_s")


@dataclass
class ResumePlan:
    """What a sweep into an existing folder does with each planned trial."""

    keep: dict[str, str] = field(default_factory=dict)
    """Trial id -> status of a finished trial that stays as it is (not run again)."""
    rerun: dict[str, str] = field(default_factory=dict)
    """Trial id -> why it runs again (its old files are moved to ``attempts/`` first)."""

    def runs(self, trial_id: str) -> bool:
        """Whether the trial runs in this sweep (new, or run again)."""
        return trial_id not in self.keep


def recorded_seeds(folder: ResultsFolder, manifest: Manifest) -> dict[int, int | None]:
    """Repeat index -> the seed a result folder's trials of that repeat ran with: the manifest's
    ``repeat_seeds`` (drawn when the sweep was planned), overridden by the trials' own plans (the
    truth; a folder from before every trial was seeded records None there)."""
    # the folder may come from elsewhere: only seeds numpy takes are taken from it (an older rlbench let a spec give
    # seeds up to 2**32 - 1; its folders rerun with them)
    seeds: dict[int, int | None] = {
        i: s for i, s in enumerate(manifest.repeat_seeds) if s is None or (type(s) is int and 0 <= s < NUMPY_SEEDS)
    }
    for trial in folder.trials():
        try:
            plan = read_plan(trial)
        except PlanError:
            continue  # plan_resume refuses such a folder with the reason
        seeds[plan.repeat] = plan.seed
    return seeds


def plan_resume(folder: ResultsFolder, plans: list[TrialPlan], *, retry_failed: bool) -> ResumePlan:
    """Decide what a resume of ``folder`` (opened and checked: its spec, machine and software are the run's)
    reruns; raise OutDirError when a trial it holds would now run differently.

    Comparable means every trial already in the folder planned identically now (same id, config, cores,
    limits; only its timeout may change). Runs again: trials with no verdict (the sweep died),
    ``interrupted`` ones, and with ``retry_failed`` the ``failed`` and ``timeout`` ones. ``ok`` and
    ``skipped`` trials are kept (same machine and plan, so a skip would be decided the same way).
    """
    out_dir = folder.path
    by_id = {p.trial_id: p for p in plans}
    decision = ResumePlan()
    for trial in folder.trials():
        trial_id = trial.trial_id
        new = by_id.get(trial_id)
        if new is None:
            raise incomparable(
                out_dir,
                f"the spec no longer plans trial {trial_id}, which the folder holds",
                ["lowering repeats or removing grid values drops trials"],
            )
        try:
            old = read_plan(trial)
        except PlanError as e:
            raise OutDirError(f"cannot resume {out_dir}: {e}; choose another --out") from None
        # a --parallel trial's node set (and so its cpus) is chosen when its turn comes, and its skip reason names
        # the nodes the probe found (one lost meanwhile changes the words): compared is whether it is skipped
        placed_keys = PLACED_KEYS if old.parallel and new.parallel else ()
        diffs = differences(old.model_dump(mode="json"), new.model_dump(mode="json"), skip=("timeout_s", *placed_keys))
        if placed_keys and (old.skip_reason is None) != (new.skip_reason is None):
            diffs.append(f"skip_reason: {old.skip_reason!r} -> {new.skip_reason!r}")
        if diffs:
            raise incomparable(
                out_dir,
                f"trial {trial_id} would now run differently (inserting grid values anywhere "
                "but at the end of the first axis renumbers trials)",
                diffs,
            )
        try:
            record = read_record(trial)
        except (OSError, ValueError, RecursionError) as e:
            raise OutDirError(
                f"cannot resume {out_dir}: {trial.record} is unreadable ({str(e)[:200]}); choose another --out"
            ) from None
        if record is None:
            decision.rerun[trial_id] = "no verdict: the sweep stopped during this trial"
        elif record.status == "interrupted":
            decision.rerun[trial_id] = "interrupted"
        elif record.status in ("failed", "timeout") and retry_failed:
            decision.rerun[trial_id] = f"{record.status}, retried (--retry-failed)"
        else:
            decision.keep[trial_id] = record.status
    return decision
