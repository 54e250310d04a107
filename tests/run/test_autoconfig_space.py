"""The walk's points as planned on a machine (``run/autoconfig_driver/space.py``): a move that gives a learner every
core of the machine is refused, with why (issue 57); planning only, nothing runs."""

from __future__ import annotations

from dataclasses import replace

import pytest
from conftest import REPO

from rlbench.measure.machine import probe_machine
from rlbench.run.autoconfig_driver.space import all_cores_threads, plan_point, prepare


def _setup(cores: int):
    machine = replace(probe_machine(), logical_cores=cores, usable_cores=list(range(cores)), gpus=[])
    return prepare(REPO / "configs" / "walk_cpu.yaml", budget="20m", objective=None, machine=machine)


@pytest.mark.parametrize(
    ("cores", "axes", "refused"),
    [
        (2, {"num_env_runners": 0, "num_cpus_for_main_process": 2}, True),  # inference_wide's trade: 2 threads, 2 cores
        (2, {"num_env_runners": 0, "num_cpus_for_main_process": 1}, False),  # the runner gone, the driver's 1 thread
        (2, {"num_envs_per_env_runner": 4}, False),  # no learner's thread moved
        (4, {"num_env_runners": 0, "num_cpus_for_main_process": 2}, False),  # 2 threads of 4 cores leave 2
        (4, {"cpus": 4, "num_env_runners": 0, "num_cpus_for_main_process": 4}, True),
    ],
)
def test_a_move_giving_a_learner_every_core_of_the_machine_is_refused_with_why(cores, axes, refused):
    got = plan_point(_setup(cores), axes)
    if refused:
        assert isinstance(got, str) and f"every core of this machine's {cores}" in got, got
    else:
        assert not isinstance(got, str), got


def test_a_start_that_already_gives_it_every_core_and_a_one_core_machine_are_not_refused():
    two = _setup(2)
    start = two.templates[two.baseline_key]  # the driver's 1 thread
    wide = plan_point(_setup(4), {"num_env_runners": 0, "num_cpus_for_main_process": 2})
    assert not isinstance(wide, str)
    assert all_cores_threads(wide, start, two.machine) is not None
    assert all_cores_threads(wide, wide, two.machine) is None  # the start had 2 threads: the walk keeps them
    one = replace(two.machine, logical_cores=1, usable_cores=[0])
    assert all_cores_threads(start, start, one) is None  # one core is the machine's whole


def test_a_specs_rounds_per_process_does_not_reach_autoconfigs_trials(tmp_path):
    """A history spec (rounds 4, 2 a process) given to autoconfig: its candidates are cold trials of the spec's stop,
    read the race's way (a windowed plan launched cold would wait for a gate nobody opens)."""
    from rlbench.run.autoconfig_driver.space import _plans
    from rlbench.spec.load import spec_from_dict

    data = {
        "name": "r",
        "framework": "plain",
        "environment": {"env": "envs.synthetic:SyntheticEnv"},
        "env_runners": {"num_env_runners": 0},
        "cpus": 1,
        "grid": {"env_config.step_cost_us": [100, 300]},
        "rounds": 4,
        "rounds_per_process": 2,
        "stop": {"iterations": 3},
    }
    plans = _plans(spec_from_dict(data, check_envs=False), probe_machine(), None)
    assert [(p.trial_id, p.windows, p.window_iterations, p.stop_iterations) for p in plans] == [
        ("t000r0", None, None, 3),
        ("t001r0", None, None, 3),
    ]
