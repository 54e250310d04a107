"""The race between the finalists and the baseline, and the answer.

Why a race after the search: the search's readings were taken rung by rung, so a drift of the
machine (another tenant, thermal state) can sit between two configurations' readings. The race
measures the finalists and the baseline afresh in *interleaved rounds*: each round runs every one
of them once, and each round starts with the next one (rotating order), so drift falls on all
alike and the trials of one round share a seed (paired). It stops when every other configuration
is either separated from the leader (its interval wholly below the leader's, a rank test agreeing)
or practically equal to it (the bootstrap interval of the ratio of medians inside 1 +/- the
tolerance, so more rounds cannot change the answer), at the round cap, or when the budget is spent.

A configuration separated from the leader leaves the race (as F-race drops one once its test says
so): later rounds are of the rest only, so the budget buys readings where the answer is still open.
Its readings stay in the standings. When a whole round no longer fits but at least two trials
do, a last *partial* round runs the leader and those closest to it by median (after one full
round, so every entrant has a race reading): on real RLlib, where a trial costs about 20 s, the
race had stopped with 51-83 s of a 210 s budget unused (docs/AUTOCONFIG.md).

The answer (:func:`choose`): among the configurations indistinguishable from the best median's and
within the tolerance (5%) of it, the cheapest: fewest CPUs, then fewest GPUs (then the higher median).
"Indistinguishable" is a finding only where the readings could have told the two apart
(:data:`~rlbench.autoconfig.ask_tell.MIN_READINGS` a side, the rank test's minimum) and the intervals
overlap; a configuration with fewer readings is "not measured enough", never tied and never worse
(issue 34: one reading with no interval had been read as overlapping). The answer comes with its
speed-up over the baseline, the ratio of medians with its 95% bootstrap interval
(:func:`rlbench.analysis.stats.ratio_ci`). Only the race's own readings count here: interleaved and
paired, they are the fair comparison. When the budget left no race round, the search's readings of the
same entrants answer, and when it left no search either, the probes' (the answer says which).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping, Sequence

from rlbench.analysis import stats
from rlbench.autoconfig.model import Candidate
from rlbench.autoconfig.search import Elimination
from rlbench.autoconfig.steps import StepsComparison, StepsStanding, compare_steps, steps_standing
from rlbench.autoconfig.ask_tell import (Objective, Stage, Standing, TrialRequest, comparable, leader, overlaps, rank,
                                      rotated, standing, worse_beyond_doubt)

#: A configuration within this percentage of the best median is as good as the best.
TOLERANCE_PCT = 5.0
#: Rounds before the race may stop on intervals (irace's firstTest is 5; 3 keeps a 20-minute budget).
MIN_ROUNDS = 3
#: Rounds after which the race stops whatever the intervals say.
MAX_ROUNDS = 20


def choose(standings: Sequence[Standing],
           tolerance_pct: float = TOLERANCE_PCT) -> tuple[str | None, tuple[str, ...], tuple[str, ...]]:
    """The answer from standings: the cheapest configuration as good as the best, with its evidence.

    Args:
        standings: one per configuration; scores are higher-is-better.
        tolerance_pct: how far below the best median a configuration may be and still be chosen.
    Returns:
        (chosen key, the indistinguishable set: the best and every configuration whose readings could have
        told it from the best (:func:`~rlbench.autoconfig.ask_tell.comparable`) and whose interval overlaps
        the best's, best first then by median; the configurations with a reading but too few to compare
        with the best, by median); (None, (), ()) when no configuration has a reading.
    """
    best = leader(standings)
    if best is None:
        return None, (), ()
    others = sorted((s for s in standings if s.median is not None and s.key != best.key),
                    key=lambda s: (-s.median, s.key))
    same = [best] + [s for s in others if comparable(s, best) and overlaps(s, best)]
    thin = tuple(s.key for s in others if not comparable(s, best))
    floor = (1.0 - tolerance_pct / 100.0) * best.median
    chosen = min((s for s in same if s.median >= floor), key=lambda s: (s.cpus, s.gpus, -s.median, s.key))
    return chosen.key, tuple(s.key for s in same), thin


@dataclass(frozen=True)
class Answer:
    """What autoconfig answers, with its evidence."""

    chosen_key: str | None
    """The cheapest configuration as good as the best (None: nothing gave a reading)."""
    fastest_key: str | None
    """The highest median."""
    baseline_key: str
    """The baseline configuration."""
    indistinguishable: tuple[str, ...]
    """The fastest, then every configuration whose readings could have told it from the fastest and
    whose interval overlaps the fastest's."""
    standings: tuple[Standing, ...]
    """Every entrant's race readings summarised (scores: higher is better)."""
    speedup: float | None
    """median(chosen) / median(baseline) of the scores: throughput ratio, or baseline's time to
    target over the chosen one's. None when the baseline's median score is 0 (mostly censored)."""
    speedup_ci_low: float | None
    """Lower end of the 95% bootstrap interval of the speed-up (None with fewer than 2 readings a side)."""
    speedup_ci_high: float | None
    """Upper end."""
    rounds: int
    """Race rounds run."""
    stop_reason: str | None
    """Why the race stopped."""
    steps: tuple[StepsStanding, ...] = ()
    """time_to_target: every entrant's env steps to the target (rlbench.autoconfig.steps); () otherwise."""
    steps_comparisons: tuple[StepsComparison, ...] = ()
    """time_to_target: every other entrant's env steps against the chosen one's, with the evidence."""
    left_race: tuple[Elimination, ...] = ()
    """Entrants that left the race once separated from the leader (``rung``: the round after which)."""
    partial_rounds: int = 0
    """Rounds of the leader and its closest rivals only, run when a whole round no longer fit."""
    not_measured_enough: tuple[str, ...] = ()
    """Configurations with readings, but too few (or the fastest with too few) for the rank test to tell
    them from the fastest: neither tied nor worse, by median."""
    source: str = "race"
    """Whose readings the answer rests on: ``race``, else ``search`` (no race round fitted), else
    ``probe`` (neither did)."""


