"""The one seam between rlbench and each RLlib release of the new API stack, 2.40 on: which path each release takes.

rlbench reads exact per-iteration figures out of RLlib, and the means differ by release. Every difference lives
here, each path named with its release range (:data:`PATHS`, read from each release's own source, docs/VERSIONS.md):

- **per-iteration values**: from 2.53 RLlib's metrics logger takes a lookup of stats classes
  (``DEFAULT_STATS_CLS_LOOKUP``); rlbench replaces its never-reset EMA with a mean cleared on every reduce
  (:func:`stats_reporting`). 2.40-2.52 build every value as one ``Stats`` object whose ``clear_on_reduce`` is
  off by default (a sum is a lifetime sum, a mean an EMA of coefficient 0.01): rlbench logs its own values with
  ``clear_on_reduce=True`` (a mean over a window longer than any iteration: that ``Stats`` refuses an infinite
  window for a mean, :func:`per_iteration`), and registers RLlib's timers it reads that way before RLlib first
  logs them (:func:`register`: ``log_time`` reuses a registered key). RLLIB_NOTES' way (a), the pre-registered
  keys; the EMA is never inverted.
- **the callback class**, **the build call** and **the module hook**: ``RLlibCallback``, ``build_algo()`` and the
  RLModule's forward passes wrapped in ``on_episode_created`` from 2.41; 2.40 has ``DefaultCallbacks`` and
  ``build()``, and refuses a callback that overrides ``on_episode_created``: there the wrap happens in
  ``on_episode_start`` (right after the reset, before the episode's first forward pass).
- **a call on every env runner**: ``EnvRunnerGroup.foreach_env_runner`` from 2.41, ``foreach_worker`` in 2.40.
- **the learner's batch build**: ``Learner._make_batch_if_necessary`` from 2.44; 2.40-2.43 call the learner
  connector pipeline inline in ``_update_from_batch_or_episodes``, so the pipeline's call is what is timed.
- **RLlib's learner-connector timer** (``learner_connector_s``): ``learner_connector_timer`` in 2.40, none in
  2.41-2.43 (only per-piece timers), ``learner_connector/connector_pipeline_timer`` from 2.44.
- **aggregator actors** (APPO and IMPALA): ``learners(num_aggregator_actors_per_learner=...)`` from 2.42, a
  ``training()`` keyword in 2.41, none in 2.40.

Standard library only at import time: it is imported inside RLlib's env runners and learners (Ray is there).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from importlib import import_module
from typing import Any

from rlbench.adapters.base import release as parse_release

Release = tuple[int, int, int]


class Seam(str, Enum):
    """What rlbench gets out of RLlib by a path that differs by release; its value is its words (``read_paths``)."""

    VALUES = "per-iteration values"
    CALLBACK = "callback class"
    BUILD = "build call"
    MODULE_HOOK = "module hook"
    RUNNER_CALL = "env runner call"
    BATCH_BUILD = "batch build"
    CONNECTOR_TIMER = "learner connector timer"
    AGGREGATORS = "aggregator actors"


@dataclass(frozen=True)
class ReleasePath:
    """One way rlbench gets one thing out of RLlib, and the releases that take it."""

    what: Seam
    """What it gets."""
    since: Release
    """The first release that takes this path."""
    until: Release | None
    """The first release that does not (None: every later one)."""
    how: str
    """The path, in RLlib's own names: words only, recorded with each trial; the code takes ``names``."""
    names: tuple[str, ...] = ()
    """RLlib's names the code takes on this path (a hook, a method, a class's module and name, a key's parts)."""

    def holds(self, release: Release) -> bool:
        """Whether ``release`` takes this path."""
        return self.since <= release and (self.until is None or release < self.until)

    @property
    def releases(self) -> str:
        """``2.41-2.52``, ``2.53 on``."""
        first = f"{self.since[0]}.{self.since[1]}"
        if self.until is None:
            return f"{first} on"
        last = (self.until[0], self.until[1] - 1)
        return first if last == self.since[:2] else f"{first}-{last[0]}.{last[1]}"


