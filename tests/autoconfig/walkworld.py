"""A fake world for autoconfig's walk: points named by their axes, a true throughput each, fake verdicts (what the
point's row would make :func:`rlbench.analysis.next_step.advise` say), noisy readings on a simulated clock, and
values the machine cannot run. The walk (rlbench.autoconfig.walk.session) is what is checked; nothing here is timed.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from rlbench.analysis.findings import Verdict
from rlbench.analysis.next_step import Advice, NextSweep
from rlbench.autoconfig.ask_tell import TrialRequest, TrialResult
from rlbench.autoconfig.model import Candidate, candidate_key
from rlbench.autoconfig.plan import TrialShape
from rlbench.autoconfig.section import AutoconfigSection
from rlbench.autoconfig.session import Space
from rlbench.autoconfig.walk.session import WalkSession
from rlbench.spec.seeds import derive_seed

#: The knobs' values at the start (the spec's base), where a point's axes leave them.
BASE = {"num_env_runners": 1, "num_envs_per_env_runner": 1, "num_cpus_for_main_process": 1, "minibatch_size": 128}


def value(axes: Mapping[str, Any], knob: str) -> Any:
    """The knob's value at a point whose axes name it bare or with its section (``env_runners.num_env_runners``)."""
    return next((v for a, v in dict(axes).items() if a.rsplit(".", 1)[-1] == knob), BASE[knob])


def make_candidate(axes: Mapping[str, Any]) -> Candidate:
    """A point: CPUs are the driver's and half a CPU a runner (what the cheaper-move tie-break reads)."""
    runners = value(axes, "num_env_runners")
    driver = value(axes, "num_cpus_for_main_process")
    return Candidate(
        key=candidate_key(dict(axes)),
        axes=tuple(dict(axes).items()),
        num_env_runners=runners,
        num_envs_per_env_runner=value(axes, "num_envs_per_env_runner"),
        num_cpus_per_env_runner=0.5,
        num_learners=0,
        num_cpus_per_learner=1.0,
        num_gpus_per_learner=0.0,
        num_cpus_for_main_process=driver,
        train_batch_size_per_learner=1000,
        batch_env_steps=1000,
        cpus=driver + 0.5 * runners,
        gpus=0.0,
        minibatch_size=value(axes, "minibatch_size"),
    )


def _knobs(axes) -> dict:
    return {k: value(axes, k) for k in BASE}


def advice_for(knob: str | None, current: float = 1, values=(1, 2, 4), stop: str | None = None, text: str = ""):
    """What one verdict would say (an entry of :func:`rlbench.analysis.next_step.advices`): a verdict naming ``knob``
    with ``values`` (the current among them), the knob with no value that fits (``stop="no_fit"``), or a stop."""
    if knob is None:
        return Advice(None, stop or "no_knob", text or "no verdict names a knob")
    verdict = Verdict(f"short of {knob}", text or f"the verdict names {knob}", knob)
    if stop is not None:
        return Advice(None, stop, verdict.text, verdict, float(current))  # type: ignore[arg-type]
    return Advice(NextSweep(0, verdict, knob, float(current), tuple(values)), None, verdict.text, verdict, current)


