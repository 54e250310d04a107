"""Variants and rounds in a spec: expansion, the run order by rounds, and every user error's message.

Fixtures are inline YAML on :data:`BASE` (five lines), so the line numbers in the messages can be
counted by hand: appended keys start at line 6.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from rlbench.measure.machine import MachineInfo
from rlbench.planning.plan import plan_trials
from rlbench.spec.load import load_spec
from rlbench.spec.model import SpecError
from rlbench.spec.variants import in_rounds

BASE = """\
name: t
environment:
  env: envs.tiny:TinyEnv
stop:
  iterations: 3
"""

MACHINE = MachineInfo(
    hostname="h", cpu_model="c", logical_cores=2, physical_cores=2, usable_cores=[0, 1], memory_bytes=1 << 33, gpus=[]
)


def load(tmp_path: Path, text: str):
    path = tmp_path / "spec.yaml"
    path.write_text(BASE + text)
    return load_spec(path)


def error(tmp_path: Path, text: str) -> str:
    with pytest.raises(SpecError) as info:
        load(tmp_path, text)
    return str(info.value)


VARIANTS = """\
grid:
  num_envs_per_env_runner: [1, 2]
variants:
  - name: A
  - name: B
    set: {env_config.step_cost_us: 400, num_env_runners: 0}
  - {name: C, set: {execution: script}}
