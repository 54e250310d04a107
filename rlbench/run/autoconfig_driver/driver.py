"""The autoconfig driver: the session's trials run as real isolated trials, within a budget.

The decisions are the session's (:class:`rlbench.autoconfig.session.Session`: probe, plan, search, race);
this module is its :class:`~rlbench.autoconfig.session.Runner`. It runs what the session asks as trials
of the sweep's machinery (:class:`rlbench.run.batches.TrialBatches`: one results folder, the usual
per-trial files and tables, with ``phase``, ``rung`` and ``round`` in each plan), charges each what it
cost as measured from outside (process start, Ray, build, env ceilings, shutdown included), reads each
back from its files, and keeps the state a resume needs.

Resume: ``autoconfig_state.json`` maps requests to trial ids and keeps the session's decisions; a finished
trial's result is read back from its folder (:meth:`Driver.stored`), so no finished trial runs again.
"""

from __future__ import annotations

import shutil
import tempfile
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from rlbench.adapters import get_adapter
from rlbench.analysis.walk_rows import configuration_rows
from rlbench.autoconfig.ask_tell import TrialRequest, TrialResult
from rlbench.autoconfig.decide import Answer
from rlbench.autoconfig.model import Candidate, Observation, ProbeCosts, candidate_key
from rlbench.autoconfig.outputs import AutoconfigResult, write_outputs
from rlbench.autoconfig.session import Session
from rlbench.autoconfig.walk.outputs import walk_result
from rlbench.autoconfig.walk.session import WalkSession
from rlbench.planning.plan import TrialPlan
from rlbench.results.layout import ResultsFolder
from rlbench.results.lock import OutDirError
from rlbench.results.text import plain
from rlbench.run.autoconfig_driver.space import Setup, candidate, plan_point
from rlbench.run.autoconfig_driver.trial_files import State, env_steps_from, probes_of, read_result, request_plan
from rlbench.run.batches import RunContext, TrialBatches
from rlbench.run.ceilings import measure_env_ceilings
from rlbench.spec.load import axis_column


@dataclass
class Outcome:
    """What an autoconfig run produced."""

    answer: Answer | None
    """The answer (None when interrupted before it)."""
    result: AutoconfigResult | None
    """What the outputs were written from."""
    interrupted: bool
    """Ctrl-C (or SIGTERM/SIGHUP) stopped it: ``--resume`` continues."""
    trials_run_now: int
    """Trials this invocation ran (a resume reads the rest back)."""
    elapsed_s: float
    """Wall seconds spent, earlier sessions of a resumed run included."""


class _Interrupted(Exception):
    pass


