"""What rlbench needs from a training system: the adapter contract (standard library only at module level).

Everything that knows a framework's config names, result keys, process titles, resource rules and training calls
sits behind :class:`Adapter` and the small protocols its answers follow (:class:`Trainer`, :class:`Serving`,
:class:`Policy`); the rest of rlbench talks to them alone. :class:`Adapter` is an abstract base class that lists
every member once, with its docstring: those every framework answers alike have their answer here (a framework
that differs overrides it: Stable-Baselines3's ``BaseAlgorithm`` is the model), those none can share are abstract,
so an adapter that leaves one out fails when the registry makes it (``rlbench.adapters``), not when a trial first
asks. Adding an algorithm is a change inside the RLlib adapter; adding another framework is one new adapter
package (docs/ARCHITECTURE.md). Its answers' types: :mod:`rlbench.adapters.demand` (``ResourceDemand``,
``TrainBatch``), :mod:`rlbench.adapters.timings` (``IterationTimings``), :class:`ConfigSnippet` here.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar, Protocol, TypeAlias

from rlbench.adapters.roles import Role, RoleRules, classify
from rlbench.adapters.vocabulary import KeyHandling

if TYPE_CHECKING:
    from collections.abc import Iterable

    from rlbench.adapters.demand import ResourceDemand, TrainBatch
    from rlbench.adapters.timings import IterationTimings

#: A clip threshold that never binds (float32 holds at most 3.4e38): how a framework's hyperparameter defaults
#: (:meth:`Adapter.hyperparameter_defaults`) say "no clipping" in the spec's terms, where ``None`` means "unset".
#: A gradient norm or a value loss of 1e30 is never reached; the clip then costs one norm a step, nothing more.
NEVER_BINDS: float = 1e30

#: A trial's config as the spec validated it (``rlbench.spec.model.TrialConfig``). Named, not
#: imported: the spec imports the adapters' registry, so an adapter never imports the spec, not even
#: for a type checker (tests/test_architecture.py holds this).
TrialConfig: TypeAlias = Any


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


class Adapter(ABC):
    """A training system, as rlbench sees it: every member an adapter gives, listed once (the module says how)."""

    #: The attributes every adapter must set itself (no answer is shared): the registry refuses an adapter without
    #: one when it makes it, as Python refuses one without an abstract method.
    REQUIRED_ATTRIBUTES: ClassVar[tuple[str, ...]] = ("name", "algorithms", "preload_modules", "cold_start_s")

    name: str
    """The framework's name, for the manifest and a spec's ``framework:``."""
    algorithms: tuple[str, ...]
    """The algorithms a spec's ``algo`` may name, the default first."""
    preload_modules: tuple[str, ...]
    """Modules the trial fork server imports once, so that no trial pays their import time."""
    cold_start_s: float
    """Seconds a trial typically spends outside its training on a small machine (process, runtime, build,
    shutdown): ``rlbench autoconfig``'s prior until its probes measure them (docs/AUTOCONFIG.md)."""
    role_rules: RoleRules = RoleRules(titles=())
    """How the framework's processes are named: its titles and markers, and whether a Ray runtime runs beside it
    (the one classifier, :func:`rlbench.adapters.roles.classify`, applies them)."""
    actor_class_roles: dict[str, str] = {}
    """Actor class name (as in Ray's GCS actor table) -> role, for the cluster node samplers: none without actors."""
    system_titles: tuple[str, ...] = ()
    """Process titles of the runtime's own agents (children of the raylet): none without a runtime."""
    algo_only_keys: dict[tuple[str, str], tuple[str, ...]] = {}
    """Keys of sections other than ``training`` that only some algorithms use: (section, key) -> those
    algorithms (a trial of another algorithm that sets one is refused). None unless the framework runs them."""
    refused_values: dict[str, tuple[Any, str]] = {}
    """Training key -> (a value the framework refuses, why and what to do instead); applies to every framework's
    trials. None unless it refuses one."""
    removed_keys: dict[str, str] = {}
    """Keys the framework no longer has -> what to use instead (the spec refuses them with this hint)."""
    worker_preload_modules: tuple[str, ...] = ()
    """Modules each worker process of a trial's private Ray runtime imports as it starts (Ray's
    ``RAY_preload_python_modules``), while the driver builds: a remote actor then starts in a worker that has them.
    None without a Ray runtime."""
    runtime: str | None = None
    """The runtime its trials need, started by the trial process (:mod:`rlbench.worker.runtime`):
    ``"ray"`` (a private local Ray, or a connection to a cluster), or None (nothing: no Ray process)."""
    requires: dict[str, str] = {}
    """Distribution -> the oldest release the adapter can drive (``{"ray": "2.53.0"}``); an older one is
    refused before anything runs (:func:`unsupported`)."""
    extra: str | None = None
    """The rlbench extra that installs what its trials import beyond the base install (``sb3``: pyproject.toml), or
    None. A spec whose trials use the framework is refused at load while one of :attr:`extra_modules` is missing,
    with the ``pip install`` line of this extra (``rlbench.spec.envcheck.framework_problem``)."""
    extra_modules: tuple[str, ...] = ()
    """The top-level modules :attr:`extra` installs that its trials import (``stable_baselines3``)."""

    def __init__(self) -> None:
        missing = [a for a in self.REQUIRED_ATTRIBUTES if not hasattr(self, a)]
        if missing:
            raise TypeError(f"adapter {type(self).__name__} does not set {', '.join(missing)} (rlbench.adapters.base)")

    @property
    def roles(self) -> tuple[str, ...]:
        """The process roles utilization is reported by (``driver``, ..., ``other``): its role rules'."""
        return self.role_rules.roles

    def classify_process(self, cmdline: list[str], *, is_driver: bool) -> Role:
        """The role of one process of a trial, from its command line (title): the one classifier,
        :func:`rlbench.adapters.roles.classify`, with the adapter's rules."""
        return classify(cmdline, is_driver=is_driver, rules=self.role_rules)

    @abstractmethod
    def key_handling(self, algo: str) -> dict[str, KeyHandling]:
        """Each ``training:`` key a trial of ``algo`` may set -> what the adapter does with it: mapped, refused or
        ignored, with how or why (tests/adapters/test_key_handling.py sets each and checks)."""

    def training_keys(self, algo: str) -> frozenset[str]:
        """The ``training:`` keys (YAML names) a trial of ``algo`` may set: those it says what it does with; the
        spec types each one (``rlbench.spec.training.TrainingSection``: the union of every adapter's keys)."""
        return frozenset(self.key_handling(algo))

    def hyperparameter_defaults(self, config: TrialConfig) -> dict[tuple[str, str], Any]:
        """(section, key) -> the value the framework trains a trial config with where the spec leaves the key
        unset, for every hyperparameter of its algorithm that the spec can name (``training``, ``rl_module``);
        "no clipping" is :data:`NEVER_BINDS`. Empty for a framework that learns nothing. What the matched preset
        pins when a sweep's trials run several frameworks (``rlbench.spec.matched``)."""
        return {}

    def refusals(self, config: TrialConfig) -> list[tuple[tuple[str, ...], str]]:
        """(key path, why and what to set instead) for every key or value of a trial config the framework cannot
        run faithfully (a key with no equivalent in it): the spec refuses the trial at load, at that path. None
        beyond the spec's own by default."""
        return []

    def is_asynchronous(self, algo: str) -> bool:
        """Whether the algorithm samples while it learns (its iteration's phases overlap, so the driver's
        split of an iteration is its waits, not the phases' durations)."""
        return False

    def trains_on_replay(self, algo: str) -> bool:
        """Whether the algorithm trains on replayed env steps (off-policy, as DQN and SAC): its iteration repeats
        sample, store, replay, update and sync, and its training intensity, not its train batch, sets how much
        learning a sampled step buys. ``rlbench autoconfig``'s cost model is of an on-policy iteration and
        refuses such an algorithm before any trial."""
        return False

    @abstractmethod
    def result_metrics(self) -> list[str]:
        """Names of the result metrics a ``stop:`` target may name (higher or lower is better, the spec says)."""

    def metric_column(self, name: str) -> str | None:
        """The iterations-table column (an ``IterationTimings`` field) that holds the result metric ``name``
        every iteration, or None when the table has no column for it (the report draws a target on that column)."""
        return "episode_return_mean" if name.removeprefix("env_runners/") == "episode_return_mean" else None

    @abstractmethod
    def resource_demand(self, config: TrialConfig) -> ResourceDemand:
        """What a trial config asks of the machine."""

    @abstractmethod
    def torch_threads(self, config: TrialConfig) -> dict[str, int]:
        """torch threads rlbench sets per role (``driver``, ``learner``, ``env_runner``)."""

    @abstractmethod
    def train_batch(self, config: TrialConfig) -> TrainBatch:
        """The env steps an iteration of a trial config trains on (the framework's default where the spec sets
        none)."""

    @abstractmethod
    def sampling_processes(self, config: TrialConfig) -> int:
        """Processes that step the trial's envs at once (the env ceiling is measured with as many)."""

    @abstractmethod
    def quick_settings(self, config: TrialConfig) -> dict[tuple[str, str], Any]:
        """(section, key) -> value for ``rlbench sweep --quick``, a one-iteration check that a trial config runs:
        its train batch cut to a small size the algorithm accepts, and what must follow the batch (a minibatch
        within it, an iteration that ends soon after it, learning that starts inside it). Only the values that
        change; each adapter's rule is stated in docs/SPEC.md, "--quick"."""

    def config_snippet(self, config: TrialConfig, title: str) -> ConfigSnippet | None:
        """The trial config as the framework's own code, headed by ``title`` (which configuration it is, any
        text: rendered inert); None when the framework has no code to give (``rlbench autoconfig`` then writes
        none)."""
        return None

    def quiet_logging(self) -> None:  # noqa: B027 - a default, not an abstract member: most frameworks log nothing
        """Silence the framework's loggers in this process (nothing to silence by default)."""

    def set_driver_threads(self, n: int) -> None:
        """Set the driver process's torch threads (before the framework starts)."""
        import torch

        torch.set_num_threads(n)

    def make_env(self, env: str, env_config: dict[str, Any]) -> Any:
        """Create one env the way the framework would (the env ceiling steps it alone): gymnasium's, by default."""
        from rlbench.adapters.envs import make_env

        return make_env(env, env_config)

    @abstractmethod
    def trainer(self, config: TrialConfig, *, seed: int | None, without: frozenset[str] = frozenset()) -> Trainer:
        """A trainer for one trial config (nothing is built yet); ``without`` names instruments left
        out for a fidelity diagnosis (``callback``, ``stats``: :mod:`rlbench.run.switches`)."""

    def serving(self) -> Serving | None:
        """What ``rlbench servebench`` serves with (a policy trained, saved and loaded), or None when the
        framework has no policy to serve."""
        return None


