"""The autoconfig driver: probes, the search and the race, run as real isolated trials within a budget.

It drives the decision core (:mod:`rlbench.autoconfig`) through ask/tell and runs what it asks as
trials of the sweep's machinery (:class:`rlbench.run.sweep.TrialBatches`: one results folder, the
usual per-trial files and tables, with ``phase``, ``rung`` and ``round`` in each plan).

Budget: the whole run ends within ``budget_s`` + 10%. Each trial is capped (``trial_s`` of training,
killed at ``trial_s`` + a grace), and charged what it cost as measured from outside (process
start, Ray, build, env ceilings, shutdown included) to the stage that asked for it. A stage issues
a batch only if it fits its share; the search's share and the race's are decided when each starts,
from the wall time already spent, less a reserve for the tables and report at the end. Before each
trial the driver also checks the hard edge (budget + 10% less the reserve) and stops there.

Resume: ``autoconfig_state.json`` maps requests to trial ids and keeps each stage's arguments; the
results come back from the trial folders (:func:`rlbench.run.autoconfig_trials.read_result`) and
are replayed (:meth:`rlbench.autoconfig.trials.Stage.replay`), so no finished trial runs again.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, replace
from pathlib import Path

import psutil
from rich.console import Console

from rlbench.autoconfig.decide import Answer, Race
from rlbench.autoconfig.model import CostModel, Observation
from rlbench.autoconfig.outputs import AutoconfigResult, write_outputs
from rlbench.autoconfig.search import SuccessiveHalving
from rlbench.autoconfig.trials import Stage, TrialRequest, TrialResult, derive_seed
from rlbench.measure.machine import MachineInfo
from rlbench.results.layout import ResultsFolder
from rlbench.results.lock import OutDirError
from rlbench.results.text import plain
from rlbench.run.autoconfig_space import Setup
from rlbench.run.autoconfig_trials import (State, env_steps_from, probes_dict, probes_from, probes_of, read_result,
                                           request_plan)
from rlbench.run.ceilings import measure_env_ceilings
from rlbench.run.sweep import TrialBatches
from rlbench.spec.plan import TrialPlan

#: The run may overshoot its budget by this fraction, no more (issue 26).
OVERSHOOT = 0.10
#: Seconds kept for the tables, the report and the outputs at the end (a share of the budget, capped).
RESERVE_SHARE, RESERVE_MAX_S = 0.05, 60.0


@dataclass
class Outcome:
    """What an autoconfig run produced."""

    answer: Answer | None
    """The race's answer (None when interrupted before it)."""
    result: AutoconfigResult | None
    """What the outputs were written from."""
    interrupted: bool
    """Ctrl-C (or SIGTERM/SIGHUP) stopped it: ``--resume`` continues."""
    trials_run_now: int
    """Trials this invocation ran (a resume replays the rest)."""
    elapsed_s: float
    """Wall seconds spent, earlier sessions of a resumed run included."""


class _Interrupted(Exception):
    pass


