"""The trials autoconfig runs: a request made a trial plan, a finished trial read back as a result,
the probe's costs for the cost model, and the state file that makes a run resumable.

The per-trial files stay the truth: a result is read from the trial's ``record.json`` and
``events.jsonl``, never remembered. The state file (``autoconfig_state.json``) holds only what the
files cannot say: which request each trial answered, what each stage was given (its budget is
decided once, from the wall time spent when it starts, and must be the same on a resume for the
replay to reach the same state), the probes, and the seconds each trial cost as measured from outside.
"""

from __future__ import annotations

import statistics
from dataclasses import asdict
from typing import Any

from rlbench.autoconfig.model import DEFAULT_TRAIN_BATCH, Probes
from rlbench.autoconfig.trials import TrialRequest, TrialResult
from rlbench.results.events import Event
from rlbench.results.files import read_json, write_json
from rlbench.results.layout import ResultsFolder
from rlbench.results.records import read_record
from rlbench.spec.plan import SEED_LIMIT, TrialPlan, trial_id
from rlbench.studies.envbench import ceiling_key, ceiling_procs

#: Version of autoconfig_state.json.
STATE_VERSION = 1
#: Statuses that are a trial's final verdict (an interrupted one runs again on resume).
FINAL = ("ok", "failed", "timeout", "skipped")
#: A trial is killed this long after its cap (cold start and shutdown included): the budget's hard edge.
MIN_GRACE_S = 30.0


class State:
    """``autoconfig_state.json``: read on resume, written after every change (atomically)."""

    def __init__(self, folder: ResultsFolder, data: dict[str, Any] | None = None):
        self.folder = folder
        self.data: dict[str, Any] = data or {"schema_version": STATE_VERSION, "elapsed_s": 0.0, "trials": {}}

    @classmethod
    def read(cls, folder: ResultsFolder) -> "State | None":
        data = read_json(folder.autoconfig_state, None)
        return cls(folder, data) if isinstance(data, dict) and data.get("schema_version") == STATE_VERSION else None

    def save(self) -> None:
        write_json(self.folder.autoconfig_state, self.data)

    @property
    def trials(self) -> dict[str, dict[str, Any]]:
        """request id -> ``{"trial_id", "charged_s"}`` (charged_s None until the trial ended)."""
        return self.data["trials"]

    def assign(self, request_id: str, index: int) -> str:
        """The trial id of a request: the one it had (a resume runs it again), else the next free
        repeat number of its grid point."""
        if request_id in self.trials:
            return self.trials[request_id]["trial_id"]
        used = [t["trial_id"] for t in self.trials.values()]
        repeat = sum(t.startswith(trial_id(index, 0)[:-1]) for t in used)
        self.trials[request_id] = {"trial_id": trial_id(index, repeat), "charged_s": None}
        self.save()
        return self.trials[request_id]["trial_id"]


def request_plan(template: TrialPlan, tid: str, *, phase: str, request: TrialRequest | None, seed: int,
                 trial_s: float, cold_start_s: float, objective: str) -> TrialPlan:
    """The trial plan of one request: the grid point's plan with its own id, seed, stage and cap.

    autoconfig owns the stop rule: every trial trains ``trial_s`` seconds (throughput) or until the
    spec's target or ``trial_s`` (time to target, censored after it), so censored readings compare;
    it is killed ``trial_s`` + a grace after it starts, whatever happens.
    """
    grace = max(MIN_GRACE_S, 3.0 * cold_start_s)
    return template.model_copy(update={
        "trial_id": tid, "repeat": int(tid.rsplit("r", 1)[1]), "seed": seed % SEED_LIMIT, "phase": phase,
        "rung": request.rung if request is not None and request.stage == "search" else None,
        "round": request.rung if request is not None and request.stage == "race" else None,
        "stop_iterations": None, "stop_seconds": trial_s,
        "stop_target": template.stop_target if objective == "time_to_target" else None,
        "timeout_s": min(template.timeout_s, trial_s + grace)})


