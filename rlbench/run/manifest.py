"""A sweep's ``manifest.json`` (:class:`~rlbench.results.manifest.Manifest`): its fixed part (spec, software,
machine, what differs from Tune), made when the sweep starts; the sweep adds its statuses and end time."""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

from rlbench.adapters import get_adapter
from rlbench.measure.machine import MachineInfo, git_commit, head_commit, machine_dict, software_versions
from rlbench.planning.plan import TrialPlan
from rlbench.results.manifest import Manifest
from rlbench.results.session import RunFacts
from rlbench.spec.model import LoadedSpec


def spec_data(loaded: LoadedSpec) -> dict[str, Any]:
    """The spec as the manifest holds it (and as a resume compares it)."""
    return loaded.spec.model_dump(mode="json", by_alias=True)


def run_facts(
    loaded: LoadedSpec, machine: MachineInfo, software: dict[str, Any], spec_may_change: tuple[str, ...] = ()
) -> RunFacts:
    """What a folder's trials must match for this run to continue it: the spec, the machine, the software, and
    the distributions of every framework the spec's trials use, asked of their adapters (``Adapter.requires``:
    a resume of an SB3 sweep under another stable-baselines3 is refused as one under another Ray is)."""
    packages = tuple(dict.fromkeys(dist for p in loaded.points for dist in get_adapter(p.config.framework).requires))
    return RunFacts(spec_data(loaded), machine_dict(machine), software, spec_may_change, packages, loaded.quick)


def manifest(loaded: LoadedSpec, machine: MachineInfo, plans: list[TrialPlan], argv: list[str]) -> Manifest:
    """The manifest's fixed part: spec, software, machine."""
    made = Manifest(
        spec_file=str(loaded.source),
        spec=spec_data(loaded),
        alias_notes=loaded.alias_notes,
        command=argv,
        trial_ids=[p.trial_id for p in plans],
        software=software_versions(),
        git_commit=git_commit(Path(__file__).resolve().parent),
        spec_git_commit=head_commit(loaded.source.resolve().parent),  # runs no git: see head_commit
        machine=machine_dict(machine),
        # what differs from running the same configurations under Tune, said once for the sweep
        differs_from_tune=list(dict.fromkeys(d for p in plans if p.skip_reason is None for d in p.differs_from_tune)),
        execution=sorted({p.config.execution for p in plans}),
        started_at=dt.datetime.now(dt.timezone.utc).isoformat(),
        ended_at=None,
    )
    if loaded.quick:
        made.quick = True
    resolved = relative_values(plans, machine)
    if resolved is not None:
        made.relative_values = resolved
    return made


def relative_values(plans: list[TrialPlan], machine: MachineInfo) -> dict[str, Any] | None:
    """Each grid value written relative to the machine (``cpus-1``) and what it resolved to here, per
    grid point (the manifest's ``relative_values``); None when the spec has none."""
    resolved = [
        {"index": p.index, "axis": axis, "value": expr, "resolved": p.axes[axis]}
        for p in plans
        if p.repeat == 0
        for axis, expr in p.relative.items()
    ]
    if not resolved:
        return None
    return {"machine_cpus": len(machine.usable_cores), "resolved": resolved}
