"""A cost model of one synchronous training iteration, built from probes and refit on measured trials.

Why a model at all: a 20-minute budget buys a few dozen trials, and a lattice of runners x envs x
learners x driver CPUs is larger than that. The model drops configurations that cannot win before
any trial runs (ReaL's "measure -> model -> search", Pollux's refit-as-you-go), and its error
against what the trials measured (:meth:`CostModel.predicted_vs_measured`) says how far to trust it.

The model (synchronous PPO: sampling, then learning, then the weight broadcast)::

    R = max(1, num_env_runners)          # 0 runners: the driver samples
    E = num_envs_per_env_runner
    B = train_batch_size_per_learner * max(1, num_learners)          # env steps per iteration (the adapter's
                                         # TrainBatch: its default batch where the spec sets none)
    sample_s = (B/R * (env_step_s + inference_step_s) + B/(R*E) * inference_call_s) * max(1, R/cores)
                                         # env_step_s: the configuration's own env and env_config, probed
    learn_s  = (train_batch_size_per_learner * learner_step_s              # per env step: the learner's compute
                + sgd_steps * learner_sgd_step_s) * max(1, L/cores)         # per minibatch step: launches, syncs,
                                         # the optimizer's step; sgd_steps = num_epochs * ceil(batch / minibatch_size);
                                         # L learners in parallel; a GPU learner (num_gpus_per_learner > 0) has its
                                         # own two costs and no CPU contention
    sync_s   = sync_per_runner_s * num_env_runners
    iteration_s = sample_s + learn_s + sync_s + iteration_overhead_s
    env_steps_per_s = B / iteration_s

Why a per-minibatch-step cost: a GPU learner's update is launch- or sync-bound at small minibatches (issue 43,
measured on an H100: Pong's throughput 2.6x at minibatch 1024 against 128, the GPU 88% idle at 128), so its learn
time follows the step count, not the env steps; a CPU learner's follows the env steps. One probe splits a GPU
learner's update time by its busy share (NVML, ``gpu_busy_pct``: the idle rest is per step); two probes at two step
counts on one device solve the split (:func:`rlbench.autoconfig.readings.probes_from`); a refit rescales both parts.

``max(1, busy/cores)`` is contention: when a phase has more busy processes than cores (asked CPUs
above the machine's, e.g. runners reserving 0.1 CPU each), the OS shares the cores and the phase
stretches by that factor. ``inference_call_s`` is the fixed cost of one forward call whatever the
batch: the reason vectorizing envs helps (ray#6029: 4-5x). Asynchronous algorithms overlap the
phases; this model is the synchronous upper bound, and the refit absorbs part of the difference.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

import numpy as np

from rlbench.analysis.configs import axis_pairs_text
from rlbench.spec.model import TrialConfig

if TYPE_CHECKING:  # the driver asks the adapter and hands its answers in: this room imports no adapter
    from rlbench.adapters.demand import ResourceDemand, TrainBatch

#: How many observations' worth of weight the probes keep in a refit (pulls each scale towards 1).
PRIOR_OBSERVATIONS = 0.5
#: A configuration predicted below this fraction of the best prediction cannot win (the model's
#: error is tens of percent, so only a factor of 2 is trusted to prune).
PRUNE_BELOW_FRACTION = 0.5


@dataclass(frozen=True)
class Candidate:
    """One configuration of the search space: the knobs the cost model and the answer read."""

    key: str
    """Stable name, from the grid axes' values (``num_env_runners=2,num_envs_per_env_runner=4``)."""
    axes: tuple[tuple[str, Any], ...]
    """(grid axis as the spec names it, value) for every axis: how the driver maps it back to a trial."""
    num_env_runners: int
    """Remote env runners (0: the driver samples)."""
    num_envs_per_env_runner: int
    """Vectorized envs per runner."""
    num_cpus_per_env_runner: float
    """CPUs Ray reserves per runner."""
    num_learners: int
    """Remote learners (0: the learner is in the driver)."""
    num_cpus_per_learner: float
    """CPUs per remote learner."""
    num_gpus_per_learner: float
    """GPUs per learner (also the driver's learner when num_learners is 0)."""
    num_cpus_for_main_process: int
    """CPUs reserved for the driver."""
    train_batch_size_per_learner: int
    """Env steps each learner trains on per iteration (the framework's default where the spec sets none)."""
    batch_env_steps: int
    """Env steps per iteration, all learners together (the adapter's ``TrainBatch.env_steps``)."""
    cpus: float
    """CPUs the configuration asks for: driver, env runners, learners and any other actors (its framework's
    ``ResourceDemand.total_cpus``)."""
    gpus: float
    """GPUs the learners and env runners ask for (``ResourceDemand.gpus``)."""
    cpus_limit: int | None = None
    """The trial's ``cpus`` (cores it is pinned to), or None for the whole machine."""
    env_id: str = ""
    """The env and its ``env_config`` (:func:`env_id`): configurations with another env step cost apart."""
    minibatch_size: int | None = None
    """Env steps per minibatch step (the spec's, else the framework's default); None: the whole batch."""
    num_epochs: int | None = None
    """Passes over the batch per iteration (the spec's, else the framework's default); None: one."""

    @property
    def on_gpu(self) -> bool:
        """Whether its learners train on a GPU."""
        return self.num_gpus_per_learner > 0

    @property
    def sgd_steps(self) -> int:
        """Minibatch steps per learner per iteration: ``num_epochs * ceil(batch per learner / minibatch_size)``."""
        per_epoch = math.ceil(self.train_batch_size_per_learner / self.minibatch_size) if self.minibatch_size else 1
        return (self.num_epochs or 1) * max(1, per_epoch)

    @classmethod
    def from_config(
        cls,
        config: TrialConfig,
        axes: Mapping[str, Any],
        *,
        demand: ResourceDemand,
        batch: TrainBatch,
        defaults: Mapping[tuple[str, str], Any] | None = None,
    ) -> Candidate:
        """The candidate of one grid point (``GridPoint.config`` and the grid values that made it), with what
        its framework's adapter says it asks of the machine (``demand``), trains on per iteration (``batch``) and
        trains with where the spec is silent (``defaults``: its ``hyperparameter_defaults``)."""
        r, lr = config.env_runners, config.learners

        def trained_with(key: str) -> int | None:
            value = getattr(config.training, key)
            value = value if value is not None else (defaults or {}).get(("training", key))
            return value if isinstance(value, int) and not isinstance(value, bool) else None

        return cls(
            key=candidate_key(axes),
            axes=tuple(axes.items()),
            num_env_runners=r.num_env_runners,
            num_envs_per_env_runner=r.num_envs_per_env_runner,
            num_cpus_per_env_runner=r.num_cpus_per_env_runner,
            num_learners=lr.num_learners,
            num_cpus_per_learner=float(lr.num_cpus_per_learner),
            num_gpus_per_learner=lr.num_gpus_per_learner,
            num_cpus_for_main_process=config.resources.num_cpus_for_main_process,
            train_batch_size_per_learner=batch.per_learner,
            batch_env_steps=batch.env_steps,
            cpus=demand.total_cpus,
            gpus=demand.gpus,
            cpus_limit=config.cpus,
            env_id=env_id(config.environment.env, config.environment.env_config),
            minibatch_size=trained_with("minibatch_size"),
            num_epochs=trained_with("num_epochs"),
        )


