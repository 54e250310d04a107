"""What the budget buys: how long a trial is, what one costs here, and the plan sized from it.

Why (issue 34): with a fixed 30 s trial and the search's fixed share, a space nobody had tuned for ran
two probes, found that not one rung or race round fitted, and answered nothing with 190 s of a 240 s
budget unused. A trial is now as long as the spec's ``stop:`` says (``autoconfig.trial_s`` only caps
it), the probes measure what one costs on this machine (cold start, the spec's iterations, shutdown),
and the plan is sized from that: the search and the race together, in steps that are stated.

The steps, tried in order (:func:`size_plan`), each keeping room for the race's minimum (``min_rounds``
rounds of ``finalists`` + the baseline, at the model's top configurations' costs):

1. ``full``: ``first_rung_readings`` readings of every configuration the model kept, then the race;
2. ``fewer_readings``: fewer readings each, down to one (nothing is dropped on fewer than the rank
   test's three unless the readings and the cost model agree beyond the model's measured error:
   :meth:`rlbench.autoconfig.search.SuccessiveHalving._close`);
3. ``model_top``: one reading each of the model's top configurations that fit (more than the
   finalists, so the search still chooses), the others "not measured: budget";
4. ``race_only``: no search; the model's top configurations race the baseline directly, as many as
   ``min_rounds`` rounds fit;
5. ``smallest``: not even that: one reading of the model's top configurations that fit, answered
   beside the probes' readings (pooled, not paired), and the words say what budget would buy a race.

Before any trial, :func:`minimum_budget_s` is what the smallest plan that can answer costs (the probes,
then ``min_rounds`` rounds of the baseline against one other): a budget below it is refused (exit 2)
with that figure, so a budget is never spent for nothing.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from rlbench.analysis.evidence import too_few_readings_text

#: The run may overshoot its budget by this fraction, no more (issue 26).
OVERSHOOT = 0.10
#: Seconds kept for the tables, the report and the outputs at the end: a share of the budget, at least what
#: they took after a 23-trial plain run on 2 cores (3.4 s, imports included), at most a minute.
RESERVE_SHARE, RESERVE_MIN_S, RESERVE_MAX_S = 0.05, 4.0, 60.0
#: A trial that runs the spec's iterations is cut at this many times its predicted training seconds, and
#: at least this many seconds after it: a configuration slower than predicted still ends with a reading.
CAP_FACTOR, CAP_MARGIN_S = 2.0, 10.0

STEPS = ("full", "fewer_readings", "model_top", "race_only", "smallest")


def reserve_s(budget_s: float) -> float:
    """Seconds of a budget kept for the tables, the report and the outputs."""
    return min(RESERVE_MAX_S, max(RESERVE_MIN_S, RESERVE_SHARE * budget_s))


def budget_for(need_s: float) -> float:
    """The smallest budget whose seconds less its reserve (:func:`reserve_s`) are ``need_s``."""
    return min(
        b
        for b in (need_s + RESERVE_MIN_S, need_s / (1.0 - RESERVE_SHARE), need_s + RESERVE_MAX_S)
        if b - reserve_s(b) >= need_s - 1e-9
    )


@dataclass(frozen=True)
class TrialShape:
    """How long each trial of the run trains: the spec's ``stop:``, capped by ``autoconfig.trial_s``."""

    stop_iterations: int | None
    """The spec's ``stop.iterations`` (None: a time limit only)."""
    stop_seconds: float | None
    """The spec's ``stop.seconds`` (None: the iterations only)."""
    cap_s: float | None = None
    """``autoconfig.trial_s``: a cap on every trial's training seconds (None: from the spec and the probes)."""
    warmup_iterations: int = 1
    """Iterations left out of a trial's reading (its steady window starts after them)."""

    @property
    def limit_s(self) -> float | None:
        """The training seconds no trial passes: the smaller of the spec's seconds and the cap (None: none)."""
        given = [s for s in (self.stop_seconds, self.cap_s) if s is not None]
        return min(given) if given else None

    def training_s(self, iteration_s: float | None) -> float | None:
        """Expected training seconds of a trial whose iterations take ``iteration_s`` (None: unknown yet)."""
        limit = self.limit_s
        if self.stop_iterations is None or iteration_s is None:
            return limit if self.stop_iterations is None else None
        run = self.stop_iterations * iteration_s
        return run if limit is None else min(run, limit)

    def cap_for(self, iteration_s: float | None) -> float | None:
        """The cap of a trial whose iterations take ``iteration_s``: the limit when there is one, else
        ``CAP_FACTOR`` times its predicted iterations (at least ``CAP_MARGIN_S`` more); None: unknown."""
        if self.limit_s is not None:
            return self.limit_s
        run = self.training_s(iteration_s)
        return None if run is None else max(CAP_FACTOR * run, run + CAP_MARGIN_S)

    def describe(self) -> str:
        """How long a trial is and why, for the terminal's first line."""
        parts = []
        if self.stop_iterations is not None:
            parts.append(f"{self.stop_iterations} iterations ({self.warmup_iterations} warm-up)")
        if self.stop_seconds is not None:
            parts.append(f"{self.stop_seconds:g} s")
        text = "each trial runs the spec's stop: " + " or ".join(parts)
        if self.cap_s is not None and (self.stop_seconds is None or self.cap_s < self.stop_seconds):
            text += f", capped at {self.cap_s:g} s (autoconfig.trial_s)"
        elif self.stop_seconds is None:
            text += f" (cut at {CAP_FACTOR:g}x the probes' prediction if slower)"
        return text


