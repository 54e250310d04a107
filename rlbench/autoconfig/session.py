"""One autoconfig run as a sequence of stages over a runner: probe, plan, search, race, answer.

The whole run's decisions live here, pure: which trials to ask for, when the budget's edge stops a
stage, what the plan buys (:mod:`rlbench.autoconfig.plan`), how many entrants the race takes. What a
trial *is* belongs to the :class:`Runner`: the sweep's machinery (``rlbench.run.autoconfig_driver``) runs
real isolated trials and reads them back from their files; the property test
(tests/autoconfig/test_autoconfig_property.py) runs simulated ones on a simulated clock, so the same
code is checked over hundreds of spaces and budgets in seconds.

Resume: every decision that depends on the clock (the plan, the race's budget and entrants) is made
once and kept in :attr:`Session.decided`, which the runner saves; a new session given the saved
decisions and the stored results (:meth:`Runner.stored`) reaches the same state without running a
finished trial again.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from typing import Any, Generic, Protocol, TypeVar, cast

from rlbench.autoconfig.ask_tell import Stage, TrialRequest, TrialResult
from rlbench.autoconfig.decide import Answer, Race
from rlbench.autoconfig.model import Candidate, CostModel, ProbeCosts
from rlbench.autoconfig.plan import OVERSHOOT, BudgetPlan, TrialShape, minimum_budget_s, reserve_s, size_plan
from rlbench.autoconfig.search import SuccessiveHalving
from rlbench.autoconfig.section import AutoconfigSection

#: The shortest cap the budget's edge cuts a trial to (the edge check lets one start only when its
#: predicted cost fits, so a cut this short means the prediction was far off).
MIN_CAP_S = 0.1


class Runner(Protocol):
    """What the session needs of whoever runs its trials."""

    def elapsed_s(self) -> float:
        """Wall seconds the run has spent so far (earlier sessions of a resumed run included)."""

    def stored(self, request: TrialRequest) -> TrialResult | None:
        """The result of a request that finished before (a resume), else None."""

    def run(self, request: TrialRequest) -> TrialResult:
        """Run one trial and return its result (raises KeyboardInterrupt when interrupted)."""

    def probes(self, requests: Sequence[TrialRequest]) -> ProbeCosts | None:
        """The cost model's inputs from the finished probe trials (None: no steady iteration)."""

    def save(self, decided: dict[str, Any]) -> None:
        """Keep the session's decisions (they must survive a crash for a resume)."""

    def say(self, text: str, style: str = "") -> None:
        """Tell the user something, as it happens."""


class AheadRunner(Runner, Protocol):
    """A runner that starts a batch's new trials together before it runs them one at a time (issue 56: the walk's warm
    trials, :meth:`rlbench.run.autoconfig_driver.driver.Driver.ahead`); the session calls it where it has it."""

    def ahead(self, requests: Sequence[TrialRequest]) -> None:
        """The batch's requests not run yet, each capped as it would be now, in the order they will run."""


class BatchRunner(Runner, Protocol):
    """A runner that runs several trials at once (``--parallel``): the session sees it by a ``width`` above 1; a
    runner without ``width`` runs one at a time."""

    @property
    def width(self) -> int:
        """Trials it can run at once."""

    def run_many(self, requests: Sequence[TrialRequest]) -> list[TrialResult]:
        """Run the trials at once; their results in order."""


#: The runner a session is driven by: a walk's needs more than a search's (``WalkRunner``).
RunnerT = TypeVar("RunnerT", bound=Runner)


class ProbeStage(Stage):
    """The probes: one batch, the baseline first, each trial of the spec's shape (capped by the probe share)."""

    stage = "probe"

    def __init__(self, candidates: Sequence[Candidate], **kw):
        super().__init__(**kw)
        self.candidates = {c.key: c for c in candidates}
        self._asked = False

    def _next_batch(self) -> list[TrialRequest]:
        if self._asked:
            self.stop_reason = "probed"
            return []
        self._asked = True
        return [self._request(key, 0, i) for i, key in enumerate(self.candidates)]


@dataclass(frozen=True)
class Space:
    """What the session searches."""

    candidates: Mapping[str, Candidate]
    """key -> configuration: every runnable grid point, and the baseline."""
    searched: Sequence[str]
    """Keys of the grid points the search starts from (grid order)."""
    baseline_key: str
    """The configuration to beat."""
    second_probe: str | None = None
    """The configuration probed beside the baseline (another ``num_envs_per_env_runner`` or minibatch step count, the
    learner on the same device), or None."""
    device_probe: str | None = None
    """The configuration probed for the other learner device (a GPU learner beside a CPU baseline, or the reverse),
    or None when every configuration's learner is on the baseline's."""


