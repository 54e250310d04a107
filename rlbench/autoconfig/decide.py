"""The race between the finalists and the baseline, and the answer.

Why a race after the search: the search's readings were taken rung by rung, so a drift of the
machine (another tenant, thermal state) can sit between two configurations' readings. The race
measures the finalists and the baseline afresh in *interleaved rounds*: each round runs every one
of them once, and each round starts with the next one (rotating order), so drift falls on all
alike and the trials of one round share a seed (paired). Two entrants are compared by the one rule of
"did it change?" (:mod:`rlbench.analysis.change`, as ``rlbench compare`` and ``history`` decide), as the paired
design the race is: by round (:func:`rlbench.analysis.change.by_rounds`), where the rounds both ran can let
the signed-rank test reach significance (:data:`~rlbench.analysis.findings.ROUNDS_FOR_EVIDENCE`); with fewer,
as independent readings, the answer saying so (:func:`rlbench.analysis.change.design_note`), and the race
buys no extra rounds for it. From ``min_rounds`` on, after each round, every other entrant gets a
:func:`verdict` against the leader: *different*, *same* or *unknown* (Chromium's Pinpoint answers so; fishtest's
sequential test keeps an indifference zone the same way). The race stops as soon as none is unknown (an obvious
1.6x after ``min_rounds``), else runs another round, up to the round cap or while the budget lasts.

A configuration different from the leader (below it) leaves the race (as F-race drops one once its test says
so): later rounds are of the rest only, so the budget buys readings where the answer is still open.
Its readings stay in the standings. When a whole round no longer fits but at least two trials
do, a last *partial* round runs the leader and those closest to it by median (after one full
round, so every entrant has a race reading): on real RLlib, where a trial costs about 20 s, the
race had stopped with 51-83 s of a 210 s budget unused (docs/AUTOCONFIG.md).

The answer (:func:`choose`): among the configurations indistinguishable from the best median's and
within the threshold (:data:`~rlbench.analysis.findings.CHANGE_THRESHOLD`) of it, the cheapest: fewest CPUs,
then fewest GPUs (then the higher median). "Indistinguishable" is a finding only where the readings could have
told the two apart (the rule's :attr:`~rlbench.analysis.change.Change.enough`) and the rule finds no change; a
configuration with fewer readings is "not measured enough", never tied and never worse (issue 34: one reading
with no interval had been read as overlapping). The answer comes with its speed-up over the baseline, the ratio
of medians with its bootstrap interval (the rule's :class:`~rlbench.analysis.change.Change`). Only the race's own
readings count here: interleaved and paired, they are the fair comparison. When the budget left no race round,
the search's readings of the same entrants answer, and when it left no search either, the probes' (the answer
says which), compared unpaired.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

from rlbench.analysis.autoconfig_run import Reason
from rlbench.analysis.change import Change, by_rounds, clear_of, design_note, equivalent, unpaired
from rlbench.analysis.findings import (
    CHANGE_THRESHOLD,
    FIRST_LOOK_MARGIN,
    REPEATS_FOR_EVIDENCE,
    SEQUENTIAL_SIGNIFICANCE,
    SIGNIFICANCE,
)
from rlbench.autoconfig.ask_tell import Objective, Stage, Standing, TrialRequest, below, leader, rank, rotated, standing
from rlbench.autoconfig.model import Candidate
from rlbench.autoconfig.search import Elimination
from rlbench.autoconfig.steps import StepsComparison, StepsStanding, compare_steps, steps_standing

#: One configuration against another (A's key, B's key) by the one rule: B against A.
Versus = Callable[[str, str], Change]
#: Rounds before the race may stop on intervals: as many as give every entrant the readings a side with which the
#: rank test can separate two (the analysis' ``REPEATS_FOR_EVIDENCE``, 3; irace's firstTest is 5, 3 keeps a
#: 20-minute budget).
MIN_ROUNDS = REPEATS_FOR_EVIDENCE
#: Rounds after which the race stops whatever the intervals say.
MAX_ROUNDS = 20
#: Rounds a step's race of the walk may run past its cap (:data:`~rlbench.analysis.findings.ROUNDS_FOR_EVIDENCE`, 6)
#: while the one rule cannot say and its best value leads the current point by more than the tolerance (the walk's
#: ``WalkRace``): twice the paired test's minimum; also the windows a walk's warm trial reads (``warm_windows``).
#: Issue 57's pushes read 1.07-1.13x without evidence at 6 rounds where the exhaustive grid read 1.06-1.74x;
#: simulated at a window CV of 14%, a planted 1.15x moves the walk in 22.5% of steps at 6 rounds and in 39.2% by 12,
#: identical points in 2.5% and 2.8% (docs/MEASUREMENT.md 10, 2026-11-29). A move past the cap asks p <= 0.01, which
#: the paired test first reaches at 8 rounds (one round the other way: 9), so a cap below 9 buys little; each round
#: past 6 costs two readings, so 12 bounds a step's extra to 12.
EXTENDED_ROUNDS = 12
#: What a race's look says of one entrant against the leader (:func:`verdict`).
Verdict = Literal["different", "same", "unknown"]


def verdict(change: Change, threshold: float, first_look: bool) -> Verdict:
    """The race's sequential rule: one entrant (B) against the leader (A) after a round, from ``min_rounds`` on.

    - ``different``: B is below by the one rule (:func:`~rlbench.autoconfig.ask_tell.below`) *and* apart by more
      than the threshold beyond doubt (every interval of B/A under 1 - threshold:
      :func:`~rlbench.analysis.change.clear_of`); on the first look (3 readings a side: p = 1/20 at best) at
      :data:`~rlbench.analysis.findings.SIGNIFICANCE` and beyond :data:`~rlbench.analysis.findings.FIRST_LOOK_MARGIN`
      times the threshold, on every later one at :data:`~rlbench.analysis.findings.SEQUENTIAL_SIGNIFICANCE`;
    - ``same``: every interval inside 1 +/- threshold (:func:`~rlbench.analysis.change.equivalent`);
    - ``unknown``: neither: run another round.

    Why: a race looks once a round, and the leader is whichever median is higher, so the one-sided test at
    SIGNIFICANCE is a two-sided one at twice it (3 identical readings a side fall all apart 1 time in 10), and each
    look adds to it. Error rates kept, 2 entrants of normal noise, ``min_rounds`` 3 to the race's cap of 20,
    1,000 races a cell (``python scripts/sim_change_rule.py --race``, docs/MEASUREMENT.md 10, 2026-11-29): see
    there; in short, identical ones called different in 0.0%, 0.1%, 1.1% and 3.1% of races at a noise CV of 2, 5, 10
    and 15% (the plain rule: 11.5-17.5%), a 1.6x found in every race in 3.00-3.94 rounds on average (``min_rounds``:
    3), a 1.3x in 95-100% of races. A true change inside the threshold is never
    ``different``: it is ``same`` once the intervals are narrow enough, else ``unknown`` to the cap.
    """
    level, band = (SIGNIFICANCE, FIRST_LOOK_MARGIN * threshold) if first_look else (SEQUENTIAL_SIGNIFICANCE, threshold)
    down = below(change) and change.p_value is not None and change.p_value <= level
    if down and clear_of(change, band):
        return "different"
    return "same" if equivalent(change, threshold) else "unknown"


def choose(
    standings: Sequence[Standing], versus: Versus, threshold: float = CHANGE_THRESHOLD
) -> tuple[str | None, tuple[str, ...], tuple[str, ...]]:
    """The answer from standings: the cheapest configuration as good as the best, with its evidence.

    Args:
        standings: one per configuration; scores are higher-is-better.
        versus: a configuration against the best by the one rule (``versus(best, other)``: the other's readings
            against the best's).
        threshold: how far below the best median (a share of it) a configuration may be and still be chosen.
    Returns:
        (chosen key, the indistinguishable set: the best and every configuration whose readings could have
        told it from the best (:attr:`~rlbench.analysis.change.Change.enough`) and in which the rule finds no
        change or every interval is inside 1 +/- threshold (:func:`~rlbench.analysis.change.equivalent`), best
        first then by median; the configurations with a reading but too few to compare with the
        best, by median); (None, (), ()) when no configuration has a reading.
    """
    best = leader(standings)
    if best is None:
        return None, (), ()
    others = sorted(
        (s for s in standings if s.median is not None and s.key != best.key), key=lambda s: (-(s.median or 0.0), s.key)
    )
    against = {s.key: versus(best.key, s.key) for s in others}
    # a change inside the threshold by every interval is the same (the race stops on it: :func:`verdict`)
    same = [best] + [
        s
        for s in others
        if against[s.key].enough and (not against[s.key].differs or equivalent(against[s.key], threshold))
    ]
    thin = tuple(s.key for s in others if not against[s.key].enough)
    assert best.median is not None  # the leader is a configuration with a reading
    floor = (1.0 - threshold) * best.median
    chosen = min(
        (s for s in same if (s.median or 0.0) >= floor), key=lambda s: (s.cpus, s.gpus, -(s.median or 0.0), s.key)
    )
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
    """The fastest, then every configuration whose readings could have told it from the fastest and in which the
    one rule finds no change."""
    standings: tuple[Standing, ...]
    """Every entrant's race readings summarised (scores: higher is better)."""
    speedup: float | None
    """median(chosen) / median(baseline) of the scores: throughput ratio, or baseline's time to
    target over the chosen one's. None when the baseline's median score is 0 (mostly censored)."""
    speedup_ci_low: float | None
    """Lower end of the bootstrap interval of the speed-up (the rule's ``ci_low``; None with fewer than 2 readings
    a side)."""
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
    design: str = "unpaired"
    """How the fastest and the others were compared: ``paired`` (by race round: the rounds they both ran could show
    a change), ``unpaired`` (as independent readings), ``mixed`` (some pairs each way)."""
    design_note: str | None = None
    """Why the race's rounds were compared unpaired, in words (:func:`rlbench.analysis.change.design_note`);
    None when they were paired or the answer is not the race's."""
    threshold: float = CHANGE_THRESHOLD
    """The run's "as good as the best" (a share of the best's median; the section's ``tolerance_pct`` / 100): the
    chosen one is the cheapest configuration indistinguishable from the fastest and within it."""


class Race(Stage):
    """Interleaved rotating rounds of the finalists and the baseline: ``ask()`` a round, ``tell()`` it."""

    stage = "race"

    def __init__(
        self,
        finalists: Sequence[Candidate],
        baseline: Candidate,
        *,
        objective: Objective,
        budget_s: float,
        trial_s: float,
        cold_start_s: float = 10.0,
        seed: int = 0,
        min_rounds: int = MIN_ROUNDS,
        max_rounds: int = MAX_ROUNDS,
        threshold: float = CHANGE_THRESHOLD,
        training_s: Mapping[str, float] | None = None,
        cap_s: Mapping[str, float] | None = None,
    ):
        """
        Args:
            finalists: the search's survivors.
            baseline: the configuration to beat (raced too; once if it is also a finalist).
            budget_s: seconds the race may charge; the other arguments as for the search.
            min_rounds: rounds before the rule may stop it (at least 2: an interval needs 2 readings).
            max_rounds: rounds after which it stops.
            threshold: "as good as the best" (answer) and "practically equal" (stop), a share of the best's median.
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
        self.entrants: dict[str, Candidate] = {}
        for c in [*finalists, baseline]:
            self.entrants.setdefault(c.key, c)
        self.baseline_key = baseline.key
        self.min_rounds, self.max_rounds = max(2, min_rounds), max_rounds
        self.threshold = threshold
        self.round = -1
        self.left: list[Elimination] = []
        self.partial_rounds = 0
        self.rounds_done = 0

    def standings(self) -> list[Standing]:
        """Every entrant's standing over its race readings."""
        return [self.standing_of(k, c.cpus, c.gpus) for k, c in self.entrants.items()]

    @property
    def contenders(self) -> list[str]:
        """Entrants still racing (not below the leader), in the entrants' order."""
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
                self.stop_reason = (
                    f"budget: a round needs {len(keys)} trials ({self.batch_cost_s(keys):.0f} s), "
                    f"{max(0.0, self.remaining_s):.0f} s left"
                )
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

    def by_round(self, key: str) -> dict[int, float]:
        """One entrant's race scores by round (a round's readings share a seed and ran back to back)."""
        return {rung: score for (rung, _), score in self.slots(key).items()}

    def versus(self, a: str, b: str) -> Change:
        """Entrant ``b`` against ``a`` by the one rule, paired by round where the rounds both ran can show a
        change, else unpaired (:func:`rlbench.analysis.change.by_rounds`)."""
        return by_rounds(self.by_round(a), self.by_round(b))

    def _close(self) -> None:
        self.rounds_done += 1
        for s in self._racing():  # one that keeps failing is not raced again: its trials would buy nothing
            if s.n == 0 and s.failed >= 2:
                self.left.append(
                    Elimination(s.key, self.round, Reason.FAILED, f"{s.failed} trials failed, none gave a reading")
                )
        looked = self.verdicts() if self.round + 1 >= self.min_rounds else None
        best = leader(self._racing())
        for s in self._racing():
            v, change = (looked or {}).get(s.key, ("unknown", None))
            if v == "different" and best is not None and change is not None:
                self.left.append(
                    Elimination(
                        key=s.key,
                        rung=self.round,
                        reason=Reason.SEPARATED,
                        detail=f"below the leader ({best.key}) by the change rule, by more than {self.threshold:.0%}: "
                        f"{_evidence(change)}",
                        median=s.median,
                        ci_low=s.ci_low,
                        ci_high=s.ci_high,
                        leader_key=best.key,
                    )
                )
        if looked is not None and best is not None and all(v != "unknown" for v, _ in looked.values()):
            self.stop_reason = (
                f"settled: every other configuration is below the leader by more than {self.threshold:.0%} "
                f"or within {self.threshold:.0%} of it"
            )
        elif not any(self.scores(k) for k in self.contenders):
            self.stop_reason = "no entrant still racing gave a reading"
        elif len(self.contenders) < 2:
            self.stop_reason = "one configuration left: every other left the race"

    def verdicts(self) -> dict[str, tuple[Verdict, Change]]:
        """Every entrant still racing but the leader, against the leader by :func:`verdict` (this round a first look
        when it is the ``min_rounds``-th), with the change it rests on; {} without a leader."""
        standings = self._racing()
        best = leader(standings)
        if best is None:
            return {}
        first = self.round + 1 == self.min_rounds
        out: dict[str, tuple[Verdict, Change]] = {}
        for s in standings:
            if s.key != best.key:
                change = self.versus(best.key, s.key)
                out[s.key] = (verdict(change, self.threshold, first), change)
        return out

    def answer(self, fallbacks: Sequence[Stage] = ()) -> Answer:
        """The answer over the race's readings. When not one whole race round ran (the budget left none), or
        no entrant gave a race reading, over every reading of ``fallbacks`` (the search's, then the probes') pooled, of
        the entrants and of
        any configuration they read, as the stop reason says: the search's slots are interleaved and paired
        too, only earlier and fewer; a probe is one reading, taken before everything else. Those are compared
        unpaired."""
        source: Race | Pooled = self
        reason, origin = self.stop_reason, "race"
        versus: Versus = self.versus
        candidates: dict[str, Candidate] = dict(self.entrants)
        if self.rounds_done == 0 or not any(self.scores(k) for k in self.entrants):  # nothing the race can pair
            read = [st for st in fallbacks if any(st.scores(k) for k in getattr(st, "candidates", {}))]
            if read:
                source = Pooled(read)
                origin = "+".join(st.stage for st in read)
                reason = (
                    f"{self.stop_reason}; the answer is from the {' and the '.join(st.stage for st in read)} "
                    f"readings{' (pooled, not paired)' if len(read) > 1 else ''}"
                )
                for st in read:
                    candidates.update({k: c for k, c in getattr(st, "candidates", {}).items() if st.scores(k)})
                versus = source.versus
        standings = [source.standing_of(k, c.cpus, c.gpus) for k, c in candidates.items()]
        chosen, same, thin = choose(standings, versus, self.threshold)
        fastest = leader(standings)
        ratio = versus(self.baseline_key, chosen) if chosen else None
        designs = {k: versus(fastest.key, k).design for k in candidates if k != fastest.key} if fastest else {}
        design = (
            "paired"
            if designs and set(designs.values()) == {"paired"}
            else "unpaired"
            if set(designs.values()) <= {"unpaired"}
            else "mixed"
        )
        note = None
        if origin == "race" and fastest is not None and "unpaired" in designs.values():
            mine = set(self.by_round(fastest.key))
            note = design_note(max(len(mine & set(self.by_round(k))) for k, d in designs.items() if d == "unpaired"))
        steps: tuple[StepsStanding, ...] = ()
        comparisons: tuple[StepsComparison, ...] = ()
        if self.objective == "time_to_target":  # steps to target raced too: did they learn from fewer, or step faster?
            readings = {k: source.env_steps(k) for k in candidates}
            steps = tuple(steps_standing(k, r) for k, r in readings.items())
            comparisons = tuple(compare_steps(readings, chosen)) if chosen else ()
        return Answer(
            chosen_key=chosen,
            fastest_key=None if fastest is None else fastest.key,
            baseline_key=self.baseline_key,
            indistinguishable=same,
            standings=tuple(standings),
            speedup=None if ratio is None else ratio.ratio,
            speedup_ci_low=None if ratio is None else ratio.ci_low,
            speedup_ci_high=None if ratio is None else ratio.ci_high,
            rounds=self.round + 1,
            stop_reason=reason,
            steps=steps,
            steps_comparisons=comparisons,
            left_race=tuple(self.left),
            partial_rounds=self.partial_rounds,
            not_measured_enough=thin,
            source=origin,
            design=design,
            design_note=note,
            threshold=self.threshold,
        )


def _evidence(change: Change) -> str:
    """The figures a drop rests on, in a line: the ratio to the leader, its interval(s), the test and its p."""
    paired = (
        f"; paired ratio {change.paired_ratio:.3f} ({change.paired_ci_low:.3f}-{change.paired_ci_high:.3f})"
        if change.design == "paired"
        else ""
    )
    return (
        f"ratio of medians {change.ratio:.3f} ({change.ci_low:.3f}-{change.ci_high:.3f}){paired}, {change.test} "
        f"p = {change.p_value:.2g}, {change.runs_a} against {change.runs_b} ({change.design})"
    )


class Pooled:
    """The readings of several stages together (each configuration's from every stage), read like one."""

    def __init__(self, stages: Sequence[Stage]):
        self.stages = list(stages)

    def scores(self, key: str) -> list[float]:
        return [x for st in self.stages for x in st.scores(key)]

    def env_steps(self, key: str) -> list[tuple[float, bool]]:
        return [x for st in self.stages for x in st.env_steps(key)]

    def versus(self, a: str, b: str) -> Change:
        """``b`` against ``a`` by the one rule, unpaired (readings of several stages pair with nothing)."""
        return unpaired(self.scores(a), self.scores(b))

    def standing_of(self, key: str, cpus: float, gpus: float) -> Standing:
        parts = [st.standing_of(key, cpus, gpus) for st in self.stages]
        return standing(key, cpus, gpus, self.scores(key), sum(p.censored for p in parts), sum(p.failed for p in parts))
