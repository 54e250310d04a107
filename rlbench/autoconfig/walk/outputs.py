"""What a walk writes: ``autoconfig.json``'s walk fields (``path``, ``stop_reason``, ``stop_text``, ``walk_points``,
``grid_walk``), its evidence in one sentence, and the result the outputs are written from (docs/AUTOCONFIG.md, "The
walk")."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, replace
from typing import Any

from rlbench.autoconfig.ask_tell import Objective, Standing
from rlbench.autoconfig.decide import Answer
from rlbench.autoconfig.model import Candidate
from rlbench.autoconfig.outputs import AutoconfigResult, in_units
from rlbench.autoconfig.plan import TrialShape
from rlbench.autoconfig.walk.session import WalkSession


def walk_result(
    session: WalkSession, answer: Answer, candidates: Mapping[str, Candidate], wall_s: float, shape: TrialShape
) -> AutoconfigResult:
    """What the outputs are written from, for a walk. The start's and the endpoint's axes name every knob the walk
    moved (the start's value of each from the first step that moved it): ``best.yaml`` then crosses both."""
    cands = dict(candidates)
    first: dict[str, Any] = {}
    for p in session.path:
        first.setdefault(p.axis, p.from_value)
        if p.partner_axis:  # a trade moved a second knob
            first.setdefault(p.partner_axis, p.partner_from)
    for key in {k for k in (answer.baseline_key, answer.chosen_key) if k is not None}:
        c = cands[key]
        cands[key] = replace(c, axes=tuple({**first, **dict(c.axes)}.items()))
    races, measured = session.trials_run()
    summary = {**walk_summary(session), "evidence": walk_evidence(session, answer.standings)}
    return AutoconfigResult(
        session.section.objective,
        answer,
        cands,
        (),
        races,
        wall_s,
        session.budget_s,
        trial=shape.describe(),
        cold_start_s=session.cold_estimate_s,
        probe_trials=measured,
        walk=summary,
    )


def walk_summary(session: WalkSession) -> dict[str, Any]:
    """What ``autoconfig.json`` adds for a walk: ``path``, ``stop_reason`` (and its words), ``walk_points``."""
    return {
        "mode": "walk",
        "path": [asdict(p) for p in session.path],
        "stop_reason": session.stop_reason,
        "stop_text": session.stop_text,
        "walk_points": [_in_units(session.section.objective, asdict(p)) for p in session.points_read],
        "grid_walk": session.grid_axes is not None,
        "warm_windows": session.section.warm_windows,
    }


def _in_units(objective: Objective, point: dict[str, Any]) -> dict[str, Any]:
    """A point's median and interval in the objective's units (time to target: seconds, not 1/seconds)."""
    point["median"], point["ci_low"], point["ci_high"] = in_units(
        objective, point["median"], point["ci_low"], point["ci_high"]
    )
    return point


def walk_evidence(session: WalkSession, readings: Sequence[Standing]) -> str:
    """What the walk's answer rests on, in one sentence."""
    moves = [p for p in session.path if p.outcome != "stay"]
    n = {s.key: s.n for s in readings}
    steps = len(session.path)
    said = (
        f"{steps} step{'s' * (steps != 1)} raced ({sum(p.rounds for p in session.path)} race rounds), "
        f"{len(moves)} move{'s' * (len(moves) != 1)}, each by the one change rule"
    )
    windows = session.section.warm_windows
    how = (
        f" Each reading was a window of a warm trial (built once, read in up to {windows} windows, paused while "
        "another point read; a new process after its last window): a process, not a window, is a repeat. Where a "
        "round had two or more new trials they were started together, none beside a measured window, so their "
        "start-up figures (ray_init_s, build_s) were taken beside each other's."
        if windows
        else ""
    )
    return (
        f"It rests on {said}; the start read {n.get(session.space.baseline_key, 0)} times, the endpoint "
        f"{n.get(session.end_key or session.space.baseline_key, 0)} times over the walk.{how} Stopped: "
        f"{session.stop_text}."
    )