class Race(Stage):
    """Interleaved rotating rounds of the finalists and the baseline: ``ask()`` a round, ``tell()`` it."""

    stage = "race"

    def __init__(self, finalists: Sequence[Candidate], baseline: Candidate, *, objective: Objective,
                 budget_s: float, trial_s: float, cold_start_s: float = 10.0, seed: int = 0,
                 min_rounds: int = MIN_ROUNDS, max_rounds: int = MAX_ROUNDS, tolerance_pct: float = TOLERANCE_PCT,
                 training_s: Mapping[str, float] | None = None, cap_s: Mapping[str, float] | None = None):
        """
        Args:
            finalists: the search's survivors.
            baseline: the configuration to beat (raced too; once if it is also a finalist).
            budget_s: seconds the race may charge; the other arguments as for the search.
            min_rounds: rounds before the intervals may stop it (at least 2: an interval needs 2 readings).
            max_rounds: rounds after which it stops.
            tolerance_pct: "as good as the best" (answer) and "practically equal" (stop).
        """
        super().__init__(objective=objective, budget_s=budget_s, trial_s=trial_s, cold_start_s=cold_start_s,
                         seed=seed, training_s=training_s, cap_s=cap_s)
        self.entrants: dict[str, Candidate] = {}
        for c in [*finalists, baseline]:
            self.entrants.setdefault(c.key, c)
        self.baseline_key = baseline.key
        self.min_rounds, self.max_rounds = max(2, min_rounds), max_rounds
        self.tolerance_pct = tolerance_pct
        self.round = -1
        self.left: list[Elimination] = []
        self.partial_rounds = 0
        self.rounds_done = 0

    def standings(self) -> list[Standing]:
        """Every entrant's standing over its race readings."""
        return [self.standing_of(k, c.cpus, c.gpus) for k, c in self.entrants.items()]

    @property
    def contenders(self) -> list[str]:
        """Entrants still racing (not separated from the leader), in the entrants' order."""
        gone = {e.key for e in self.left}
        return [k for k in self.entrants if k not in gone]

    def _next_batch(self) -> list[TrialRequest]:
        if self.round + 1 >= self.max_rounds:
            self.stop_reason = f"{self.max_rounds} rounds"
            return []
        keys = self.contenders
        if not self.fits(keys):
            closest = self._closest(keys) if self.round >= 0 else []
            if len(closest) < 2:
                self.stop_reason = (f"budget: a round needs {len(keys)} trials ({self.batch_cost_s(keys):.0f} s), "
                                    f"{max(0.0, self.remaining_s):.0f} s left")
                return []
            keys = closest
            self.partial_rounds += 1
        self.round += 1
        return [self._request(key, self.round, 0) for key in rotated(keys, self.round)]

    def _closest(self, keys: list[str]) -> list[str]:
        """The leader and the contenders whose medians are nearest below it (ties: the cheaper, as
        :func:`leader` ranks), as many as fit what is left, in entrants' order."""
        keep: list[str] = []
        for s in sorted(self._racing(), key=rank):
            if not self.fits([*keep, s.key]):
                break
            keep.append(s.key)
        return [k for k in keys if k in keep]

    def _racing(self) -> list[Standing]:
        """The standings of the entrants still racing."""
        keys = set(self.contenders)
        return [s for s in self.standings() if s.key in keys]

    def _close(self) -> None:
        self.rounds_done += 1
        racing = self._racing()
        for s in racing:  # one that keeps failing is not raced again: its trials would buy nothing
            if s.n == 0 and s.failed >= 2:
                self.left.append(Elimination(s.key, self.round, "failed", f"{s.failed} trials failed, none gave a "
                                             "reading"))
        racing = self._racing()
        best = leader(racing)
        if best is not None:
            for s in racing:
                if s.key != best.key and \
                        worse_beyond_doubt(self.scores(s.key), self.scores(best.key)):
                    self.left.append(Elimination(
                        s.key, self.round, "separated", f"interval {s.ci_low:.4g}-{s.ci_high:.4g} below the "
                        f"leader's {best.ci_low:.4g}-{best.ci_high:.4g} ({best.key}), the rank test agreeing",
                        s.median, s.ci_low, s.ci_high, best.key))
        if self.round + 1 >= self.min_rounds and self.settled():
            self.stop_reason = "settled: every other configuration is separated from the leader or within " \
                               f"{self.tolerance_pct:g}% of it"
        elif not any(self.scores(k) for k in self.contenders):
            self.stop_reason = "no entrant still racing gave a reading"
        elif len(self.contenders) < 2:
            self.stop_reason = "one configuration left: every other left the race"

    def settled(self) -> bool:
        """Whether more rounds cannot change the answer: each non-leader still racing separated or
        practically equal (one that left the race was separated when it left)."""
        standings = self._racing()
        best = leader(standings)
        if best is None or len(standings) < 2:
            return best is not None
        tol = self.tolerance_pct / 100.0
        for s in standings:
            if s.key == best.key or worse_beyond_doubt(self.scores(s.key), self.scores(best.key)):
                continue
            r = stats.ratio_ci(self.scores(best.key), self.scores(s.key))
            if r.ci_low is None or r.ci_low < 1.0 - tol or r.ci_high > 1.0 + tol:
                return False
        return True

    def answer(self, fallbacks: Sequence[Stage] = ()) -> Answer:
        """The answer over the race's readings. When not one whole race round ran (the budget left none), or
        no entrant gave a race reading, over every reading of ``fallbacks`` (the search's, then the probes') pooled, of the entrants and of
        any configuration they read, as the stop reason says: the search's slots are interleaved and paired
        too, only earlier and fewer; a probe is one reading, taken before everything else."""
        source, reason, origin = self, self.stop_reason, "race"
        candidates: dict[str, Candidate] = dict(self.entrants)
        if self.rounds_done == 0 or not any(self.scores(k) for k in self.entrants):  # nothing the race can pair
            read = [st for st in fallbacks if any(st.scores(k) for k in getattr(st, "candidates", {}))]
            if read:
                source = Pooled(read)
                origin = "+".join(st.stage for st in read)
                reason = f"{self.stop_reason}; the answer is from the {' and the '.join(st.stage for st in read)} " \
                         f"readings{' (pooled, not paired)' if len(read) > 1 else ''}"
                for st in read:
                    candidates.update({k: c for k, c in st.candidates.items() if st.scores(k)})
        standings = [source.standing_of(k, c.cpus, c.gpus) for k, c in candidates.items()]
        chosen, same, thin = choose(standings, self.tolerance_pct)
        fastest = leader(standings)
        ratio = stats.ratio_ci(source.scores(self.baseline_key), source.scores(chosen)) if chosen else None
        steps, comparisons = (), ()
        if self.objective == "time_to_target":  # steps to target raced too: did they learn from fewer, or step faster?
            readings = {k: source.env_steps(k) for k in candidates}
            steps = tuple(steps_standing(k, r) for k, r in readings.items())
            comparisons = tuple(compare_steps(readings, chosen)) if chosen else ()
        return Answer(chosen, None if fastest is None else fastest.key, self.baseline_key, same, tuple(standings),
                      None if ratio is None else ratio.ratio, None if ratio is None else ratio.ci_low,
                      None if ratio is None else ratio.ci_high, self.round + 1, reason, steps, comparisons,
                      tuple(self.left), self.partial_rounds, thin, origin)


class Pooled:
    """The readings of several stages together (each configuration's from every stage), read like one."""

    def __init__(self, stages: Sequence[Stage]):
        self.stages = list(stages)

    def scores(self, key: str) -> list[float]:
        return [x for st in self.stages for x in st.scores(key)]

    def env_steps(self, key: str) -> list[tuple[float, bool]]:
        return [x for st in self.stages for x in st.env_steps(key)]

    def standing_of(self, key: str, cpus: float, gpus: float) -> Standing:
        parts = [st.standing_of(key, cpus, gpus) for st in self.stages]
        return standing(key, cpus, gpus, self.scores(key), sum(p.censored for p in parts), sum(p.failed for p in parts))