rounds: 4
"""


def test_every_point_runs_once_per_variant_per_round_with_the_variant_keys_applied(tmp_path):
    loaded = load(tmp_path, VARIANTS)
    assert [p.variant for p in loaded.points] == ["A", "B", "C"] * 2  # each point's variants after one another
    b = loaded.points[1].config
    assert b.environment.env_config == {"step_cost_us": 400} and b.env_runners.num_env_runners == 0
    assert loaded.points[0].config.env_runners.num_env_runners == 1  # A: the base spec as it is
    assert [p.config.execution for p in loaded.points[:3]] == ["tune", "tune", "script"]
    plans = plan_trials(loaded, MACHINE)
    assert loaded.spec.repeats == 4 and len(plans) == 2 * 3 * 4
    assert {p.trial_id for p in plans} == {f"t{i:03d}r{r}" for i in range(6) for r in range(4)}
    assert all(p.round == p.repeat for p in plans)
    # one seed per round, shared by the variants: the two sides of a pair differ in their keys alone
    assert len({(p.round, p.seed) for p in plans}) == 4


def test_rounds_run_in_order_and_the_first_variant_rotates(tmp_path):
    plans = plan_trials(load(tmp_path, VARIANTS), MACHINE)
    order = [(p.round, p.axes["num_envs_per_env_runner"], p.variant) for p in plans]
    # round r: each grid point's variants back to back, starting at variant r mod 3
    assert order[:12] == [
        (0, 1, "A"),
        (0, 1, "B"),
        (0, 1, "C"),
        (0, 2, "A"),
        (0, 2, "B"),
        (0, 2, "C"),
        (1, 1, "B"),
        (1, 1, "C"),
        (1, 1, "A"),
        (1, 2, "B"),
        (1, 2, "C"),
        (1, 2, "A"),
    ]
    assert [v for r, _, v in order if r == 2][:3] == ["C", "A", "B"]
    assert [v for r, _, v in order if r == 3][:3] == ["A", "B", "C"]


def test_in_rounds_on_bare_numbers():
    class P:
        def __init__(self, index, repeat):
            self.index, self.repeat = index, repeat

    plans = [P(i, r) for i in range(4) for r in range(2)]  # 2 points x 2 variants, 2 rounds
    assert [(p.index, p.repeat) for p in in_rounds(plans, 2)] == [
        (0, 0),
        (1, 0),
        (2, 0),
        (3, 0),
        (1, 1),
        (0, 1),
        (3, 1),
        (2, 1),
    ]


def test_rounds_without_variants_interleave_the_repeats(tmp_path):
    plans = plan_trials(load(tmp_path, "grid:\n  num_envs_per_env_runner: [1, 2]\nrounds: 2\n"), MACHINE)
    assert [p.trial_id for p in plans] == ["t000r0", "t001r0", "t000r1", "t001r1"]
    assert all(p.variant is None for p in plans)


def test_without_variants_or_rounds_nothing_changes(tmp_path):
    plans = plan_trials(load(tmp_path, "grid:\n  num_envs_per_env_runner: [1, 2]\nrepeats: 2\n"), MACHINE)
    assert [p.trial_id for p in plans] == ["t000r0", "t000r1", "t001r0", "t001r1"]
    assert [p.round for p in plans] == [0, 1, 0, 1]


@pytest.mark.parametrize(
    "text, message",
    [
        ("variants: []\n", "spec.yaml:6: variants: empty list: give the variants to compare"),
        (
            "variants:\n  - name: A\n  - name: A\n",
            "spec.yaml:8: variants.1.name: variant name 'A' is used twice (also "
            "variants[0]): give every variant its own name",
        ),
        (
            "variants:\n  - name: A\n  - name: B\n    set: {num_env_runnerz: 2}\n",
            "spec.yaml:9: variants[1].set.num_env_runnerz: unknown key 'num_env_runnerz'; "
            "did you mean 'num_env_runners'?",
        ),
        ("variants:\n  - name: ../etc\n", "spec.yaml:7: variants.0.name: String should match pattern"),
        ("variants:\n  - name: A\n    sett: {}\n", "spec.yaml:8: variants.0.sett: unknown key 'sett'"),
        (
            "grid:\n  num_env_runners: [0, 1]\nvariants:\n  - name: A\n    set: {num_env_runners: 2}\n",
            "spec.yaml:10: variants[0].set.num_env_runners: 'num_env_runners' is also a grid axis",
        ),
        ("variants:\n  - name: A\n    set: {num_env_runners: cpus-1}\n", "is written as it is, not relative"),
        (
            "variants:\n  - name: A\n    set: {num_env_runners: -1}\n",
            "spec.yaml:8: env_runners.num_env_runners: Input should be greater than or equal to 0 (got -1)  "
            "[grid point variant A]",
        ),
        (
            "variants:\n  - name: A\n    packages: {ray: '>=2.59'}\n",
            "spec.yaml:8: variants.0.packages: package 'ray': "
            "version '>=2.59' is not an exact version such as 2.59.0 (write it in quotes; ranges are not pins)",
        ),
        ("variants:\n  - name: A\n    packages: {'ray; rm': 2.59.0}\n", "package 'ray; rm': not a distribution name"),
        (
            "repeats: 3\nrounds: 2\n",
            "spec.yaml:6: repeats: repeats=3 and rounds=2: each round runs every configuration "
            "once, so rounds are the repeats; keep 'rounds' only",
        ),
        ("rounds: 0\n", "spec.yaml:6: rounds: Input should be greater than or equal to 1"),
        ("execution: scrpt\n", "spec.yaml:6: execution: Input should be 'tune' or 'script'"),
        (
            "execution: script\nresources: {pin_driver: true}\n",
            "spec.yaml:7: resources.pin_driver: pin_driver pins the "
            "driver to its cores, which a plain script does not do: with execution: script, drop pin_driver",
        ),
    ],
)
def test_bad_variants_say_where_and_how_to_fix(tmp_path, text, message):
    assert message in error(tmp_path, text)


def test_execution_is_a_grid_axis_too(tmp_path):
    loaded = load(tmp_path, "grid:\n  execution: [tune, script]\n")
    assert [p.axes for p in loaded.points] == [{"execution": "tune"}, {"execution": "script"}]
    assert [p.config.execution for p in loaded.points] == ["tune", "script"]


def test_a_variant_with_packages_carries_its_pins_in_its_plans(tmp_path):
    text = "variants:\n  - name: A\n  - name: B\n    packages: {ray: 2.59.0}\n    index: /srv/wheels\n"
    plans = plan_trials(load(tmp_path, text), MACHINE)
    assert [p.packages for p in plans][0] is None
    assert plans[1].packages.pins == {"ray": "2.59.0"} and plans[1].packages.index == "/srv/wheels"
    assert plans[1].packages.python is None  # the sweep names the environment's interpreter once it is made


SWITCH_VARIANTS = """\
variants:
  - name: base
  - {name: no-affinity, set: {switch_off: [affinity]}}
  - {name: pinned, set: {pin_driver: true}}
  - {name: two-off, set: {switch_off: [sampler, threads, sampler]}}
