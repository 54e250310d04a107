"""The trials autoconfig runs: a request made a trial plan, a finished trial read back from its files,
the probes' costs for the cost model, and the state file that makes a run resumable.

The per-trial files stay the truth: a result is read from the trial's ``record.json`` and
``events.jsonl`` (through the iterations table's rows and the pure readers of
:mod:`rlbench.autoconfig.readings`), never remembered. The state file (``autoconfig_state.json``) holds
only what the files cannot say: which request each trial answered, the session's decisions (the probes,
the plan, the race's budget and entrants: each made once from the clock, and the same on a resume for the
replay to reach the same state), and the seconds each trial cost as measured from outside.
"""

from __future__ import annotations

from typing import Any

from rlbench.adapters import get_adapter
from rlbench.autoconfig.ask_tell import TrialRequest, TrialResult
from rlbench.autoconfig.model import ProbeCosts
from rlbench.autoconfig.readings import FINAL, probes_from, trial_result, with_device_probe, with_learn_windows
from rlbench.autoconfig.session import dump_decided, load_decided
from rlbench.planning.plan import TrialPlan, trial_id
from rlbench.results.ceilings_file import read_env_ceilings
from rlbench.results.events_file import TargetReachedEvent, WindowEndEvent, first
from rlbench.results.files import read_json, write_json
from rlbench.results.layout import ResultsFolder
from rlbench.results.records import read_record
from rlbench.results.tables import iteration_rows, iterations_frame, read_utilization
from rlbench.studies.envbench import trial_ceiling_key

#: Version of autoconfig_state.json (2: the session's decisions, the plan among them).
STATE_VERSION = 2
#: A trial is killed this long after its cap (cold start and shutdown included): the budget's hard edge.
MIN_GRACE_S = 30.0


class State:
    """``autoconfig_state.json``: read on resume, written after every change (atomically)."""

    def __init__(self, folder: ResultsFolder, data: dict[str, Any] | None = None):
        self.folder = folder
        self.data: dict[str, Any] = data or {
            "schema_version": STATE_VERSION,
            "elapsed_s": 0.0,
            "trials": {},
            "decided": {},
        }

    @classmethod
    def read(cls, folder: ResultsFolder) -> State | None:
        """The folder's state; None when it has none. Raises ValueError for a state of another version."""
        data = read_json(folder.autoconfig_state, None)
        if not isinstance(data, dict):
            return None
        if data.get("schema_version") != STATE_VERSION:
            raise ValueError(
                f"{folder.autoconfig_state} is of state version {data.get('schema_version')!r}, this "
                f"rlbench resumes version {STATE_VERSION} only: start the run again in a new --out"
            )
        return cls(folder, data)

    def save(self) -> None:
        write_json(self.folder.autoconfig_state, self.data)

    @property
    def trials(self) -> dict[str, dict[str, Any]]:
        """request id -> ``{"trial_id", "charged_s"}`` (charged_s None until the trial ended)."""
        return self.data["trials"]

    @property
    def decided(self) -> dict[str, Any]:
        """The session's decisions, as objects."""
        return load_decided(self.data.get("decided") or {})

    def keep(self, decided: dict[str, Any]) -> None:
        """Store the session's decisions and save."""
        self.data["decided"] = dump_decided(decided)
        self.save()

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

    def assign_new(self, request_id: str, index: int, folder: ResultsFolder) -> str:
        """A trial id no request and no trial folder has used (a new warm trial, issue 56): a warm trial holds the
        windows of several requests, so a request read again after an interruption must not reuse its old id (its
        folder, holding the other requests' windows, would be moved aside)."""
        prefix = trial_id(index, 0)[:-1]
        folders = {p.name for p in folder.trials_dir.iterdir()} if folder.trials_dir.is_dir() else set()
        used = {t["trial_id"] for t in self.trials.values()} | folders  # a folder without a plan too
        numbers = [int(t[len(prefix) :]) for t in used if t.startswith(prefix) and t[len(prefix) :].isdigit()]
        self.trials[request_id] = {"trial_id": trial_id(index, max(numbers, default=-1) + 1), "charged_s": None}
        self.save()
        return self.trials[request_id]["trial_id"]


