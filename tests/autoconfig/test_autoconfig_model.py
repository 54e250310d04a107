"""The cost model on hand-computed fixtures: 1 ms env steps, 0.25 ms of learner per step, 50 ms of
sync per runner, 4 cores, 4000-step batches."""

from __future__ import annotations

import dataclasses

import pytest
from helpers import cand

from rlbench.adapters import get_adapter
from rlbench.autoconfig.model import CostModel, Observation, ProbeCosts, candidate_key, env_id
from rlbench.spec.model import TrialConfig

PROBES = ProbeCosts(env_step_s=0.001, inference_step_s=0.0, learner_step_s=0.00025, sync_per_runner_s=0.05, cores=4)
MODEL = CostModel(PROBES)


@pytest.mark.parametrize(
    "runners, iteration_s",
    [
        (0, 4.0 + 1.0),  # the driver samples 4000 steps alone; no sync
        (1, 4.0 + 1.0 + 0.05),
        (2, 2.0 + 1.0 + 0.10),
        (4, 1.0 + 1.0 + 0.20),
        (8, 0.5 * 2 + 1.0 + 0.40),  # 8 busy runners on 4 cores: each 500 steps takes twice as long
    ],
)
def test_iteration_by_hand(runners, iteration_s):
    p = MODEL.predict(cand(runners))
    assert p.iteration_s == pytest.approx(iteration_s)
    assert p.env_steps_per_s == pytest.approx(4000 / iteration_s)


def test_the_model_names_the_known_best_and_prunes_what_cannot_win():
    space = [cand(r) for r in (0, 1, 2, 4, 8)]
    rates = {c.key: MODEL.predict(c).env_steps_per_s for c in space}
    assert max(rates, key=rates.get) == cand(4).key  # 1818 steps/s; 8 runners contend: 1667
    # Half of 1818 is 909: 0 runners (800) and 1 runner (792) cannot win; 2 runners (1290) may.
    assert set(MODEL.cannot_win(space)) == {cand(0).key, cand(1).key}


def test_vectorizing_pays_the_per_call_cost_once_per_vector_step():
    model = CostModel(dataclasses.replace(PROBES, inference_call_s=0.002))
    one, four = model.predict(cand(2, 1)), model.predict(cand(2, 4))
    assert one.sample_s == pytest.approx(2000 * 0.001 + 2000 * 0.002)  # 6 s
    assert four.sample_s == pytest.approx(2000 * 0.001 + 500 * 0.002)  # 3 s


def test_a_trial_pinned_to_fewer_cores_contends_sooner():
    assert MODEL.predict(cand(4, cpus_limit=2)).sample_s == pytest.approx(1.0 * 2)


def test_an_unprobed_gpu_is_not_predicted_nor_pruned():
    gpu = cand(1, gpus=1.0)
    assert MODEL.predict(gpu) is None
    assert gpu.key not in MODEL.cannot_win([gpu, cand(4)])
    assert gpu.gpus == 1.0 and gpu.cpus == 2.0


def test_refit_recovers_known_scales_from_exact_measurements():
    # The truth: env steps 2x slower than probed, learner half, sync 1.5x, 0.3 s overhead.
    truth = CostModel(
        dataclasses.replace(
            PROBES, env_step_s=0.002, learner_step_s=0.000125, sync_per_runner_s=0.075, iteration_overhead_s=0.3
        )
    )
    space = [cand(r, batch=b) for r in (1, 2, 4, 8) for b in (2000, 4000)]
    obs = [Observation(c, truth.predict(c).iteration_s) for c in space]
    fitted = MODEL.refit(obs, prior_observations=1e-6)
    assert fitted.probes.env_step_s == pytest.approx(0.002, rel=1e-3)
    assert fitted.probes.learner_step_s == pytest.approx(0.000125, rel=1e-3)
    assert fitted.probes.sync_per_runner_s == pytest.approx(0.075, rel=1e-3)
    assert fitted.probes.iteration_overhead_s == pytest.approx(0.3, rel=1e-3)
    assert fitted.refit_points == 8
    assert all(abs(r.error_pct) < 0.1 for r in fitted.predicted_vs_measured(obs))


def test_refit_with_one_observation_keeps_the_unvaried_phases_near_the_probes():
    # Only 0 runners measured: no sync was ever seen, so its scale must stay at 1 (not be zeroed).
    fitted = MODEL.refit([Observation(cand(0), 10.0)])
    assert fitted.probes.sync_per_runner_s == pytest.approx(0.05)
    assert fitted.predict(cand(0)).iteration_s == pytest.approx(10.0, rel=0.35)  # moved towards 10 from 5


def test_predicted_vs_measured_rows():
    rows = MODEL.predicted_vs_measured([Observation(cand(4), 2.75), Observation(cand(1, gpus=1.0), 3.0)])
    assert rows[0].predicted_iteration_s == pytest.approx(2.2) and rows[0].error_pct == pytest.approx(-20.0)
    assert rows[1].predicted_iteration_s is None and rows[1].error_pct is None


def test_candidate_from_a_trial_config():
    config = TrialConfig.model_validate(
        {
            "environment": {"env": "CartPole-v1"},
            "env_runners": {"num_env_runners": 2, "num_envs_per_env_runner": 4},
            "learners": {"learner_gpus": 1},
            "cpus": 8,
        }
    )
    adapter = get_adapter("rllib")
    c = type(cand(0)).from_config(
        config,
        {"num_env_runners": 2, "num_envs_per_env_runner": 4},
        demand=adapter.resource_demand(config),
        batch=adapter.train_batch(config),
    )
    assert c.key == "num_env_runners=2,num_envs_per_env_runner=4" == candidate_key(dict(c.axes))
    assert (c.num_learners, c.num_gpus_per_learner, c.num_cpus_per_learner) == (0, 1.0, 0.0)
    assert c.cpus == 2 * 1.0 + 1 and c.gpus == 1.0 and c.train_batch_size_per_learner == 4000 and c.cpus_limit == 8
    assert c.batch_env_steps == 4000