class Driver:
    """One autoconfig run into ``out_dir``: call :meth:`run`."""

    def __init__(self, setup: Setup, out_dir: Path, context: RunContext, *, started_s: float | None = None):
        """``started_s``: ``time.monotonic()`` when the command started (the budget counts from there)."""
        self.setup, self.console, self.resume = setup, context.console, context.resume
        self.folder = ResultsFolder(Path(out_dir))
        self.batches = TrialBatches(setup.loaded, Path(out_dir), context)
        self.section, self.budget_s = setup.section, setup.budget_s
        self.state = State(self.folder)
        self.session: Session = setup.session()
        self.ran = 0
        self._t0 = time.monotonic() if started_s is None else started_s
        self._elapsed_before = 0.0
        self._warm: dict[str, str] = {}  # a point's key -> its warm trial kept in the batches' pool
        self._ahead: dict[str, str] = {}  # a request's id -> the warm trial launched ahead for it

    # -- the Runner the session drives

    def elapsed_s(self) -> float:
        return self._elapsed_before + time.monotonic() - self._t0

    def stored(self, request: TrialRequest) -> TrialResult | None:
        t = self.state.trials.get(request.request_id)
        if t is None:
            return None
        return read_result(
            self.folder, t["trial_id"], request.request_id, self.section.objective, t.get("charged_s"), t.get("window")
        )

    def run(self, request: TrialRequest) -> TrialResult:
        """Run one requested trial; returns its result (a failure has no value)."""
        if self.section.warm_windows and request.stage == "walk":
            return self._run_warm(request)
        tid = self.state.assign(request.request_id, self.setup.templates[request.candidate_key].index)
        plan = self._request_plan(request, tid)
        t = time.monotonic()
        outcome = self.batches.run([plan])
        charged = time.monotonic() - t
        if outcome.interrupted:
            raise _Interrupted
        self.ran += 1
        self.state.trials[request.request_id]["charged_s"] = charged
        self.state.data["elapsed_s"] = self.elapsed_s()
        self.state.save()
        result = read_result(self.folder, tid, request.request_id, self.section.objective, charged)
        # no verdict although the sweep was not interrupted: count it failed
        return result or TrialResult(request.request_id, None, 0.0, charged)

    def _run_warm(self, request: TrialRequest) -> TrialResult:
        """A walk's reading as the next window of its point's warm trial (issue 56, ``warm_windows``): the one kept
        for the point while it has a window left, else a new trial launched. Charged from its gate's opening (a new
        trial: its launch) to the window's end."""
        key = request.candidate_key
        template = self.setup.templates[key]
        tid = self._ahead.pop(request.request_id, None)  # launched ahead (:meth:`ahead`): read even if it failed
        launch = tid is None and not self._kept(key)
        if launch:
            tid = self._warm[key] = self.state.assign_new(request.request_id, template.index, self.folder)
        elif tid is None:
            tid = self._warm[key]
            self.state.trials[request.request_id] = {"trial_id": tid, "charged_s": None}
        plan = self._request_plan(request, tid, launch=launch).in_windows(self.section.warm_windows)
        try:
            read = self.batches.warm_read(plan)
        except KeyboardInterrupt:
            raise _Interrupted from None
        self.ran += 1
        self.state.trials[request.request_id].update(charged_s=read.charged_s, window=read.window)
        self.state.data["elapsed_s"] = self.elapsed_s()
        self.state.save()
        result = read_result(self.folder, tid, request.request_id, self.section.objective, read.charged_s, read.window)
        return result or TrialResult(request.request_id, None, 0.0, read.charged_s)

    def _kept(self, key: str) -> bool:
        """Whether point ``key`` has a warm trial kept with a window left to read."""
        tid = self._warm.get(key)
        return tid is not None and self.batches.holds(tid)

    def ahead(self, requests: Sequence[TrialRequest]) -> None:
        """Launch together the new warm trials a batch of walk requests will read (issue 56): each request whose point
        has no kept trial gets its trial now, started up to its first window beside the others
        (:meth:`TrialBatches.warm_launch`), and :meth:`run` reads it then. Nothing for other stages, cold readings or
        a single new trial (it launches as it is read)."""
        if not self.section.warm_windows:
            return
        new: dict[str, TrialRequest] = {}
        for request in requests:
            key = request.candidate_key
            if request.stage == "walk" and not self._kept(key):
                new.setdefault(key, request)
        if len(new) < 2:
            return
        plans = {}
        for key, request in new.items():
            tid = self.state.assign_new(request.request_id, self.setup.templates[key].index, self.folder)
            plans[key] = self._request_plan(request, tid, launch=True).in_windows(self.section.warm_windows)
        try:
            launched = set(self.batches.warm_launch(list(plans.values())))
        except KeyboardInterrupt:
            raise _Interrupted from None
        for key, plan in plans.items():
            request_id = new[key].request_id
            if plan.trial_id in launched:
                self._ahead[request_id] = self._warm[key] = plan.trial_id
            else:  # no room in the pool: launched as it is read
                del self.state.trials[request_id]
        self.state.save()

    @property
    def width(self) -> int:
        """Trials it runs at once: ``--parallel``'s (the session then hands it batches, :meth:`run_many`), else 1."""
        return self.batches.parallel.width if self.batches.parallel is not None else 1

    def run_many(self, requests: Sequence[TrialRequest]) -> list[TrialResult]:
        """Run requested trials at once (``--parallel``), each on nodes of its own; their results in order, each
        charged its own trial's wall (launch to exit), the sweep's overhead around them not."""
        plans = []
        for request in requests:
            tid = self.state.assign(request.request_id, self.setup.templates[request.candidate_key].index)
            plans.append(self._request_plan(request, tid))
        outcome = self.batches.run(plans)
        if outcome.interrupted:
            raise _Interrupted
        walls = {r.trial_id: r.trial_wall_s for r in outcome.records if r is not None}
        results = []
        for request, plan in zip(requests, plans):
            self.ran += 1
            charged = walls.get(plan.trial_id) or 0.0
            self.state.trials[request.request_id]["charged_s"] = charged
            result = read_result(self.folder, plan.trial_id, request.request_id, self.section.objective, charged)
            results.append(result or TrialResult(request.request_id, None, 0.0, charged))
        self.state.data["elapsed_s"] = self.elapsed_s()
        self.state.save()
        return results

    def probes(self, requests: Sequence[TrialRequest]) -> ProbeCosts | None:
        plans = {r.candidate_key: self._plan_of(r) for r in requests}
        space = self.setup.space
        probes = probes_of(
            self.folder,
            plans[space.baseline_key],
            plans.get(space.second_probe or ""),
            plans.get(space.device_probe or ""),
        )
        if probes is None:
            return None
        measured, unmeasured = self._other_env_steps()
        return replace(probes, env_steps_s=measured, unmeasured_envs=unmeasured)

    def save(self, decided: dict[str, Any]) -> None:
        self.state.keep(decided)

    def row(self, key: str) -> dict[str, Any] | None:
        """The walk's point ``key`` as the analysis reads it over every reading it has (its configuration row). A
        row is read over finished trials: where the point's warm trial is still kept with windows left, the row is
        read from a copy of the folder in which that trial has ended now (:meth:`TrialBatches.snapshot`), and the
        trial stays built for the next step's race, which would otherwise launch the current point again (a
        launch of 14-22 s against windows of 2-3 s: the shared_cores_limit walk, 2026-11-30). Every other point's
        kept trial ends here: the walk reads a row as it plans a step from ``key``, and the last step's other
        entrants are not raced from it (kept, they sat beside every window: 3.2 of them, 0.14 of a core)."""
        others = [k for k in self._warm if k != key]
        self.batches.retire(*(self._warm.pop(k) for k in others))
        tid = self._warm.get(key)
        if tid is not None and self.batches.holds(tid):
            with tempfile.TemporaryDirectory(prefix="rlbench-row-") as tmp:
                copy = Path(tmp) / "out"
                shutil.copytree(self.folder.path, copy, symlinks=True, ignore=shutil.ignore_patterns("plots"))
                self.batches.snapshot(tid, ResultsFolder(copy).trial(tid))
                frame = configuration_rows(copy)
        else:
            self._warm.pop(key, None)
            frame = configuration_rows(self.folder.path)
        index = self.setup.templates[key].index
        hit = frame[frame["index"] == index] if len(frame) else frame
        return None if hit.empty else hit.iloc[0].to_dict()

    def point(self, axes: Mapping[str, Any]) -> Candidate | str:
        """The walk's point of these axis values, planned on this machine (a new one takes the next free grid index,
        in the order asked), or why it cannot run; a configuration already planned comes back as itself."""
        setup = self.setup
        key = candidate_key(axes)
        if key in setup.candidates:
            return setup.candidates[key]
        plan = plan_point(setup, dict(axes))
        if isinstance(plan, str):
            return plan
        same = next((k for k, t in setup.templates.items() if t.config == plan.config), None)
        if same is not None:
            return setup.candidates[same]
        index = max(t.index for t in setup.templates.values()) + 1
        template = plan.model_copy(update={"index": index, "axes": {axis_column(a): v for a, v in axes.items()}})
        setup.templates[key] = template
        setup.candidates[key] = candidate(template, dict(axes))
        return setup.candidates[key]

    def say(self, text: str, style: str = "") -> None:
        from rich.text import Text

        self.console.print(Text(plain(text), style=style), soft_wrap=True)

    # -- the run

    def _request_plan(self, request: TrialRequest, trial_id: str, launch: bool = False) -> TrialPlan:
        """The plan of a requested trial as ``trial_id``: its candidate's, stopped as the request and the shape say
        (``launch``: a warm trial's first window, :func:`request_plan`)."""
        return request_plan(
            self.setup.templates[request.candidate_key],
            trial_id,
            request,
            stop_iterations=self.setup.shape.stop_iterations,
            stop_seconds=request.max_wall_s,
            cold_start_s=self.session.cold_estimate_s,
            objective=self.section.objective,
            launch=launch,
        )

    def _plan_of(self, request: TrialRequest) -> TrialPlan:
        tid = self.state.trials[request.request_id]["trial_id"]
        return self.setup.templates[request.candidate_key].model_copy(update={"trial_id": tid})

    def _other_env_steps(self) -> tuple[tuple[tuple[str, float], ...], tuple[str, ...]]:
        """Each other env or ``env_config`` of the search space stepped alone (envbench's ceiling, as the
        sweep measures the baseline's): the model then predicts a grid over ``env_config`` apart."""
        base = self.setup.candidates[self.setup.baseline_key].env_id
        firsts: dict[str, TrialPlan] = {}
        for key in self.setup.searched:
            if (env := self.setup.candidates[key].env_id) != base:
                firsts.setdefault(env, self.setup.templates[key])
        if not firsts:
            return (), ()
        measure_env_ceilings(self.folder, list(firsts.values()), self.setup.loaded.spec, self.console)
        return env_steps_from(self.folder, firsts)

    def _check_state(self) -> None:
        try:
            old = State.read(self.folder)
        except ValueError as e:
            raise OutDirError(str(e)) from None
        s = self.section
        mine = {"objective": s.objective, "budget_s": self.budget_s, "seed": s.seed, "trial_s": s.trial_s}
        if old is None:
            if self.resume and self.folder.holds_sweep():
                raise OutDirError(f"{self.folder.path} holds no autoconfig run to resume (no autoconfig_state.json)")
            self.state.data.update(mine)
            return
        differ = [f"{k}: {old.data.get(k)} -> {v}" for k, v in mine.items() if old.data.get(k) != v]
        if differ:
            raise OutDirError(
                f"{self.folder.path} was started with other settings ({'; '.join(differ)}): resume it "
                "with the same spec, --budget and --objective, or choose another --out"
            )
        self.state = old
        self.session.decided = old.decided
        self._elapsed_before = float(old.data.get("elapsed_s") or 0.0)

    def run_all(self) -> Outcome:
        """Probe, plan, search, race, write the outputs; stops cleanly on Ctrl-C (the state is kept)."""
        self.batches.open()  # the folder checked (links, format, spec, machine, software) before its state is read
        self._check_state()
        answer = result = None
        interrupted = False
        with self.batches:
            try:
                answer = self.session.run(self)
                result = self._outputs(answer)
            except (_Interrupted, KeyboardInterrupt):
                interrupted = True
            finally:
                self.state.data["elapsed_s"] = self.elapsed_s()
                self.state.save()
        return Outcome(answer, result, interrupted, self.ran, self.elapsed_s())

    def _outputs(self, answer: Answer) -> AutoconfigResult:
        session, setup = self.session, self.setup
        if isinstance(session, WalkSession):
            return self._write(answer, walk_result(session, answer, setup.candidates, self.elapsed_s(), setup.shape))
        observations = []  # every trial run, in the order run (this session's and earlier ones')
        for request_id, t in self.state.trials.items():
            key = request_id.split("/", 3)[3]
            r = read_result(self.folder, t["trial_id"], request_id, self.section.objective, t.get("charged_s"))
            if r is not None and r.iteration_s is not None and key in setup.candidates:
                observations.append(Observation(setup.candidates[key], r.iteration_s))
        # the outputs are written once session.run has made every stage
        assert session.search is not None and session.race is not None and session.probe_stage is not None
        model = session.model
        rows = model.refit(observations).predicted_vs_measured(observations) if model else []
        result = AutoconfigResult(
            objective=self.section.objective,
            answer=answer,
            candidates=setup.candidates,
            eliminations=session.search.eliminations,
            trials_run=session.search.trials_run + session.race.trials_run,
            wall_s=self.elapsed_s(),
            budget_s=self.budget_s,
            search_stop_reason=session.search.stop_reason,
            predicted_vs_measured=rows,
            plan=session.plan,
            trial=setup.shape.describe(),
            cold_start_s=session.cold_estimate_s,
            probe_trials=session.probe_stage.trials_run,
        )
        return self._write(answer, result)

    def _write(self, answer: Answer, result: AutoconfigResult) -> AutoconfigResult:
        chosen, snippet = answer.chosen_key, None
        if chosen:  # the answer as its framework's own code (None: a framework without code)
            best = self.setup.templates[chosen].config
            snippet = get_adapter(best.framework).config_snippet(best, chosen)
        write_outputs(self.folder.path, result, snippet=snippet, spec_data=self.setup.data)
        return result


def run_autoconfig(setup: Setup, out_dir: Path, *, context: RunContext, started_s: float | None = None) -> Outcome:
    """Run autoconfig into ``out_dir`` (see :class:`Driver`); raises OutDirError before writing anything
    when the folder cannot be used or holds another run."""
    return Driver(setup, out_dir, context, started_s=started_s).run_all()
