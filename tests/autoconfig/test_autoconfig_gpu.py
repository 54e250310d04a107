"""GPU-aware autoconfig (issue 43), on fake probe readings: the learner's cost per env step and per minibatch step,
split by a GPU probe's busy share or by two probes; a GPU configuration predicted once its device is probed; a
larger minibatch predicted faster on a launch-bound GPU and no faster on a CPU whose steps cost nothing apart;
the probes chosen to split what the grid varies."""

from __future__ import annotations

import dataclasses
from types import SimpleNamespace

import pandas as pd
import pytest
from helpers import cand

from rlbench.autoconfig.model import CostModel, Observation, ProbeCosts
from rlbench.autoconfig.readings import learner_costs, probes_from, with_device_probe
from rlbench.run.autoconfig_driver.space import device_probe, second_probe
from rlbench.spec.model import TrialConfig

#: The CPU baseline's probe: 1 ms env steps, 0.25 ms of learner per env step, nothing per minibatch step apart.
PROBES = ProbeCosts(env_step_s=0.001, inference_step_s=0.0, learner_step_s=0.00025, sync_per_runner_s=0.05, cores=4)


def mb(c, minibatch: int, epochs: int = 10):
    return dataclasses.replace(
        c,
        key=f"{c.key},mb={minibatch}",
        axes=c.axes + (("minibatch_size", minibatch),),
        minibatch_size=minibatch,
        num_epochs=epochs,
    )


def test_minibatch_steps_per_iteration():
    assert mb(cand(2), 128).sgd_steps == 10 * 32  # 4000 / 128 -> 32 minibatches an epoch (the last one short)
    assert mb(cand(2), 4000).sgd_steps == 10 and cand(2).sgd_steps == 1  # no minibatch, no epochs: one step


def test_a_gpu_configuration_is_predicted_once_its_device_is_probed():
    gpu = mb(cand(2, gpus=1.0), 128)
    assert CostModel(PROBES).predict(gpu) is None  # no GPU probe: not predicted, never pruned
    probed = dataclasses.replace(PROBES, learner_gpu_step_s=0.00002, learner_gpu_sgd_step_s=0.008)
    p = CostModel(probed).predict(gpu)
    # sampling 2000 steps a runner at 1 ms; learning 4000 x 20 us + 320 steps x 8 ms; sync 2 x 50 ms
    assert (p.sample_s, p.learn_s, p.sync_s) == pytest.approx((2.0, 0.08 + 2.56, 0.1))


def test_a_larger_minibatch_is_predicted_faster_on_a_launch_bound_gpu_only():
    probed = dataclasses.replace(PROBES, learner_gpu_step_s=0.00002, learner_gpu_sgd_step_s=0.008)
    model = CostModel(probed)
    small, large = (model.predict(mb(cand(2, gpus=1.0), m)).learn_s for m in (128, 1024))
    assert small == pytest.approx(0.08 + 320 * 0.008) and large == pytest.approx(0.08 + 40 * 0.008)
    cpu_small, cpu_large = (model.predict(mb(cand(2), m)).learn_s for m in (128, 1024))
    assert cpu_small == cpu_large == pytest.approx(4000 * 0.00025)  # a CPU probe put nothing per step


def test_refit_rescales_the_per_step_part_apart():
    """The truth: a GPU step costs 2x what was probed; trials at two minibatch sizes tell it from the rest."""
    probed = dataclasses.replace(PROBES, learner_gpu_step_s=0.00002, learner_gpu_sgd_step_s=0.004)
    truth = CostModel(dataclasses.replace(probed, learner_gpu_sgd_step_s=0.008))
    trials = [mb(cand(r, gpus=1.0), m) for r in (1, 2, 4) for m in (128, 512, 2048)] + [cand(r) for r in (1, 2, 4)]
    observed = [Observation(c, truth.predict(c).iteration_s) for c in trials]
    fitted = CostModel(probed).refit(observed, prior_observations=1e-6)
    assert fitted.probes.learner_gpu_sgd_step_s == pytest.approx(0.008, rel=1e-3)
    assert fitted.probes.learner_gpu_step_s == pytest.approx(0.00002, rel=1e-2)


