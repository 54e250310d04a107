"""Grid values relative to the machine (``cpus``, ``cpus-N``, ``cpus/N``): checked at load, resolved
by the plan on hand-made machines, duplicates skipped, plain numbers in the plan."""

from __future__ import annotations

from pathlib import Path

import pytest

from rlbench.measure.machine import MachineInfo
from rlbench.planning.plan import plan_trials
from rlbench.planning.skip_summary import skip_group, skip_summary
from rlbench.planning.skips import DUPLICATE
from rlbench.spec.load import load_spec, spec_from_dict
from rlbench.spec.model import SpecError
from rlbench.spec.relative import resolve

BASE = """\
name: t
environment:
  env: envs.tiny:TinyEnv
stop:
  iterations: 3
"""


def machine(n: int) -> MachineInfo:
    return MachineInfo(
        hostname="test",
        cpu_model="fake",
        logical_cores=n,
        physical_cores=n,
        usable_cores=list(range(n)),
        memory_bytes=2**34,
        gpus=[],
    )


def spec(grid: dict, **extra) -> dict:
    return {"name": "t", "environment": {"env": "CartPole-v1"}, "stop": {"iterations": 3}, "grid": grid, **extra}


def plans(data: dict, cores: int):
    return plan_trials(spec_from_dict(data, check_envs=False), machine(cores))


def load_error(tmp_path: Path, text: str) -> str:
    path = tmp_path / "spec.yaml"
    path.write_text(BASE + text)
    with pytest.raises(SpecError) as info:
        load_spec(path, check_envs=False)
    return str(info.value)


@pytest.mark.parametrize(
    ("expr", "cpus", "value"),
    [
        ("cpus", 2, 2),
        ("cpus-1", 16, 15),
        ("cpus - 2", 4, 2),
        ("cpus/2", 16, 8),
        ("cpus/2", 3, 1),
        ("cpus/4", 2, 0),
    ],
)
def test_resolve(expr, cpus, value):
    assert resolve(expr, cpus) == value


def test_env_runners_scale_with_the_machine():
    data = spec({"num_env_runners": [0, "cpus/2", "cpus-1"]})
    assert [p.axes["num_env_runners"] for p in plans(data, 16)] == [0, 8, 15]
    assert [p.config.env_runners.num_env_runners for p in plans(data, 4)] == [0, 2, 3]
    p = plans(data, 16)[2]
    assert p.relative == {"num_env_runners": "cpus-1"} and p.skip_reason is None
    assert plans(data, 16)[0].relative == {}


def test_cpus_axis_is_relative_to_the_machine_and_other_knobs_to_the_trials_cpus():
    data = spec({"cpus": [1, "cpus"], "num_env_runners": ["cpus-1"]})
    got = [(p.cpus, p.config.cpus, p.config.env_runners.num_env_runners, p.skip_reason) for p in plans(data, 4)]
    assert got == [(1, 1, 0, None), (4, 4, 3, None)]
    # the spec's own cpus is what cpus-1 counts from when cpus is not an axis
    [p] = plans(spec({"num_env_runners": ["cpus-1"]}, cpus=3), 8)
    assert p.config.env_runners.num_env_runners == 2


def test_a_point_that_resolves_like_an_earlier_runnable_one_is_skipped_once_per_reason():
    data = spec({"num_env_runners": [0, 1, "cpus/2", "cpus-1"]}, repeats=2)
    ps = plans(data, 2)
    assert [(p.trial_id, p.axes["num_env_runners"], p.skip_reason is None) for p in ps] == [
        ("t000r0", 0, True),
        ("t000r1", 0, True),
        ("t001r0", 1, True),
        ("t001r1", 1, True),
        ("t002r0", 1, False),
        ("t002r1", 1, False),
        ("t003r0", 1, False),
        ("t003r1", 1, False),
    ]
    assert ps[4].skip_reason == f"{DUPLICATE} t001 on this machine (num_env_runners=cpus/2 is 1)"
    assert skip_group(ps[6]) == "resolve to the same configuration as an earlier grid point on this machine"
    assert skip_summary(ps) == [
        "4 of 8 trials resolve to the same configuration as an earlier grid point on this machine: they will be skipped"
    ]
    # on 4 cores every value differs: nothing is skipped
    assert all(p.skip_reason is None for p in plans(data, 4))


