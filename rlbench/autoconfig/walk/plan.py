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


def _option_id(kind: str, advice: PointAdvice) -> str:
    """A verdict followed at a point, named to pass it once: its knob and label (a continuation and a trade apart)."""
    return f"{kind}:{advice.knob}:{advice.label}"


@dataclass(frozen=True, kw_only=True)
class StepPlan:
    """One step as planned (once: kept in the state for a resume, :meth:`to_json`): what it races, or why the walk
    stops there."""

    from_key: str
    """The point the step starts from (the state's ``from``)."""
    advice: PointAdvice
    """The verdict it follows (a continuation's and a trade's written as one): knob, values, sentence."""
    stop: str | None = None
    """Why the walk stops here (a :data:`~.steps.StopReason`); None: the step races."""
    detail: str = ""
    """The stop's numbers in words, said after its reason."""
    tried: tuple[Mapping[str, Any], ...] = ()
    """The axes asked of the runner, in order: a resume asks for the same points in the same order."""
    entrants: tuple[str, ...] = ()
    """The points raced against the current one: those the budget fits."""
    skipped: tuple[str, ...] = ()
    """Values tried that do not race, each with why: the step says them, and a passed verdict's words."""
    axis: str | None
    """The spec key the step sets (the knob, or the grid's axis of it)."""
    budget_s: float = 0.0
    """Seconds the walk had left when the step was planned: its race's budget, the same on a resume."""
    value_of: Mapping[str, Any] = field(default_factory=dict)
    """Point key -> the knob's value there, for each point raced: the step's ``to_value`` and ``values``."""
    kind: str = "verdict"
    """``verdict``, ``continue`` (the knob that just paid, its next value) or ``trade`` (a knob against its partner):
    a verdict whose race shows no gain is passed by it."""
    passed: tuple[str, ...] = ()
    """The verdicts passed at its point before this one, each with why: the path says them."""
    partner: str | None = None
    """A trade's partner knob (None: no trade): a step that pays by a trade is not pushed on."""
    partner_of: Mapping[str, Any] = field(default_factory=dict)
    """Point key -> the partner's value there (a trade's): the step's ``partner_to``."""

    def to_json(self) -> dict[str, Any]:
        """The plan as the state keeps it: JSON's types, the keys of the dict it was before (``from``)."""
        d: dict[str, Any] = {k: list(v) if isinstance(v, tuple) else v for k, v in asdict(self).items()}
        d["advice"]["values"] = list(self.advice.values)
        return {"from": d.pop("from_key"), **d}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> StepPlan:
        """A plan back from the state; a step kept before issue 57 (no kind, passed, partner) gets their defaults."""
        a = data["advice"]
        return cls(
            from_key=data["from"],
            advice=PointAdvice(**{**a, "values": tuple(a["values"])}),
            stop=data["stop"],
            detail=data["detail"],
            tried=tuple(data["tried"]),
            entrants=tuple(data["entrants"]),
            skipped=tuple(data["skipped"]),
            axis=data["axis"],
            budget_s=data["budget_s"],
            value_of=data["value_of"],
            kind=data.get("kind", "verdict"),
            passed=tuple(data.get("passed", ())),
            partner=data.get("partner"),
            partner_of=data.get("partner_of", {}),
        )


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

    def _plan_step(self, runner, number: int, current: str, here: _Here) -> StepPlan:
        """Decide what step ``number`` races, or why the walk stops (made once: kept for a resume): the knob that
        just paid, its next value; else the point's verdicts in order, the first with a value that fits (a trade
        where the knob alone has none), those passed said with why."""
        row = runner.row(current)
        options = read_options(row)
        first = read_point(row)
        plan = StepPlan(from_key=current, advice=first, axis=first.knob)
        if first.stop == "no_reading" or (number == 1 and not self.stages[0].scores(current)):
            return replace(plan, stop="no_reading", detail=first.text)
        if here.follow is not None and not here.tried_follow:
            here.tried_follow = True
            planned = self._plan_follow(runner, plan, current, first, row, here)
            if planned is not None:
                return planned
        passed = list(here.passed)
        done = {p[0] for p in passed}
        for option in options:
            oid = _option_id("verdict", option)
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
            planned = self._plan_option(runner, replace(plan, advice=option), current, option, row, passed, here.lost)
            if planned is not None:
                return planned
        plan = replace(plan, passed=tuple(p[2] for p in passed))
        passed = [p for p in passed if not p[0].startswith("continue:")]  # a push that stopped paying is no verdict
        if not passed:
            return replace(plan, stop=first.stop or "no_knob", detail=first.text)
        reasons = [p[1] for p in passed]  # the machine's limits first: what a user cannot change by a knob
        reason = next((r for r in ("cores_limit", "ceiling") if r in reasons), reasons[0])
        detail = "; ".join(p[2] for p in passed)
        if reason == "ceiling" and len(passed) == 1 and first.ceiling_frac is not None:
            detail = f"{first.ceiling_frac:.0%} of its ceiling"
        return replace(plan, stop=reason, detail=detail)

    def _plan_follow(self, runner, plan: StepPlan, current, first: PointAdvice, row, here: _Here) -> StepPlan | None:
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
        plan = replace(plan, advice=advice, axis=axis, kind="continue")
        plan, cands = self._gather(runner, plan, current, [({axis: _value(nxt)}, _value(nxt), None)], here.lost)
        return self._plan_race(runner, plan, current, cands, []) if cands else None

    def _plan_option(self, runner, plan: StepPlan, current, option: PointAdvice, row, passed, lost) -> StepPlan | None:
        """One verdict's step: its values that fit (a grid walk: the grid's), else a trade; None when it has
        neither (passed, with why)."""
        label = option.label or str(option.knob)
        oid = _option_id("verdict", option)
        axis, grid = str(option.knob), None
        if self.grid_axes is not None:
            if option.knob not in self.grid_axes:
                passed.append((oid, "off_grid", f"{label}: {STOP_WORDS['off_grid']}"))
                return None
            axis, grid = self.grid_axes[str(option.knob)]
        plan = replace(plan, axis=axis)
        if option.stop is None or grid is not None:
            moves = [({axis: _value(v)}, _value(v), None) for v in step_values(option, grid)]
            plan, cands = self._gather(runner, plan, current, moves, lost)
            if cands:
                return self._plan_race(runner, plan, current, cands, passed)
        partner = facts(option.knob).trade
        here = self.points[current]
        if partner is not None and option.current is not None and self.grid_axes is None:
            mine = float(getattr(here, partner, 0) or 0)
            moves = [
                ({axis: _value(k), partner: _value(p)}, _value(k), _value(p))
                for k, p in trade_pairs(str(option.knob), option.current, mine)
            ]
            plan, cands = self._gather(runner, replace(plan, kind="trade", partner=partner), current, moves, lost)
            if cands:
                return self._plan_race(runner, plan, current, cands, passed)
        why = "no value fits" if option.stop == "no_fit" else "every value that fits was raced or left"
        passed.append((oid, "no_fit", f"{label}: {why}" + (f" ({'; '.join(plan.skipped)})" if plan.skipped else "")))
        return None

    def _gather(self, runner, plan: StepPlan, current, moves, lost: set[str]) -> tuple[StepPlan, list[Candidate]]:
        """``moves`` (axes to set, the knob's value, the partner's) asked of the runner: the plan with what each gave
        (tried, skipped with why, values), and the points to race: those that fit, were not left and were not
        ``lost`` from here already."""
        here = self.points[current]
        left = {p.key for p in self.points_read if p.key != current}
        tried, skipped = list(plan.tried), list(plan.skipped)
        value_of, partner_of = dict(plan.value_of), dict(plan.partner_of)
        cands: list[Candidate] = []
        for change, value, partner_value in moves:
            axes = {**dict(here.axes), **change}
            said = ", ".join(f"{k}={v}" for k, v in change.items())
            tried.append(axes)
            got = runner.point(axes)
            if isinstance(got, str):
                skipped.append(f"{said}: {got}")
            elif got.key in left:  # it lost to the chain that led here with evidence: racing it again buys nothing
                skipped.append(f"{said}: the walk's own earlier point, left for a gain")
            elif got.key in lost:
                skipped.append(f"{said}: raced from this point already, without a gain")
            elif (beyond := self._past_lost(here, change, lost)) is not None:
                skipped.append(f"{said}: past {beyond}, which raced from this point without a gain")
            elif got.key != current and got.key not in {c.key for c in cands}:
                self.points[got.key] = got
                cands.append(got)
                value_of[got.key] = value
                partner_of[got.key] = partner_value
        plan = replace(plan, tried=tuple(tried), skipped=tuple(skipped), value_of=value_of, partner_of=partner_of)
        return plan, cands

    def _past_lost(self, here: Candidate, change: Mapping[str, Any], lost: set[str]) -> str | None:
        """``axis=value`` of a point lost from here (its race showed no gain) that differs from here in one axis, the
        one ``change`` moves, and lies between here and the change's value: a push that did not pay ends that way from
        here (issue 57's inference walk: 32 -> 64 envs a runner read 1.01x, then raced 128 and 256, 1.09x without
        evidence, and the budget ended it). None where no such point is."""
        if len(change) != 1:
            return None
        ((axis, value),) = change.items()
        mine = dict(here.axes)
        at = mine.get(axis, getattr(here, axis, None))
        if at is None:
            return None
        for key in lost:
            other = self.points.get(key)
            if other is None:
                continue
            theirs = dict(other.axes)
            if {k for k in {*theirs, *mine} if theirs.get(k) != mine.get(k)} != {axis}:
                continue
            start, stop, to = float(at), float(theirs[axis]), float(value)
            if (start < stop < to) or (to < stop < start):
                return f"{axis}={theirs[axis]}"
        return None

    def _plan_race(self, runner, plan: StepPlan, current, cands: list[Candidate], passed) -> StepPlan:
        """The step racing ``cands``, as many as the budget fits; the budget's stop when not one does."""
        plan = replace(plan, passed=tuple(p[2] for p in passed))
        budget_left = max(0.0, self.budget_s - self.reserve_s - runner.elapsed_s())
        training, _ = self._costs([current, *(c.key for c in cands)])
        cost = {k: t + self.cold_estimate_s for k, t in training.items()}
        n = len(cands)
        while n and self.section.min_rounds * (cost[current] + sum(cost[c.key] for c in cands[:n])) > budget_left:
            n -= 1
        if n == 0:
            need = self.section.min_rounds * (cost[current] + cost[cands[0].key])
            return replace(plan, stop="budget", detail=f"{budget_left:.0f} s left; a step needs about {need:.0f} s")
        return replace(plan, entrants=tuple(c.key for c in cands[:n]), budget_s=budget_left)