def release(version: str) -> tuple[int, int, int]:
    """``2.40.0rc1`` -> (2, 40, 0), ``3.0.0.dev0`` -> (3, 0, 0): a version's release, padded to three numbers (a
    pre-release counts as its release); the one parser, packaging's (InvalidVersion, a ValueError, for no version)."""
    from packaging.version import Version

    numbers = (*Version(version).release, 0, 0)
    return numbers[0], numbers[1], numbers[2]


def unsupported(requires: dict[str, str], versions: dict[str, str | None], who: str) -> list[str]:
    """``ray 2.9.3 is older than 2.40.0, the oldest the rllib adapter drives`` for every distribution of
    ``versions`` (name -> version; None: not installed, not judged) older than ``requires`` allows."""
    out = []
    for dist, oldest in requires.items():
        have = versions.get(dist)
        if have and _release_or_none(have) < release(oldest):
            out.append(f"{dist} {have} is older than {oldest}, the oldest the {who} adapter drives")
    return out


def ordered_versions(versions: Iterable[str]) -> list[str]:
    """Oldest first, as PEP 440 orders them (the one ordering; text that is no version last, as given)."""
    from packaging.version import InvalidVersion, Version

    good, bad = [], []
    for v in versions:
        try:
            good.append((Version(v), v))
        except InvalidVersion:
            bad.append(v)
    return [v for _, v in sorted(good)] + sorted(bad)


def _release_or_none(version: str) -> tuple[int, ...]:
    """:func:`release`, or ``()`` (older than any) for what is no version."""
    try:
        return release(version)
    except ValueError:
        return ()
