"""What the search and the race ask the driver to run, what it tells back, and how readings are scored.

Every reading is turned into a *score*, higher is better, so one comparison rule serves both
objectives: throughput scores env steps/s; time to target scores ``1 / time_to_target_s``. A trial
that did not reach the target within its cap is *censored*: it scores 0, below every trial that
reached it, and stays in the sample. With one cap for every trial (the search lengthens a rung by
adding trials, never by lengthening them) the median of these scores is the Kaplan-Meier median
(with all censoring at the cap, the survival curve falls by 1/n at each reached time), so a
median of 0 reads "more than half did not reach the target within the cap".

Whether one configuration's readings are below another's is the one rule of "did it change?"
(:mod:`rlbench.analysis.change`, as ``rlbench compare`` decides): :func:`below` of a :class:`Change`; the search's
readings are compared unpaired (:func:`worse_beyond_doubt`), the race's by round (``Race.versus``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

from rlbench.analysis import stats
from rlbench.analysis.change import Change, unpaired
from rlbench.spec.seeds import derive_seed

Objective = Literal["throughput", "time_to_target"]
OBJECTIVES: tuple[str, ...] = ("throughput", "time_to_target")


@dataclass(frozen=True)
class TrialRequest:
    """One fresh, isolated trial the driver should run."""

    request_id: str
    """Unique and deterministic (``search/r1/i3/<key>``): results are matched to requests by it."""
    candidate_key: str
    """Which configuration (:attr:`rlbench.autoconfig.model.Candidate.key`)."""
    stage: str
    """``search`` or ``race``."""
    rung: int
    """Search rung, or race round."""
    index: int
    """Reading slot in the rung: every candidate's trial in the same slot shares the seed (paired)."""
    seed: int
    """The trial's seed (:func:`rlbench.spec.seeds.derive_seed`, the ``request`` sequence: below 2**31)."""
    max_wall_s: float
    """Cap on the trial's training seconds (cold start excluded): throughput trials run this long;
    time-to-target trials that have not reached the target by then end censored."""
    step: int | None = None
    """The walk's step (0: the start's own readings); None outside a walk (``rlbench.autoconfig.walk.session``)."""


@dataclass(frozen=True)
class TrialResult:
    """What one requested trial gave."""

    request_id: str
    """The request it answers."""
    value: float | None
    """throughput: env steps/s over the steady window; time_to_target: seconds to the target, or
    the seconds it ran when ``reached`` is False. None: the trial failed (no reading)."""
    wall_s: float
    """Seconds the trial ran, cold start excluded (charged to the budget)."""
    cold_start_s: float = 0.0
    """Seconds before its first iteration (process, Ray, build; charged to the budget)."""
    reached: bool = True
    """time_to_target: whether the target was reached within the cap (False: censored)."""
    iteration_s: float | None = None
    """Median steady iteration wall seconds, for refitting the cost model (None: not measured)."""
    env_steps: float | None = None
    """time_to_target: env steps sampled up to the target, or up to the cap when censored (None: not read)."""
    curve: tuple[tuple[float, float], ...] = ()
    """(env steps sampled so far, ``episode_return_mean``) after each iteration that read a return: what the walk
    compares learning by, at equal env steps (``rlbench.autoconfig.walk.steps.learning_check``)."""

    @property
    def charged_s(self) -> float:
        """Budget seconds the trial cost."""
        return max(0.0, self.wall_s) + max(0.0, self.cold_start_s)


def score(objective: Objective, result: TrialResult) -> float | None:
    """The reading's score (higher is better); 0 for a censored time to target; None for a failure."""
    if result.value is None or result.value != result.value:
        return None
    if objective == "throughput":
        return float(result.value)
    if not result.reached:
        return 0.0
    return 1.0 / result.value if result.value > 0 else None


@dataclass(frozen=True)
class Standing:
    """One configuration's readings summarised: median score with its bootstrap interval."""

    key: str
    """Candidate key."""
    cpus: float
    """CPUs it asks for."""
    gpus: float
    """GPUs it asks for."""
    median: float | None
    """Median score (env steps/s, or 1/time_to_target_s with censored trials as 0)."""
    ci_low: float | None
    """Lower end of the bootstrap interval of the median (:func:`rlbench.analysis.stats.median_ci`; None with fewer
    than 2 readings)."""
    ci_high: float | None
    """Upper end."""
    n: int
    """Readings (censored included)."""
    censored: int = 0
    """Readings that did not reach the target (time_to_target)."""
    failed: int = 0
    """Trials that gave no reading."""


def standing(
    key: str, cpus: float, gpus: float, scores: Sequence[float], censored: int = 0, failed: int = 0
) -> Standing:
    """:class:`Standing` of a sample of scores (stats.median_ci: the one bootstrap engine)."""
    e = stats.median_ci(list(scores))
    return Standing(
        key=key,
        cpus=cpus,
        gpus=gpus,
        median=e.median,
        ci_low=e.ci_low,
        ci_high=e.ci_high,
        n=e.n,
        censored=censored,
        failed=failed,
    )


