"""Successive halving over configurations, promoting on confidence intervals, never on one reading.

Why this shape: successive halving (Li et al.; eta=3 as Hyperband and Optuna use) spends little on
configurations that are clearly worse, but its classic form crowns noise: it ranks on one reading.
Here every rung gives each surviving configuration ``first_rung_readings * eta**rung`` *fresh,
isolated* trials (rungs double as repeats: a configuration's readings accumulate across rungs), and
after a rung a configuration is dropped only when

* it is below the leader by the one rule of "did it change?", unpaired (the interval of the ratio of medians
  below 1 and a one-sided exact Mann-Whitney test agreeing at the analysis' significance:
  :func:`rlbench.autoconfig.ask_tell.worse_beyond_doubt`, never on fewer than 3 readings a side),
  *and* it is outside the top ``1/eta`` by median; or
* it has fewer readings than the rank test needs (a budget that buys one or two a configuration), is
  outside the top ``1/eta``, and its readings and the cost model *both* put it below the leader by more
  than the model's measured error (throughput only); or
* it failed at least twice and never gave a reading; or
* before any trial, the cost model says it cannot win (throughput only: under time to target the
  resources change the algorithm itself, e.g. policy lag, so a throughput model cannot rule out).

The budget's plan (:mod:`rlbench.autoconfig.plan`) may measure only the model's top configurations
(:meth:`SuccessiveHalving.restrict`: the rest are "not measured: budget") with fewer first-rung
readings, and the race may have room for fewer entrants than survive (:meth:`SuccessiveHalving.handover`:
the best by median go on, the rest are "not raced: budget", their readings kept).

So promotion keeps the top fraction by median and never drops one the rule does not find below the leader. The search
stops when at most ``finalists`` remain, or when the next rung would not fit
in its budget (each trial charged its wall plus its cold start); the survivors go to the race.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from rlbench.analysis.autoconfig_run import Reason
from rlbench.analysis.change import can_show
from rlbench.analysis.findings import REPEATS_FOR_EVIDENCE
from rlbench.autoconfig.ask_tell import (
    Objective,
    Stage,
    Standing,
    TrialRequest,
    leader,
    rank,
    rotated,
    worse_beyond_doubt,
)
from rlbench.autoconfig.model import Candidate, CostModel, Observation

#: Successive halving's reduction factor (Hyperband's default).
ETA = 3
#: Fresh trials per configuration in the first rung: the fewest on which the rank test can drop one (the analysis'
#: ``REPEATS_FOR_EVIDENCE``: 3 against 3, all below, gives p = 1/20).
FIRST_RUNG_READINGS = REPEATS_FOR_EVIDENCE
#: The search hands over to the race once this many configurations (or fewer) remain.
FINALISTS = 3


@dataclass(frozen=True)
class Elimination:
    """Why a configuration left the search (one line of the elimination log)."""

    key: str
    """Candidate key."""
    rung: int
    """The rung after which it was dropped (-1: before any trial)."""
    reason: Reason
    """Why it left (:class:`~rlbench.analysis.autoconfig_run.Reason`: each one's meaning and its words)."""
    detail: str
    """The numbers behind the reason, in words."""
    median: float | None = None
    """Its median score then."""
    ci_low: float | None = None
    """Its interval then."""
    ci_high: float | None = None
    """Upper end."""
    leader_key: str | None = None
    """The leader it was compared with."""


class SuccessiveHalving(Stage):
    """The adaptive search: ``ask()`` a rung, run it, ``tell()`` its results, until ``ask()`` is empty."""

    stage = "search"

    def __init__(
        self,
        candidates: Sequence[Candidate],
        *,
        objective: Objective,
        budget_s: float,
        trial_s: float,
        cold_start_s: float = 10.0,
        seed: int = 0,
        eta: int = ETA,
        first_rung_readings: int = FIRST_RUNG_READINGS,
        finalists: int = FINALISTS,
        model: CostModel | None = None,
        protect: Sequence[str] = (),
        training_s: Mapping[str, float] | None = None,
        cap_s: Mapping[str, float] | None = None,
    ):
        """
        Args:
            candidates: the search space (distinct keys), in the grid's order.
            objective: ``throughput`` or ``time_to_target``.
            budget_s: seconds this search may charge (trials' wall plus cold starts).
            trial_s: each trial's cap (:attr:`TrialRequest.max_wall_s`) and expected training seconds,
                unless ``cap_s`` / ``training_s`` give a configuration's own.
            cold_start_s: expected cold start until one is measured.
            seed: the run's seed (trial seeds derive from it and the request's place).
            eta: reduction factor; rung r has ``first_rung_readings * eta**r`` new trials each.
            first_rung_readings: at least 1 (3 by default, so the first rung can drop on the rank test).
            finalists: stop when this many or fewer remain (0: measure even one configuration).
            model: the cost model that prunes before any trial and judges readings too few for the rank
                test (throughput only); None: no pruning.
            protect: keys never pruned by the model (the baseline).
        """
        super().__init__(
            objective=objective,
            budget_s=budget_s,
            trial_s=trial_s,
            cold_start_s=cold_start_s,
            seed=seed,
            training_s=training_s,
            cap_s=cap_s,
        )
        keys = [c.key for c in candidates]
        if len(set(keys)) != len(keys):
            raise ValueError("candidate keys must be distinct")
        if first_rung_readings < 1 or eta < 2 or finalists < 0:
            raise ValueError("first_rung_readings >= 1, eta >= 2 and finalists >= 0")
        self.candidates = {c.key: c for c in candidates}
        self.eta, self.first_rung_readings, self.finalists = eta, first_rung_readings, finalists
        self.model = model if objective == "throughput" else None
        self.eliminations: list[Elimination] = []
        self.rung = -1
        self._alive = list(keys)
        if self.model is not None:
            out = self.model.cannot_win(list(candidates))
            best = max((p.env_steps_per_s for c in candidates if (p := self.model.predict(c))), default=math.nan)
            for key, pred in out.items():
                if key in protect:
                    continue
                self._alive.remove(key)
                self.eliminations.append(
                    Elimination(
                        key,
                        -1,
                        Reason.MODEL,
                        f"predicted {pred.env_steps_per_s:.0f} env steps/s, below "
                        f"{100 * (pred.env_steps_per_s / best):.0f}% of the best prediction ({best:.0f})",
                    )
                )

    @property
    def survivors(self) -> list[Candidate]:
        """Configurations still in the search (the finalists once it is done), in the grid's order."""
        return [self.candidates[k] for k in self._alive]

    def by_model(self) -> list[str]:
        """The survivors, the model's predicted best first (ties and unpredictable ones in the grid's order,
        after the predicted ones); the grid's order without a model."""

        def predicted(key: str) -> float:
            p = self.model.predict(self.candidates[key]) if self.model is not None else None
            return -p.env_steps_per_s if p is not None else math.inf

        return sorted(self._alive, key=predicted)

    def restrict(self, keep: Sequence[str], first_rung_readings: int, why: str, finalists: int | None = None) -> None:
        """Apply the budget's plan before the first rung: measure only ``keep``, ``first_rung_readings``
        each; every other survivor is "not measured: budget" (``why`` says what the plan could afford).
        ``finalists``: hand over at this many instead (0: measure ``keep`` even when there are few)."""
        if self.rung >= 0:
            raise ValueError("the plan is applied before the first rung")
        ranked = self.by_model()
        for key in [k for k in self._alive if k not in keep]:
            place = (
                f"the model's #{ranked.index(key) + 1} of {len(ranked)}"
                if self.model is not None
                else "the grid's order"
            )
            self._alive.remove(key)
            self.eliminations.append(Elimination(key, -1, Reason.BUDGET, f"{place}; {why}"))
        self.first_rung_readings = max(1, int(first_rung_readings))
        if finalists is not None:
            self.finalists = finalists

    def handover(self, others: int, keep: str | None = None) -> list[Candidate]:
        """The finalists the race has room for: ``keep`` (the baseline, when it survived) and the ``others``
        best by median reading (ties: the model's order); the rest leave as ``not_raced``, readings kept."""
        rest = [k for k in self._alive if k != keep]
        if len(rest) <= others:
            return self.survivors
        order = {k: i for i, k in enumerate(self.by_model())}
        standings = {s.key: s for s in self.standings()}
        ranked = sorted(rest, key=lambda k: (standings[k].median is None, -(standings[k].median or 0.0), order[k]))
        for key in ranked[max(0, others) :]:
            s = standings[key]
            self._drop(
                s,
                self.rung,
                Reason.NOT_RACED,
                f"the race had room for {max(0, others)} of {len(ranked)} beside "
                f"the baseline; median {_num(s.median)} on {s.n} reading{'s' * (s.n != 1)}",
                None,
            )
        return self.survivors

    def standings(self) -> list[Standing]:
        """Every survivor's standing over its readings so far."""
        return [self.standing_of(k, self.candidates[k].cpus, self.candidates[k].gpus) for k in self._alive]

    def readings_in_rung(self, rung: int) -> int:
        """New trials per configuration in ``rung``."""
        return self.first_rung_readings * self.eta**rung

    def fitted(self) -> tuple[CostModel, float] | None:
        """The model refit on every trial told so far and its largest relative error against each trial's
        measured iteration (None: no model, or nothing measured yet): the error is the margin a reading and
        the model must both clear before fewer readings than the rank test needs may drop a configuration."""
        if self.model is None:
            return None
        obs = [
            Observation(self.candidates[self._issued[rid].candidate_key], r.iteration_s)
            for rid, r in self._told.items()
            if r.iteration_s is not None and r.iteration_s > 0
        ]
        model = self.model.refit(obs)
        errors = [abs(r.error_pct) / 100.0 for r in model.predicted_vs_measured(obs) if r.error_pct is not None]
        return (model, max(errors)) if errors else None

    def _next_batch(self) -> list[TrialRequest]:
        if len(self._alive) <= self.finalists:
            self.stop_reason = f"{len(self._alive)} left (finalists: {self.finalists})"
            return []
        rung = self.rung + 1
        k = self.readings_in_rung(rung)
        if not self.fits(self._alive * k):
            self.stop_reason = (
                f"budget: rung {rung} needs {k} x {len(self._alive)} trials "
                f"({self.batch_cost_s(self._alive * k):.0f} s), {max(0.0, self.remaining_s):.0f} s left"
            )
            return []
        self.rung = rung
        # Interleaved: slot i runs every configuration once, each slot starting with another one.
        return [self._request(key, rung, i) for i in range(k) for key in rotated(self._alive, i)]

    def _close(self) -> None:
        rung = self.rung
        standings = {s.key: s for s in self.standings()}
        for s in standings.values():
            if s.n == 0 and s.failed >= 2:
                self._drop(s, rung, Reason.FAILED, f"{s.failed} trials failed, none gave a reading", None)
        best = leader(standings[k] for k in self._alive)
        if best is None:
            return
        ranked = sorted((standings[k] for k in self._alive if standings[k].median is not None), key=rank)
        top = {s.key for s in ranked[: max(1, math.ceil(len(self._alive) / self.eta))]}
        fitted = self.fitted() if any(not can_show(x.n, best.n) for x in ranked) else None
        for s in ranked:
            if s.key in top:
                continue
            if worse_beyond_doubt(self.scores(s.key), self.scores(best.key)):
                self._drop(
                    s,
                    rung,
                    Reason.SEPARATED,
                    f"below the leader ({best.key}) by the change rule: median "
                    f"{s.median:.4g} against {best.median:.4g} on {s.n} and {best.n} readings, outside the top "
                    f"1/{self.eta}",
                    best,
                )
            elif (
                fitted is not None and not can_show(s.n, best.n) and (why := self._below_beyond_error(s, best, *fitted))
            ):
                self._drop(s, rung, Reason.READING_AND_MODEL, why, best)

    def _below_beyond_error(self, s: Standing, best: Standing, model: CostModel, error: float) -> str | None:
        """Why ``s`` is below ``best`` by more than the model's error both by its readings and by the (refit)
        model's prediction, or None when either leaves room for doubt."""
        a, b = model.predict(self.candidates[s.key]), model.predict(self.candidates[best.key])
        if a is None or b is None or s.median is None or not best.median or not b.env_steps_per_s:
            return None
        read, pred = s.median / best.median, a.env_steps_per_s / b.env_steps_per_s
        if read < 1.0 - error and pred < 1.0 - error:
            return (
                f"{s.n} reading{'s' * (s.n != 1)} at {100 * read:.0f}% of the leader's ({best.key}) and predicted "
                f"at {100 * pred:.0f}%, both below 1 - the model's error ({100 * error:.0f}%); "
                f"outside the top 1/{self.eta}"
            )
        return None

    def _drop(self, s: Standing, rung: int, reason: Reason, detail: str, best: Standing | None) -> None:
        self._alive.remove(s.key)
        self.eliminations.append(
            Elimination(
                key=s.key,
                rung=rung,
                reason=reason,
                detail=detail,
                median=s.median,
                ci_low=s.ci_low,
                ci_high=s.ci_high,
                leader_key=None if best is None else best.key,
            )
        )


def _num(value: float | None) -> str:
    return "-" if value is None else f"{value:.4g}"
