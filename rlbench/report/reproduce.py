"""Reproduce: the one-trial spec and command that rerun a trial of a result set exactly.

The trial's ``plan.json`` holds its resolved config, cores, limits and seed; the manifest holds the
sweep's name, algorithm and the software it ran with. From those this writes
``trials/<trial_id>/reproduce.yaml`` (a one-point spec with ``repeats: 1``, ``cpus`` pinned to the
cores the trial had) and the ``rlbench sweep`` command that runs it.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from rlbench.measure.machine import git_commit, software_versions
from rlbench.planning.plan import read_plan
from rlbench.results.files import write_atomic
from rlbench.results.layout import ResultsFolder
from rlbench.results.text import plain
from rlbench.spec.load import slug, spec_from_dict


@dataclass(frozen=True)
class Reproduction:
    """How to rerun one trial."""

    spec_path: Path
    """The one-point spec written next to the trial's plan."""
    command: list[str]
    """``rlbench sweep SPEC --out OUT``."""
    out_dir: Path
    """Where that command writes."""
    differences: list[str]
    """Software or commit differences between the original run and this checkout ('' when none)."""
    cwd_note: str | None
    """Where to run it from when the env is imported from a local package."""


def reproduce_spec(out_dir: Path, trial_id: str) -> dict[str, Any]:
    """The spec mapping that reruns ``trial_id`` of ``out_dir`` alone (validated before it is returned)."""
    folder = ResultsFolder(Path(out_dir))
    plan = read_plan(folder.trial(trial_id))
    manifest = folder.read_manifest()
    base = manifest.get("spec") or {}
    config = plan.config.model_dump(mode="json", by_alias=True, exclude_none=True)
    config["cpus"] = plan.cpus
    stop: dict[str, Any] = {
        k: v for k, v in (("iterations", plan.stop_iterations), ("seconds", plan.stop_seconds)) if v is not None
    }
    target = plan.stop_target
    if target is not None:
        stop[target.metric] = target.threshold if target.mode == "at_least" else {target.mode: target.threshold}
    spec: dict[str, Any] = {
        "name": slug(f"{base.get('name', 'sweep')}-{trial_id}"),
        "algo": plan.config.algo,
        **config,
        "repeats": 1,
        "stop": stop,
        "warmup_iterations": plan.warmup_iterations,
        "trial_timeout_s": plan.timeout_s,
        "sample_hz": plan.sample_hz,
        **(
            {"profile_hz": plan.profile_hz, "profile_native": plan.profile_native, "profile_roles": plan.profile_roles}
            if plan.profile_hz
            else {}
        ),
        # The trial's own seed, as given (a number would be a base to derive from); a plan from before
        # every trial was seeded has none, and its rerun is seeded afresh.
        "seed": [plan.seed] if plan.seed is not None else None,
    }
    loaded = spec_from_dict(spec, source=f"reproduce {trial_id}", check_envs=False)
    got, want = loaded.points[0].config.model_dump(), plan.config.model_dump()
    want["cpus"] = plan.cpus
    if got != want:  # a bug here would rerun something else: refuse rather than mislead
        raise RuntimeError(f"reproduce spec for {trial_id} does not resolve to the trial's config")
    return spec


def write_reproduction(out_dir: Path, trial_id: str, rerun_dir: Path | None = None) -> Reproduction:
    """Write ``reproduce.yaml`` for the trial and return the command that runs it."""
    out_dir = Path(out_dir)
    folder = ResultsFolder(out_dir)
    spec = reproduce_spec(out_dir, trial_id)
    manifest = folder.read_manifest()
    path = folder.trial(trial_id).reproduce
    # plain(): the manifest's text comes from the folder; a newline in it would end the comment and
    # add keys to the spec that is then run
    header = (
        f"# Reruns trial {plain(trial_id)} of {plain(out_dir)} alone (written by `rlbench reproduce`).\n"
        f"# Original: rlbench git {plain(manifest.get('git_commit'))}, software "
        f"{plain(manifest.get('software'))}\n"
    )
    plan = read_plan(folder.trial(trial_id))
    if plan.relative:  # the original spec scaled to its machine; this one holds what that resolved to
        header += (
            "# Values relative to the original machine, as they resolved there: "
            + plain(", ".join(f"{axis}: {expr} = {plan.axes[axis]}" for axis, expr in plan.relative.items()))
            + "\n"
        )
    write_atomic(path, (header + yaml.safe_dump(spec, sort_keys=False)).encode())
    rerun = Path(rerun_dir) if rerun_dir else out_dir.parent / f"{out_dir.name}-reproduce-{trial_id}"
    differences = []
    then, now = manifest.get("software") or {}, software_versions()
    for k in ("rlbench", "python", "ray", "torch", "gymnasium", "numpy"):
        if then.get(k) and then.get(k) != now.get(k):
            differences.append(f"{k}: ran with {then.get(k)}, installed now {now.get(k)}")
    commit_now = git_commit(Path(__file__).resolve().parent)
    if manifest.get("git_commit") and manifest.get("git_commit") != commit_now:
        differences.append(f"rlbench git commit: ran at {manifest.get('git_commit')}, checkout now {commit_now}")
    env = spec["environment"]["env"]
    cwd_note = (
        (
            f"the env {env} is imported from the folder rlbench runs in: run it from the folder the "
            f"original sweep ran in (spec file was {manifest.get('spec_file')})"
        )
        if ":" in env
        else None
    )
    return Reproduction(path, ["rlbench", "sweep", str(path), "--out", str(rerun)], rerun, differences, cwd_note)
