"""autoconfig's walk: from one configuration to the fastest this machine runs, one verdict at a time (issue 50).

``rlbench autoconfig SPEC`` on a spec with no grid (or ``--walk`` on one with a grid) does not search a space the
user wrote: it measures the spec's configuration, reads its verdicts (:func:`rlbench.autoconfig.walk.steps.
read_point`: the first verdict that names a knob, and the values of that knob that fit), races those values against
the current point in interleaved rounds (the race of :mod:`rlbench.autoconfig.decide`), moves only when the one
change rule shows a gain (:func:`~rlbench.autoconfig.walk.steps.decide_step`), reads the new point's verdict from the
readings it already has, and repeats, until a stop reason (:data:`~rlbench.autoconfig.walk.steps.StopReason`). Every
step is kept with its cause: the knob, from and to, the verdict's sentence, the speed-up with its interval, the
readings and seconds it took, and whether the knob changes learning (:class:`PathStep`).

Resume: every decision that depends on the readings or the clock (each step's verdict, the points it tried, its
entrants and budget) is kept in the session's ``decided["walk"]``; a new session replays them, asking the runner for
the same points in the same order, and reads the finished trials back: a finished step is not rerun.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from rlbench.analysis.change import Change, unpaired
from rlbench.analysis.findings import ROUNDS_FOR_EVIDENCE
from rlbench.autoconfig.ask_tell import Stage, Standing, leader
from rlbench.autoconfig.decide import EXTENDED_ROUNDS, Answer, Pooled
from rlbench.autoconfig.model import Candidate
from rlbench.autoconfig.plan import minimum_budget_s
from rlbench.autoconfig.session import Session
from rlbench.autoconfig.walk.path import PathStep, PointRead, step_line
from rlbench.autoconfig.walk.plan import _NO_GAIN, StepPlan, StepPlanner, _Here, _option_id, _value
from rlbench.autoconfig.walk.race import (
    START_READINGS,
    MeasureStage,
    WalkRace,
    WalkRunner,
)
from rlbench.autoconfig.walk.steps import STOP_WORDS, changes_learning, decide_step, learning_check


@dataclass
class WalkSession(StepPlanner, Session[WalkRunner]):
    """One walk: call :meth:`run` with a :class:`WalkRunner`; ``grid_axes`` (a grid spec's ``--walk``): column ->
    (the grid's axis name, its values): the walk moves along those axes, over those values only."""

    grid_axes: Mapping[str, tuple[str, tuple[Any, ...]]] | None = None
    readings: int = START_READINGS
    path: list[PathStep] = field(default_factory=list)
    points_read: list[PointRead] = field(default_factory=list)
    stop_reason: str | None = None
    stop_text: str = ""
    stages: list[Stage] = field(default_factory=list)
    points: dict[str, Candidate] = field(default_factory=dict)
    end_key: str = ""

    def minimum_budget_s(self) -> float:
        """The start's readings, then ``min_rounds`` rounds of it against one value (the first round's start trial is
        its own reading, not run again), and the reserve."""
        trial = self.cold_start_s + (self.shape.limit_s or 0.0)
        return minimum_budget_s([trial] * (self.readings - 1), trial, self.section.min_rounds)

    def run(self, runner: WalkRunner) -> Answer:
        """Measure the start, then step until a stop reason; returns the answer (the endpoint against the start).

        At each point the walk follows its verdicts in order (issue 57): a verdict whose knob has no value that fits
        is traded against its partner, or passed; one whose race shows no gain is passed for the next; a knob that
        just paid is pushed its next value the same way before a new verdict is read."""
        w = self.decided.setdefault("walk", {"steps": []})
        start = self.space.candidates[self.space.baseline_key]
        self.points = {start.key: start}
        measure = MeasureStage(
            start,
            self.readings,
            objective=self.section.objective,
            budget_s=math.inf,
            trial_s=self._probe_cap_s(),
            cold_start_s=self.cold_start_s,
            seed=self.section.seed,
        )
        self._drive(measure, runner)
        self.stages = [measure]
        current, self.end_key = start.key, start.key
        s = measure.standing_of(start.key, start.cpus, start.gpus)
        number, here = 1, _Here()
        while self.stop_reason is None:
            if len(w["steps"]) < number:
                plan = self._plan_step(runner, number, current, here)
                w["steps"].append(plan.to_json())
                runner.save(self.decided)
            else:  # planned before a resume: read back, not planned again
                plan = StepPlan.from_json(w["steps"][number - 1])
            advice = plan.advice
            here.tried_follow = here.tried_follow or plan.kind == "continue"
            if not here.read:
                here.read = True
                self.points_read.append(
                    PointRead(
                        step=number - 1,
                        key=current,
                        median=s.median,
                        ci_low=s.ci_low,
                        ci_high=s.ci_high,
                        n=s.n,
                        ceiling_env_steps_per_s=advice.ceiling_env_steps_per_s,
                        ceiling_frac=advice.ceiling_frac,
                        verdict=advice.text,
                    )
                )
            if plan.stop is not None:
                self._stop(runner, plan.stop, plan.detail)
                break
            entrants = [self._replay_point(runner, axes) for axes in plan.tried]
            race = self._race(
                runner, number, current, [c for c in entrants if c is not None and c.key in plan.entrants], plan
            )
            self.stages.append(race)
            left = frozenset(p.key for p in self.points_read if p.key != current)
            to, outcome = decide_step(
                current, race.standings(), race.versus, self.section.tolerance_pct / 100.0, left, race.level
            )
            step = self._path_step(number, current, to, outcome, plan, race)
            self.path.append(step)
            runner.say(step_line(step), "green" if outcome == "gain" else "")
            number += 1
            if outcome == "stay":
                cut = (race.stop_reason or "").startswith("budget")
                ahead = step.speedup is not None and step.speedup > 1.0 + self.section.tolerance_pct / 100.0
                if cut and (race.rounds_done < self.section.min_rounds or ahead):  # not shown none: cut short
                    read = (
                        f"; its best value read {step.speedup:.2f}x the current from {step.readings_to} and "
                        f"{step.readings_from} readings, not yet evidence of a gain"
                        if ahead
                        else ""
                    )
                    self._stop(
                        runner,
                        "budget",
                        "its race was cut, " + (race.stop_reason or "").removeprefix("budget: ") + read,
                    )
                    break
                here.lost |= set(plan.entrants)
                oid = _option_id("verdict" if plan.kind == "trade" else plan.kind, advice)
                here.passed.append((oid, "no_gain", f"{step.verdict_label or step.knob}: {_NO_GAIN}"))
                continue
            current = self.end_key = to
            s = race.standing_of(to, self.points[to].cpus, self.points[to].gpus)
            up = float(step.to_value) > float(step.from_value)
            follow = (
                (step.axis, step.knob, float(step.to_value), up) if outcome == "gain" and not plan.partner else None
            )
            here = _Here(follow=follow)
        return self.answer()

    # -- one step

    def _replay_point(self, runner: WalkRunner, axes: Mapping[str, Any]) -> Candidate | None:
        got = self.points.get(next((k for k, c in self.points.items() if dict(c.axes) == dict(axes)), ""))
        if got is None:
            point = runner.point(axes)
            if isinstance(point, str):
                return None
            self.points[point.key] = got = point
        return got

    def _race(self, runner: WalkRunner, number: int, current: str, values: list[Candidate], plan: StepPlan) -> WalkRace:
        keys = [current, *(c.key for c in values)]
        training, cap = self._costs(keys)
        k = self.section
        measure = self.stages[0]
        first = next((r for r in measure.requests() if r.rung == 0 and r.candidate_key == current), None)
        reuse = first if number == 1 and first is not None and measure.scores(current) else None
        race = WalkRace(
            number,
            values,
            self.points[current],
            objective=k.objective,
            budget_s=plan.budget_s,
            trial_s=max(cap.values()),
            cold_start_s=self.cold_estimate_s,
            seed=k.seed,
            min_rounds=k.min_rounds,
            max_rounds=max(k.min_rounds, min(k.max_rounds, ROUNDS_FOR_EVIDENCE)),
            threshold=k.tolerance_pct / 100.0,
            training_s=training,
            cap_s=cap,
            reuse=reuse,
            extend_to=EXTENDED_ROUNDS,
        )
        self._drive(race, runner)
        return race

    def _path_step(self, number, current, to, outcome, plan: StepPlan, race: WalkRace) -> PathStep:
        advice, other = plan.advice, to
        if outcome == "stay":  # the best value raced, for the words: what it would have bought
            best = leader([s for s in race.standings() if s.key != current])
            other = best.key if best is not None else current
        change: Change = race.versus(current, other)
        learns = changes_learning(advice.knob)
        check = None
        if learns and outcome != "stay" and self.section.objective == "throughput":
            check = learning_check(race.curves(current), race.curves(to))
        partner = plan.partner
        here = self.points[current]
        partner_from = _value(float(getattr(here, partner, 0) or 0)) if partner else None
        return PathStep(
            step=number,
            knob=str(advice.knob),
            axis=str(plan.axis),
            from_key=current,
            to_key=to,
            from_value=_value(advice.current),
            to_value=plan.value_of.get(to, _value(advice.current)),
            values=tuple(plan.value_of[k] for k in plan.entrants),
            verdict_label=advice.label,
            verdict=advice.text,
            outcome=outcome,
            speedup=change.ratio,
            ci_low=change.ci_low,
            ci_high=change.ci_high,
            design=change.design,
            readings_from=len(race.scores(current)),
            readings_to=len(race.scores(other)),
            rounds=race.rounds_done,
            extra_rounds=race.extra_rounds,
            wall_s=race.spent_s,
            changes_learning=learns,
            learning=None if check is None else check.text,
            learning_cost=bool(check is not None and check.cost),
            race_stop_reason=race.stop_reason,
            skipped=plan.skipped,
            kind=plan.kind,
            passed=plan.passed,
            partner_axis=partner,
            partner_from=partner_from,
            partner_to=plan.partner_of.get(to, partner_from) if partner else None,
        )

    def _stop(self, runner: WalkRunner, reason: str, detail: str) -> None:
        self.stop_reason = reason
        words = STOP_WORDS[reason]
        self.stop_text = words + (f": {detail}" if detail and detail != words else "")
        runner.say(f"walk stopped: {self.stop_text}")

    # -- the answer

    def answer(self) -> Answer:
        """The endpoint against the start: one move, the step's race readings (as the race compares them); more
        moves, every reading of each pooled over the walk's stages, unpaired (they were not raced side by side)."""
        start, end = self.space.baseline_key, self.end_key or self.space.baseline_key
        reused = len(self.stages) > 1 and getattr(self.stages[1], "reuse", None) is not None
        pooled = Pooled(self.stages[1:] if reused else self.stages)  # the start's reading once
        standings = [pooled.standing_of(k, c.cpus, c.gpus) for k, c in self.points.items() if pooled.scores(k)]
        standings += [
            Standing(k, c.cpus, c.gpus, None, None, None, 0)
            for k, c in self.points.items()
            if not pooled.scores(k) and k in (start, end)
        ]
        moves = [p for p in self.path if p.outcome != "stay"]
        note = None
        if not moves:
            change = None
        elif len(moves) == 1:
            race = next(st for st in self.stages if isinstance(st, WalkRace) and st.step == moves[0].step)
            change = race.versus(start, end)
        else:
            change = unpaired(pooled.scores(start), pooled.scores(end))
            note = (
                f"{len(moves)} moves: the start and the endpoint were not raced side by side, so their readings "
                "are pooled over the walk's steps and compared unpaired; each step's own speed-up is in the path"
            )
        fastest = leader(standings)
        rounds = sum(getattr(st, "rounds_done", 0) for st in self.stages[1:])
        return Answer(
            chosen_key=end,
            fastest_key=None if fastest is None else fastest.key,
            baseline_key=start,
            indistinguishable=(end,),
            standings=tuple(standings),
            speedup=1.0 if change is None and not moves else (None if change is None else change.ratio),
            speedup_ci_low=None if change is None else change.ci_low,
            speedup_ci_high=None if change is None else change.ci_high,
            rounds=rounds,
            stop_reason=self.stop_text,
            source="walk",
            design="unpaired" if change is None else change.design,
            design_note=note,
        )

    def trials_run(self) -> tuple[int, int]:
        """(the steps' race trials, the start's own readings)."""
        return sum(st.trials_run for st in self.stages[1:]), (self.stages[0].trials_run if self.stages else 0)
