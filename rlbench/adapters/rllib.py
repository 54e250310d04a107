"""The RLlib adapter: the one place that knows RLlib's config names, result keys and process titles.

Another training system, or an RLlib release that renames keys, means changing this module alone.
Pinned facts (checked by tests/adapters/test_rllib.py) are measured on Ray 2.60.

Exact per-iteration timings: RLlib's ``timers/*`` are exponential moving averages (coefficient
0.01) that are never reset, so the value in iteration N's result is mostly iteration 1's. We
replace RLlib's ``ema`` stats class with a plain mean that clears on every reduce
(``config.reporting(custom_stats_cls_lookup=...)``), so each timer in a result is the mean of the
values logged during that iteration alone; PPO times each phase once per training step and runs
one training step per iteration, so the mean is the phase's duration in that iteration.
"""

from __future__ import annotations

import logging
import math
import os
from dataclasses import dataclass
from typing import Any

from rlbench.spec import TrialConfig

# ---------------------------------------------------------------------------------------------
# Process roles (used by the sampler; titles are set by Ray / RLlib in each worker)

#: Title prefix (``cmdline()[0]`` of a Ray worker) -> role.
RAY_TITLE_ROLES: dict[str, str] = {
    "ray::SingleAgentEnvRunner": "env_runner",
    "ray::MultiAgentEnvRunner": "env_runner",
    "ray::_WrappedExecutable": "learner",
    "ray::DashboardAgent": "ray_system",
    "ray::RuntimeEnvAgent": "ray_system",
}
#: Substrings of a system process's command line -> role ``ray_system``.
RAY_SYSTEM_MARKERS: tuple[str, ...] = (
    "gcs_server",
    "raylet",
    "autoscaler/_private/monitor.py",
    "dashboard/dashboard.py",
    "_private/log_monitor.py",
    "dashboard/agent.py",
    "runtime_env/agent/main.py",
)

ROLES: tuple[str, ...] = ("driver", "learner", "env_runner", "ray_system", "other")


def classify_process(cmdline: list[str], *, is_driver: bool) -> str:
    """The role of one process of a trial's tree, from its command line (Ray sets it as the title)."""
    if is_driver:
        return "driver"
    title = (cmdline[0].strip() if cmdline else "")
    for prefix, role in RAY_TITLE_ROLES.items():
        if title.startswith(prefix):
            return role
    joined = " ".join(cmdline[:3])
    if any(marker in joined for marker in RAY_SYSTEM_MARKERS):
        return "ray_system"
    return "other"


# ---------------------------------------------------------------------------------------------
# Resources


@dataclass(frozen=True)
class ResourceDemand:
    """What a trial asks of the machine."""

    driver_cpus: int
    """CPUs rlbench reserves for the driver (num_cpus_for_main_process)."""
    actor_cpus: float
    """CPUs Ray must find for the env runners and remote learners together."""
    gpus: float
    """GPUs the learners and env runners ask for together."""

    @property
    def total_cpus(self) -> float:
        """Driver plus actors."""
        return self.driver_cpus + self.actor_cpus


def resource_demand(config: TrialConfig) -> ResourceDemand:
    """CPUs and GPUs a trial needs, by RLlib's placement rules (no Ray needed)."""
    runners, learners = config.env_runners, config.learners
    actor_cpus = runners.num_env_runners * runners.num_cpus_per_env_runner
    gpus = runners.num_env_runners * runners.num_gpus_per_env_runner + learners.total_gpus
    if learners.num_learners > 0:
        actor_cpus += learners.num_learners * float(learners.num_cpus_per_learner)
    return ResourceDemand(config.resources.num_cpus_for_main_process, actor_cpus, gpus)


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


# ---------------------------------------------------------------------------------------------
# Building the algorithm


def quiet_logging() -> None:
    """Silence RLlib's own logger (it has its own handler) and Ray's Python loggers."""
    for name in ("ray", "ray.rllib", "ray.tune", "ray.train", "ray.data"):
        logging.getLogger(name).setLevel(logging.ERROR)
    import warnings

    warnings.filterwarnings("ignore", category=DeprecationWarning)
    warnings.filterwarnings("ignore", module="ray")
    os.environ.setdefault("RAY_DEDUP_LOGS", "0")


