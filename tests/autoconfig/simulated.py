"""A simulated world for autoconfig's session: generated spaces, known true throughputs, noisy readings,
trials that cost cold start plus training on a simulated clock, and configurations that always fail.

The session (rlbench.autoconfig.session) is what is checked; everything a real trial would measure is
drawn here from a seeded generator, so a run takes milliseconds and its verdict cannot depend on load.
tests/autoconfig/test_autoconfig_property.py asserts the properties over many worlds;
scripts/autoconfig_property.py prints the counts over more.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, field, replace

import numpy as np

from rlbench.autoconfig.ask_tell import TrialRequest, TrialResult
from rlbench.autoconfig.model import Candidate, CostModel, ProbeCosts, candidate_key, env_id
from rlbench.autoconfig.plan import TrialShape
from rlbench.autoconfig.section import AutoconfigSection
from rlbench.autoconfig.session import Session, Space

#: The axes a generated space draws from, with the values each may take.
AXES = {
    "num_env_runners": [0, 1, 2, 3, 4],
    "num_envs_per_env_runner": [1, 2, 4, 8, 16],
    "train_batch_size_per_learner": [500, 1000, 2000, 4000],
    "env_config.step_cost_us": [0, 20, 100, 500, 1000],
}
#: Coefficient of variation of one reading around the configuration's true throughput.
NOISE_CV = 0.03


@dataclass
class World:
    """One generated space with its truth."""

    space: Space
    truth: dict[str, float]
    """key -> true env steps/s (nan: the configuration always fails)."""
    iteration_s: dict[str, float]
    """key -> true seconds per iteration."""
    probes: ProbeCosts
    """What the probes would measure exactly; the runner hands out a perturbed copy (the model's error)."""
    cold_s: float
    """True cold start of a trial (process, runtime, build, shutdown)."""
    shape: TrialShape
    seed: int

    def exhaustive_s(self, repeats: int) -> float:
        """Seconds a sweep of every configuration with ``repeats`` repeats would take."""
        return repeats * sum(self.cold_s + self.training_s(k) for k in self.truth)

    def training_s(self, key: str) -> float:
        t = self.shape.training_s(self.iteration_s[key])
        return t if t is not None else 0.0


def _candidate(axes: dict, cpus: int) -> Candidate:
    runners = int(axes.get("num_env_runners", 1))
    batch = int(axes.get("train_batch_size_per_learner", 1000))
    return Candidate(
        key=candidate_key(axes),
        axes=tuple(axes.items()),
        num_env_runners=runners,
        num_envs_per_env_runner=int(axes.get("num_envs_per_env_runner", 1)),
        num_cpus_per_env_runner=0.5,
        num_learners=0,
        num_cpus_per_learner=1.0,
        num_gpus_per_learner=0.0,
        num_cpus_for_main_process=1,
        train_batch_size_per_learner=batch,
        batch_env_steps=batch,
        cpus=runners * 0.5 + 1,
        gpus=0.0,
        cpus_limit=cpus,
        env_id=env_id("sim", {"step_cost_us": axes.get("env_config.step_cost_us", 100)}),
    )


def world(seed: int) -> World:
    """A generated world: 1-3 axes, up to 40 points, a baseline anywhere (on the grid or the spec's own
    base), some configurations that always fail, iterations or seconds as the trial's stop."""
    rng = np.random.default_rng(seed)
    names = list(rng.choice(list(AXES), size=int(rng.integers(1, 4)), replace=False))
    values = {
        n: sorted(rng.choice(AXES[n], size=int(rng.integers(2, len(AXES[n]) + 1)), replace=False).tolist())
        for n in names
    }
    points = [dict(zip(names, combo)) for combo in itertools.product(*(values[n] for n in names))]
    rng.shuffle(points)
    points = points[: int(rng.integers(1, 41))]
    if len(points) < 2:
        points = [dict(zip(names, combo)) for combo in itertools.product(*(values[n] for n in names))][:2]
    cpus = int(rng.choice([2, 4, 8]))
    cands = {c.key: c for c in (_candidate(p, cpus) for p in points)}
    on_grid = rng.random() < 0.7
    if on_grid:
        baseline_key = list(cands)[int(rng.integers(0, len(cands)))]
    else:
        base = _candidate({n: AXES[n][1] for n in names}, cpus)
        baseline_key = "baseline"
        cands["baseline"] = replace(base, key="baseline")
    probes = ProbeCosts(
        env_step_s=1e-4,
        inference_step_s=float(rng.uniform(2e-5, 2e-4)),
        learner_step_s=float(rng.uniform(1e-5, 3e-4)),
        sync_per_runner_s=float(rng.uniform(0.0, 0.05)),
        cores=cpus,
        inference_call_s=float(rng.uniform(1e-4, 2e-3)),
        iteration_overhead_s=float(rng.uniform(0.0, 0.1)),
        env_steps_s=tuple((c.env_id, json_cost(c)) for c in cands.values()),
    )
    model = CostModel(probes)
    truth, iteration = {}, {}
    for key, c in cands.items():
        p = model.predict(c)
        bias = float(rng.uniform(-0.1, 0.1))  # what the model does not know about this configuration
        iteration[key] = p.iteration_s / (1 + bias)
        truth[key] = c.batch_env_steps / iteration[key]
    failing = [k for k in cands if rng.random() < 0.1]
    for key in failing:
        truth[key] = math.nan
    stop = rng.choice(["iterations", "seconds"])
    shape = (
        TrialShape(stop_iterations=int(rng.integers(3, 12)), stop_seconds=None, warmup_iterations=1)
        if stop == "iterations"
        else TrialShape(stop_iterations=None, stop_seconds=float(rng.uniform(2, 30)))
    )
    second = next(
        (
            k
            for k, c in cands.items()
            if k != baseline_key and c.num_envs_per_env_runner != cands[baseline_key].num_envs_per_env_runner
        ),
        None,
    )
    space = Space(cands, [k for k in cands if k != "baseline"], baseline_key, second)
    return World(space, truth, iteration, probes, float(rng.uniform(0.5, 12.0)), shape, seed)


def json_cost(c: Candidate) -> float:
    """Seconds per env step of a candidate's env: its step cost, plus a fixed 5 us of the env's own."""
    import json

    return 5e-6 + json.loads(c.env_id)[1]["step_cost_us"] * 1e-6


@dataclass
class SimRunner:
    """Runs the session's requests in the world on a simulated clock."""

    world: World
    clock_s: float = 0.0
    saved: dict = field(default_factory=dict)
    results: dict[str, TrialResult] = field(default_factory=dict)
    lines: list[str] = field(default_factory=list)
    model_error: float = 0.25
    """How far (relative) each probed cost may be off: the model's own error."""

    def elapsed_s(self) -> float:
        return self.clock_s

    def stored(self, request: TrialRequest) -> TrialResult | None:
        return self.results.get(request.request_id)

    def run(self, request: TrialRequest) -> TrialResult:
        w, key = self.world, request.candidate_key
        rng = np.random.default_rng(
            [w.seed, int.from_bytes(request.request_id.encode()[-8:].rjust(8, b"\0"), "little")]
        )
        cold = w.cold_s * float(rng.uniform(0.9, 1.2))
        truth = w.truth[key]
        training = min(w.training_s(key), request.max_wall_s)
        if math.isnan(truth):  # fails in its build: cold start spent, no reading
            result = TrialResult(request.request_id, None, 0.0, cold)
        else:
            value = truth * (1 + NOISE_CV * float(rng.standard_normal()))
            result = TrialResult(request.request_id, value, training, cold, True, w.iteration_s[key])
        self.clock_s += cold + training + 0.05
        self.results[request.request_id] = result
        return result

    def probes(self, requests) -> ProbeCosts | None:
        rng = np.random.default_rng(self.world.seed + 7)
        p, e = self.world.probes, self.model_error

        def off(x: float) -> float:
            return x * float(rng.uniform(1 - e, 1 + e))

        return replace(
            p,
            inference_step_s=off(p.inference_step_s),
            learner_step_s=off(p.learner_step_s),
            sync_per_runner_s=off(p.sync_per_runner_s),
            inference_call_s=off(p.inference_call_s),
            env_steps_s=tuple((k, off(v)) for k, v in p.env_steps_s),
        )

    def save(self, decided) -> None:
        self.saved = dict(decided)

    def say(self, text: str, style: str = "") -> None:
        self.lines.append(text)


def session(w: World, budget_s: float, section: AutoconfigSection | None = None, cold_prior_s: float = 10.0) -> Session:
    return Session(w.space, section or AutoconfigSection(), budget_s, w.shape, cold_prior_s)
