"""What rlbench needs from a training system: the adapter protocol (standard library only).

Everything that knows a framework's config names, result keys, process titles, resource rules
and training calls sits behind these two small interfaces; the rest of rlbench talks to them
alone. Adding an algorithm is a change inside the RLlib adapter; adding another framework is one
new adapter module that gives an :class:`Adapter`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Protocol, TypeAlias

from rlbench.adapters.roles import Role
from rlbench.adapters.vocabulary import KeyHandling

#: A clip threshold that never binds (float32 holds at most 3.4e38): how a framework's hyperparameter defaults
#: (:meth:`Adapter.hyperparameter_defaults`) say "no clipping" in the spec's terms, where ``None`` means "unset".
#: A gradient norm or a value loss of 1e30 is never reached; the clip then costs one norm a step, nothing more.
NEVER_BINDS: float = 1e30

#: A trial's config as the spec validated it (``rlbench.spec.model.TrialConfig``). Named, not
#: imported: the spec imports the adapters' registry, so an adapter never imports the spec, not even
#: for a type checker (tests/test_architecture.py holds this).
TrialConfig: TypeAlias = Any


@dataclass(frozen=True)
class ActorDemand:
    """One kind of actor a trial starts: how many, and what each one asks of the machine."""

    role: str
    """Its role (``env_runner``, ``learner``)."""
    count: int
    """How many of them."""
    cpus: float
    """CPUs each reserves."""
    gpus: float
    """GPUs each reserves."""
    what: str
    """How to name them to a user, e.g. ``env runners``."""


@dataclass(frozen=True)
class ResourceDemand:
    """What a trial asks of the machine, per role and per actor (the one place this arithmetic lives:
    the plan, the analysis, the per-node tables and the cluster planning all read it)."""

    driver_cpus: int
    """CPUs rlbench reserves for the driver (``num_cpus_for_main_process``)."""
    actors: tuple[ActorDemand, ...] = ()
    """The kinds of actor the trial starts (a kind may have a count of 0)."""
    driver_gpus: float = 0.0
    """GPUs the driver's own learner takes (a learner inside the driver process)."""

    @property
    def actor_cpus(self) -> float:
        """CPUs Ray must find for all actors together."""
        return sum(a.count * a.cpus for a in self.actors)

    @property
    def gpus(self) -> float:
        """GPUs the learners and env runners ask for together."""
        return self.driver_gpus + sum(a.count * a.gpus for a in self.actors)

    @property
    def learner_gpus(self) -> float:
        """GPUs the learners ask for, the driver's own learner included (env runners' GPUs left out)."""
        return self.driver_gpus + sum(a.count * a.gpus for a in self.actors if a.role == "learner")

    @property
    def total_cpus(self) -> float:
        """Driver plus actors."""
        return self.driver_cpus + self.actor_cpus

    @property
    def largest_actor_cpus(self) -> float:
        """The most CPUs any one actor reserves (an actor cannot span machines); 0 without actors."""
        return max((a.cpus for a in self.actors if a.count), default=0.0)

    def role_cpus(self, roles: tuple[str, ...]) -> dict[str, float]:
        """CPUs allocated per role (every role in ``roles``; 0 where the trial allocates none)."""
        out = {role: 0.0 for role in roles}
        out["driver"] = float(self.driver_cpus)
        for a in self.actors:
            out[a.role] = out.get(a.role, 0.0) + a.count * a.cpus
        return out

    def cpus_per_actor(self) -> dict[str, float]:
        """Role -> CPUs one actor of that role reserves."""
        return {a.role: a.cpus for a in self.actors}

    def describe_actors(self) -> str:
        """``2 env runners x 1 CPU + 1 learners x 1 CPU``, for messages."""
        return " + ".join(f"{a.count} {a.what} x {a.cpus:g} CPU" for a in self.actors)


@dataclass(frozen=True)
class TrainBatch:
    """The env steps one training iteration trains on, by the framework's rules (its default where the spec
    sets no ``train_batch_size_per_learner``): what ``rlbench autoconfig``'s cost model and the trials table read."""

    per_learner: int
    """Env steps each learner trains on per iteration."""
    learners: int
    """Learners that train in parallel, each on ``per_learner`` steps (a learner inside the driver counts as one)."""

    @property
    def env_steps(self) -> int:
        """Env steps per iteration, all learners together."""
        return self.per_learner * self.learners


@dataclass(frozen=True)
class ConfigSnippet:
    """A trial config as the framework's own code, ready to paste: ``rlbench autoconfig`` writes its answer as
    one. Every value in ``text`` is rendered as inert data (:mod:`rlbench.adapters.pysource`): a spec may hold
    any text."""

    file_name: str
    """The file it is written to, in the results folder (``rllib_config.py``): a plain name."""
    language: str
    """The language of ``text`` (``python``), for whoever shows it."""
    text: str
    """The code."""