#: The oldest release this seam drives, the new API stack's first default release: the one fact of the oldest Ray
#: (the adapter's ``SUPPORTED_RAY`` is it in words).
OLDEST: Release = (2, 40, 0)
STATS_CLASSES: Release = (2, 53, 0)
RLLIB_CALLBACK: Release = (2, 41, 0)
PIPELINE_TIMER: Release = (2, 44, 0)
AGGREGATORS_IN_LEARNERS: Release = (2, 42, 0)
_OLD_CALLBACKS = ("ray.rllib.algorithms.callbacks", "DefaultCallbacks")
_CALLBACKS = ("ray.rllib.callbacks.callbacks", "RLlibCallback")
_OLD_TIMER = ("__all_modules__", "learner_connector_timer")
_TIMER = ("__all_modules__", "learner_connector", "connector_pipeline_timer")
_AGG = "(num_aggregator_actors_per_learner=...)"

PATHS: tuple[ReleasePath, ...] = (
    ReleasePath(
        Seam.VALUES,
        OLDEST,
        STATS_CLASSES,
        "Stats(clear_on_reduce=True): rlbench's values so logged, RLlib's timers registered so before they are",
    ),
    ReleasePath(
        Seam.VALUES,
        STATS_CLASSES,
        None,
        "reporting(custom_stats_cls_lookup=...): DEFAULT_STATS_CLS_LOOKUP with a per-iteration mean for 'ema'",
    ),
    ReleasePath(Seam.CALLBACK, OLDEST, RLLIB_CALLBACK, ".".join(_OLD_CALLBACKS), _OLD_CALLBACKS),
    ReleasePath(Seam.CALLBACK, RLLIB_CALLBACK, None, ".".join(_CALLBACKS), _CALLBACKS),
    ReleasePath(Seam.BUILD, OLDEST, RLLIB_CALLBACK, "AlgorithmConfig.build()", ("build",)),
    ReleasePath(Seam.BUILD, RLLIB_CALLBACK, None, "AlgorithmConfig.build_algo()", ("build_algo",)),
    ReleasePath(
        Seam.MODULE_HOOK,
        OLDEST,
        RLLIB_CALLBACK,
        "on_episode_start (2.40 refuses an on_episode_created)",
        ("on_episode_start",),
    ),
    ReleasePath(Seam.MODULE_HOOK, RLLIB_CALLBACK, None, "on_episode_created", ("on_episode_created",)),
    ReleasePath(Seam.RUNNER_CALL, OLDEST, RLLIB_CALLBACK, "EnvRunnerGroup.foreach_worker", ("foreach_worker",)),
    ReleasePath(Seam.RUNNER_CALL, RLLIB_CALLBACK, None, "EnvRunnerGroup.foreach_env_runner", ("foreach_env_runner",)),
    ReleasePath(Seam.BATCH_BUILD, OLDEST, PIPELINE_TIMER, "the learner connector pipeline's __call__"),
    ReleasePath(Seam.BATCH_BUILD, PIPELINE_TIMER, None, "Learner._make_batch_if_necessary"),
    ReleasePath(Seam.CONNECTOR_TIMER, OLDEST, RLLIB_CALLBACK, "/".join(("learners", *_OLD_TIMER)), _OLD_TIMER),
    ReleasePath(Seam.CONNECTOR_TIMER, RLLIB_CALLBACK, PIPELINE_TIMER, "none (per-piece timers only)"),
    ReleasePath(Seam.CONNECTOR_TIMER, PIPELINE_TIMER, None, "/".join(("learners", *_TIMER)), _TIMER),
    ReleasePath(Seam.AGGREGATORS, OLDEST, RLLIB_CALLBACK, "none: no num_aggregator_actors_per_learner"),
    ReleasePath(Seam.AGGREGATORS, RLLIB_CALLBACK, AGGREGATORS_IN_LEARNERS, f"training{_AGG}", ("training",)),
    ReleasePath(Seam.AGGREGATORS, AGGREGATORS_IN_LEARNERS, None, f"learners{_AGG}", ("learners",)),
)