def below(change: Change) -> bool:
    """Whether B is below A by the one rule: a change (every interval of B/A off 1, the rank test agreeing at
    :data:`~rlbench.analysis.findings.SIGNIFICANCE`), downwards."""
    return change.differs and change.effect is not None and change.effect < 1.0


def worse_beyond_doubt(worse: Sequence[float], best: Sequence[float]) -> bool:
    """True when one sample of scores is below another by the one rule, unpaired (:func:`rlbench.analysis.change.
    unpaired`: the interval of the ratio of medians below 1 and the one-sided exact Mann-Whitney U test agreeing).

    Why both: with 2 or 3 readings the percentile bootstrap interval of a median is about the range of the
    readings, which covers the true median only 50% (n=2) or 75% (n=3) of the time, so an interval alone would
    crown noise. The rank test's smallest p-value is 1/6 for 2 against 2 and 1/20 for 3 against 3 (all readings
    of one below all of the other), so nothing is dropped on fewer than 3 readings a side. Censored readings
    (score 0) are ties at the bottom; the test stays exact with ties (scipy's default would leave it for the normal
    approximation when a value repeats, which gave p = 0.04 for 2 equal readings against 3; exact: 1/10).
    """
    return below(unpaired(best, worse))


def rank(s: Standing) -> tuple:
    """Sort key, best first: the higher median, then the cheaper (CPUs, GPUs), then the key; no median last."""
    return (s.median is None, -(s.median or 0.0), s.cpus, s.gpus, s.key)


def leader(standings: Iterable[Standing]) -> Standing | None:
    """The highest median (ties: the cheaper, then the key), or None when nothing has a reading."""
    ranked = [s for s in standings if s.median is not None]
    return min(ranked, key=rank) if ranked else None


def rotated(items: Sequence, shift: int) -> list:
    """``items`` rotated left by ``shift``: each slot (round) starts with another configuration, so
    a slow drift of the machine falls on every configuration alike."""
    if not items:
        return []
    k = shift % len(items)
    return list(items[k:]) + list(items[:k])


