"""``--quick`` as the spec and the plan see it (rlbench/spec/quick.py; no Ray): the sweep's own keys, each
adapter's cut batch, duplicates once cut, relative values, an autoconfig spec's baseline."""

from __future__ import annotations

import pytest

from rlbench.adapters import get_adapter
from rlbench.measure.machine import MachineInfo
from rlbench.planning.plan import plan_trials
from rlbench.spec.load import spec_from_dict
from rlbench.spec.model import SpecError

TWO_CORES = MachineInfo(
    hostname="h", cpu_model="c", logical_cores=2, physical_cores=2, usable_cores=[0, 1], memory_bytes=2**34, gpus=[]
)


def quick(**data):
    return spec_from_dict(
        {"name": "q", "environment": {"env": "CartPole-v1"}, "stop": {"seconds": 30}, **data},
        check_envs=False,
        quick=True,
    )


def test_one_repeat_no_warmup_one_iteration_a_short_ceiling():
    loaded = quick(repeats=5, warmup_iterations=3, stop={"seconds": 30, "episode_return_mean": 150}, env_ceiling_s=3)
    spec = loaded.spec
    assert loaded.quick and (spec.repeats, spec.rounds, spec.warmup_iterations) == (1, 1, 0)
    assert (spec.stop.iterations, spec.stop.seconds, spec.stop.target) == (1, None, None)
    assert spec.env_ceiling_s == 0.2 and quick(env_ceiling_s=0).spec.env_ceiling_s == 0  # off stays off
    [plan] = plan_trials(loaded, TWO_CORES)
    assert (plan.stop_iterations, plan.warmup_iterations, plan.stop_seconds) == (1, 0, None)


def test_variants_run_once_each_in_one_round():
    loaded = quick(
        rounds=6,
        variants=[
            {"name": "a", "set": {"num_envs_per_env_runner": 1}},
            {"name": "b", "set": {"num_envs_per_env_runner": 2}},
        ],
    )
    assert [(p.trial_id, p.variant) for p in plan_trials(loaded, TWO_CORES)] == [("t000r0", "a"), ("t001r0", "b")]


@pytest.mark.parametrize(
    "framework, sections, expected",
    [
        # plain: 100 env steps an iteration (its default 1000), the spec's own when fewer
        ("plain", {}, {("training", "train_batch_size_per_learner"): 100}),
        ("plain", {"training": {"train_batch_size_per_learner": 50}}, {}),
        # SB3: whole rollouts of every env, at most 128 steps (3 envs: 42 each), the minibatch (default 64) within it
        ("sb3", {"env_runners": {"num_envs_per_env_runner": 3}}, {("training", "train_batch_size_per_learner"): 126}),
        (
            "sb3",
            {"env_runners": {"num_envs_per_env_runner": 64}, "training": {"minibatch_size": 256}},
            {("training", "train_batch_size_per_learner"): 128, ("training", "minibatch_size"): 128},
        ),
        ("sb3", {"training": {"train_batch_size_per_learner": 32, "minibatch_size": 32}}, {}),
        # RLlib's PPO: 128 per learner, the minibatch within it; more cases against RLlib's own validate():
        # tests/adapters/test_rllib_training.py
        (
            "rllib",
            {"training": {"train_batch_size_per_learner": 4000, "minibatch_size": 512}},
            {("training", "train_batch_size_per_learner"): 128, ("training", "minibatch_size"): 128},
        ),
    ],
)
def test_each_adapter_says_what_it_cuts(framework, sections, expected):
    loaded = spec_from_dict(
        {
            "name": "q",
            "framework": framework,
            "environment": {"env": "CartPole-v1"},
            "stop": {"iterations": 3},
            **sections,
        },
        check_envs=False,
    )
    config = loaded.points[0].config
    assert get_adapter(framework).quick_settings(config) == expected
    cut = quick(framework=framework, **sections).points[0].config
    assert get_adapter(framework).quick_settings(cut) == {}  # cut once, nothing more to cut
    assert all(getattr(getattr(cut, s), k) == v for (s, k), v in expected.items())


def test_points_alike_once_cut_run_once():
    """A grid over the train batch is one configuration under --quick: the later points are skipped as duplicates,
    with the reason, and run nothing."""
    loaded = quick(grid={"train_batch_size_per_learner": [500, 1000], "num_envs_per_env_runner": [1, 2]})
    plans = plan_trials(loaded, TWO_CORES)
    assert [p.skip_reason for p in plans] == [
        None,
        None,
        "same configuration as grid point t000 under --quick (its batch cut alike)",
        "same configuration as grid point t001 under --quick (its batch cut alike)",
    ]
    assert {p.config.training.train_batch_size_per_learner for p in plans} == {128}


def test_a_relative_grid_value_keeps_the_cut_batch():
    loaded = quick(grid={"num_env_runners": ["cpus-1"]}, training={"train_batch_size_per_learner": 4000})
    [plan] = plan_trials(loaded, TWO_CORES)
    assert plan.config.env_runners.num_env_runners == 1 and plan.config.training.train_batch_size_per_learner == 128


AUTOCONFIG = """\
name: ac
framework: plain
environment: {env: envs.synthetic:SyntheticEnv}
training: {train_batch_size_per_learner: 2000}
grid:
  env_config.step_cost_us: [0, 100, 1000]
stop: {seconds: 5}
autoconfig:
  baseline: {env_config.step_cost_us: 100}
"""


def test_an_autoconfig_spec_plans_its_space_and_runs_its_baseline_alone(tmp_path):
    from rlbench.run.autoconfig_driver.space import has_autoconfig, quick_baseline

    path = tmp_path / "ac.yaml"
    path.write_text(AUTOCONFIG)
    assert has_autoconfig(path) and not has_autoconfig(tmp_path / "missing.yaml")
    loaded, setup = quick_baseline(path, TWO_CORES)  # no --budget: nothing is searched
    assert len(setup.searched) == 3 and loaded.quick
    [plan] = plan_trials(loaded, TWO_CORES)
    assert plan.axes == {"env_config.step_cost_us": 100} and plan.config.training.train_batch_size_per_learner == 100
    path.write_text(AUTOCONFIG.replace("grid:\n  env_config.step_cost_us: [0, 100, 1000]\n", "grid: {}\n"))
    with pytest.raises(SpecError, match="the search space is empty"):  # what rlbench autoconfig would refuse
        quick_baseline(path, TWO_CORES)
