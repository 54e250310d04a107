"""How the walk plans one step (issue 57), the mixin :class:`~.session.WalkSession` plans with: the knob
that just paid, its next value the same way; else the point's verdicts in order, the first with a value that fits (a
trade of two knobs where the knob alone has none), each verdict passed said with why; else the stop. A plan is made
once and kept in the session's ``decided["walk"]`` for a resume.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from typing import TYPE_CHECKING, Any

from rlbench.analysis.knobs import facts
from rlbench.autoconfig.model import Candidate
from rlbench.autoconfig.walk.steps import (
    STOP_WORDS,
    PointAdvice,
    at_ceiling,
    next_value,
    read_options,
    read_point,
    step_values,
    trade_pairs,
)

if TYPE_CHECKING:
    from rlbench.autoconfig.ask_tell import Stage
    from rlbench.autoconfig.section import AutoconfigSection
    from rlbench.autoconfig.walk.path import PointRead


def _value(v: float | None) -> Any:
    """A value as the spec writes it: a whole number as an int."""
    return int(v) if isinstance(v, float) and v.is_integer() else v


#: What a step whose race showed no gain is passed with.
_NO_GAIN = "its race showed no evidence of a gain"


def _option_id(rec: Mapping[str, Any]) -> str:
    """A verdict followed at a point, named to pass it once: its knob and label (a continuation and a trade apart)."""
    a = rec["advice"]
    return f"{rec.get('kind', 'verdict')}:{a.get('knob')}:{a.get('label')}"


def _grid_next(grid_axes, axis: str, value: float, up: bool) -> float | None:
    """A grid walk's next value of an axis past ``value`` the same way (None: the grid ends there)."""
    values = next((vals for name, vals in grid_axes.values() if name == axis), ())
    ahead = [float(v) for v in values if (float(v) > value if up else float(v) < value)]
    return (min(ahead) if up else max(ahead)) if ahead else None


@dataclass
class _Here:
    """What the walk knows of the point it stands at: whether its verdict was read into ``points_read``, the verdicts
    passed there (id, stop reason, words), and the knob that paid on the way there (axis, knob, value, upwards)."""

    follow: tuple[str, str, float, bool] | None = None
    """The knob that paid on the way here: (axis, knob, its value here, whether it went up)."""
    read: bool = False
    """Whether the point's verdict was put in ``points_read``."""
    tried_follow: bool = False
    passed: list[tuple[str, str, str]] = field(default_factory=list)
    lost: set[str] = field(default_factory=set)
    """Points raced from here that showed no gain: not raced again from here."""


