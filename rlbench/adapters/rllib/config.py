"""Building an RLlib algorithm config (PPO, APPO, IMPALA, DQN or SAC) for one trial: only new-API names reach RLlib.

The spec's sections mirror ``AlgorithmConfig``'s; rlbench has already translated old names (RLlib
ignores several silently). Three things are added to every config: the per-iteration stats class
(exact timers, see :mod:`rlbench.adapters.rllib.results`; from RLlib 2.53, :mod:`.compat`), the phase-timing callback
(:mod:`rlbench.adapters.rllib.timing`) and no restarts of failed env runners (a fault must end the
trial, not be retried; it also drops a C++ warning line).
"""

from __future__ import annotations

import logging
import os
from typing import TYPE_CHECKING, Any

from rlbench.adapters.envs import env_class, is_import_path
from rlbench.adapters.rllib import compat
from rlbench.adapters.rllib.training import AGGREGATING_ALGOS

if TYPE_CHECKING:
    from rlbench.adapters.base import TrialConfig


def quiet_logging() -> None:
    """Silence RLlib's own logger (it has its own handler) and Ray's Python loggers."""
    for name in ("ray", "ray.rllib", "ray.tune", "ray.train", "ray.data"):
        logging.getLogger(name).setLevel(logging.ERROR)
    import warnings

    warnings.filterwarnings("ignore", category=DeprecationWarning)
    warnings.filterwarnings("ignore", module="ray")
    os.environ.setdefault("RAY_DEDUP_LOGS", "0")


def resolve_env(env: str) -> Any:
    """What to hand RLlib as ``env``: a gymnasium id as-is (``ale_py:ALE/Pong-v5`` too: RLlib imports ale_py
    for it), an import path as the class itself (checked by :func:`env_class`)."""
    return env_class(env) if is_import_path(env) else env


#: rlbench's algorithm name -> (module, AlgorithmConfig class) in RLlib 2.60.
ALGO_CONFIG_CLASSES: dict[str, tuple[str, str]] = {
    "PPO": ("ray.rllib.algorithms.ppo", "PPOConfig"),
    "APPO": ("ray.rllib.algorithms.appo", "APPOConfig"),
    "IMPALA": ("ray.rllib.algorithms.impala", "IMPALAConfig"),
    "DQN": ("ray.rllib.algorithms.dqn", "DQNConfig"),
    "SAC": ("ray.rllib.algorithms.sac", "SACConfig"),
}


def config_class(algo: str):
    """The AlgorithmConfig class of an algorithm (imports RLlib)."""
    import importlib

    module, name = ALGO_CONFIG_CLASSES[algo]
    return getattr(importlib.import_module(module), name)


#: What a release without aggregator actors does: the values of the two keys that ask for none
#: (:func:`~rlbench.adapters.rllib.compat.builder_calls`).
LEARNER_DEFAULTS: dict[str, Any] = {
    "num_aggregator_actors_per_learner": 0,
    "max_requests_in_flight_per_aggregator_actor": None,
}


def spec_calls(config: TrialConfig) -> list[tuple[str, dict[str, Any]]]:
    """The ``AlgorithmConfig`` builder calls that carry a trial config's keys, in order: (method, keyword
    arguments), the env as the spec wrote it. The one mapping from the spec's sections to RLlib's: the trial's
    build (:func:`build_config`) and the code ``rlbench autoconfig`` writes (:mod:`.snippet`) both use it, so
    the pasted config is the one that was measured."""
    runners, learners = config.env_runners, config.learners
    sampling = dict(
        num_env_runners=runners.num_env_runners,
        num_envs_per_env_runner=runners.num_envs_per_env_runner,
        num_cpus_per_env_runner=runners.num_cpus_per_env_runner,
        num_gpus_per_env_runner=runners.num_gpus_per_env_runner,
    )
    if runners.rollout_fragment_length is not None:  # else the algorithm's own default (PPO: auto, APPO/IMPALA: 50)
        sampling["rollout_fragment_length"] = runners.rollout_fragment_length
    if runners.gym_env_vectorize_mode is not None:  # else RLlib's default, sync
        sampling["gym_env_vectorize_mode"] = runners.gym_env_vectorize_mode
    learning = dict(
        num_learners=learners.num_learners,
        num_cpus_per_learner=learners.num_cpus_per_learner,
        num_gpus_per_learner=learners.num_gpus_per_learner,
    )
    if config.algo in AGGREGATING_ALGOS:  # PPO would start the aggregator actors and never use them
        learning["num_aggregator_actors_per_learner"] = learners.num_aggregator_actors_per_learner
        if learners.max_requests_in_flight_per_aggregator_actor is not None:
            learning["max_requests_in_flight_per_aggregator_actor"] = (
                learners.max_requests_in_flight_per_aggregator_actor
            )
    calls = [
        ("environment", {"env": config.environment.env, "env_config": dict(config.environment.env_config)}),
        ("env_runners", sampling),
        ("learners", learning),
        ("resources", {"num_cpus_for_main_process": config.resources.num_cpus_for_main_process}),
    ]
    training = config.training.model_dump(exclude_none=True)
    if training:
        calls.append(("training", training))
    model = config.rl_module.model_dump(exclude_none=True)
    if model:
        calls.append(("rl_module", {"model_config": model}))
    return calls


