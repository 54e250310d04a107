"""What autoconfig writes: ``autoconfig.json`` (the answer and its evidence), the answer as the framework's
own code, ready to paste (its adapter's ``ConfigSnippet``: ``rllib_config.py`` for RLlib, none for a framework
without code), and ``best.yaml`` (a sweep spec that re-measures it against the baseline).

Every file goes through :func:`rlbench.results.files.write_atomic`. The snippet is code a user will run,
built from a spec that may hold any text: the adapter renders every value inert
(``rlbench.adapters.pysource``), and its file name must be a plain name. ``best.yaml`` is written with
``yaml.safe_dump``.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml

from rlbench.analysis.autoconfig_run import REASON_WORDS, Reason
from rlbench.analysis.evidence import too_few_readings_text
from rlbench.autoconfig.ask_tell import Objective, Standing
from rlbench.autoconfig.decide import Answer
from rlbench.autoconfig.model import Candidate, PredictionRow
from rlbench.autoconfig.plan import BudgetPlan
from rlbench.autoconfig.search import Elimination
from rlbench.results.files import write_atomic
from rlbench.results.layout import AUTOCONFIG_JSON

if TYPE_CHECKING:  # the driver asks the adapter for the snippet and hands it in: this room imports no adapter
    from rlbench.adapters.base import ConfigSnippet

BEST_YAML = "best.yaml"
#: Version of autoconfig.json's fields (docs/AUTOCONFIG.md; 4 added the plan, the trial, the evidence; 5 the design the
#: race's readings were compared by, ``design`` and ``design_note``; 6 the run's ``tolerance_pct``; 7 ``mode`` and the
#: walk's ``path``, ``stop_reason``, ``stop_text``, ``walk_points`` and ``grid_walk``).
SCHEMA_VERSION = 7
#: Repeats best.yaml asks for (asv's 2 rounds x 5 and irace's firstTest=5 are the anchors).
BEST_REPEATS = 5
#: What a snippet's file name may be: a plain name with a suffix, never a path (it is written into the folder).
SNIPPET_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,80}\.[A-Za-z0-9]{1,8}")


@dataclass(frozen=True)
class AutoconfigResult:
    """Everything the outputs are written from."""

    objective: Objective
    """``throughput`` or ``time_to_target``."""
    answer: Answer
    """The race's answer."""
    candidates: Mapping[str, Candidate]
    """key -> configuration, for every one searched and the baseline."""
    eliminations: Sequence[Elimination]
    """The search's log (model, separated, failed)."""
    trials_run: int
    """Trials run, search and race together (probes not included)."""
    wall_s: float
    """Seconds the whole run took."""
    budget_s: float
    """Seconds it was given."""
    search_stop_reason: str | None = None
    """Why the search handed over to the race."""
    predicted_vs_measured: Sequence[PredictionRow] = field(default_factory=tuple)
    """The refit cost model beside what the trials measured."""
    plan: BudgetPlan | None = None
    """What the budget bought after the probes (None: an older run)."""
    trial: str = ""
    """How long a trial was and why, in words."""
    cold_start_s: float | None = None
    """A trial's seconds outside training as the trials measured them."""
    probe_trials: int = 0
    """Probe trials run before the search (not counted in ``trials_run``); the walk: the start's own readings."""
    walk: Mapping[str, Any] | None = None
    """A walk's record (``walk.outputs.walk_summary``: ``path``, ``stop_reason``, ``walk_points``, its
    ``evidence``); None for a search."""


