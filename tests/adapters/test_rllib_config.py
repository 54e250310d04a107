"""The AlgorithmConfig rlbench builds per algorithm, and its demand against RLlib's own placement request.

Builds configs only (no Ray runtime): RLlib 2.60's ``default_resource_request`` is pure arithmetic
over the config, so the actor CPUs rlbench plans with can be checked against it exactly.
"""

from __future__ import annotations

import pytest

from rlbench.adapters.rllib.config import build_config
from rlbench.adapters.rllib.resources import resource_demand
from rlbench.spec.model import TrialConfig


def trial(**sections) -> TrialConfig:
    return TrialConfig.model_validate({"environment": {"env": "CartPole-v1"}, **sections})


@pytest.mark.parametrize("algo", ["PPO", "APPO", "IMPALA"])
def test_each_algorithm_gets_its_own_config_class(algo):
    c = build_config(trial(algo=algo))
    assert type(c).__name__ == f"{algo}Config"
    assert c.num_learners == 0  # rlbench's default, not IMPALA's own 1


def test_algorithm_defaults_kept_unless_set():
    appo = build_config(trial(algo="APPO"))
    assert appo.rollout_fragment_length == 50 and appo.min_time_s_per_iteration == 10
    ppo = build_config(trial())
    assert ppo.rollout_fragment_length == "auto" and not ppo.min_time_s_per_iteration
    set_ = build_config(
        trial(
            algo="APPO",
            env_runners={"rollout_fragment_length": 25},
            reporting={"min_time_s_per_iteration": 0, "min_sample_timesteps_per_iteration": 200},
            training={"circular_buffer_num_batches": 3, "broadcast_interval": 2},
        )
    )
    assert (set_.rollout_fragment_length, set_.min_time_s_per_iteration, set_.min_sample_timesteps_per_iteration) == (
        25,
        0,
        200,
    )
    assert (set_.circular_buffer_num_batches, set_.broadcast_interval) == (3, 2)


def test_the_vectorize_mode_reaches_rllib_and_passes_its_validation():
    assert build_config(trial()).gym_env_vectorize_mode == "sync"  # RLlib's default, untouched
    c = build_config(trial(env_runners={"num_envs_per_env_runner": 2, "gym_env_vectorize_mode": "async"}))
    assert c.gym_env_vectorize_mode == "async"
    c._validate_env_runner_settings()  # RLlib's own check of the value (raises on one it does not know)
    with pytest.raises(ValueError, match="gym_env_vectorize_mode"):
        trial(env_runners={"gym_env_vectorize_mode": "threads"})


def test_ppo_gets_no_aggregator_actors():
    assert build_config(trial()).num_aggregator_actors_per_learner == 0


@pytest.mark.parametrize(
    ("algo", "learners", "runners"),
    [
        ("PPO", {"num_learners": 2, "num_cpus_per_learner": 0.5}, 0),
        ("APPO", {"num_learners": 0, "num_aggregator_actors_per_learner": 1}, 1),
        ("IMPALA", {"num_learners": 2, "num_cpus_per_learner": 0.5, "num_aggregator_actors_per_learner": 2}, 2),
    ],
)
def test_demand_matches_rllibs_placement_request(algo, learners, runners):
    """rlbench's actor CPUs (env runners, remote learners, aggregators) are what RLlib asks Ray to place:
    its request past the driver's bundle (RLlib counts aggregators in the learners' bundles)."""
    config = trial(
        algo=algo, learners=learners, env_runners={"num_env_runners": runners, "num_cpus_per_env_runner": 0.5}
    )
    algo_config = build_config(config)
    request = algo_config.algo_class.default_resource_request(algo_config)
    assert sum(b.get("CPU", 0) for b in request.bundles[1:]) == resource_demand(config).actor_cpus


def test_the_stats_class_reports_each_periods_plain_mean():
    from rlbench.adapters.rllib.compat import _per_iteration_stats_lookup

    stats = _per_iteration_stats_lookup()["ema"](ema_coeff=0.5)
    for v in (1.0, 2.0, 6.0):
        stats.push(v)
    assert stats.reduce() == 3.0  # (1 + 2 + 6) / 3, not an EMA
    stats.push(10.0)
    assert stats.reduce() == 10.0  # cleared by the reduce: iteration N's value is iteration N's


def test_the_stats_class_does_rllibs_ema_work_on_every_push():
    """What a push costs under Tune: RLlib's own EMA is updated too (and never read)."""
    from rlbench.adapters.rllib.compat import _per_iteration_stats_lookup

    stats = _per_iteration_stats_lookup()["ema"](ema_coeff=0.5)
    for v in (1.0, 3.0, 7.0):
        stats.push(v)
    assert stats._ema_push.__self__.peek() == 4.5  # 1, then 0.5 x 1 + 0.5 x 3 = 2, then 0.5 x 2 + 0.5 x 7