def describe(c: Candidate) -> str:
    """A configuration in words: its key, or for a baseline off the grid (key ``baseline``) the axes its spec
    sets, an axis it leaves unset as the spec's default (never ``None``: issue 34)."""
    if c.key != "baseline":
        return c.key
    values = axis_pairs_text(c.axes)
    return f"the spec's base configuration ({values})" if values else "the spec's base configuration"


def candidate_key(axes: Mapping[str, Any]) -> str:
    """``axis=value,...`` in the grid's axis order, values JSON-encoded (one name per grid point)."""
    return ",".join(f"{a}={json.dumps(v, sort_keys=True, default=str)}" for a, v in axes.items()) or "base"


def env_id(env: str, env_config: Mapping[str, Any] | None) -> str:
    """One name per env and ``env_config`` (JSON, keys sorted): what a probed env step cost is kept under."""
    return json.dumps([env, dict(env_config or {})], sort_keys=True, default=str)


@dataclass(frozen=True)
class ProbeCosts:
    """What the probes measured (seconds per unit), or what a refit rescaled them to."""

    env_step_s: float
    """Seconds one env step takes on one core (envbench's ceiling with one process)."""
    inference_step_s: float
    """Seconds of the policy's forward pass per env step (the part that grows with the batch)."""
    learner_step_s: float | None
    """Seconds of learner update per sampled env step on a CPU learner (every epoch; with ``learner_sgd_step_s``
    0, every minibatch step's cost too); None: not probed (a GPU baseline without a CPU probe), CPU configurations
    are not predicted."""
    sync_per_runner_s: float
    """Seconds of weight broadcast per env runner per iteration."""
    cores: int
    """Cores the trials may use."""
    inference_call_s: float = 0.0
    """Seconds per forward call (one per vector step), whatever the batch."""
    learner_gpu_step_s: float | None = None
    """As ``learner_step_s`` on a GPU learner; None: not probed, GPU configurations are not predicted."""
    learner_sgd_step_s: float = 0.0
    """Seconds per minibatch step on a CPU learner, whatever its size (0: not separated from ``learner_step_s``)."""
    learner_gpu_sgd_step_s: float = 0.0
    """As ``learner_sgd_step_s`` on a GPU learner: the launches and syncs of a step, the device idle meanwhile."""
    iteration_overhead_s: float = 0.0
    """Seconds per iteration outside the three phases (metrics, the driver's loop); fitted by a refit."""
    env_steps_s: tuple[tuple[str, float], ...] = ()
    """(:func:`env_id`, seconds per env step on one core) of every other env or ``env_config`` in the search
    space (envbench, one process); a configuration's env missing here steps at ``env_step_s``."""
    unmeasured_envs: tuple[str, ...] = ()
    """Envs of the search space whose step could not be measured (the ceiling failed, or stepped nothing in its
    time: under load, a 0 us env measured 0 steps in 0.3 s): not predicted, so never dropped by the model (it had
    stepped at the baseline's 1 ms, and was dropped untried, issue 44)."""

    def env_step_for(self, c: Candidate) -> float | None:
        """Seconds one env step of ``c``'s env takes: its own probe, else the baseline's; None when its env's
        step could not be measured."""
        if c.env_id in self.unmeasured_envs:
            return None
        return dict(self.env_steps_s).get(c.env_id, self.env_step_s)