def _per_iteration_stats_lookup() -> dict:
    from ray.rllib.utils.metrics.metrics_logger import DEFAULT_STATS_CLS_LOOKUP
    from ray.rllib.utils.metrics.stats.mean import MeanStats

    class PerIterationMeanStats(MeanStats):
        """Mean over one reduce period, standing in for RLlib's never-reset EMA."""

        stats_cls_identifier = "ema"

        def __init__(self, ema_coeff: float | None = None, *args, **kwargs):
            super().__init__(*args, **kwargs)

    return {**DEFAULT_STATS_CLS_LOOKUP, "ema": PerIterationMeanStats}


def resolve_env(env: str) -> Any:
    """What to hand RLlib as ``env``: a gymnasium id as-is, an import path as the class itself."""
    if ":" in env:
        import importlib

        module_name, _, attr = env.partition(":")
        return getattr(importlib.import_module(module_name), attr)
    return env


def build_config(config: TrialConfig, *, seed: int | None = None):
    """The PPOConfig for one trial; only new-API names reach RLlib."""
    from ray.rllib.algorithms.ppo import PPOConfig

    from rlbench.adapters.rllib_timing import PhaseTimingCallback

    runners, learners = config.env_runners, config.learners
    algo_config = (
        PPOConfig()
        .environment(env=resolve_env(config.environment.env), env_config=dict(config.environment.env_config))
        .env_runners(
            num_env_runners=runners.num_env_runners,
            num_envs_per_env_runner=runners.num_envs_per_env_runner,
            num_cpus_per_env_runner=runners.num_cpus_per_env_runner,
            num_gpus_per_env_runner=runners.num_gpus_per_env_runner,
            rollout_fragment_length=runners.rollout_fragment_length,
        )
        .learners(
            num_learners=learners.num_learners,
            num_cpus_per_learner=learners.num_cpus_per_learner,
            num_gpus_per_learner=learners.num_gpus_per_learner,
        )
        .resources(num_cpus_for_main_process=config.resources.num_cpus_for_main_process)
        .reporting(custom_stats_cls_lookup=_per_iteration_stats_lookup())
        .callbacks(PhaseTimingCallback)
        .fault_tolerance(restart_failed_env_runners=False)
        .debugging(log_level="ERROR", seed=seed)
    )
    training = config.training.model_dump(exclude_none=True)
    if training:
        algo_config = algo_config.training(**training)
    model = config.rl_module.model_dump(exclude_none=True)
    if model:
        algo_config = algo_config.rl_module(model_config=model)
    return algo_config


def infeasible_reason(algo_config, *, wait_s: float = 3.0) -> str | None:
    """Try the algorithm's actor bundles as a placement group; a reason string if Ray cannot place them.

    RLlib validates nothing up front and ``build_algo`` blocks forever on an unplaceable actor, so
    this guards the trial (the driver's own bundle is dropped: outside Tune nobody reserves it).
    """
    import ray
    from ray.util.placement_group import placement_group, remove_placement_group

    request = algo_config.algo_class.default_resource_request(algo_config)
    bundles = [b for b in request.bundles[1:] if any(v > 0 for v in b.values())]
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
        return (
            f"Ray cannot place the trial's actors: they ask for {_fmt(total)} in {len(bundles)} bundles, "
            f"the trial's Ray runtime has {_fmt(ray.cluster_resources())}"
        )
    finally:
        remove_placement_group(pg)


def _fmt(resources: dict) -> str:
    keys = [k for k in ("CPU", "GPU") if k in resources] or list(resources)[:2]
    return ", ".join(f"{resources.get(k, 0):g} {k}" for k in keys)