def test_a_plain_value_after_a_relative_one_that_resolved_to_it_is_skipped_too():
    ps = plans(spec({"num_env_runners": ["cpus-1", 1]}), 2)
    assert ps[0].skip_reason is None
    assert ps[1].skip_reason == f"{DUPLICATE} t000 on this machine (num_env_runners=cpus-1 is 1)"


def test_plain_duplicates_are_left_as_the_user_wrote_them():
    assert all(p.skip_reason is None for p in plans(spec({"num_env_runners": [1, 1]}), 2))


def test_a_duplicate_of_an_infeasible_point_is_said_once_as_infeasible():
    ps = plans(spec({"num_env_runners": ["cpus", "cpus"]}), 2)  # 2 runners + the driver's 1 > 2
    assert [skip_group(p) for p in ps] == [
        "need more CPUs than this machine's 2",
        "resolve to the same configuration as an earlier grid point on this machine",
    ]


def test_a_value_its_knob_cannot_take_on_this_machine_is_a_spec_error():
    with pytest.raises(SpecError) as info:
        plans(spec({"cpus": ["cpus/4"]}), 2)
    msg = str(info.value)
    assert "on this machine (2 usable cores) cpus: cpus/4 = 0" in msg and "greater than or equal to 1" in msg
    assert [p.cpus for p in plans(spec({"cpus": ["cpus/4"]}), 8)] == [2]


def test_checked_at_load_with_the_grid_line(tmp_path):
    msg = load_error(tmp_path, "grid:\n  lr: [cpus-1]\n")
    assert msg.startswith(
        f"{tmp_path / 'spec.yaml'}:7: grid.lr: 'cpus-1' is a value relative to the machine's CPUs; "
        "only these knobs take one: cpus, num_env_runners"
    )
    msg = load_error(tmp_path, "grid:\n  num_env_runners: [1, cpus*2]\n")
    assert msg == (
        f"{tmp_path / 'spec.yaml'}:7: grid.num_env_runners: 'cpus*2' is not a relative value: write "
        "'cpus', 'cpus-N' or 'cpus/N' (N a whole number; '/' rounds down)"
    )
    assert "cannot divide by 0" in load_error(tmp_path, "grid:\n  cpus: [cpus/0]\n")
    assert "write 'cpus' for all of the machine's usable cores" in load_error(tmp_path, "grid:\n  cpus: [1, max]\n")


def test_loaded_point_keeps_the_value_as_written_until_planned(tmp_path):
    path = tmp_path / "spec.yaml"
    path.write_text(BASE + "grid:\n  num_env_runners: [0, cpus-1]\n  num_envs_per_env_runner: [cpus/2]\n")
    loaded = load_spec(path, check_envs=False)
    point = loaded.points[1]
    assert point.axes == {"num_env_runners": "cpus-1", "num_envs_per_env_runner": "cpus/2"}
    assert [(r.axis, r.path, r.expr) for r in point.relative] == [
        ("num_env_runners", ("env_runners", "num_env_runners"), "cpus-1"),
        ("num_envs_per_env_runner", ("env_runners", "num_envs_per_env_runner"), "cpus/2"),
    ]
    assert loaded.spec.grid["num_env_runners"] == [0, "cpus-1"]  # the manifest's spec keeps what was written
    [_, p] = plan_trials(loaded, machine(6))
    assert (p.config.env_runners.num_env_runners, p.config.env_runners.num_envs_per_env_runner) == (5, 3)


def test_shipped_ppo_cpu_config_does_something_on_two_cores():
    loaded = load_spec(Path(__file__).resolve().parents[2] / "configs" / "ppo_cpu.yaml", check_envs=False)
    small = plan_trials(loaded, machine(2))
    ran = sorted({(p.axes["num_env_runners"], p.axes["num_cpus_for_main_process"]) for p in small if not p.skip_reason})
    assert ran == [(0, 1), (0, 2), (1, 1)]
    big = plan_trials(loaded, machine(16))
    assert sorted({p.axes["num_env_runners"] for p in big if not p.skip_reason}) == [0, 1, 8, 15]