class StepPlanner:
    """The walk's step planning, over the session's points, stages, budget and costs."""

    # the session's, which the planner reads (:class:`~.session.WalkSession` mixes it in)
    section: AutoconfigSection
    budget_s: float
    reserve_s: float
    cold_estimate_s: float
    grid_axes: Mapping[str, tuple[str, tuple[Any, ...]]] | None
    stages: list[Stage]
    points: dict[str, Candidate]
    points_read: list[PointRead]
    _costs: Callable[[Sequence[str]], tuple[dict[str, float], dict[str, float]]]

    def _plan_step(self, runner, number: int, current: str, here: _Here) -> dict[str, Any]:
        """Decide what step ``number`` races, or why the walk stops (made once: kept for a resume): the knob that
        just paid, its next value; else the point's verdicts in order, the first with a value that fits (a trade
        where the knob alone has none), those passed said with why."""
        row = runner.row(current)
        options = read_options(row)
        first = read_point(row)
        rec: dict[str, Any] = {"from": current, "advice": asdict(first), "stop": None, "detail": "", "tried": []}
        rec.update(entrants=[], skipped=[], axis=first.knob, budget_s=0.0, value_of={}, kind="verdict", passed=[])
        rec.update(partner=None, partner_of={})
        if first.stop == "no_reading" or (number == 1 and not self.stages[0].scores(current)):
            return {**rec, "stop": "no_reading", "detail": first.text}
        if here.follow is not None and not here.tried_follow:
            here.tried_follow = True
            planned = self._plan_follow(runner, rec, current, first, row, here)
            if planned is not None:
                return planned
        passed = list(here.passed)
        done = {p[0] for p in passed}
        for option in options:
            oid = _option_id({"advice": asdict(option), "kind": "verdict", "partner": None})
            if oid in done:
                continue
            label = option.label or option.knob or "verdict"
            if option.stop == "cores_limit":
                passed.append((oid, "cores_limit", option.text))  # the verdict's own sentence: why the cores
                continue
            if at_ceiling(option):
                passed.append((oid, "ceiling", f"{label}: {STOP_WORDS['ceiling']}"))
                continue
            if option.knob is None:
                continue
            fresh = dict(rec, advice=asdict(option), tried=[], skipped=[], value_of={}, partner_of={})
            planned = self._plan_option(runner, fresh, current, option, row, passed, here.lost)
            if planned is not None:
                return planned
        rec["passed"] = [p[2] for p in passed]
        passed = [p for p in passed if not p[0].startswith("continue:")]  # a push that stopped paying is no verdict
        if not passed:
            return {**rec, "stop": first.stop or "no_knob", "detail": first.text}
        reasons = [p[1] for p in passed]  # the machine's limits first: what a user cannot change by a knob
        reason = next((r for r in ("cores_limit", "ceiling") if r in reasons), reasons[0])
        detail = "; ".join(p[2] for p in passed)
        if reason == "ceiling" and len(passed) == 1 and first.ceiling_frac is not None:
            detail = f"{first.ceiling_frac:.0%} of its ceiling"
        return {**rec, "stop": reason, "detail": detail}

    def _plan_follow(self, runner, rec, current, first: PointAdvice, row, here: _Here) -> dict[str, Any] | None:
        """The knob that paid at the step before, its next value the same way (None: none fits, or it was left)."""
        assert here.follow is not None
        axis, knob, value, up = here.follow
        nxt = (
            next_value(knob, value, up, row) if self.grid_axes is None else _grid_next(self.grid_axes, axis, value, up)
        )
        if nxt is None:
            return None
        text = f"{knob} paid at the step before: its next value, {_value(nxt)}, raced before a new verdict is read"
        advice = replace(first, knob=knob, current=value, values=(value, nxt), label="continued", text=text, stop=None)
        rec = dict(
            rec, advice=asdict(advice), axis=axis, kind="continue", tried=[], skipped=[], value_of={}, partner_of={}
        )
        return self._plan_race(runner, rec, current, [({axis: _value(nxt)}, _value(nxt), None)], [], here.lost)

    def _plan_option(self, runner, rec, current, option: PointAdvice, row, passed, lost) -> dict[str, Any] | None:
        """One verdict's step: its values that fit (a grid walk: the grid's), else a trade; None when it has
        neither (passed, with why)."""
        label = option.label or str(option.knob)
        oid = _option_id({"advice": rec["advice"], "kind": "verdict", "partner": None})
        axis, grid = str(option.knob), None
        if self.grid_axes is not None:
            if option.knob not in self.grid_axes:
                passed.append((oid, "off_grid", f"{label}: {STOP_WORDS['off_grid']}"))
                return None
            axis, grid = self.grid_axes[str(option.knob)]
        if option.stop is None or grid is not None:
            moves = [({axis: _value(v)}, _value(v), None) for v in step_values(option, grid)]
            planned = self._plan_race(runner, dict(rec, axis=axis), current, moves, passed, lost)
            if planned is not None:
                return planned
        partner = facts(option.knob).trade
        here = self.points[current]
        if partner is not None and option.current is not None and self.grid_axes is None:
            mine = float(getattr(here, partner, 0) or 0)
            moves = [
                ({axis: _value(k), partner: _value(p)}, _value(k), _value(p))
                for k, p in trade_pairs(str(option.knob), option.current, mine)
            ]
            rec = dict(rec, axis=axis, kind="trade", partner=partner)
            planned = self._plan_race(runner, rec, current, moves, passed, lost)
            if planned is not None:
                return planned
        why = "no value fits" if option.stop == "no_fit" else "every value that fits was raced or left"
        passed.append(
            (oid, "no_fit", f"{label}: {why}" + (f" ({'; '.join(rec['skipped'])})" if rec["skipped"] else ""))
        )
        return None

    def _plan_race(self, runner, rec, current, moves, passed, lost: set[str]) -> dict[str, Any] | None:
        """The step racing ``moves`` (axes to set, the knob's value, the partner's) that fit, were not left and were
        not ``lost`` from here already, within the budget; None when none is left to race."""
        here = self.points[current]
        left = {p.key for p in self.points_read if p.key != current}
        cands: list[Candidate] = []
        for change, value, partner_value in moves:
            axes = {**dict(here.axes), **change}
            said = ", ".join(f"{k}={v}" for k, v in change.items())
            rec["tried"].append(axes)
            got = runner.point(axes)
            if isinstance(got, str):
                rec["skipped"].append(f"{said}: {got}")
            elif got.key in left:  # it lost to the chain that led here with evidence: racing it again buys nothing
                rec["skipped"].append(f"{said}: the walk's own earlier point, left for a gain")
            elif got.key in lost:
                rec["skipped"].append(f"{said}: raced from this point already, without a gain")
            elif got.key != current and got.key not in {c.key for c in cands}:
                self.points[got.key] = got
                cands.append(got)
                rec["value_of"][got.key] = value
                rec["partner_of"][got.key] = partner_value
        if not cands:
            return None
        rec["passed"] = [p[2] for p in passed]
        budget_left = max(0.0, self.budget_s - self.reserve_s - runner.elapsed_s())
        training, _ = self._costs([current, *(c.key for c in cands)])
        cost = {k: t + self.cold_estimate_s for k, t in training.items()}
        n = len(cands)
        while n and self.section.min_rounds * (cost[current] + sum(cost[c.key] for c in cands[:n])) > budget_left:
            n -= 1
        if n == 0:
            need = self.section.min_rounds * (cost[current] + cost[cands[0].key])
            return {**rec, "stop": "budget", "detail": f"{budget_left:.0f} s left; a step needs about {need:.0f} s"}
        return {**rec, "entrants": [c.key for c in cands[:n]], "budget_s": budget_left}