def set_worker_threads(algo, threads: dict[str, int]) -> dict[str, int | None]:
    """Set torch threads in env runners and remote learners; return what each role reports back."""
    import torch

    def setter(n: int):
        def apply(_worker) -> int:
            import torch as t

            t.set_num_threads(n)
            return t.get_num_threads()

        return apply

    observed: dict[str, int | None] = {"driver": torch.get_num_threads(), "learner": None, "env_runner": None}
    group = algo.env_runner_group
    if group is not None and group.num_remote_env_runners() > 0:
        got = group.foreach_env_runner(setter(threads["env_runner"]), local_env_runner=False)
        observed["env_runner"] = min(got) if got else None
    learner_group = algo.learner_group
    if learner_group is not None and not learner_group.is_local:
        got = learner_group.foreach_learner(setter(threads["learner"]))
        values = [r.get() for r in got if r.ok]
        observed["learner"] = min(values) if values else None
    else:
        observed["learner"] = observed["driver"]
    if observed["env_runner"] is None:
        observed["env_runner"] = observed["driver"]  # sampling happens in the driver's local runner
    return observed


# ---------------------------------------------------------------------------------------------
# Reading results

TIMER_SAMPLE = ("timers", "env_runner_sampling_timer")
TIMER_LEARN = ("timers", "learner_update_timer")
TIMER_SYNC_WEIGHTS = ("timers", "synch_weights")
TIMER_SYNC_CONNECTORS = ("timers", "synch_env_connectors")
#: Summed over env runners by rlbench's PhaseTimingCallback (rllib_timing.py).
ENV_RUNNERS_ENV_S = ("env_runners", "rlbench", "env_step_s")
ENV_RUNNERS_INFERENCE_S = ("env_runners", "rlbench", "inference_s")
#: Learner connector pipeline (GAE etc.): one call per update, so the per-iteration mean is its time.
LEARNER_CONNECTOR_S = ("learners", "__all_modules__", "learner_connector", "connector_pipeline_timer")


def _get(result: dict, path: tuple, default: float = 0.0) -> float:
    node: Any = result
    for key in path:
        if not isinstance(node, dict) or key not in node:
            return default
        node = node[key]
    try:
        value = float(node)
    except (TypeError, ValueError):
        return default
    return default if math.isnan(value) else value


def sampling_split(sample_s: float, env_total_s: float, inference_total_s: float, *,
                   sampling_runners: int) -> dict[str, float]:
    """Split an iteration's sampling wall time into env, inference and the rest.

    ``env_total_s`` and ``inference_total_s`` are summed over the env runners that sampled (they
    run in parallel); divided by their number they become wall-equivalent seconds (the mean env
    runner's), so ``env_step_s + inference_s + sample_other_s == sample_s``. ``sample_other_s``
    holds the connectors, episode bookkeeping, transfer to the driver and the wait for the
    slowest runner.
    """
    env_step_s = env_total_s / sampling_runners
    inference_s = inference_total_s / sampling_runners
    return {"env_step_s": env_step_s, "inference_s": inference_s,
            "sample_other_s": sample_s - env_step_s - inference_s}


def iteration_timings(algo, result: dict) -> dict[str, float]:
    """This iteration's exact phase times and step counts from its result dict.

    ``sync_s`` is the weight broadcast plus the env-connector state sync. RLlib times the latter
    after it has reduced the iteration's metrics, so the result shows it one iteration late; we
    read it from the algorithm's metrics logger right after ``train()`` returns instead.
    """
    connectors_s = _get({"m": algo.metrics.peek(TIMER_SYNC_CONNECTORS, default=0.0)}, ("m",))
    sample_s, learn_s = _get(result, TIMER_SAMPLE), _get(result, TIMER_LEARN)
    split = sampling_split(sample_s, _get(result, ENV_RUNNERS_ENV_S), _get(result, ENV_RUNNERS_INFERENCE_S),
                           sampling_runners=max(1, int(algo.config.num_env_runners or 0)))
    connector_s = _get(result, LEARNER_CONNECTOR_S)
    return {
        "sample_s": sample_s,
        **split,
        "learn_s": learn_s,
        "learner_connector_s": connector_s,
        "sgd_s": learn_s - connector_s,
        "sync_s": _get(result, TIMER_SYNC_WEIGHTS) + connectors_s,
        "env_steps_sampled": int(_get(result, ("env_runners", "num_env_steps_sampled"))),
        "env_steps_trained": int(_get(result, ("learners", "__all_modules__", "num_env_steps_trained"))),
        "episode_return_mean": _get(result, ("env_runners", "episode_return_mean"), default=float("nan")),
    }