#: A legacy ``Stats`` mean's window: longer than any iteration's pushes, so the mean is over the iteration's values.
LEGACY_MEAN_WINDOW = 1 << 40


def release() -> Release:
    """The running Ray's release (Ray is imported here: call it where Ray runs)."""
    import ray  # imported already where this runs (a trial, an env runner, a learner): a dictionary lookup

    return parse_release(ray.__version__)


def path(what: Seam, at: Release | None = None) -> ReleasePath:
    """The path ``what`` takes at release ``at`` (default: the running Ray's); LookupError before :data:`OLDEST`."""
    at = release() if at is None else at
    for p in PATHS:
        if p.what is what and p.holds(at):
            return p
    raise LookupError(f"RLlib {'.'.join(map(str, at))} has no '{what.value}' path: rlbench drives 2.40.0 and later")


def paths_taken(at: Release | None = None) -> dict[str, str]:
    """What each path is at release ``at``: recorded with the trial's build, so a trial says how it was read."""
    at = release() if at is None else at
    return {what.value: path(what, at).how for what in Seam}


def legacy_stats(at: Release | None = None) -> bool:
    """Whether the release builds its values as 2.40-2.52's ``Stats`` (``clear_on_reduce``)."""
    return path(Seam.VALUES, at).since < STATS_CLASSES


def per_iteration(reduce: str, at: Release | None = None) -> dict[str, Any]:
    """``log_value``'s keyword arguments for a value that holds one iteration's ``sum``, ``mean`` or ``max``."""
    if not legacy_stats(at):
        return {"reduce": reduce}
    if reduce == "mean":
        return {"reduce": "mean", "window": LEGACY_MEAN_WINDOW, "clear_on_reduce": True}
    return {"reduce": reduce, "clear_on_reduce": True}


def register(logger: Any, key: tuple[str, ...], reduce: str, at: Release | None = None) -> None:
    """Make ``key`` an iteration's ``reduce`` before RLlib first logs it (RLlib's ``log_time`` and ``log_value``
    then reuse it). A sum starts at 0; a mean is registered empty (through ``log_time``, which creates the key
    without a value) on 2.40-2.52; from 2.53 the stats class makes RLlib's means per-iteration already."""
    if reduce == "sum":
        logger.log_value(key, 0.0, **per_iteration("sum", at))
    elif legacy_stats(at):
        logger.log_time(key, **per_iteration(reduce, at))


def callback_base() -> type:
    """The class an RLlib callback derives from in the running release."""
    module, name = path(Seam.CALLBACK).names
    return getattr(import_module(module), name)


def module_hook() -> str:
    """The callback method that wraps the RLModule's forward passes in the running release."""
    return path(Seam.MODULE_HOOK).names[0]


def foreach_env_runner(group: Any, fn: Any, *, local_env_runner: bool) -> list:
    """``fn`` called on the group's env runners (the local one too when ``local_env_runner``), by the release's
    own call."""
    return getattr(group, path(Seam.RUNNER_CALL).names[0])(fn, local_env_runner=local_env_runner)


def build(algo_config: Any) -> Any:
    """The algorithm built from its config, by the release's own call."""
    return getattr(algo_config, path(Seam.BUILD).names[0])()


def batch_build_in_learner(at: Release | None = None) -> bool:
    """Whether the learner builds its train batch in ``_make_batch_if_necessary`` (else inside the update, by a
    direct call of its learner connector pipeline)."""
    return path(Seam.BATCH_BUILD, at).since >= PIPELINE_TIMER


def connector_timer_key(at: Release | None = None) -> tuple[str, ...] | None:
    """RLlib's learner-connector pipeline timer under a learner's metrics at release ``at``; None where it has
    none."""
    return path(Seam.CONNECTOR_TIMER, at).names or None


