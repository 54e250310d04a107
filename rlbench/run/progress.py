"""The sweep's live progress display: the sweep's bar (in iterations, for the ETA) and the current trial."""

from __future__ import annotations

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)

from rlbench.spec.plan import TrialPlan


class SweepProgress:
    """A rich progress display: the sweep's bar (in iterations, for the ETA) and the current trial."""

    def __init__(self, console: Console, plans: list[TrialPlan]):
        self.per_trial = {p.trial_id: (p.stop_iterations or 1) for p in plans}
        self.progress = Progress(
            TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(),
            TextColumn("{task.fields[detail]}"), TimeElapsedColumn(), TextColumn("ETA"), TimeRemainingColumn(),
            console=console, transient=False,
        )
        self.task = self.progress.add_task("sweep", total=sum(self.per_trial.values()), detail="")
        self.done = 0

    def __enter__(self) -> "SweepProgress":
        self.progress.__enter__()
        return self

    def __exit__(self, *exc) -> None:
        self.progress.__exit__(*exc)

    def trial(self, plan: TrialPlan, position: int, total: int, iteration: int, phase: str) -> None:
        """Show the current trial's position, iteration and phase."""
        limit = plan.stop_iterations or "?"
        axes = " ".join(f"{k}={v}" for k, v in plan.axes.items())
        self.progress.update(
            self.task, completed=self.done + min(iteration, self.per_trial[plan.trial_id]),
            detail=f"trial {position}/{total} {plan.trial_id} [{axes}] {phase} it {iteration}/{limit}",
        )

    def finish_trial(self, plan: TrialPlan) -> None:
        """Count the trial as done."""
        self.done += self.per_trial[plan.trial_id]
        self.progress.update(self.task, completed=self.done)


def _phase(events: list[dict]) -> tuple[int, str]:
    iterations = sum(e.get("event") == "iteration" for e in events)
    names = {e.get("event") for e in events}
    if "shutdown" in names:
        return iterations, "shutting down"
    if "build" in names:
        return iterations, "training"
    if "ray_init" in names:
        return iterations, "building"
    return iterations, "starting Ray"