@dataclass(frozen=True)
class IterationTimings:
    """One training iteration as the adapter measured it, in rlbench's column names (docs/SCHEMA.md,
    iterations table): what the trial writes with its ``iteration`` event, without knowing any
    framework's result keys. A figure the framework does not measure stays None (a null column)."""

    env_steps_sampled: int
    """Env steps sampled in the iteration."""
    sample_s: float
    """Seconds the iteration spent sampling (the driver's wait for it, for an asynchronous algorithm)."""
    learn_s: float = 0.0
    """Seconds the iteration spent learning."""
    sync_s: float = 0.0
    """Seconds syncing weights and connector states to the samplers."""
    env_step_s: float | None = None
    """Of ``sample_s``: inside the env's ``step``/``reset`` (wall-equivalent over the samplers)."""
    inference_s: float | None = None
    """Of ``sample_s``: choosing actions (the policy's forward pass)."""
    sample_other_s: float | None = None
    """Of ``sample_s``: the rest (connectors, episode bookkeeping)."""
    learner_connector_s: float | None = None
    """Of ``learn_s``: the learner connector pipeline (GAE etc.)."""
    sgd_s: float | None = None
    """Of ``learn_s``: the gradient steps (``learn_s - learner_connector_s``; None for an asynchronous algorithm)."""
    learn_batch_s: float | None = None
    """The learner building train batches (connectors, GAE, on a GPU learner the copy to it), per learner."""
    learn_update_s: float | None = None
    """The learner's minibatch updates (forward, loss, backward, optimizer step), per learner."""
    learn_other_s: float | None = None
    """``learn_s - learn_batch_s - learn_update_s``: the rest of the learning phase (None: asynchronous, or not
    measured)."""
    learn_batches: float | None = None
    """Train batches each learner built."""
    learn_copy_s: float | None = None
    """Of ``learn_batch_s`` (APPO, IMPALA: beside it): host-to-device copies, per GPU learner; None on a CPU."""
    learn_device_s: float | None = None
    """The device's time in the minibatch updates (CUDA events), per GPU learner; None on a CPU."""
    weight_sync_s: float | None = None
    """Of ``sync_s``: the weight broadcast alone."""
    sync_bytes: int | None = None
    """Bytes of weights sent to the samplers."""
    sync_bytes_per_s: float | None = None
    """``sync_bytes / weight_sync_s``."""
    env_steps_trained: int | None = None
    """Env steps the learners trained on."""
    episode_return_mean: float | None = None
    """Mean return of the episodes that ended in the iteration (NaN/None when none ended)."""
    training_steps: int | None = None
    """The framework's training-step calls in the iteration."""
    sampler_busy_s: float | None = None
    """Seconds the samplers were inside sampling, per sampler."""
    learner_busy_s: float | None = None
    """Seconds the learners were busy, per learner."""
    learner_updates: float | None = None
    """Weight updates per learner."""
    sgd_steps: float | None = None
    """Minibatch steps per learner."""
    policy_lag_mean: float | None = None
    """Mean policy lag of the iteration's updates (1: on-policy)."""
    policy_lag_max: float | None = None
    """Largest policy lag of the iteration's updates."""
    replay_s: float | None = None
    """Of ``other_s``: the driver inside its replay buffer (storing, drawing, re-prioritizing), off-policy only."""
    replay_add_s: float | None = None
    """Of ``replay_s``: storing the sampled steps."""
    replay_sample_s: float | None = None
    """Of ``replay_s``: drawing the train batches."""
    replay_update_s: float | None = None
    """Of ``replay_s``: updating the priorities from the TD errors."""
    target_update_s: float | None = None
    """Of ``learn_s``: the target-network updates, per learner."""
    target_updates: float | None = None
    """Target-network updates, per learner."""
    updates_per_env_step: float | None = None
    """Training intensity: gradient (minibatch) steps per learner over the env steps sampled."""
    runners: list[dict[str, Any]] | None = None
    """Per env runner: its own timings (runner_iterations table rows), or None."""