def evidence(result: AutoconfigResult) -> str:
    """What the answer rests on, in one sentence: whose readings, how many a configuration, what was
    separated, what was measured too little or not at all (issue 34: every sentence matches its evidence)."""
    a = result.answer
    if a.chosen_key is None:
        return "No configuration gave a reading: every trial failed."
    n = {s.key: s.n for s in a.standings}
    source = {"race": f"{a.rounds} race round{'s' * (a.rounds != 1)}"}.get(
        a.source, f"the {a.source.replace('+', ' and the ')} readings (no race round fitted)"
    )
    parts = [
        f"It rests on {source}: {n.get(a.chosen_key, 0)} reading{'s' * (n.get(a.chosen_key, 0) != 1)} of the "
        f"chosen configuration, {n.get(a.baseline_key, 0)} of the baseline, compared by the change rule "
        + (
            "paired by round."
            if a.design == "paired"
            else "paired by round where the rounds allowed it, unpaired elsewhere."
            if a.design == "mixed"
            else f"unpaired ({a.design_note})."
            if a.design_note
            else "unpaired."
        )
    ]
    gone = [e for e in a.left_race if e.reason == Reason.SEPARATED]
    parts.append(
        f"{len(gone)} configuration{'s were' if len(gone) != 1 else ' was'} below the leader in the race by the rule."
        if gone
        else "Nothing was below the leader in the race by the rule."
    )
    if a.not_measured_enough:
        parts.append(
            f"Not measured enough to tell from the best ({too_few_readings_text()}): "
            + ", ".join(f"{k} ({n.get(k, 0)})" for k in a.not_measured_enough)
            + "."
        )
    said = [f"{c} {REASON_WORDS[r]}" for r, c in Counter(e.reason for e in result.eliminations).items()]
    if said:
        parts.append("Of the others: " + "; ".join(said) + ".")
    return " ".join(parts)


def in_units(
    objective: Objective, median: float | None, low: float | None, high: float | None
) -> tuple[float | None, float | None, float | None]:
    """Scores back in the objective's units: env steps/s as they are; time to target as seconds
    (1/score, the interval's ends swapped; None where the score is 0: beyond the trial cap)."""
    if objective == "throughput":
        return median, low, high
    inv = lambda s: None if s is None or s <= 0 else 1.0 / s  # noqa: E731
    return inv(median), inv(high), inv(low)


def _standing(result: AutoconfigResult, s: Standing) -> dict:
    c = result.candidates.get(s.key)
    median, low, high = in_units(result.objective, s.median, s.ci_low, s.ci_high)
    row = {
        "key": s.key,
        "axes": dict(c.axes) if c else {},
        "cpus": s.cpus,
        "gpus": s.gpus,
        "median": median,
        "ci_low": low,
        "ci_high": high,
        "n": s.n,
        "censored": s.censored,
        "failed": s.failed,
    }
    steps = next((asdict(t) for t in result.answer.steps if t.key == s.key), None)
    if steps is not None:
        del steps["key"]
    row["steps_to_target"] = steps
    return row


def autoconfig_json(result: AutoconfigResult) -> dict:
    """The content of ``autoconfig.json`` (fields: docs/AUTOCONFIG.md)."""
    a = result.answer
    by_key = {s.key: _standing(result, s) for s in a.standings}

    def rows(eliminations) -> list[dict]:  # the search's log and the race's leavers alike, in the unit
        out = []
        for e in eliminations:
            row = asdict(e)
            row["median"], row["ci_low"], row["ci_high"] = in_units(result.objective, e.median, e.ci_low, e.ci_high)
            out.append(row)
        return out

    return {
        "schema_version": SCHEMA_VERSION,
        "objective": result.objective,
        "unit": "env_steps_per_s" if result.objective == "throughput" else "time_to_target_s",
        "best": by_key.get(a.chosen_key) if a.chosen_key else None,
        "fastest_key": a.fastest_key,
        "baseline": by_key.get(a.baseline_key),
        "speedup": {"ratio": a.speedup, "ci_low": a.speedup_ci_low, "ci_high": a.speedup_ci_high},
        "indistinguishable": [by_key[k] for k in a.indistinguishable],
        "standings": list(by_key.values()),
        "trials_run": result.trials_run,
        "probe_trials": result.probe_trials,
        "wall_s": result.wall_s,
        "budget_s": result.budget_s,
        "tolerance_pct": 100 * a.threshold,
        "race_rounds": a.rounds,
        "race_partial_rounds": a.partial_rounds,
        "race_stop_reason": a.stop_reason,
        "race_left": rows(a.left_race),
        "search_stop_reason": result.search_stop_reason,
        "eliminations": rows(result.eliminations),
        "predicted_vs_measured": [asdict(r) for r in result.predicted_vs_measured],
        "steps_to_target": [asdict(c) for c in a.steps_comparisons],
        "answer_source": a.source,
        "design": a.design,
        "design_note": a.design_note,
        "not_measured_enough": [by_key[k] for k in a.not_measured_enough if k in by_key],
        "evidence": evidence(result),
        "trial": result.trial,
        "cold_start_s": result.cold_start_s,
        "plan": None if result.plan is None else asdict(result.plan),
        "mode": "search",
        **(dict(result.walk) if result.walk is not None else {}),  # a walk's path and stop reason, and its evidence
    }


