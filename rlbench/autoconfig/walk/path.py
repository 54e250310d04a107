"""The walk's record: one :class:`PathStep` a step, with its cause, the points it stood at (:class:`PointRead`), and
the terminal's line for a step as it ends (:func:`step_line`). Written into ``autoconfig.json`` (``path``,
``walk_points``) and drawn by the report's "The path" (``rlbench.report.path_section``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from rlbench.analysis.findings import CONFIDENCE


@dataclass(frozen=True, kw_only=True)
class PathStep:
    """One step of the walk, with its cause (``autoconfig.json``'s ``path``); built by keyword, one field a fact."""

    step: int
    """1 for the first move tried."""
    knob: str
    """The spec key the verdict named."""
    axis: str
    """The spec key the walk set (the knob, or the grid's axis of it)."""
    from_key: str
    """The point the step started from."""
    to_key: str
    """Where it stands after the step (the same when it stayed)."""
    from_value: Any
    """The knob's value at the start of the step."""
    to_value: Any
    """Its value after."""
    values: tuple[Any, ...]
    """The values raced beside the current one."""
    verdict_label: str
    """The verdict's short label."""
    verdict: str
    """The verdict's sentence, with its numbers."""
    outcome: str
    """``gain`` (moved: the one rule shows it), ``cheaper`` (moved: no gain, as good within the tolerance, fewer
    resources), ``stay``."""
    speedup: float | None
    """The new point over the old one in the step's race (throughput ratio; time to target: the old one's time over
    the new one's); for ``stay``, the best value over the current one. None: a side has no reading."""
    ci_low: float | None
    """Lower end of its bootstrap interval (None with fewer than 2 readings a side)."""
    ci_high: float | None
    """Upper end."""
    design: str
    """How the race's readings were compared: ``paired`` by round, or ``unpaired``."""
    readings_from: int
    """The old point's race readings."""
    readings_to: int
    """The new (or best) point's race readings."""
    rounds: int
    """The step's race rounds."""
    wall_s: float
    """Seconds the step's trials cost (cold starts included)."""
    changes_learning: str | None
    """What the knob changes in learning (:data:`~rlbench.analysis.knobs.KNOBS`), or None (speed
    only)."""
    learning: str | None
    """A move of such a knob under the throughput objective: the two points' returns at equal env steps, with the
    evidence (:func:`~rlbench.autoconfig.walk.steps.learning_check`); else None."""
    learning_cost: bool
    """Whether that comparison shows the move cost learning (the rule's evidence, not a gap alone)."""
    race_stop_reason: str | None
    """Why the step's race stopped."""
    skipped: tuple[str, ...] = ()
    """Values of the knob the machine cannot run, with why."""
    kind: str = "verdict"
    """Why this step was raced (issue 57): ``verdict``, the point's first verdict it could follow; ``continue``, the
    knob that paid at the step before, its next value the same way, before a new verdict is read; ``trade``, the
    verdict's knob up and its partner (:data:`~rlbench.analysis.knobs.KNOBS`) down, one move of two knobs,
    where the knob alone has no value that fits."""
    passed: tuple[str, ...] = ()
    """The point's verdicts passed before this one, each with why (no value fits, its race showed no gain, the cores'
    limit)."""
    partner_axis: str | None = None
    """A trade's second knob (None: one knob moved)."""
    partner_from: Any = None
    """Its value at the start of the step."""
    partner_to: Any = None
    """Its value after (the same when it stayed)."""
    extra_rounds: int = 0
    """Rounds its race ran past its cap (6) while the one rule could not say and its best value led the current by
    more than the tolerance (issue 57; ``race_stop_reason`` says why and how it ended); 0: none."""


@dataclass(frozen=True)
class PointRead:
    """A point the walk stood at, as its readings read (``autoconfig.json``'s ``walk_points``)."""

    step: int
    """0: the start; k: where step k left the walk."""
    key: str
    """The configuration."""
    median: float | None
    """Median score of the readings that put the walk there (the start's own; step k's race)."""
    ci_low: float | None
    """Lower end of its bootstrap interval."""
    ci_high: float | None
    """Upper end."""
    n: int
    """Those readings."""
    ceiling_env_steps_per_s: float | None
    """What its env and learner allow here; None: not measured (or not read: the walk stopped first)."""
    ceiling_frac: float | None
    """Its throughput over that ceiling (over every reading of it); None: not measured."""
    verdict: str
    """What its verdicts said (the sentence that named the next knob, or why none did)."""


def move_text(p: PathStep) -> str:
    """``num_envs_per_env_runner 1 -> 4`` (a trade: ``... and num_env_runners 2 -> 1``)."""
    text = f"{p.axis} {p.from_value} -> {p.to_value}"
    return text + (f" and {p.partner_axis} {p.partner_from} -> {p.partner_to}" if p.partner_axis else "")


def step_line(p: PathStep) -> str:
    """The terminal's line for a step as it ends."""
    ratio = (
        "no reading a side"
        if p.speedup is None
        else f"{p.speedup:.2f}x"
        + (f" ({CONFIDENCE:.0%} CI {p.ci_low:.2f}-{p.ci_high:.2f})" if p.ci_low is not None else " (no interval)")
    )
    here = f"{p.axis}={p.from_value}" + (f", {p.partner_axis}={p.partner_from}" if p.partner_axis else "")
    move = {
        "gain": f"moved {move_text(p)}: {ratio}",
        "cheaper": f"moved {move_text(p)} (no gain, but as good within the tolerance and cheaper): {ratio}",
        "stay": f"stayed at {here} (the best value raced: {ratio}, no evidence of a gain)",
    }[p.outcome]
    learns = f"; changes learning ({p.changes_learning})" if p.changes_learning else ""
    learned = f"; {p.learning}" if p.learning else ""
    why = " (a trade of two knobs)" if p.kind == "trade" else ""
    past = f" ({p.race_stop_reason})" if p.extra_rounds else ""
    return (
        f"step {p.step}: {p.verdict_label or 'verdict'}{why}: {move}; {p.readings_from}+{p.readings_to} readings, "
        f"{p.rounds} rounds{past}, {p.wall_s:.0f} s{learns}{learned}"
    )