def _its(rows: list[dict]) -> pd.DataFrame:
    return pd.DataFrame([{"trial_id": "t", "iteration": i + 1, "warmup": i == 0, **r} for i, r in enumerate(rows)])


def test_one_gpu_probe_splits_its_update_time_by_the_busy_share():
    """Known answer: learning 1 s an iteration, of it 0.9 s of 100 minibatch updates, the GPU busy 10% of the
    learn window: 0.81 s idle over 100 steps is 8.1 ms a step; the rest, 0.19 s, over 1000 env steps."""
    row = {"learn_s": 1.0, "learn_update_s": 0.9, "sgd_steps": 100, "gpu_busy_pct": 10.0}
    assert learner_costs(_its([row] * 3), 1000) == pytest.approx((0.19 / 1000, 0.0081))
    # without a busy share (a CPU learner, or no NVML) everything is per env step
    cpu = {k: v for k, v in row.items() if k != "gpu_busy_pct"}
    assert learner_costs(_its([cpu] * 3), 1000) == pytest.approx((1.0 / 1000, 0.0))


def test_two_probes_on_one_device_solve_both_costs():
    """Known answer: s = 0.1 ms an env step, k = 2 ms a minibatch step; 1000 env steps at 100 and at 25 steps."""
    a = _its([{"learn_s": 1000 * 1e-4 + 100 * 2e-3, "sgd_steps": 100}] * 3)
    b = _its([{"learn_s": 1000 * 1e-4 + 25 * 2e-3, "sgd_steps": 25}] * 3)
    assert learner_costs(a, 1000, (b, 1000)) == pytest.approx((1e-4, 2e-3))


def _config(gpus: float = 0.0) -> TrialConfig:
    return TrialConfig.model_validate(
        {
            "environment": {"env": "CartPole-v1"},
            "env_runners": {"num_env_runners": 0},
            "learners": {"num_gpus_per_learner": gpus},
        }
    )


def test_the_baseline_and_the_device_probe_fill_both_devices():
    sampling = {"wall_s": 1.5, "env_steps_sampled": 1000, "sample_s": 0.4, "env_step_s": 0.2, "sync_s": 0.0}
    cpu = _its([{**sampling, "learn_s": 1.0, "learn_update_s": 0.9, "sgd_steps": 100}] * 3)
    probes = probes_from(cpu, _config(), 2, batch_per_learner=1000)
    assert probes.learner_step_s == pytest.approx(1e-3) and probes.learner_gpu_step_s is None
    gpu = _its([{**sampling, "learn_s": 0.5, "learn_update_s": 0.4, "sgd_steps": 100, "gpu_busy_pct": 25.0}] * 3)
    both = with_device_probe(probes, gpu, _config(1.0), batch_per_learner=1000)
    assert (both.learner_gpu_step_s, both.learner_gpu_sgd_step_s) == pytest.approx(((0.5 - 0.3) / 1000, 0.003))
    assert both.learner_step_s == probes.learner_step_s
    # a GPU baseline leaves the CPU unprobed (not a guess) until a CPU probe fills it
    alone = probes_from(gpu, _config(1.0), 2, batch_per_learner=1000)
    assert alone.learner_step_s is None and CostModel(alone).predict(cand(0)) is None
    assert with_device_probe(alone, cpu, _config(), batch_per_learner=1000).learner_step_s == pytest.approx(1e-3)


def test_the_probes_split_what_the_grid_varies():
    base = mb(cand(2, 1), 128)
    space = {
        c.key: c
        for c in (
            base,
            mb(cand(2, 4), 128),
            mb(cand(2, 4), 1024),
            mb(cand(2, 1, gpus=1.0), 128),
            mb(cand(4, 1, gpus=1.0), 1024),
        )
    }
    setup = SimpleNamespace(candidates=space, searched=list(space), baseline_key=base.key)
    # the second probe: another envs per runner and another step count at once, on the baseline's device
    assert second_probe(setup) == mb(cand(2, 4), 1024).key
    # the device probe: the GPU configuration one axis away from the baseline
    assert device_probe(setup) == mb(cand(2, 1, gpus=1.0), 128).key
    cpu_only = SimpleNamespace(candidates={base.key: base}, searched=[base.key], baseline_key=base.key)
    assert device_probe(cpu_only) is None and second_probe(cpu_only) is None