def request_plan(
    template: TrialPlan,
    tid: str,
    request: TrialRequest,
    *,
    stop_iterations: int | None,
    stop_seconds: float | None,
    cold_start_s: float,
    objective: str,
    launch: bool = False,
) -> TrialPlan:
    """The trial plan of one request: the grid point's plan with its own id, seed, stage and cap.

    The trial runs the spec's stop (``stop_iterations`` and ``stop_seconds``: the request's cap, the spec's
    seconds or the cap derived from the probes, whichever the session gave); time-to-target trials stop at
    the spec's target too, censored after the stop. It is killed ``max_wall_s`` + a grace after it starts,
    whatever happens; ``launch``, a warm trial's first window, which pays the launch as well (Ray's start and a
    build that grows with the point's runners and envs), at the spec's own ``trial_timeout_s``: a timeout there
    loses the whole launch (issue 57: env_waits_wide's three new 4-runner points each timed out at 44 s in their
    first window, at load 5, with a grace of 3 cold starts measured on smaller points).
    """
    timeout_s = (
        template.timeout_s
        if launch
        else min(template.timeout_s, request.max_wall_s + max(MIN_GRACE_S, 3.0 * cold_start_s))
    )
    return template.model_copy(
        update={
            "trial_id": tid,
            "repeat": int(tid.rsplit("r", 1)[1]),
            "seed": request.seed,
            "phase": request.stage,
            "rung": request.rung if request.stage == "search" else request.step,  # the walk's: its step
            "round": request.rung if request.stage in ("race", "walk") else None,
            "stop_iterations": stop_iterations,
            "stop_seconds": stop_seconds,
            "stop_target": template.stop_target if objective == "time_to_target" else None,
            "timeout_s": timeout_s,
        }
    )


def read_result(
    folder: ResultsFolder, tid: str, request_id: str, objective: str, charged_s: float | None, window: int | None = None
) -> TrialResult | None:
    """The result of a finished trial from its files (:func:`rlbench.autoconfig.readings.trial_result`); None
    while it has no final verdict. ``window``: one measured window of a warm trial (issue 56), a result once that
    window has ended (its ``window_end``), the trial kept or not; its iterations alone."""
    trial = folder.trial(tid)
    record = read_record(trial) if trial.exists() else None
    events = trial.events() if trial.exists() else []
    status = record.status if record is not None else None
    if window is not None and any(isinstance(e, WindowEndEvent) and e.window == window for e in events):
        status = "ok"  # the window was read whole: the trial's later end does not change it
    if status not in FINAL:
        return None
    its = iterations_frame(iteration_rows(tid, events))
    if window is not None:
        its = its[its["window"] == window]
    hit = target.iteration if (target := first(events, TargetReachedEvent)) is not None else None
    return trial_result(
        request_id,
        str(status),
        its,
        objective=objective,
        target_iteration=hit,
        charged_s=charged_s,
        trial_wall_s=record.trial_wall_s if record is not None else None,
    )


def ceiling_rate(folder: ResultsFolder, plan: TrialPlan) -> float | None:
    """Env steps/s per process of the env ceiling measured for ``plan``'s env (envbench), or None (not
    measured, or failed)."""
    ceiling = read_env_ceilings(folder.ceilings).get(trial_ceiling_key(plan.config, plan.cpus))
    rate = None if ceiling is None else ceiling.steps_per_s_per_proc
    return float(rate) if rate is not None and rate > 0 else None


def _iterations(folder: ResultsFolder, plan: TrialPlan):
    """A probe's iteration rows from its events, with its learn windows' GPU and CPU use from its utilization rows
    (a probe's learner split needs them)."""
    trial = folder.trial(plan.trial_id)
    its = iterations_frame(iteration_rows(plan.trial_id, trial.events()))
    return with_learn_windows(
        its,
        read_utilization([trial]),
        plan.config,
        learner_gpus=plan.demand().learner_gpus,
        asynchronous=plan.asynchronous,
    )


def _batch(plan: TrialPlan) -> int:
    return get_adapter(plan.config.framework).train_batch(plan.config).per_learner


def probes_of(
    folder: ResultsFolder, plan: TrialPlan, other: TrialPlan | None = None, device: TrialPlan | None = None
) -> ProbeCosts | None:
    """The probes' costs from the baseline's probe trial (a second one at another envs per runner or minibatch
    step count; one whose learner is on the other device): :func:`rlbench.autoconfig.readings.probes_from` over
    their iteration rows and the env ceiling, then :func:`~rlbench.autoconfig.readings.with_device_probe`."""
    probes = probes_from(
        _iterations(folder, plan),
        plan.config,
        plan.cpus,
        batch_per_learner=_batch(plan),
        ceiling_steps_per_s=ceiling_rate(folder, plan),
        other=None if other is None else (_iterations(folder, other), other.config),
        other_batch_per_learner=None if other is None else _batch(other),
    )
    if probes is None or device is None:
        return probes
    return with_device_probe(probes, _iterations(folder, device), device.config, batch_per_learner=_batch(device))


def env_steps_from(
    folder: ResultsFolder, plans: dict[str, TrialPlan]
) -> tuple[tuple[tuple[str, float], ...], tuple[str, ...]]:
    """(env id, seconds per env step in one process) from the env ceilings measured for ``plans`` (env id ->
    a trial of that env), and the env ids whose ceiling is missing, failed or stepped nothing (the model predicts
    none of those: ``ProbeCosts.unmeasured_envs``)."""
    rates = {env_id: ceiling_rate(folder, plan) for env_id, plan in plans.items()}
    return (
        tuple((env_id, 1.0 / rate) for env_id, rate in rates.items() if rate),
        tuple(env_id for env_id, rate in rates.items() if not rate),
    )