#: The builder keywords of the aggregator actors (APPO and IMPALA).
AGGREGATOR_KEYS = ("num_aggregator_actors_per_learner", "max_requests_in_flight_per_aggregator_actor")


def builder_calls(
    calls: list[tuple[str, dict[str, Any]]], defaults: dict[str, Any], at: Release | None = None
) -> list[tuple[str, dict[str, Any]]]:
    """The ``AlgorithmConfig`` builder calls (method, keyword arguments) as the release takes them: the aggregator
    actors' keywords go to ``learners()`` from 2.42, to ``training()`` in 2.41; 2.40 has none, so there they are
    dropped when their value is what the release does without them (``defaults``), else ValueError naming the
    release they need."""
    into = path(Seam.AGGREGATORS, at).names
    if into == ("learners",):
        return calls
    moved = {
        k: v for method, kwargs in calls if method == "learners" for k, v in kwargs.items() if k in AGGREGATOR_KEYS
    }
    out = [(m, {k: v for k, v in kw.items() if not (m == "learners" and k in AGGREGATOR_KEYS)}) for m, kw in calls]
    if not moved:
        return out
    if into:  # the release takes them in another builder call
        if not any(m == into[0] for m, _ in out):
            out.append((into[0], {}))
        return [(m, {**kw, **moved} if m == into[0] else kw) for m, kw in out]
    for key, value in moved.items():
        if value != defaults.get(key):
            raise ValueError(
                f"learners.{key}: {value} needs RLlib 2.41 or later (RLlib "
                f"{'.'.join(map(str, at or release()))} has no aggregator actors); leave it unset for this release"
            )
    return out


def stats_reporting(at: Release | None = None) -> dict[str, Any]:
    """``config.reporting(...)``'s keyword arguments that make RLlib's own means per-iteration: from 2.53 the stats
    class lookup; none on 2.40-2.52, whose keys are registered instead (:func:`register`)."""
    if legacy_stats(at):
        return {}
    return {"custom_stats_cls_lookup": _per_iteration_stats_lookup()}


def _per_iteration_stats_lookup() -> dict:
    """2.53 on: RLlib's stats classes, the EMA replaced by a mean cleared on every reduce."""
    from ray.rllib.utils.metrics.metrics_logger import DEFAULT_STATS_CLS_LOOKUP
    from ray.rllib.utils.metrics.stats import mean as rllib_mean

    rllib_ema = DEFAULT_STATS_CLS_LOOKUP["ema"]
    tf_is_tensor = rllib_mean.tf.is_tensor if rllib_mean.tf else None  # as MeanStats.push converts them

    class PerIterationMeanStats(rllib_mean.MeanStats):
        """Mean over one reduce period, standing in for RLlib's never-reset EMA.

        Every value pushed also goes into RLlib's own EMA, which nothing reads, so a push costs what
        it costs under Tune. The mean alone costs 0.1 us a push against the EMA's 1.7 us, and a
        500-step CartPole PPO iteration pushes about 8,900 values (18 per env step): without the
        EMA, 0-runner PPO ran about 5% faster under rlbench than under Tune (docs/MEASUREMENT.md 7).
        """

        stats_cls_identifier = "ema"

        def __init__(self, ema_coeff: float | None = None, *args, **kwargs):
            super().__init__(*args, **kwargs)
            self._ema_push = rllib_ema(
                0.01 if ema_coeff is None else ema_coeff, is_root=self.is_root, is_leaf=self.is_leaf
            ).push

        def push(self, value: Any) -> None:
            # RLlib's work, discarded (see the class docstring); then MeanStats.push, inlined: each extra
            # call here costs ~0.15 us a push, 0.5% of a 0-runner iteration (scripts/bench_inprocess.py instruments)
            self._ema_push(value)
            self.values.append(value.numpy() if tf_is_tensor is not None and tf_is_tensor(value) else value)

    return {**DEFAULT_STATS_CLS_LOOKUP, "ema": PerIterationMeanStats}