def best_yaml(spec_data: Mapping[str, Any], chosen: Candidate, baseline: Candidate, repeats: int = BEST_REPEATS) -> str:
    """``best.yaml``: the spec (less its grid and autoconfig section) re-measuring the chosen
    configuration against the baseline.

    A sweep's grid is a cartesian product, so the grid crosses the axes where the two differ, each
    with [baseline value, chosen value]: both configurations are in it (with one differing axis,
    they are all of it), and the corners show which knob brought the speed-up.
    """
    data = {k: v for k, v in spec_data.items() if k not in ("grid", "autoconfig", "repeats", "seed")}
    name = str(spec_data.get("name", "autoconfig"))[:90]
    data["name"] = f"{name}_best"
    mine, base = dict(chosen.axes), dict(baseline.axes)
    grid = {}
    for axis in list(base) + [a for a in mine if a not in base]:
        if axis in mine and axis in base and mine[axis] != base[axis]:
            grid[axis] = [base[axis], mine[axis]]
        elif axis in mine or axis in base:
            grid[axis] = [mine.get(axis, base.get(axis))]
    data.update(grid=grid, repeats=repeats, seed=0)
    return yaml.safe_dump(json.loads(json.dumps(data, default=str)), sort_keys=False)


def write_outputs(
    out_dir: Path, result: AutoconfigResult, *, snippet: ConfigSnippet | None, spec_data: Mapping[str, Any]
) -> dict[str, Path]:
    """Write autoconfig.json, the snippet and best.yaml into ``out_dir`` (only autoconfig.json when nothing was
    chosen); returns name -> path.

    Args:
        snippet: the chosen configuration as its framework's code (the adapter's ``config_snippet``), or None
            when the framework has none.
        spec_data: the spec mapping as loaded (for best.yaml).
    """
    out_dir = Path(out_dir)
    a = result.answer
    paths = {AUTOCONFIG_JSON: out_dir / AUTOCONFIG_JSON}
    write_atomic(
        paths[AUTOCONFIG_JSON], (json.dumps(autoconfig_json(result), indent=2, allow_nan=False) + "\n").encode()
    )
    if a.chosen_key is None:  # nothing gave a reading: the evidence only
        return paths
    if snippet is not None:
        if not SNIPPET_NAME.fullmatch(snippet.file_name) or snippet.file_name in (AUTOCONFIG_JSON, BEST_YAML):
            raise ValueError(f"an adapter's snippet file name must be a plain name of its own: {snippet.file_name!r}")
        paths[snippet.file_name] = out_dir / snippet.file_name
        write_atomic(paths[snippet.file_name], snippet.text.encode())
    paths[BEST_YAML] = out_dir / BEST_YAML
    write_atomic(
        paths[BEST_YAML],
        best_yaml(spec_data, result.candidates[a.chosen_key], result.candidates[a.baseline_key]).encode(),
    )
    return paths