@dataclass(frozen=True)
class BudgetPlan:
    """The plan made after the probes: what the search measures and what the race is sized for."""

    step: str
    """Which of :data:`STEPS` the budget bought (``full`` first; each later one buys less evidence)."""
    readings: int
    """First-rung readings of each configuration the search measures (0: no search)."""
    measured: tuple[str, ...]
    """Configurations the search measures, the model's predicted best first."""
    not_measured: tuple[str, ...]
    """Configurations the model kept but the budget leaves unmeasured ("not measured: budget")."""
    race: tuple[str, ...]
    """``race_only`` and ``smallest``: the race's entrants, the baseline included; else () (the search's
    finalists, decided when it ends)."""
    search_budget_s: float
    """Seconds the search may charge (the race keeps at least its minimum)."""
    race_min_s: float
    """Seconds of the race's minimum: ``min_rounds`` rounds of its expected entrants."""
    left_s: float
    """Seconds the search and the race had together when the plan was made."""
    trial_cost_s: float
    """The median configuration's expected trial cost (cold start plus training), for the words."""
    words: str
    """The plan in one sentence, as the terminal, autoconfig.json and the report say it."""

    @property
    def trials(self) -> int:
        """Trials the left seconds buy at the median cost."""
        return int(self.left_s // self.trial_cost_s) if self.trial_cost_s > 0 else 0


def _sum(cost: Mapping[str, float], keys: Sequence[str]) -> float:
    return sum(cost[k] for k in keys)


def size_plan(
    ranked: Sequence[str],
    baseline_key: str,
    cost_s: Mapping[str, float],
    left_s: float,
    *,
    search_cap_s: float,
    first_rung_readings: int,
    finalists: int,
    min_rounds: int,
) -> BudgetPlan:
    """The most evidence ``left_s`` buys (the steps in the module docstring).

    Args:
        ranked: the configurations the cost model kept, its predicted best first (the baseline among them
            when it is a grid point).
        baseline_key: the configuration to beat (raced whatever the plan).
        cost_s: key -> expected budget seconds of one trial (cold start plus training), for every key of
            ``ranked`` and the baseline.
        left_s: seconds for the search and the race together.
        search_cap_s: the most the search may charge (``autoconfig.search_share_pct`` of the budget).
        first_rung_readings, finalists, min_rounds: the section's knobs.
    """
    others = [k for k in ranked if k != baseline_key]
    median_cost = (
        sorted(cost_s[k] for k in [*ranked, baseline_key])[len(ranked) // 2] if ranked else cost_s[baseline_key]
    )

    def race_cost(entrants: int) -> float:  # the model's top ``entrants - 1`` and the baseline, min_rounds rounds
        return min_rounds * _sum(cost_s, [*others[: max(0, entrants - 1)], baseline_key])

    def plan(step, readings, measured, race, search_s, race_min, words) -> BudgetPlan:
        rest = tuple(
            k for k in others + [baseline_key] * (baseline_key in ranked) if k not in measured and k not in race
        )
        return BudgetPlan(
            step=step,
            readings=readings,
            measured=tuple(measured),
            not_measured=rest,
            race=tuple(race),
            search_budget_s=max(0.0, search_s),
            race_min_s=race_min,
            left_s=left_s,
            trial_cost_s=median_cost,
            words=words,
        )

    race_min = race_cost(finalists + 1)
    room = min(search_cap_s, left_s - race_min)
    n = len(ranked)
    if n > finalists:
        whole = _sum(cost_s, ranked)
        for k in range(first_rung_readings, 0, -1):
            if k * whole <= room + 1e-9:
                if k == first_rung_readings:
                    return plan(
                        "full",
                        k,
                        ranked,
                        (),
                        room,
                        race_min,
                        f"{k} readings of each of the {n} configurations, then the race",
                    )
                return plan(
                    "fewer_readings",
                    k,
                    ranked,
                    (),
                    room,
                    race_min,
                    f"{first_rung_readings} readings of each of the {n} configurations need "
                    f"{first_rung_readings * whole:.0f} s, {max(0.0, room):.0f} s fit beside the race: "
                    f"{k} reading{'s' * (k > 1)} each (nothing dropped on {too_few_readings_text(a_side=False)} "
                    "unless the readings "
                    "and the model agree beyond the model's error), then the race",
                )
        m = 0
        while m < n and _sum(cost_s, ranked[: m + 1]) <= room + 1e-9:
            m += 1
        if m > finalists:
            return plan(
                "model_top",
                1,
                ranked[:m],
                (),
                room,
                race_min,
                f"one reading of each of the {n} configurations needs {whole:.0f} s, {max(0.0, room):.0f} s "
                f"fit beside the race: one reading of the model's top {m}, {n - m} not measured (budget), "
                "then the race",
            )
    entrants = 1 + len(others)
    while entrants > 2 and race_cost(entrants) > left_s + 1e-9:
        entrants -= 1
    race = [*others[: entrants - 1], baseline_key]
    if race_cost(entrants) <= left_s + 1e-9:
        why = "no search fits beside the race" if n > finalists else f"{n} configurations, no more than the finalists"
        return plan(
            "race_only",
            0,
            (),
            race,
            0.0,
            race_cost(entrants),
            f"{why}: {'the model' if others else 'the grid'}'s top {entrants - 1} race the baseline directly "
            f"for at least {min_rounds} rounds"
            + (f", {len(others) - (entrants - 1)} not measured (budget)" if len(others) > entrants - 1 else ""),
        )
    m = 0
    while m < len(others) and _sum(cost_s, others[: m + 1]) <= left_s + 1e-9:
        m += 1
    return plan(
        "smallest",
        1 if m else 0,
        others[:m],
        (),
        left_s,
        race_cost(2),
        f"not even {min_rounds} rounds of the baseline against the model's best fit ({race_cost(2):.0f} s, "
        f"{max(0.0, left_s):.0f} s left; about {budget_for(race_cost(2)):.0f} s would): one reading of "
        + (
            f"the model's top {m}, answered beside the probes' readings"
            if m
            else "nothing more fits, the probes' readings answer"
        ),
    )


def minimum_budget_s(probe_cost_s: Sequence[float], trial_cost_s: float, min_rounds: int) -> float:
    """The smallest budget that can answer: the probes, then ``min_rounds`` rounds of the baseline against
    one other configuration (each trial at ``trial_cost_s``), plus the reserve for the report."""
    return budget_for(sum(probe_cost_s) + 2 * min_rounds * trial_cost_s)
