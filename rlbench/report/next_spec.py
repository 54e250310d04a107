"""``next.yaml``: the sweep a sampler or learner verdict asks for, beside the report.

When a verdict names a knob (:func:`rlbench.analysis.next_step.knob_verdicts`; which configuration and values:
:func:`rlbench.analysis.next_step.next_sweep`), this writes a spec that reruns that configuration's first ok trial
(:func:`rlbench.report.reproduce.reproduce_spec`: its resolved config, cores, stop and timeouts) with the knob as
its one grid axis, the current value among the values, and enough repeats for the one change rule to show a
difference (:data:`~rlbench.analysis.findings.REPEATS_FOR_EVIDENCE`). It is validated by the spec loader before it is
written; its comments say why, with the evidence, and how to run it. Without such a verdict there is no file (an
older one is removed). The values come from the folder's plans and are written as YAML data (``yaml.safe_dump``);
the comments are printable ASCII only, so nothing from the folder can end a comment and add a key.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from rlbench.analysis.findings import REPEATS_FOR_EVIDENCE
from rlbench.analysis.knobs import Knob
from rlbench.analysis.next_step import NextSweep, knob_values
from rlbench.planning.plan import read_plan
from rlbench.report.reproduce import reproduce_spec
from rlbench.results.files import write_atomic
from rlbench.results.layout import ResultsFolder
from rlbench.spec.load import slug, spec_from_dict

#: What the comments may hold: printable ASCII (anything else from the folder's text becomes ``?``).
_COMMENT_UNSAFE = re.compile(r"[^\x20-\x7e]")


@dataclass(frozen=True)
class NextSpec:
    """The next sweep as written."""

    path: Path
    """``DIR/next.yaml``."""
    knob: str
    """The spec key it sweeps (``driver_torch_threads`` where the trial set the driver's threads itself)."""
    values: tuple[int, ...]
    """Its values."""
    trial_id: str
    """The trial it starts from."""
    command: str
    """``rlbench sweep DIR/next.yaml``."""


def _comment(text: str) -> str:
    return "# " + _COMMENT_UNSAFE.sub("?", text)


def _resolved(step: NextSweep, plan) -> tuple[str, float, tuple[int, ...]]:
    """The knob as the trial's config has it: a driver whose threads the spec set takes them from
    ``driver_torch_threads``, not from its CPUs."""
    threads = plan.config.threads.driver_torch_threads
    if step.knob == Knob.NUM_CPUS_FOR_MAIN_PROCESS and threads is not None:
        threads_knob = Knob.DRIVER_TORCH_THREADS
        return threads_knob, float(threads), knob_values(threads_knob, threads, {"cpus": plan.cpus})
    return step.knob, step.current, step.values


def build_next_spec(
    out_dir: Path, step: NextSweep, trial_id: str
) -> tuple[dict[str, Any], str, float, tuple[int, ...]]:
    """The spec mapping (validated), its knob, the knob's current value and the values."""
    folder = ResultsFolder(Path(out_dir))
    plan = read_plan(folder.trial(trial_id))
    base = folder.read_manifest().get("spec") or {}
    knob, current, values = _resolved(step, plan)
    knob = str(knob)  # a plain key, as YAML writes one
    spec = reproduce_spec(out_dir, trial_id)
    seed = base.get("seed")
    spec.update(
        {
            "name": slug(f"{base.get('name', 'sweep')}-next"),
            "repeats": max(int(base.get("repeats") or 1), REPEATS_FOR_EVIDENCE),
            "seed": seed if isinstance(seed, int) and not isinstance(seed, bool) else None,
            "grid": {knob: list(values)},
        }
    )
    loaded = spec_from_dict(spec, source="next.yaml", check_envs=False)
    swept: set[Any] = {p.axes.get(knob) for p in loaded.points}  # the grid's values, of one comparable type
    if sorted(swept) != sorted(values):  # a bug would sweep something else
        raise RuntimeError(f"next.yaml for {trial_id} does not sweep {knob} over {values}")
    return spec, knob, current, values


def write_next_spec(out_dir: Path, step: NextSweep | None, trials, label: str = "") -> NextSpec | None:
    """Write ``next.yaml`` for ``step`` (from the first ok trial of its configuration, ``label`` its name), or remove
    an older one when there is no step; returns what was written."""
    folder = ResultsFolder(Path(out_dir))
    path = folder.next_spec
    if step is None:
        if path.is_symlink() or path.exists():
            path.unlink()
        return None
    ok = trials[(trials["index"] == step.index) & (trials["status"] == "ok")].sort_values("repeat")
    if ok.empty:
        return None
    trial_id = str(ok["trial_id"].iloc[0])
    spec, knob, current, values = build_next_spec(out_dir, step, trial_id)
    command = f"rlbench sweep {path}"
    lines = [
        f"The sweep the report of {out_dir} asks for next (written by rlbench): {step.verdict.label}.",
        f"Why: {step.verdict.short}; the verdict in full, with its numbers, is in the report's Verdicts ({out_dir}/"
        "report.md).",
        f"It reruns trial {trial_id} ({label or f'grid point {step.index}'}) with {knob} over "
        f"{', '.join(map(str, values))} "
        f"(now {current:g}), {spec['repeats']} repeats each, so the one change rule can "
        "show a difference (docs/ANALYSIS.md).",
        f"Run it: {command}",
    ]
    if knob == "minibatch_size":
        lines.append(
            "A larger minibatch changes learning as well as speed: fewer, larger steps an epoch. Throughput "
            "alone does not settle it; time to a target does (add a stop target, e.g. "
            "stop: {episode_return_mean: ...}, and compare time_to_target_s)."
        )
    else:
        lines.append("Throughput is what this knob moves; time to a target settles whether it is worth it.")
    header = "\n".join(_comment(line) for line in lines) + "\n"
    write_atomic(path, (header + yaml.safe_dump(spec, sort_keys=False)).encode())
    return NextSpec(path, knob, values, trial_id, command)
