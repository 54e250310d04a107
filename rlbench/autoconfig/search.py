"""Successive halving over configurations, promoting on confidence intervals, never on one reading.

Why this shape: successive halving (Li et al.; eta=3 as Hyperband and Optuna use) spends little on
configurations that are clearly worse, but its classic form crowns noise: it ranks on one reading.
Here every rung gives each surviving configuration ``first_rung_readings * eta**rung`` *fresh,
isolated* trials (rungs double as repeats: a configuration's readings accumulate across rungs), and
after a rung a configuration is dropped only when

* its interval's upper end is below the leader's lower end (95% bootstrap of the median,
  :func:`rlbench.analysis.stats.median_ci`) and a one-sided Mann-Whitney test agrees at 5%
  (:func:`rlbench.autoconfig.trials.worse_beyond_doubt`: never on fewer than 3 readings a side),
  *and* it is outside the top ``1/eta`` by median; or
* it failed at least twice and never gave a reading; or
* before any trial, the cost model says it cannot win (throughput only: under time to target the
  resources change the algorithm itself, e.g. policy lag, so a throughput model cannot rule out).

So promotion keeps the top fraction by median and never drops one whose interval overlaps the
leader's. The search stops when at most ``finalists`` remain, or when the next rung would not fit
in its budget (each trial charged its wall plus its cold start); the survivors go to the race.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

from rlbench.autoconfig.model import CostModel, Candidate
from rlbench.autoconfig.trials import (Objective, Stage, Standing, TrialRequest, leader, rank, rotated,
                                      worse_beyond_doubt)

#: Successive halving's reduction factor (Hyperband's default).
ETA = 3
#: Fresh trials per configuration in the first rung: three, the fewest on which the rank test can
#: drop one (3 against 3, all below: p = 1/20).
FIRST_RUNG_READINGS = 3
#: The search hands over to the race once this many configurations (or fewer) remain.
FINALISTS = 3


@dataclass(frozen=True)
class Elimination:
    """Why a configuration left the search (one line of the elimination log)."""

    key: str
    """Candidate key."""
    rung: int
    """The rung after which it was dropped (-1: before any trial)."""
    reason: str
    """``model`` (predicted below the cut), ``separated`` (interval below the leader's, rank test
    agreeing), ``failed``."""
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

    def __init__(self, candidates: Sequence[Candidate], *, objective: Objective, budget_s: float, trial_s: float,
                 cold_start_s: float = 10.0, seed: int = 0, eta: int = ETA,
                 first_rung_readings: int = FIRST_RUNG_READINGS, finalists: int = FINALISTS,
                 model: CostModel | None = None, protect: Sequence[str] = ()):
        """
        Args:
            candidates: the search space (distinct keys), in the grid's order.
            objective: ``throughput`` or ``time_to_target``.
            budget_s: seconds this search may charge (trials' wall plus cold starts).
            trial_s: each trial's cap (:attr:`TrialRequest.max_wall_s`).
            cold_start_s: expected cold start until one is measured.
            seed: the run's seed (trial seeds derive from it and the request's place).
            eta: reduction factor; rung r has ``first_rung_readings * eta**r`` new trials each.
            first_rung_readings: at least 2 (3 by default, so the first rung can drop).
            finalists: stop when this many or fewer remain.
            model: the cost model that prunes before any trial (throughput only); None: no pruning.
            protect: keys never pruned by the model (the baseline).
        """
        super().__init__(objective=objective, budget_s=budget_s, trial_s=trial_s, cold_start_s=cold_start_s,
                         seed=seed)
        keys = [c.key for c in candidates]
        if len(set(keys)) != len(keys):
            raise ValueError("candidate keys must be distinct")
        if first_rung_readings < 2 or eta < 2 or finalists < 1:
            raise ValueError("first_rung_readings >= 2, eta >= 2 and finalists >= 1")
        self.candidates = {c.key: c for c in candidates}
        self.eta, self.first_rung_readings, self.finalists = eta, first_rung_readings, finalists
        self.eliminations: list[Elimination] = []
        self.rung = -1
        self._alive = list(keys)
        if model is not None and objective == "throughput":
            out = model.cannot_win(list(candidates))
            best = max((p.env_steps_per_s for c in candidates if (p := model.predict(c))), default=math.nan)
            for key, pred in out.items():
                if key in protect:
                    continue
                self._alive.remove(key)
                self.eliminations.append(Elimination(
                    key, -1, "model", f"predicted {pred.env_steps_per_s:.0f} env steps/s, below "
                    f"{100 * (pred.env_steps_per_s / best):.0f}% of the best prediction ({best:.0f})"))

    @property
    def survivors(self) -> list[Candidate]:
        """Configurations still in the search (the finalists once it is done), in the grid's order."""
        return [self.candidates[k] for k in self._alive]

    def standings(self) -> list[Standing]:
        """Every survivor's standing over its readings so far."""
        return [self.standing_of(k, self.candidates[k].cpus, self.candidates[k].gpus) for k in self._alive]

    def readings_in_rung(self, rung: int) -> int:
        """New trials per configuration in ``rung``."""
        return self.first_rung_readings * self.eta ** rung

    def _next_batch(self) -> list[TrialRequest]:
        if len(self._alive) <= self.finalists:
            self.stop_reason = f"{len(self._alive)} left (finalists: {self.finalists})"
            return []
        rung = self.rung + 1
        k = self.readings_in_rung(rung)
        if not self.fits(k * len(self._alive)):
            self.stop_reason = (f"budget: rung {rung} needs {k} x {len(self._alive)} trials x {self.trial_cost_s:.0f} s, "
                                f"{max(0.0, self.remaining_s):.0f} s left")
            return []
        self.rung = rung
        # Interleaved: slot i runs every configuration once, each slot starting with another one.
        return [self._request(key, rung, i) for i in range(k) for key in rotated(self._alive, i)]

    def _close(self) -> None:
        rung = self.rung
        standings = {s.key: s for s in self.standings()}
        for s in standings.values():
            if s.n == 0 and s.failed >= 2:
                self._drop(s, rung, "failed", f"{s.failed} trials failed, none gave a reading", None)
        best = leader(standings[k] for k in self._alive)
        if best is None:
            return
        ranked = sorted((standings[k] for k in self._alive if standings[k].median is not None), key=rank)
        top = {s.key for s in ranked[:max(1, math.ceil(len(self._alive) / self.eta))]}
        for s in ranked:
            if s.key not in top and worse_beyond_doubt(self.scores(s.key), self.scores(best.key)):
                self._drop(s, rung, "separated", f"interval {s.ci_low:.4g}-{s.ci_high:.4g} below the leader's "
                           f"{best.ci_low:.4g}-{best.ci_high:.4g} ({best.key}), outside the top 1/{self.eta}", best)

    def _drop(self, s: Standing, rung: int, reason: str, detail: str, best: Standing | None) -> None:
        self._alive.remove(s.key)
        self.eliminations.append(Elimination(s.key, rung, reason, detail, s.median, s.ci_low, s.ci_high,
                                             None if best is None else best.key))