class Trainer(Protocol):
    """One trial's training run inside the trial process (its Ray runtime is up)."""

    def infeasible_reason(self) -> str | None:
        """Why the runtime cannot place the trial's actors (checked before building), or None."""

    def build(self) -> None:
        """Build the algorithm (its actors start here)."""

    def set_threads(self, threads: dict[str, int]) -> dict[str, int | None]:
        """Set torch threads per role in every process; return what each role reports back."""

    def facts(self) -> dict[str, Any]:
        """Facts about the built algorithm for the trial's build event (e.g. ``env_runner_pids``,
        ``weight_bytes``, ``weight_receivers``); called once, after :meth:`set_threads`."""

    def train(self) -> None:
        """Run one training iteration (the harness times this call alone)."""

    def iteration(self) -> IterationTimings:
        """The last iteration's phase times and counts."""

    def metric(self, name: str) -> float | None:
        """The last iteration's value of a result metric (one of the adapter's ``result_metrics``);
        None when the iteration did not report it (e.g. no episode ended)."""

    def stop(self) -> None:
        """Stop the algorithm and its actors (idempotent)."""


class Policy(Protocol):
    """A saved policy loaded for serving (``rlbench servebench``): a batch of states in, one action each out."""

    input_floats: int
    """Floats in one state (float32: 4 bytes each)."""

    def act(self, states: Any) -> Any:
        """One forward pass: ``states`` (numpy float32, shape (batch, input_floats)) -> actions (numpy int64,
        shape (batch,)), greedy."""


class Serving(Protocol):
    """What ``rlbench servebench`` needs from a framework: a policy trained briefly and saved, a model of a
    given size saved untrained, and either one loaded back as a :class:`Policy` in any process."""

    def train_policy(self, folder: str, *, seed: int, iterations: int) -> dict[str, Any]:
        """Train the framework's default policy on a small env for ``iterations`` iterations (its runtime
        is up), save it under ``folder``; returns facts: ``checkpoint`` (what :meth:`load_policy` takes),
        ``env``, ``input_floats``, ``env_steps``, ``episode_return_mean``, ``train_s``."""

    def save_model(
        self, folder: str, *, input_floats: int, width: int, depth: int, residual: bool, seed: int
    ) -> dict[str, Any]:
        """Save an untrained policy model (``depth`` hidden layers of ``width``; ``residual``: blocks with
        skip connections) for ``input_floats``-float states and 2 actions; returns ``checkpoint`` and
        ``parameters``."""

    def load_policy(self, checkpoint: str, *, connectors: bool = False, threads: int = 1) -> Policy:
        """Load a saved policy in this process with ``threads`` torch threads; ``connectors``: each call runs
        the framework's own pre- and post-processing pipelines around the forward pass, as its samplers do."""


