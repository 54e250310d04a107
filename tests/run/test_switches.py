"""The fidelity diagnosis switches: names read from RLBENCH_SWITCH_OFF, unknown ones refused."""

from __future__ import annotations

import pytest

from rlbench.run.switches import ENV_VAR, SWITCHES, switched_off
from rlbench.spec.errors import SpecError


def test_none_by_default():
    assert switched_off({}) == []
    assert switched_off({ENV_VAR: " , "}) == []


def test_names_in_a_fixed_order_without_repeats():
    assert switched_off({ENV_VAR: "sampler, affinity,sampler"}) == ["affinity", "sampler"]
    assert switched_off({ENV_VAR: ",".join(reversed(SWITCHES))}) == list(SWITCHES)


def test_unknown_name_is_refused_with_the_known_ones():
    with pytest.raises(SpecError) as e:
        switched_off({ENV_VAR: "affinity,pinning"})
    assert "'pinning'" in str(e.value) and "affinity, threads, callback" in str(e.value)


def test_the_environment_variable_adds_to_each_plans_own_switches(tmp_path):
    from rlbench.measure.machine import MachineInfo
    from rlbench.planning.plan import plan_trials
    from rlbench.run.switches import with_switches
    from rlbench.spec.load import load_spec

    spec = tmp_path / "spec.yaml"
    spec.write_text(
        "name: t\nenvironment: {env: envs.tiny:TinyEnv}\nstop: {iterations: 3}\n"
        "variants: [{name: A}, {name: B, set: {switch_off: [stats]}}]\n"
    )
    machine = MachineInfo(
        hostname="h",
        cpu_model="c",
        logical_cores=2,
        physical_cores=2,
        usable_cores=[0, 1],
        memory_bytes=1 << 33,
        gpus=[],
    )
    plans = plan_trials(load_spec(spec), machine)
    assert with_switches(plans, {})[1] == ["stats"]  # the manifest's: every name any trial has off
    both, off = with_switches(plans, {ENV_VAR: "sampler,affinity"})
    assert [p.switched_off for p in both] == [["affinity", "sampler"], ["affinity", "stats", "sampler"]]
    assert off == ["affinity", "stats", "sampler"]