def test_a_candidate_asks_what_the_adapter_sums_aggregators_and_runner_gpus_included():
    """The sums are the adapter's ResourceDemand (issue 35): APPO with 2 learners x 1 aggregator actor (1 CPU
    each) and env runners on GPUs; the plain adapter's default batch is its own."""
    config = TrialConfig.model_validate(
        {
            "algo": "APPO",
            "environment": {"env": "CartPole-v1"},
            "env_runners": {"num_env_runners": 2, "num_gpus_per_env_runner": 0.25},
            "learners": {"num_learners": 2, "num_aggregator_actors_per_learner": 1},
        }
    )
    adapter = get_adapter("rllib")
    c = type(cand(0)).from_config(
        config, {"num_env_runners": 2}, demand=adapter.resource_demand(config), batch=adapter.train_batch(config)
    )
    assert c.cpus == 1 + 2 * 1.0 + 2 * 1.0 + 2 * 1.0  # driver + runners + learners + aggregator actors
    assert c.gpus == 2 * 0.25  # the runners'; the learners run on CPUs
    assert (c.train_batch_size_per_learner, c.batch_env_steps) == (250, 500)  # APPO's 500, split over 2 learners
    assert MODEL.phases(c) is not None  # a CPU learner: predicted with the CPU learner's cost
    plain = TrialConfig.model_validate({"framework": "plain", "environment": {"env": "CartPole-v1"}})
    p = type(cand(0)).from_config(
        plain, {}, demand=get_adapter("plain").resource_demand(plain), batch=get_adapter("plain").train_batch(plain)
    )
    assert (p.cpus, p.gpus, p.train_batch_size_per_learner, p.batch_env_steps) == (1, 0.0, 1000, 1000)


def test_each_env_config_steps_at_its_own_probed_cost():
    # The baseline's env steps in 1 ms; env_config b was probed at 3 ms a step, c was not probed.
    a, b, c = (dataclasses.replace(cand(2), key=k, env_id=env_id("E", {"cost": k})) for k in ("a", "b", "c"))
    model = CostModel(dataclasses.replace(PROBES, env_steps_s=((b.env_id, 0.003),)))
    assert model.predict(a).sample_s == pytest.approx(2000 * 0.001)  # 2 s: the baseline's step
    assert model.predict(b).sample_s == pytest.approx(2000 * 0.003)  # 6 s
    assert model.predict(c).sample_s == pytest.approx(2000 * 0.001)  # not probed: the baseline's step
    # iterations 2 + 1 + 0.1 = 3.1 s against 6 + 1 + 0.1 = 7.1 s: 1290 against 563 steps/s, below half
    assert set(model.cannot_win([a, b, c])) == {"b"}


def test_an_env_whose_step_could_not_be_measured_is_never_predicted_nor_dropped():
    """Issue 44, under load: the 0 us env's ceiling stepped nothing in its 0.3 s, the model stepped it at the
    1 ms baseline's cost, and dropped the best configuration untried."""
    a, b = (dataclasses.replace(cand(2), key=k, env_id=env_id("E", {"cost": k})) for k in ("a", "b"))
    slow = dataclasses.replace(cand(2), key="slow", env_id=env_id("E", {"cost": "slow"}))
    model = CostModel(dataclasses.replace(PROBES, env_steps_s=((slow.env_id, 0.01),), unmeasured_envs=(b.env_id,)))
    assert model.predict(b) is None and model.predict(a) is not None
    assert set(model.cannot_win([a, b, slow])) == {"slow"}  # b is not dropped: nothing says it cannot win


def test_a_refit_scales_every_env_step_alike():
    b = dataclasses.replace(cand(2), key="b", env_id=env_id("E", {"cost": 3}))
    model = CostModel(dataclasses.replace(PROBES, env_steps_s=((b.env_id, 0.003),)))
    truth = CostModel(dataclasses.replace(PROBES, env_step_s=0.002, env_steps_s=((b.env_id, 0.006),)))
    obs = [Observation(c, truth.predict(c).iteration_s) for c in (cand(1), cand(2), cand(4), b)]
    fitted = model.refit(obs, prior_observations=1e-6)
    assert fitted.probes.env_step_s == pytest.approx(0.002, rel=1e-3)
    assert dict(fitted.probes.env_steps_s)[b.env_id] == pytest.approx(0.006, rel=1e-3)


def test_env_id_names_the_env_and_its_config_whatever_the_key_order():
    assert env_id("E", {"x": 1, "y": 2}) == env_id("E", {"y": 2, "x": 1}) != env_id("E", {"x": 1})
    assert env_id("E", None) == env_id("E", {})


def test_a_baseline_off_the_grid_is_described_by_its_axes_never_none():
    from dataclasses import replace

    from rlbench.autoconfig.model import describe

    base = replace(cand(1), key="baseline", axes=(("env_config.step_ms", None), ("num_env_runners", 1)))
    assert (
        describe(base) == "the spec's base configuration (env_config.step_ms=(the spec's default), num_env_runners=1)"
    )
    assert describe(cand(2)) == cand(2).key
