"""What an RLlib trial asks of the machine, by RLlib's placement rules (standard library only, no Ray).

The one place that knows how RLlib sizes its actors: env runners reserve
``num_cpus_per_env_runner`` / ``num_gpus_per_env_runner`` each, remote learners
``num_cpus_per_learner`` / ``num_gpus_per_learner`` each, and with ``num_learners: 0`` the learner
lives in the driver (its GPU, if any, is the driver's). The driver's CPUs are rlbench's meaning of
``num_cpus_for_main_process`` (docs/RUNNING.md: outside Tune, RLlib reserves nothing for it). APPO and IMPALA
also start ``max(1, num_learners) x num_aggregator_actors_per_learner`` aggregator actors of 1 CPU
each (``Algorithm.setup``; RLlib's placement request counts them in the learners' bundles) and, with remote env
runners, one ``EnvRunnerStateServer`` actor of 0 CPUs that the env runners pull weights from.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from rlbench.adapters.demand import ActorDemand, ResourceDemand
from rlbench.adapters.rllib.training import AGGREGATING_ALGOS

if TYPE_CHECKING:
    from rlbench.adapters.base import TrialConfig


def resource_demand(config: TrialConfig) -> ResourceDemand:
    """CPUs and GPUs a trial needs, per role and per actor."""
    runners, learners = config.env_runners, config.learners
    actors = [
        ActorDemand(
            "env_runner",
            runners.num_env_runners,
            runners.num_cpus_per_env_runner,
            runners.num_gpus_per_env_runner,
            "env runners",
        )
    ]
    driver_gpus = 0.0
    if learners.num_learners > 0:
        actors.append(
            ActorDemand(
                "learner",
                learners.num_learners,
                float(learners.num_cpus_per_learner),
                learners.num_gpus_per_learner,
                "learners",
            )
        )
    else:
        driver_gpus = learners.num_gpus_per_learner
    aggregators = max(1, learners.num_learners) * learners.num_aggregator_actors_per_learner
    if config.algo in AGGREGATING_ALGOS and aggregators:  # the state server reserves nothing: no demand
        actors.append(ActorDemand("aggregator", aggregators, 1.0, 0.0, "aggregator actors"))
    return ResourceDemand(config.resources.num_cpus_for_main_process, tuple(actors), driver_gpus)


#: Algorithms whose sampling runs asynchronously to learning (RLlib's IMPALA family): the env runners
#: keep sampling while the learner updates, so an iteration's phases overlap.
ASYNC_ALGOS: frozenset[str] = frozenset({"APPO", "IMPALA"})


def torch_threads(config: TrialConfig) -> dict[str, int]:
    """The torch thread count rlbench sets per role (``driver``, ``learner``, ``env_runner``).

    ``learner`` is the remote learners' count; with num_learners=0 the learner runs in the driver
    and gets the driver's count.
    """
    t = config.threads
    driver = t.driver_torch_threads or max(1, config.resources.num_cpus_for_main_process)
    learner = t.learner_torch_threads or max(1, math.floor(float(config.learners.num_cpus_per_learner)))
    if config.learners.num_learners == 0:
        learner = driver
    runner = t.env_runner_torch_threads or max(1, math.floor(config.env_runners.num_cpus_per_env_runner))
    return {"driver": driver, "learner": learner, "env_runner": runner}