@dataclass
class Session(Generic[RunnerT]):
    """One autoconfig run: call :meth:`run` with a :class:`Runner`."""

    space: Space
    """The configurations and the baseline."""
    section: AutoconfigSection
    """How to search (the spec's ``autoconfig:`` section, flags applied)."""
    budget_s: float
    """Seconds for the whole run."""
    shape: TrialShape
    """How long a trial trains."""
    cold_start_s: float
    """Expected seconds of a trial outside its training (process, runtime, build, shutdown) until measured."""
    decided: dict[str, Any] = field(default_factory=dict)
    """Decisions made so far (saved by the runner; a resume passes them back)."""
    probe_stage: ProbeStage | None = None
    search: SuccessiveHalving | None = None
    race: Race | None = None
    model: CostModel | None = None
    plan: BudgetPlan | None = None
    _cold: list[float] = field(default_factory=list)
    _iteration_s: list[float] = field(default_factory=list)

    @property
    def reserve_s(self) -> float:
        """Seconds kept for the tables, the report and the outputs."""
        return reserve_s(self.budget_s)

    @property
    def hard_edge_s(self) -> float:
        """No trial starts that would end past this (budget + 10%, less the reserve)."""
        return self.budget_s * (1 + OVERSHOOT) - self.reserve_s

    # -- the run

    def run(self, runner: RunnerT) -> Answer:
        """Probe, plan, search, race; returns the answer (the outputs are the runner's)."""
        self._probe(runner)
        self._search(runner)
        self._race_finalists(runner)
        return self.answer()

    def answer(self) -> Answer:
        """The answer so far: the race's readings, else the search's, else the probes'."""
        assert self.race is not None, "the race has run"
        return self.race.answer(fallbacks=[s for s in (self.search, self.probe_stage) if s is not None])

    def minimum_budget_s(self) -> float:
        """The smallest budget that can answer, from the spec's trial and the cold-start prior (before any
        trial): the probes, then the baseline against one other for ``min_rounds`` rounds."""
        training = self.shape.limit_s or 0.0  # iterations only: unknown before a probe, so at least 0 s
        probes = [self.cold_start_s + training] * len(self._probe_keys())
        return minimum_budget_s(probes, self.cold_start_s + training, self.section.min_rounds)

    # -- stages

    def _probe_keys(self) -> list[str]:
        return list(
            dict.fromkeys(k for k in (self.space.baseline_key, self.space.second_probe, self.space.device_probe) if k)
        )

    def _probe_cap_s(self) -> float:
        """A probe trains the spec's trial, but no longer than one trial of the smallest plan could (the
        budget less the reserve, shared by the probes and ``min_rounds`` rounds of two, less a cold start):
        a spec whose trial outlasts the budget is then still measured, and the answer says what it needs."""
        trials = len(self._probe_keys()) + 2 * self.section.min_rounds
        fair = max(1.0, (self.budget_s - self.reserve_s) / trials - self.cold_start_s)
        limit = self.shape.limit_s
        return fair if limit is None else min(limit, fair)

    def _probe(self, runner: Runner) -> None:
        keys = self._probe_keys()
        cap = self._probe_cap_s()
        self.probe_stage = ProbeStage(
            [self.space.candidates[k] for k in keys],
            objective=self.section.objective,
            budget_s=math.inf,
            trial_s=cap,
            cold_start_s=self.cold_start_s,
            seed=self.section.seed,
        )
        self._drive(self.probe_stage, runner)
        if "probes" not in self.decided:
            probes = runner.probes(self.probe_stage.requests())
            self.decided["probes"] = probes
            runner.save(self.decided)
            if probes is None:
                runner.say("probe: the baseline gave no steady iteration; searching without the cost model", "yellow")
        probes = self.decided["probes"]
        self.model = CostModel(probes) if probes is not None else None

    def _costs(self, keys: Sequence[str]) -> tuple[dict[str, float], dict[str, float]]:
        """(training seconds, cap) per key: the model's predicted iteration, else the probes' measured one."""
        measured = statistics.median(self._iteration_s) if self._iteration_s else None
        training, cap = {}, {}
        for key in keys:
            p = self.model.predict(self.space.candidates[key]) if self.model is not None else None
            it = p.iteration_s if p is not None else measured
            t, c = self.shape.training_s(it), self.shape.cap_for(it)
            training[key] = t if t is not None else (c if c is not None else self._probe_cap_s())
            cap[key] = c if c is not None else max(training[key], self._probe_cap_s())
        return training, cap

    @property
    def cold_estimate_s(self) -> float:
        """A trial's seconds outside training as measured so far (the upper median: with two, the larger; the
        first trial of a run also starts the fork server), else the prior."""
        return sorted(self._cold)[len(self._cold) // 2] if self._cold else self.cold_start_s

    def _search(self, runner: Runner) -> None:
        k = self.section
        cands = [self.space.candidates[key] for key in self.space.searched]
        self.search = SuccessiveHalving(
            cands,
            objective=k.objective,
            budget_s=0.0,
            trial_s=self._probe_cap_s(),
            cold_start_s=self.cold_estimate_s,
            seed=k.seed,
            eta=k.eta,
            first_rung_readings=max(1, k.first_rung_readings),
            finalists=k.finalists,
            model=self.model,
            protect=[self.space.baseline_key],
        )
        for e in self.search.eliminations:
            runner.say(f"search: {e.key} dropped by the cost model, not run in the search ({e.detail})", "dim")
        if "plan" not in self.decided:
            ranked = self.search.by_model()
            training, cap = self._costs([*ranked, self.space.baseline_key])
            cost = {key: training[key] + self.cold_estimate_s for key in training}
            left = max(0.0, self.budget_s - self.reserve_s - runner.elapsed_s())
            plan = size_plan(
                ranked,
                self.space.baseline_key,
                cost,
                left,
                search_cap_s=k.search_cap_s(self.budget_s),
                first_rung_readings=max(1, k.first_rung_readings),
                finalists=k.finalists,
                min_rounds=k.min_rounds,
            )
            self.decided["plan"] = {"plan": plan, "training_s": training, "cap_s": cap}
            runner.save(self.decided)
            runner.say(
                f"plan: a trial costs about {plan.trial_cost_s:.3g} s here ({self.cold_estimate_s:.3g} s of it cold "
                f"start and shutdown, measured by the probes); {left:.0f} s buy about {plan.trials} trials: "
                f"{plan.words}"
            )
        decided = self.decided["plan"]
        self.plan = plan = decided["plan"]
        s = self.search
        s.set_budget(plan.search_budget_s, decided["training_s"], decided["cap_s"])
        s.restrict(
            plan.measured if plan.readings else [k for k in plan.race if k in s.candidates],
            plan.readings or 1,
            f"the budget's plan ({plan.step})",
            finalists=0 if plan.step == "smallest" else None,
        )
        if not plan.readings:
            s.stop_reason = (
                f"the plan races {len(plan.race) - 1} configurations and the baseline directly ({plan.step})"
            )
        self._drive(s, runner)
        runner.say(f"search: {s.stop_reason}; survivors: {', '.join(c.key for c in s.survivors) or '-'}")

    def _race_finalists(self, runner: Runner) -> None:
        k, s = self.section, self.search
        assert s is not None, "the search has run"
        decided = self.decided["plan"]
        baseline = self.space.candidates[self.space.baseline_key]
        if "race" not in self.decided:
            left = max(0.0, self.budget_s - self.reserve_s - runner.elapsed_s())
            self.decided["race"] = {"budget_s": left, "entrants": self._entrants(left)}
            runner.save(self.decided)
        race = self.decided["race"]
        finalists = s.handover(race["entrants"] - 1, keep=self.space.baseline_key)
        self.race = Race(
            finalists,
            baseline,
            objective=k.objective,
            budget_s=race["budget_s"],
            trial_s=s.trial_s,
            cold_start_s=self.cold_estimate_s,
            seed=k.seed,
            min_rounds=k.min_rounds,
            max_rounds=k.max_rounds,
            threshold=k.tolerance_pct / 100.0,
            training_s=decided["training_s"],
            cap_s=decided["cap_s"],
        )
        self._drive(self.race, runner)
        for e in self.race.left:
            runner.say(f"race: {e.key} left after round {e.rung} ({e.detail})", "dim")
        partial = f" ({self.race.partial_rounds} partial)" if self.race.partial_rounds else ""
        runner.say(f"race: {self.race.round + 1} rounds{partial}; {self.race.stop_reason}")

    def _entrants(self, left_s: float) -> int:
        """How many entrants (the baseline included) the race takes: the plan's, or as many of the search's
        best survivors as ``min_rounds`` rounds fit in ``left_s``, up to the finalists, at least one."""
        s, k, base = self.search, self.section, self.space.baseline_key
        assert s is not None and self.plan is not None, "the search has run"
        if self.plan.race:
            return len(self.plan.race)
        others = sorted(
            (c.key for c in s.survivors if c.key != base), key=lambda key: -(s.standing_of(key, 0, 0).median or 0.0)
        )
        n = min(k.finalists, len(others))
        while n > 1 and k.min_rounds * s.batch_cost_s([*others[:n], base]) > left_s:
            n -= 1
        return n + 1

    def _drive(self, stage: Stage, runner: Runner) -> None:
        """ask -> run -> tell until the stage is done; stored results are told again first (a resume), and
        no trial starts that would end past the hard edge. A runner that runs several at once (``width``
        above 1) gets a batch's requests ``width`` at a time."""
        width = int(getattr(runner, "width", 1))
        pending = stage.ask()
        while pending:
            if width > 1:
                if not self._drive_at_once(stage, cast(BatchRunner, runner), pending, width):
                    return
                pending = stage.ask()
                continue
            stored = {req.request_id: runner.stored(req) for req in pending}
            ahead = getattr(runner, "ahead", None)
            if ahead is not None:  # the batch's new trials started together (:class:`AheadRunner`)
                elapsed = runner.elapsed_s()
                fits = [
                    c
                    for req in pending
                    if stored[req.request_id] is None and (c := self._capped(stage, req, elapsed, say=False))
                ]
                ahead(fits)
            for req in pending:
                result = stored[req.request_id]
                if result is None:
                    capped = self._capped(stage, req, runner.elapsed_s())
                    if capped is None:
                        return
                    result = runner.run(capped)
                self._tell(stage, result)
            pending = stage.ask()

    def _drive_at_once(self, stage: Stage, runner: BatchRunner, pending: list[TrialRequest], width: int) -> bool:
        """One batch, ``width`` trials at a time (each one's cap and the hard edge as one at a time: they start
        together, so each must end before the edge on its own); False when the budget stopped the stage."""
        todo = []
        for req in pending:
            result = runner.stored(req)
            if result is not None:
                self._tell(stage, result)
            else:
                todo.append(req)
        for start in range(0, len(todo), width):
            group, elapsed = [], runner.elapsed_s()
            for req in todo[start : start + width]:
                capped = self._capped(stage, req, elapsed)
                if capped is None:
                    break
                group.append(capped)
            for result in runner.run_many(group) if group else []:
                self._tell(stage, result)
            if stage.stop_reason is not None and len(group) < len(todo[start : start + width]):
                return False
        return True

    def _capped(self, stage: Stage, req: TrialRequest, elapsed: float, *, say: bool = True) -> TrialRequest | None:
        """``req`` with its cap cut so that it ends before the hard edge (a slower trial than predicted is cut there,
        with its reading); None when it would pass the edge at its expected cost, the stage's stop reason said
        (``say``; not for a look ahead: the request is asked again when its turn comes)."""
        need = stage.cost_s(req.candidate_key)
        if elapsed + need > self.hard_edge_s:
            if say:
                stage.stop_reason = stage.stop_reason or (
                    f"budget: {elapsed:.0f} s spent, the next trial (about {need:.0f} s) would pass the "
                    f"budget + {OVERSHOOT:.0%}"
                )
            return None
        left = self.hard_edge_s - elapsed - stage.cold_start_s
        return replace(req, max_wall_s=min(req.max_wall_s, max(MIN_CAP_S, left)))

    def _tell(self, stage: Stage, result: TrialResult) -> None:
        stage.tell([result])
        if result.cold_start_s > 0:
            self._cold.append(result.cold_start_s)
        if result.iteration_s is not None:
            self._iteration_s.append(result.iteration_s)


def dump_decided(decided: dict[str, Any]) -> dict[str, Any]:
    """The decisions as JSON-ready data (for the runner's state file)."""
    out = dict(decided)
    if "probes" in out:
        out["probes"] = None if out["probes"] is None else asdict(out["probes"])
    if "plan" in out:
        out["plan"] = {**out["plan"], "plan": asdict(out["plan"]["plan"])}
    return out


def load_decided(data: dict[str, Any]) -> dict[str, Any]:
    """The decisions back from :func:`dump_decided`'s data."""
    out = dict(data)
    if "probes" in out and out["probes"] is not None:
        p = out["probes"]
        out["probes"] = ProbeCosts(
            **{
                **p,
                "env_steps_s": tuple((str(k), float(v)) for k, v in p.get("env_steps_s") or ()),
                "unmeasured_envs": tuple(str(k) for k in p.get("unmeasured_envs") or ()),
            }
        )
    if "plan" in out:
        plan = out["plan"]["plan"]
        out["plan"] = {
            **out["plan"],
            "plan": BudgetPlan(**{**plan, **{f: tuple(plan[f]) for f in ("measured", "not_measured", "race")}}),
        }
    return out