def build_config(config: TrialConfig, *, seed: int | None = None, without: frozenset[str] = frozenset()):
    """The AlgorithmConfig (PPOConfig, APPOConfig, IMPALAConfig, DQNConfig, SACConfig) for one trial; only new-API
    names reach RLlib.
    ``without`` leaves out the ``stats`` class or the timing ``callback`` (a fidelity diagnosis,
    :mod:`rlbench.run.switches`)."""
    from rlbench.adapters.rllib.timing import PhaseTimingCallback

    algo_config = config_class(config.algo)()
    for method, kwargs in compat.builder_calls(spec_calls(config), LEARNER_DEFAULTS):
        if method == "environment":  # an import path becomes its (checked) class
            kwargs = {**kwargs, "env": resolve_env(kwargs["env"])}
        algo_config = getattr(algo_config, method)(**kwargs)
    algo_config = algo_config.fault_tolerance(restart_failed_env_runners=False).debugging(log_level="ERROR", seed=seed)
    reporting = config.reporting.model_dump(exclude_none=True)
    if "stats" not in without:
        reporting.update(compat.stats_reporting())
    if reporting:
        algo_config = algo_config.reporting(**reporting)
    if "callback" not in without:
        algo_config = algo_config.callbacks(PhaseTimingCallback)
    return algo_config


#: How long a placement group that fits the runtime by arithmetic may take to be placed before the trial is skipped.
FITS_WAIT_S = 60.0


def infeasible_reason(algo_config, *, wait_s: float = 3.0) -> str | None:
    """Try the algorithm's actor bundles as a placement group; a reason string if Ray cannot place them.

    RLlib validates nothing up front and ``build_algo`` blocks forever on an unplaceable actor, so
    this guards the trial (the driver's own bundle is dropped: outside Tune nobody reserves it).
    """
    import ray
    from ray.util.placement_group import placement_group, remove_placement_group

    request = algo_config.algo_class.default_resource_request(algo_config)
    bundles = [b for b in request.bundles[1:] if any(v > 0 for v in b.values())]
    # RLlib 2.60's request already holds the aggregator actors (1 CPU each): in each learner's bundle,
    # or one bundle each when the learner is the driver's (algorithms/utils.py, _get_learner_bundles).
    if not bundles:
        return None
    pg = placement_group(bundles, strategy="PACK")
    try:
        ready, _ = ray.wait([pg.ready()], timeout=wait_s)
        if ready:
            return None
        total: dict[str, float] = {}
        for b in bundles:
            for k, v in b.items():
                total[k] = total.get(k, 0) + v
        have = ray.cluster_resources()
        if all(v <= have.get(k, 0) for k, v in total.items()):
            # It fits by arithmetic: a busy machine's raylet was slow to place it (APPO's 0.5-CPU runner in a 1-CPU
            # runtime was refused after 3 s at a load of 6 on 2 cores). Wait longer before calling it unplaceable.
            ready, _ = ray.wait([pg.ready()], timeout=FITS_WAIT_S)
            if ready:
                return None
        return (
            f"Ray cannot place the trial's actors: they ask for {_fmt(total)} in {len(bundles)} bundles, "
            f"the trial's Ray runtime has {_fmt(ray.cluster_resources())}"
        )
    finally:
        remove_placement_group(pg)


def _fmt(resources: dict) -> str:
    keys = [k for k in ("CPU", "GPU") if k in resources] or list(resources)[:2]
    return ", ".join(f"{resources.get(k, 0):g} {k}" for k in keys)