class Stage:
    """Ask/tell bookkeeping shared by the search and the race: batches of requests, readings, budget.

    ``ask()`` returns the current batch's requests not yet told (the same ones again until they are:
    asking is idempotent), or, once every one is told, closes the batch (:meth:`_close`) and returns
    the next (:meth:`_next_batch`); ``[]`` means the stage is over (:attr:`stop_reason` says why).
    Everything is a function of the constructor's arguments and the told results, so a new stage
    fed the stored results (:meth:`replay`) is in the same state: that is resume.
    """

    stage = "stage"

    def __init__(
        self,
        *,
        objective: Objective,
        budget_s: float,
        trial_s: float,
        cold_start_s: float,
        seed: int,
        training_s: Mapping[str, float] | None = None,
        cap_s: Mapping[str, float] | None = None,
    ):
        """``trial_s``: each trial's cap and expected training seconds, unless ``cap_s`` / ``training_s``
        (configuration key -> seconds) say otherwise for a configuration: a trial that runs the spec's
        iterations trains as long as its configuration's iterations take (the cost model's prediction)."""
        if objective not in OBJECTIVES:
            raise ValueError(f"objective must be one of {', '.join(OBJECTIVES)} (got {objective!r})")
        self.objective, self.budget_s, self.trial_s = objective, float(budget_s), float(trial_s)
        self.cold_start_prior_s, self.seed = float(cold_start_s), int(seed)
        self._training_s, self._cap_s = dict(training_s or {}), dict(cap_s or {})
        self.spent_s = 0.0
        self.trials_run = 0
        self.stop_reason: str | None = None
        self._batch: list[TrialRequest] = []
        self._told: dict[str, TrialResult] = {}
        self._issued: dict[str, TrialRequest] = {}
        self._scores: dict[str, list[float]] = {}
        self._slots: dict[str, dict[tuple[int, int], float]] = {}
        self._censored: dict[str, int] = {}
        self._failed: dict[str, int] = {}
        self._steps: dict[str, list[tuple[float, bool]]] = {}
        self._cold: list[float] = []
        self._standings: dict[tuple, Standing] = {}

    @property
    def done(self) -> bool:
        """True once :meth:`ask` has returned nothing."""
        return self.stop_reason is not None

    @property
    def cold_start_s(self) -> float:
        """Expected cold start of the next trial: the upper median of those measured (with two, the larger:
        the first trial of a run also starts the fork server), else the prior."""
        return sorted(self._cold)[len(self._cold) // 2] if self._cold else self.cold_start_prior_s

    def cap_of(self, key: str) -> float:
        """Cap on one trial's training seconds (:attr:`TrialRequest.max_wall_s`)."""
        return float(self._cap_s.get(key, self.trial_s))

    def cost_s(self, key: str) -> float:
        """Budget seconds one more trial of ``key`` is expected to cost: its training plus the cold start."""
        return float(self._training_s.get(key, self.trial_s)) + self.cold_start_s

    def batch_cost_s(self, keys: Iterable[str]) -> float:
        """Budget seconds a batch of trials of these configurations is expected to cost."""
        return sum(self.cost_s(k) for k in keys)

    def set_budget(self, budget_s: float, training_s: Mapping[str, float], cap_s: Mapping[str, float]) -> None:
        """What the stage may charge and each configuration's expected training and cap, once the budget's
        plan is made (before its first ask)."""
        self.budget_s, self._training_s, self._cap_s = float(budget_s), dict(training_s), dict(cap_s)

    def requests(self) -> list[TrialRequest]:
        """Every request issued so far, in the order asked."""
        return list(self._issued.values())

    @property
    def remaining_s(self) -> float:
        """Budget seconds not yet charged."""
        return self.budget_s - self.spent_s

    def fits(self, keys: Sequence[str]) -> bool:
        """Whether trials of ``keys`` (one each, repeats allowed) fit in what is left of the budget."""
        return self.batch_cost_s(keys) <= self.remaining_s + 1e-9

    def ask(self) -> list[TrialRequest]:
        """The requests to run now (see the class docstring)."""
        if self.done:
            return []
        pending = [r for r in self._batch if r.request_id not in self._told]
        if pending:
            return pending
        if self._batch:
            self._close()
            self._batch = []
        if not self.done:
            self._batch = self._next_batch()
            self._issued.update((r.request_id, r) for r in self._batch)
            if not self._batch and not self.done:
                self.stop_reason = "nothing to run"
        return list(self._batch)

    def tell(self, results: Iterable[TrialResult]) -> None:
        """Record results of requests this stage issued (an unknown or repeated id is the driver's bug)."""
        for res in results:
            req = self._issued.get(res.request_id)
            if req is None:
                raise ValueError(f"result for {res.request_id!r}, which this {self.stage} never asked for")
            if res.request_id in self._told:
                raise ValueError(f"result for {res.request_id!r} told twice")
            self._told[res.request_id] = res
            self.spent_s += res.charged_s
            self.trials_run += 1
            if res.cold_start_s > 0:
                self._cold.append(res.cold_start_s)
            s = score(self.objective, res)
            if s is None:
                self._failed[req.candidate_key] = self._failed.get(req.candidate_key, 0) + 1
            else:
                self._scores.setdefault(req.candidate_key, []).append(s)
                self._slots.setdefault(req.candidate_key, {})[(req.rung, req.index)] = s
                if self.objective == "time_to_target" and not res.reached:
                    self._censored[req.candidate_key] = self._censored.get(req.candidate_key, 0) + 1
                if self.objective == "time_to_target" and res.env_steps is not None:
                    self._steps.setdefault(req.candidate_key, []).append((float(res.env_steps), res.reached))

    def replay(self, results: Iterable[TrialResult]) -> list[TrialRequest]:
        """Feed stored results back in the order they were asked; returns what is still to run."""
        stored = {r.request_id: r for r in results}
        while True:
            asked = self.ask()
            known = [stored[r.request_id] for r in asked if r.request_id in stored]
            if not known:
                return asked
            self.tell(known)

    def scores(self, key: str) -> list[float]:
        """The scores read so far for one configuration."""
        return list(self._scores.get(key, []))

    def slots(self, key: str) -> dict[tuple[int, int], float]:
        """One configuration's scores by the slot they were read in, (rung or round, index): the readings of
        one slot share a seed and ran back to back, so they pair."""
        return dict(self._slots.get(key, {}))

    def env_steps(self, key: str) -> list[tuple[float, bool]]:
        """(env steps, reached) of one configuration's time-to-target readings so far."""
        return list(self._steps.get(key, []))

    def standing_of(self, key: str, cpus: float, gpus: float) -> Standing:
        """One configuration's :class:`Standing` over every reading so far (kept until the next reading or failure:
        the race asks for it several times a round, and each is a bootstrap)."""
        scores, censored, failed = self._scores.get(key, []), self._censored.get(key, 0), self._failed.get(key, 0)
        memo = (key, cpus, gpus, len(scores), censored, failed)  # readings are only ever appended
        if memo not in self._standings:
            self._standings[memo] = standing(key, cpus, gpus, scores, censored, failed)
        return self._standings[memo]

    def _request(self, key: str, rung: int, index: int) -> TrialRequest:
        return TrialRequest(
            f"{self.stage}/r{rung}/i{index}/{key}",
            key,
            self.stage,
            rung,
            index,
            derive_seed(self.seed, self.stage, rung, index, sequence="request"),
            self.cap_of(key),
        )

    def _close(self) -> None:
        """Judge the batch just completed (the subclass's rule)."""

    def _next_batch(self) -> list[TrialRequest]:
        """The next batch, or [] after setting :attr:`stop_reason`."""
        raise NotImplementedError