rounds: 2
"""


def test_switch_off_and_pin_driver_are_variant_keys_recorded_per_variant_in_the_plans(tmp_path):
    loaded = load(tmp_path, SWITCH_VARIANTS)
    assert [p.config.switch_off for p in loaded.points] == [[], ["affinity"], [], ["threads", "sampler"]]
    assert [p.config.resources.pin_driver for p in loaded.points] == [False, False, True, False]
    plans = plan_trials(loaded, MACHINE)
    # each variant's switches in its own plans only (SWITCHES order, no repeats); round 1 starts at no-affinity
    assert [(p.variant, p.switched_off) for p in plans] == [
        ("base", []),
        ("no-affinity", ["affinity"]),
        ("pinned", []),
        ("two-off", ["threads", "sampler"]),
        ("no-affinity", ["affinity"]),
        ("pinned", []),
        ("two-off", ["threads", "sampler"]),
        ("base", []),
    ]
    assert [p.trial_id for p in plans][:4] == ["t000r0", "t001r0", "t002r0", "t003r0"]


def test_switch_off_is_a_grid_axis_too(tmp_path):
    loaded = load(tmp_path, "grid:\n  switch_off: [[], [niceness, forkserver]]\n")
    assert [p.axes for p in loaded.points] == [{"switch_off": "[]"}, {"switch_off": '["niceness", "forkserver"]'}]
    assert [p.switched_off for p in plan_trials(loaded, MACHINE)] == [[], ["forkserver", "niceness"]]


@pytest.mark.parametrize(
    "text, message",
    [
        (
            "variants:\n  - name: A\n    set: {switch_off: [affinity, pinning]}\n",
            "spec.yaml:8: switch_off: unknown 'pinning'; known: affinity, threads, callback, stats, forkserver, "
            "sampler, agents, preload, on_demand_workers, niceness",
        ),
        ("switch_off: affinity\n", "spec.yaml:6: switch_off: Input should be a valid list"),
        ("variants:\n  - name: A\n    set: {switch_of: [affinity]}\n", "did you mean 'switch_off'?"),
    ],
)
def test_bad_switch_names_say_where_and_which_exist(tmp_path, text, message):
    assert message in error(tmp_path, text)


def test_a_variant_may_set_how_its_trials_are_measured(tmp_path):
    text = (
        "variants:\n  - name: plain\n"
        "  - {name: profiled, set: {profile_hz: 100, profile_roles: [driver], sample_hz: 5}}\n"
        "profile_native: true\n"
    )
    loaded = load(tmp_path, text)
    assert loaded.points[0].config == loaded.points[1].config  # what runs is the same; how it is measured is not
    off, on = plan_trials(loaded, MACHINE)
    assert (off.profile_hz, off.profile_roles, off.sample_hz, off.profile_native) == (
        0,
        ["driver", "learner", "env_runner", "ray_system", "other"],
        10.0,
        True,
    )
    assert (on.profile_hz, on.profile_roles, on.sample_hz, on.profile_native) == (100, ["driver"], 5.0, True)
    assert any("py-spy" in d for d in on.differs_from_tune) and not any("py-spy" in d for d in off.differs_from_tune)


@pytest.mark.parametrize(
    "text, message",
    [
        (
            "variants:\n  - name: A\n    set: {profile_hz: -1}\n",
            "spec.yaml:8: variants.0.set.profile_hz: Input should be greater than or equal to 0 (got -1)",
        ),
        (
            "variants:\n  - name: A\n    set: {profile_roles: [gpu]}\n",
            "variants.0.set.profile_roles: Input should be 'driver'",
        ),
        (
            "variants:\n  - name: A\n    set: {sample_hz: 0}\n",
            "variants.0.set.sample_hz: Input should be greater than or equal to 0.1",
        ),
    ],
)
def test_bad_measurement_keys_in_a_variant_say_where(tmp_path, text, message):
    assert message in error(tmp_path, text)


def test_rounds_per_process_refuses_a_stop_target(tmp_path):
    """A time to a target is a whole process's: a window of one is not a round of it (issue 56)."""
    text = "rounds: 4\nrounds_per_process: 2\n"
    message = error(tmp_path, text.replace("rounds: 4", "rounds: 4\nstop: {iterations: 3, episode_return_mean: 100}"))
    assert "rounds_per_process=2 with stop.target" in message


def test_a_versions_run_takes_the_specs_rounds_per_process_or_the_flags_cut_to_its_rounds(tmp_path):
    from rlbench.spec.versions import with_versions

    data = {"name": "t", "rounds_per_process": 3}
    assert with_versions(data, "ray", ["2.0.0", "2.1.0"], 6, None, tmp_path)["rounds_per_process"] == 3
    assert with_versions(data, "ray", ["2.0.0", "2.1.0"], 2, None, tmp_path)["rounds_per_process"] == 2
    assert with_versions(data, "ray", ["2.0.0", "2.1.0"], 1, None, tmp_path)["rounds_per_process"] == 1
    assert with_versions(data, "ray", ["2.0.0", "2.1.0"], 6, None, tmp_path, 1)["rounds_per_process"] == 1
    assert "rounds_per_process" not in with_versions({"name": "t"}, "ray", ["2.0.0", "2.1.0"], 6, None, tmp_path)