def _iterations(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [e for e in events if e.get("event") == Event.ITERATION and isinstance(e.get("wall_s"), (int, float))]


def read_result(folder: ResultsFolder, tid: str, request_id: str, objective: str,
                charged_s: float | None) -> TrialResult | None:
    """The result of a finished trial from its files; None while it has no final verdict.

    value: throughput, the median env steps/s of its steady iterations; time to target, the
    training seconds to the target (the sum of iteration walls up to it), or the seconds it trained
    when it did not reach it (censored), and the env steps sampled over the same iterations. A trial that did not end ``ok``, or has no steady
    iteration, has no value (failed). Charged: the seconds it cost as measured from outside
    (``charged_s``), else its record's wall; its training seconds are the wall, the rest cold start.
    """
    trial = folder.trial(tid)
    record = read_record(trial) if trial.exists() else None
    if record is None or record.status not in FINAL:
        return None
    events = trial.events()
    its = _iterations(events)
    steady = [e for e in its if not e.get("warmup")]
    trained = sum(float(e["wall_s"]) for e in its)
    total = charged_s if charged_s is not None else (record.trial_wall_s or trained)
    iteration_s = statistics.median(float(e["wall_s"]) for e in steady) if steady else None
    value: float | None = None
    steps: float | None = None
    reached = True
    if record.status == "ok" and steady:
        if objective == "throughput":
            rates = [float(e["env_steps_per_s"]) for e in steady if isinstance(e.get("env_steps_per_s"), (int, float))]
            value = statistics.median(rates) if rates else None
        else:
            hit = next((e.get("iteration") for e in events if e.get("event") == Event.TARGET_REACHED), None)
            reached = hit is not None
            upto = [e for e in its if hit is None or e.get("iteration", 0) <= hit]
            value = sum(float(e["wall_s"]) for e in upto)
            steps = sum(float(e.get("env_steps_sampled") or 0) for e in upto)
    return TrialResult(request_id, value, trained, max(0.0, total - trained), reached, iteration_s, steps)


def _steady(folder: ResultsFolder, plan: TrialPlan) -> list[dict[str, Any]]:
    return [e for e in _iterations(folder.trial(plan.trial_id).events()) if not e.get("warmup")]


def _rest_per_step(folder: ResultsFolder, plan: TrialPlan) -> float | None:
    """Seconds of sampling per env step per runner outside the env (inference, connectors), median."""
    steady = _steady(folder, plan)
    runners = max(1, plan.config.env_runners.num_env_runners)
    # sample_s is the driver's wall (the runners in parallel); env_step_s is summed over the runners
    rows = [(float(e.get("sample_s") or 0) * runners - float(e.get("env_step_s") or 0)) / float(e["env_steps_sampled"])
            for e in steady if (e.get("env_steps_sampled") or 0) > 0]
    return statistics.median(rows) if rows else None


def probes_from(folder: ResultsFolder, plan: TrialPlan, other: TrialPlan | None = None) -> Probes | None:
    """The cost model's per-unit costs from the probe trial's steady iterations and the env ceiling.

    One env step: the ceiling's seconds per step in one process (envbench), else the trial's share
    of sampling spent in the env. One learner step: learn seconds per trained env step. Sync: sync
    seconds per runner. The rest of sampling per step (inference, connectors) is ``s + c/E`` with E
    envs per runner: ``other``, a second probe at another E, separates the per-step part s from the
    per-call part c (two equations); without it all of it is per step (c = 0: vectorizing then looks
    free of gain, so the model prunes nothing for it). None when the probe gave no steady iteration.
    """
    steady = _steady(folder, plan)
    if not steady:
        return None

    def med(key: str) -> float:
        return statistics.median(float(e.get(key) or 0.0) for e in steady)

    c = plan.config
    runners = max(1, c.env_runners.num_env_runners)
    steps = med("env_steps_sampled")
    if steps <= 0:
        return None
    sample, env = med("sample_s"), med("env_step_s")
    per_step = sample * runners / steps
    env_step = min(per_step, env / steps)  # env_step_s: summed over the runners
    ceilings = read_json(folder.ceilings, {})
    ceiling = ceilings.get(ceiling_key(c.environment.env, c.environment.env_config,
                                       ceiling_procs(c.env_runners.num_env_runners), plan.cpus)) or {}
    if isinstance(ceiling.get("steps_per_s_per_proc"), (int, float)) and ceiling["steps_per_s_per_proc"] > 0:
        env_step = 1.0 / ceiling["steps_per_s_per_proc"]
    step_s, call_s = max(0.0, per_step - env_step), 0.0
    e1 = c.env_runners.num_envs_per_env_runner
    r1 = _rest_per_step(folder, plan)
    r2 = _rest_per_step(folder, other) if other is not None else None
    e2 = other.config.env_runners.num_envs_per_env_runner if other is not None else e1
    if r1 is not None and r2 is not None and e1 != e2:
        call_s = max(0.0, (r1 - r2) / (1.0 / e1 - 1.0 / e2))
        step_s = max(0.0, r1 - call_s / e1)
        call_s = (r1 - step_s) * e1  # after the clamp, r1 = s + c/E1 still holds
    batch = c.training.train_batch_size_per_learner or DEFAULT_TRAIN_BATCH
    learn, sync = med("learn_s"), med("sync_s")
    return Probes(env_step_s=env_step, inference_step_s=step_s, inference_call_s=call_s,
                  learner_step_s=learn / batch, sync_per_runner_s=sync / max(1, c.env_runners.num_env_runners),
                  cores=max(1, plan.cpus), iteration_overhead_s=max(0.0, med("wall_s") - sample - learn - sync))


def env_steps_from(folder: ResultsFolder, plans: dict[str, TrialPlan]) -> tuple[tuple[str, float], ...]:
    """(env id, seconds per env step in one process) from the env ceilings measured for ``plans`` (env id ->
    a trial of that env); an env whose ceiling is missing or failed is left out (the model then uses the
    baseline's step for it)."""
    ceilings = read_json(folder.ceilings, {})
    out = []
    for env_id, plan in plans.items():
        env = plan.config.environment
        ceiling = ceilings.get(ceiling_key(env.env, env.env_config, ceiling_procs(plan.config.env_runners.num_env_runners),
                                           plan.cpus)) or {}
        rate = ceiling.get("steps_per_s_per_proc")
        if isinstance(rate, (int, float)) and rate > 0:
            out.append((env_id, 1.0 / rate))
    return tuple(out)


def probes_dict(probes: Probes | None) -> dict | None:
    return None if probes is None else asdict(probes)


def probes_of(data: dict | None) -> Probes | None:
    if not data:
        return None
    return Probes(**{**data, "env_steps_s": tuple((str(k), float(v)) for k, v in data.get("env_steps_s") or ())})