@dataclass
class WalkWorld:
    """The truth and the verdicts of every point, and a runner over them."""

    truth: Callable[[dict], float]
    """A point's axes -> its true throughput (nan: it always fails)."""
    verdicts: Callable[[dict], Advice]
    """A point's axes -> what its verdicts ask for."""
    runs: Callable[[dict], str | None] = lambda axes: None
    """A point's axes -> why this machine cannot run it (None: it can)."""
    ceiling_frac: Callable[[dict], float | None] = lambda axes: None
    ladder: Callable[[str, float], tuple] = lambda knob, current: ()
    """A knob and its value -> the values that fit around it (what :func:`~rlbench.analysis.next_step.knob_values`
    would say): the next one the same way is where a knob that paid continues; () never continues."""
    cv: float = 0.02
    cold_s: float = 2.0
    training_s: float = 5.0
    seed: int = 0
    curve: Callable[[dict], float] = lambda axes: 10.0
    """A point's axes -> the return its trials reach (the learning check reads it)."""
    clock_s: float = 0.0
    results: dict[str, TrialResult] = field(default_factory=dict)
    saved: dict = field(default_factory=dict)
    lines: list[str] = field(default_factory=list)
    ran: list[str] = field(default_factory=list)
    planned: list[dict] = field(default_factory=list)
    interrupt_after: int | None = None
    points: dict[str, Candidate] = field(default_factory=dict)
    seconds_to_target: bool = False
    """Readings as seconds to a target (1,000 env steps at the point's throughput), for ``time_to_target``."""
    truth_at: Callable[[dict, TrialRequest], float] | None = None
    """As ``truth``, knowing the request (its step): a world that changes under the walk."""

    # -- the runner

    def elapsed_s(self) -> float:
        return self.clock_s

    def stored(self, request: TrialRequest) -> TrialResult | None:
        return self.results.get(request.request_id)

    def run(self, request: TrialRequest) -> TrialResult:
        if self.interrupt_after is not None and len(self.ran) >= self.interrupt_after:
            raise KeyboardInterrupt
        axes = dict(self.points[request.candidate_key].axes)
        truth = self.truth_at(axes, request) if self.truth_at is not None else self.truth(axes)
        rng = np.random.default_rng([self.seed, derive_seed(0, request.request_id, sequence="request")])
        training = min(self.training_s, request.max_wall_s)
        self.clock_s += self.cold_s + training
        self.ran.append(request.request_id)
        if math.isnan(truth):
            result = TrialResult(request.request_id, None, 0.0, self.cold_s)
        else:
            ret = self.curve(axes) * (1 + 0.01 * float(rng.standard_normal()))
            reading = truth * (1 + self.cv * float(rng.standard_normal()))
            result = TrialResult(
                request.request_id,
                1000.0 / reading if self.seconds_to_target else reading,
                training,
                self.cold_s,
                True,
                1000 / truth,
                curve=((500.0, ret / 2), (1000.0, ret)),
            )
        self.results[request.request_id] = result
        return result

    def probes(self, requests):
        return None

    def save(self, decided: dict) -> None:
        import copy

        self.saved = copy.deepcopy(decided)

    def say(self, text: str, style: str = "") -> None:
        self.lines.append(text)

    def row(self, key: str) -> dict | None:
        axes = dict(self.points[key].axes)
        mine = [r.value for rid, r in self.results.items() if rid.endswith("/" + key) and r.value is not None]
        if not mine:
            return None
        return {
            "index": 0,
            "env_steps_per_s": float(np.median(mine)),
            "ceiling_frac": self.ceiling_frac(axes),
            "ceiling_env_steps_per_s": None if self.ceiling_frac(axes) is None else self.truth(axes) / 0.95,
            "_advice": self.verdicts(axes),
            "_ladder": self.ladder,
        }

    def point(self, axes: Mapping[str, Any]) -> Candidate | str:
        self.planned.append(dict(axes))
        why = self.runs(dict(axes))
        if why is not None:
            return why
        c = make_candidate(axes)
        same = next((p for p in self.points.values() if _knobs(p.axes) == _knobs(c.axes)), None)
        if same is not None:  # one configuration, one point, however its axes were spelled (as the driver does)
            return same
        self.points[c.key] = c
        return c

    # -- a session over it

    def session(self, budget_s: float = 600.0, decided: dict | None = None, grid_axes=None, **section) -> WalkSession:
        start = make_candidate({})
        self.points.setdefault(start.key, start)
        return WalkSession(
            Space({start.key: start}, [], start.key),
            AutoconfigSection(**section),
            budget_s,
            TrialShape(stop_iterations=None, stop_seconds=self.training_s),
            self.cold_s,
            decided=decided if decided is not None else {},
            grid_axes=grid_axes,
        )


def fake_advices(row: dict) -> list[Advice]:
    """The verdicts of a fake point's row (monkeypatched over :func:`rlbench.analysis.next_step.advices`): a list, or
    one verdict (none for ``no_knob``)."""
    a = row["_advice"]
    return list(a) if isinstance(a, (list, tuple)) else ([] if a.stop == "no_knob" else [a])


def fake_ladder(knob: str, current: float, row: dict) -> tuple:
    """The world's ladder (monkeypatched over :func:`rlbench.analysis.next_step.knob_values`)."""
    return (current, *row["_ladder"](knob, current))