class Adapter(Protocol):
    """A training system, as rlbench sees it."""

    name: str
    """The framework's name, for the manifest."""
    roles: tuple[str, ...]
    """The process roles utilization is reported by (``driver``, ..., ``other``): its role rules'."""
    preload_modules: tuple[str, ...]
    """Modules the trial fork server imports once, so that no trial pays their import time."""
    actor_class_roles: dict[str, str]
    """Actor class name (as in Ray's GCS actor table) -> role, for the cluster node samplers."""
    system_titles: tuple[str, ...]
    """Process titles of the runtime's own agents (children of the raylet)."""
    algorithms: tuple[str, ...]
    """The algorithms a spec's ``algo`` may name, the default first."""
    algo_only_keys: dict[tuple[str, str], tuple[str, ...]]
    """Keys of sections other than ``training`` that only some algorithms use: (section, key) -> those
    algorithms (a trial of another algorithm that sets one is refused)."""
    refused_values: dict[str, tuple[Any, str]]
    """Training key -> (a value the framework refuses, why and what to do instead)."""
    removed_keys: dict[str, str]
    """Keys the framework no longer has -> what to use instead (the spec refuses them with this hint)."""
    runtime: str | None
    """The runtime its trials need, started by the trial process (:mod:`rlbench.worker.runtime`):
    ``"ray"`` (a private local Ray, or a connection to a cluster), or None (nothing: no Ray process)."""
    requires: dict[str, str]
    """Distribution -> the oldest release the adapter can drive (``{"ray": "2.53.0"}``); an older one is
    refused before anything runs (:func:`unsupported`)."""
    cold_start_s: float
    """Seconds a trial typically spends outside its training on a small machine (process, runtime, build,
    shutdown): ``rlbench autoconfig``'s prior until its probes measure them (docs/AUTOCONFIG.md)."""

    def training_keys(self, algo: str) -> frozenset[str]:
        """The ``training:`` keys (YAML names) a trial of ``algo`` may set; the spec types each one
        (``rlbench.spec.training.TrainingSection``: the union of every adapter's keys)."""

    def key_handling(self, algo: str) -> dict[str, KeyHandling]:
        """Each of those keys -> what the adapter does with it: mapped, refused or ignored, with how or why."""

    def hyperparameter_defaults(self, config: Any) -> dict[tuple[str, str], Any]:
        """(section, key) -> the value the framework trains a trial config with where the spec leaves the key
        unset, for every hyperparameter of its algorithm that the spec can name (``training``, ``rl_module``);
        "no clipping" is :data:`NEVER_BINDS`. Empty for a framework that learns nothing. What the matched preset
        pins when a sweep's trials run several frameworks (``rlbench.spec.matched``)."""

    def refusals(self, config: Any) -> list[tuple[tuple[str, ...], str]]:
        """(key path, why and what to set instead) for every key or value of a trial config the framework cannot
        run faithfully (a key with no equivalent in it): the spec refuses the trial at load, at that path."""

    def is_asynchronous(self, algo: str) -> bool:
        """Whether the algorithm samples while it learns (its iteration's phases overlap, so the driver's
        split of an iteration is its waits, not the phases' durations)."""

    def trains_on_replay(self, algo: str) -> bool:
        """Whether the algorithm trains on replayed env steps (off-policy, as DQN and SAC): its iteration repeats
        sample, store, replay, update and sync, and its training intensity, not its train batch, sets how much
        learning a sampled step buys. ``rlbench autoconfig``'s cost model is of an on-policy iteration and
        refuses such an algorithm before any trial."""

    def classify_process(self, cmdline: list[str], *, is_driver: bool) -> Role:
        """The role of one process of a trial, from its command line (title): the one classifier,
        :func:`rlbench.adapters.roles.classify`, with the adapter's rules."""

    def result_metrics(self) -> list[str]:
        """Names of the result metrics a ``stop:`` target may name (higher or lower is better, the spec says)."""

    def metric_column(self, name: str) -> str | None:
        """The iterations-table column (an :class:`IterationTimings` field) that holds the result metric ``name``
        every iteration, or None when the table has no column for it (the report draws a target on that column)."""

    def resource_demand(self, config: Any) -> ResourceDemand:
        """What a trial config asks of the machine."""

    def torch_threads(self, config: Any) -> dict[str, int]:
        """torch threads rlbench sets per role (``driver``, ``learner``, ``env_runner``)."""

    def train_batch(self, config: Any) -> TrainBatch:
        """The env steps an iteration of a trial config trains on (the framework's default where the spec sets
        none)."""

    def sampling_processes(self, config: Any) -> int:
        """Processes that step the trial's envs at once (the env ceiling is measured with as many)."""

    def quick_settings(self, config: Any) -> dict[tuple[str, str], Any]:
        """(section, key) -> value for ``rlbench sweep --quick``, a one-iteration check that a trial config runs:
        its train batch cut to a small size the algorithm accepts, and what must follow the batch (a minibatch
        within it, an iteration that ends soon after it, learning that starts inside it). Only the values that
        change; each adapter's rule is stated in docs/SPEC.md, "--quick"."""

    def config_snippet(self, config: Any, title: str) -> ConfigSnippet | None:
        """The trial config as the framework's own code, headed by ``title`` (which configuration it is, any
        text: rendered inert); None when the framework has no code to give (``rlbench autoconfig`` then writes
        none)."""

    def quiet_logging(self) -> None:
        """Silence the framework's loggers in this process."""

    def set_driver_threads(self, n: int) -> None:
        """Set the driver process's torch threads (before the framework starts)."""

    def make_env(self, env: str, env_config: dict[str, Any]) -> Any:
        """Create one env the way the framework would (the env ceiling steps it alone)."""

    def trainer(self, config: Any, *, seed: int | None, without: frozenset[str] = frozenset()) -> Trainer:
        """A trainer for one trial config (nothing is built yet); ``without`` names instruments left
        out for a fidelity diagnosis (``callback``, ``stats``: :mod:`rlbench.run.switches`)."""

    def serving(self) -> Serving | None:
        """What ``rlbench servebench`` serves with (a policy trained, saved and loaded), or None when the
        framework has no policy to serve."""


def _release(version: str) -> tuple[int, ...]:
    """``2.40.0rc1`` -> (2, 40, 0): the release numbers a version starts with (pre-releases count as their release)."""
    found = re.match(r"\d+(\.\d+)*", version.strip())
    return tuple(int(part) for part in found.group().split(".")) if found else ()


def unsupported(requires: dict[str, str], versions: dict[str, str | None], who: str) -> list[str]:
    """``ray 2.9.3 is older than 2.40.0, the oldest the rllib adapter drives`` for every distribution of
    ``versions`` (name -> version; None: not installed, not judged) older than ``requires`` allows."""
    out = []
    for dist, oldest in requires.items():
        have = versions.get(dist)
        if have and _release(have) < _release(oldest):
            out.append(f"{dist} {have} is older than {oldest}, the oldest the {who} adapter drives")
    return out