class Driver:
    """One autoconfig run into ``out_dir``: call :meth:`run`."""

    def __init__(self, setup: Setup, out_dir: Path, *, console: Console, machine: MachineInfo,
                 argv: list[str] | None = None, cluster=None, resume: bool = False):
        self.setup, self.console, self.resume = setup, console, resume
        self.folder = ResultsFolder(Path(out_dir))
        self.batches = TrialBatches(setup.loaded, Path(out_dir), console=console, machine=machine, argv=argv,
                                    cluster=cluster, resume=resume)
        self.section, self.budget_s = setup.section, setup.budget_s
        self.reserve_s = min(RESERVE_MAX_S, RESERVE_SHARE * self.budget_s)
        self.state = State(self.folder)
        self.ran = 0
        self._t0 = time.monotonic()
        self._elapsed_before = 0.0

    # -- time

    def elapsed_s(self) -> float:
        return self._elapsed_before + time.monotonic() - self._t0

    def _left_s(self) -> float:
        """Seconds a stage may still charge: the budget less what was spent and the reserve."""
        return max(0.0, self.budget_s - self.reserve_s - self.elapsed_s())

    # -- the run

    def _check_state(self) -> None:
        old = State.read(self.folder)
        s = self.section
        mine = {"objective": s.objective, "budget_s": self.budget_s, "seed": s.seed, "trial_s": s.trial_s}
        if old is None:
            if self.resume and self.folder.holds_sweep():
                raise OutDirError(f"{self.folder.path} holds no autoconfig run to resume (no autoconfig_state.json)")
            self.state.data.update(mine)
            return
        differ = [f"{k}: {old.data.get(k)} -> {v}" for k, v in mine.items() if old.data.get(k) != v]
        if differ:
            raise OutDirError(f"{self.folder.path} was started with other settings ({'; '.join(differ)}): resume it "
                              "with the same spec, --budget and --objective, or choose another --out")
        self.state = old
        self._elapsed_before = float(old.data.get("elapsed_s") or 0.0)

    def run(self) -> Outcome:
        """Probe, search, race, write the outputs; stops cleanly on Ctrl-C (the state is kept)."""
        self._check_state()
        answer = result = None
        interrupted = False
        with self.batches:
            try:
                model = self._probe()
                search = self._search(model)
                race = self._race(search)
                answer = race.answer(fallback=search)
                result = self._outputs(search, race, model)
            except (_Interrupted, KeyboardInterrupt):
                interrupted = True
            finally:
                self.state.data["elapsed_s"] = self.elapsed_s()
                self.state.save()
        return Outcome(answer, result, interrupted, self.ran, self.elapsed_s())

    def _probe(self) -> CostModel | None:
        """A short trial of the baseline (and its env ceiling), and one at another ``num_envs_per_env_runner``
        when the grid varies it (the per-call inference cost): the cost model's inputs."""
        st, s = self.state.data, self.section
        if "probe" not in st:
            keys = [self.setup.baseline_key, *([k] if (k := self._second_probe()) else [])]
            cap = max(1.0, min(s.trial_s, self.budget_s * s.probe_share_pct / 100.0 / len(keys) - s.cold_start_s))
            plans = []
            for i, key in enumerate(keys):
                req = TrialRequest(f"probe/r0/i{i}/{key}", key, "probe", 0, i, derive_seed(s.seed, "probe", i), cap)
                self._run(req, "probe")
                tid = self.state.trials[req.request_id]["trial_id"]
                plans.append(self.setup.templates[key].model_copy(update={"trial_id": tid}))
            probes = probes_from(self.folder, plans[0], plans[1] if len(plans) > 1 else None)
            if probes is not None:
                probes = replace(probes, env_steps_s=self._other_env_steps())
            st["probe"] = {"keys": keys, "probes": probes_dict(probes)}
            self.state.save()
            if probes is None:
                self._say("probe: the baseline gave no steady iteration; searching without the cost model", "yellow")
        probes = probes_of(st["probe"]["probes"])
        return None if probes is None else CostModel(probes)

    def _other_env_steps(self) -> tuple[tuple[str, float], ...]:
        """Each other env or ``env_config`` of the search space stepped alone (envbench's ceiling, as the
        sweep measures the baseline's): the model then predicts a grid over ``env_config`` apart."""
        base = self.setup.candidates[self.setup.baseline_key].env_id
        firsts: dict[str, TrialPlan] = {}
        for key in self.setup.searched:
            if (env := self.setup.candidates[key].env_id) != base:
                firsts.setdefault(env, self.setup.templates[key])
        if not firsts:
            return ()
        spec = self.setup.loaded.spec
        measure_env_ceilings(self.folder, list(firsts.values()), spec.env_ceiling_s, self.console,
                             max_rss_bytes=spec.trial_memory_limit_bytes or psutil.virtual_memory().total // 4)
        return env_steps_from(self.folder, firsts)

    def _second_probe(self) -> str | None:
        """The searched configuration whose envs per runner differ most from the baseline's (the larger on a
        tie), the rest as alike as possible; None when the grid does not vary it."""
        base = self.setup.candidates[self.setup.baseline_key]
        others = [self.setup.candidates[k] for k in self.setup.searched
                  if self.setup.candidates[k].num_envs_per_env_runner != base.num_envs_per_env_runner]
        if not others:
            return None
        return max(others, key=lambda c: (abs(c.num_envs_per_env_runner - base.num_envs_per_env_runner),
                                          c.num_env_runners == base.num_env_runners, -c.cpus)).key

    def _search(self, model: CostModel | None) -> SuccessiveHalving:
        s, st = self.section, self.state.data
        if "search" not in st:
            st["search"] = {"budget_s": min(self.budget_s * s.search_share_pct / 100.0, self._left_s())}
            self.state.save()
        search = SuccessiveHalving([self.setup.candidates[k] for k in self.setup.searched], objective=s.objective,
                                   budget_s=st["search"]["budget_s"], trial_s=s.trial_s, cold_start_s=s.cold_start_s,
                                   seed=s.seed, eta=s.eta, first_rung_readings=s.first_rung_readings,
                                   finalists=s.finalists, model=model, protect=[self.setup.baseline_key])
        for e in search.eliminations:
            self._say(f"search: {e.key} dropped before any trial ({e.detail})", "dim")
        self._drive(search, "search")
        self._say(f"search: {search.stop_reason}; finalists: {', '.join(c.key for c in search.survivors)}")
        return search

    def _race(self, search: SuccessiveHalving) -> Race:
        s, st = self.section, self.state.data
        if "race" not in st:
            st["race"] = {"budget_s": self._left_s()}
            self.state.save()
        race = Race(search.survivors, self.setup.candidates[self.setup.baseline_key], objective=s.objective,
                    budget_s=st["race"]["budget_s"], trial_s=s.trial_s, cold_start_s=s.cold_start_s, seed=s.seed,
                    min_rounds=s.min_rounds, max_rounds=s.max_rounds, tolerance_pct=s.tolerance_pct)
        self._drive(race, "race")
        for e in race.left:
            self._say(f"race: {e.key} left after round {e.rung} ({e.detail})", "dim")
        partial = f" ({race.partial_rounds} partial)" if race.partial_rounds else ""
        self._say(f"race: {race.round + 1} rounds{partial}; {race.stop_reason}")
        return race

    def _stored(self) -> list[TrialResult]:
        out = []
        for request_id, t in self.state.trials.items():
            r = read_result(self.folder, t["trial_id"], request_id, self.section.objective, t.get("charged_s"))
            if r is not None:
                out.append(r)
        return out

    def _drive(self, stage: Stage, phase: str) -> None:
        """ask -> run -> tell until the stage is done, stored results replayed first."""
        pending = stage.replay(self._stored())
        hard_edge = self.budget_s * (1 + OVERSHOOT) - self.reserve_s
        while pending:
            for req in pending:
                if self.elapsed_s() + stage.trial_cost_s > hard_edge:
                    stage.stop_reason = stage.stop_reason or (f"budget: {self.elapsed_s():.0f} s spent, the next trial "
                                                              f"would pass budget + {OVERSHOOT:.0%}")
                    return
                stage.tell([self._run(req, phase)])
            pending = stage.ask()

    def _run(self, req: TrialRequest, phase: str) -> TrialResult:
        """Run one requested trial (or read it back, if it finished before a crash); returns its result."""
        s = self.section
        template = self.setup.templates[req.candidate_key]
        tid = self.state.assign(req.request_id, template.index)
        stored = read_result(self.folder, tid, req.request_id, s.objective, self.state.trials[req.request_id]["charged_s"])
        if stored is not None:
            return stored
        plan = request_plan(template, tid, phase=phase, request=None if phase == "probe" else req, seed=req.seed,
                            trial_s=req.max_wall_s, cold_start_s=s.cold_start_s, objective=s.objective)
        t = time.monotonic()
        outcome = self.batches.run([plan])
        charged = time.monotonic() - t
        if outcome.interrupted:
            raise _Interrupted
        self.ran += 1
        self.state.trials[req.request_id]["charged_s"] = charged
        self.state.data["elapsed_s"] = self.elapsed_s()
        self.state.save()
        result = read_result(self.folder, tid, req.request_id, s.objective, charged)
        if result is None:  # no verdict although the sweep was not interrupted: count it failed
            result = TrialResult(req.request_id, None, 0.0, charged)
        return result

    def _outputs(self, search: SuccessiveHalving, race: Race, model: CostModel | None) -> AutoconfigResult:
        observations = []  # every trial run, in the order run (this session's and earlier ones')
        for request_id, t in self.state.trials.items():
            key = request_id.split("/", 3)[3]
            r = read_result(self.folder, t["trial_id"], request_id, self.section.objective, t.get("charged_s"))
            if r is not None and r.iteration_s is not None and key in self.setup.candidates:
                observations.append(Observation(self.setup.candidates[key], r.iteration_s))
        rows = model.refit(observations).predicted_vs_measured(observations) if model else []
        answer = race.answer(fallback=search)
        result = AutoconfigResult(self.section.objective, answer, self.setup.candidates, search.eliminations,
                                  search.trials_run + race.trials_run, self.elapsed_s(), self.budget_s,
                                  search.stop_reason, rows)
        chosen = answer.chosen_key
        best = self.setup.templates[chosen].config if chosen else self.setup.templates[self.setup.baseline_key].config
        write_outputs(self.folder.path, result, best_config=best, spec_data=self.setup.data)
        return result

    def _say(self, text: str, style: str = "") -> None:
        from rich.text import Text

        self.console.print(Text(plain(text), style=style), soft_wrap=True)


def run_autoconfig(setup: Setup, out_dir: Path, *, console: Console, machine: MachineInfo, argv: list[str] | None = None,
                   cluster=None, resume: bool = False) -> Outcome:
    """Run autoconfig into ``out_dir`` (see :class:`Driver`); raises OutDirError before writing anything
    when the folder cannot be used or holds another run."""
    return Driver(setup, out_dir, console=console, machine=machine, argv=argv, cluster=cluster, resume=resume).run()