@dataclass(frozen=True)
class Prediction:
    """The model's iteration of one configuration, by phase."""

    sample_s: float
    """Sampling phase, contention included."""
    learn_s: float
    """Learner update phase."""
    sync_s: float
    """Weight broadcast to the runners."""
    overhead_s: float
    """Fixed per-iteration overhead."""
    iteration_s: float
    """Sum of the above."""
    env_steps_per_s: float
    """Env steps per iteration over iteration_s."""


@dataclass(frozen=True)
class Observation:
    """A measured trial for a refit: its configuration and its median steady iteration."""

    candidate: Candidate
    """The configuration the trial ran."""
    iteration_s: float
    """Median wall seconds of its steady-state iterations."""


@dataclass(frozen=True)
class PredictionRow:
    """One row of predicted against measured."""

    key: str
    """Candidate key."""
    predicted_iteration_s: float | None
    """The model's iteration (None: the model cannot predict it, e.g. an unprobed GPU)."""
    measured_iteration_s: float
    """What the trial measured."""
    error_pct: float | None
    """100 * (predicted - measured) / measured."""


@dataclass(frozen=True)
class CostModel:
    """The cost model over :class:`ProbeCosts` (immutable: :meth:`refit` returns a new one)."""

    probes: ProbeCosts
    """Per-unit costs, as probed or as rescaled by the last refit."""
    refit_points: int = 0
    """Observations the last refit used (0: the probes as measured)."""

    def _cores(self, c: Candidate) -> int:
        return max(1, min(self.probes.cores, c.cpus_limit or self.probes.cores))

    def parts(self, c: Candidate) -> tuple[float, float, float, float] | None:
        """(sample_s, learn_s per env step part, learn_s per minibatch step part, sync_s) of one iteration, before
        overhead; None when not predictable (its learner's device was not probed)."""
        p, cores = self.probes, self._cores(c)
        learner_step = p.learner_gpu_step_s if c.on_gpu else p.learner_step_s
        env_step = p.env_step_for(c)
        if learner_step is None or env_step is None:
            return None
        sgd_step = p.learner_gpu_sgd_step_s if c.on_gpu else p.learner_sgd_step_s
        runners = max(1, c.num_env_runners)
        per_runner = c.batch_env_steps / runners
        sample = (
            per_runner * (env_step + p.inference_step_s) + per_runner / c.num_envs_per_env_runner * p.inference_call_s
        ) * max(1.0, runners / cores)
        contention = 1.0 if c.on_gpu else max(1.0, max(1, c.num_learners) / cores)
        return (
            sample,
            c.train_batch_size_per_learner * learner_step * contention,
            c.sgd_steps * sgd_step * contention,
            p.sync_per_runner_s * c.num_env_runners,
        )

    def phases(self, c: Candidate) -> tuple[float, float, float] | None:
        """(sample_s, learn_s, sync_s) of one iteration, before overhead; None when not predictable."""
        parts = self.parts(c)
        return None if parts is None else (parts[0], parts[1] + parts[2], parts[3])

    def predict(self, c: Candidate) -> Prediction | None:
        """The predicted iteration of ``c`` (None when the model cannot predict it)."""
        phases = self.phases(c)
        if phases is None:
            return None
        total = sum(phases) + self.probes.iteration_overhead_s
        rate = c.batch_env_steps / total if total > 0 else math.inf
        return Prediction(*phases, self.probes.iteration_overhead_s, total, rate)

    def cannot_win(
        self, candidates: Sequence[Candidate], below_fraction: float = PRUNE_BELOW_FRACTION
    ) -> dict[str, Prediction]:
        """Candidates whose predicted env steps/s is below ``below_fraction`` of the best prediction.

        Returns:
            key -> its prediction, for each one that cannot win; unpredictable candidates never appear.
        """
        predicted = {c.key: p for c in candidates if (p := self.predict(c)) is not None}
        if not predicted:
            return {}
        best = max(p.env_steps_per_s for p in predicted.values())
        return {k: p for k, p in predicted.items() if p.env_steps_per_s < below_fraction * best}

    def refit(self, observations: Sequence[Observation], prior_observations: float = PRIOR_OBSERVATIONS) -> CostModel:
        """Rescale the probes so the model fits measured iterations (least squares, non-negative).

        Solves ``measured ~= a*sample_s + b*learn_per_env_step + e*learn_per_minibatch_step + c*sync_s + d`` for
        scales a, b, e, c >= 0 and the overhead d >= 0, each pulled towards its current value (1 for a scale) with
        ``prior_observations`` observations' weight, so two trials cannot zero a phase they do not
        vary. a scales env, inference and call costs; b both devices' per-env-step learner costs, e their
        per-minibatch-step ones (trials at several minibatch sizes tell them apart); c the sync cost.
        """
        rows = [
            (ph, o.iteration_s)
            for o in observations
            if math.isfinite(o.iteration_s) and (ph := self.parts(o.candidate)) is not None
        ]
        if not rows:
            return self
        x = np.array([[*ph, 1.0] for ph, _ in rows])
        y = np.array([m for _, m in rows])
        rms = np.sqrt(np.mean(x**2, axis=0))
        weight = np.sqrt(prior_observations) * np.maximum(rms, 1e-9)
        prior = np.array([1.0, 1.0, 1.0, 1.0, self.probes.iteration_overhead_s])
        a_aug = np.vstack([x, np.diag(weight)])
        y_aug = np.concatenate([y, weight * prior])
        from scipy import optimize  # here, not at the top: a sweep that fits no model skips its import

        (a, b, e, c, d), _ = optimize.nnls(a_aug, y_aug)
        p = self.probes
        probes = replace(
            p,
            env_step_s=p.env_step_s * a,
            inference_step_s=p.inference_step_s * a,
            inference_call_s=p.inference_call_s * a,
            learner_step_s=None if p.learner_step_s is None else p.learner_step_s * b,
            learner_gpu_step_s=None if p.learner_gpu_step_s is None else p.learner_gpu_step_s * b,
            learner_sgd_step_s=p.learner_sgd_step_s * e,
            learner_gpu_sgd_step_s=p.learner_gpu_sgd_step_s * e,
            sync_per_runner_s=p.sync_per_runner_s * c,
            iteration_overhead_s=float(d),
            env_steps_s=tuple((k, v * a) for k, v in p.env_steps_s),
        )
        return CostModel(probes, refit_points=len(rows))

    def predicted_vs_measured(self, observations: Sequence[Observation]) -> list[PredictionRow]:
        """One row per observation: what the model predicts beside what was measured."""
        out = []
        for o in observations:
            p = self.predict(o.candidate)
            pred = None if p is None else p.iteration_s
            err = None if pred is None or o.iteration_s <= 0 else 100.0 * (pred - o.iteration_s) / o.iteration_s
            out.append(PredictionRow(o.candidate.key, pred, o.iteration_s, err))
        return out
