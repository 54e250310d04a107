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


def _two_cores():
    from rlbench.measure.machine import MachineInfo

    return MachineInfo(
        hostname="h",
        cpu_model="c",
        logical_cores=2,
        physical_cores=2,
        usable_cores=[0, 1],
        memory_bytes=1 << 33,
        gpus=[],
    )


def test_the_environment_variable_adds_to_each_plans_own_switches(tmp_path):
    from rlbench.planning.plan import plan_trials
    from rlbench.run.switches import with_switches
    from rlbench.spec.load import load_spec

    spec = tmp_path / "spec.yaml"
    spec.write_text(
        "name: t\nenvironment: {env: envs.tiny:TinyEnv}\nstop: {iterations: 3}\n"
        "variants: [{name: A}, {name: B, set: {switch_off: [stats]}}]\n"
    )
    plans = plan_trials(load_spec(spec), _two_cores())
    assert with_switches(plans, {})[1] == ["stats"]  # the manifest's: every name any trial has off
    both, off = with_switches(plans, {ENV_VAR: "sampler,affinity"})
    assert [p.switched_off for p in both] == [["affinity", "sampler"], ["affinity", "stats", "sampler"]]
    assert off == ["affinity", "stats", "sampler"]
    assert [p.differs_from_tune for p in both] == [p.differs_from_tune for p in plans]  # nothing of theirs said


def test_a_choice_the_environment_variable_switches_off_is_no_longer_said_in_the_plan(tmp_path):
    from rlbench.planning.plan import plan_trials
    from rlbench.run.switches import with_switches
    from rlbench.spec.fidelity import IDLE_PRESTART, MINIMAL_AGENTS, WORKER_PRELOAD
    from rlbench.spec.load import load_spec

    spec = tmp_path / "spec.yaml"  # 1 runner in a runtime of 2 CPUs: the preload, and one worker not started
    spec.write_text(
        "name: t\nenvironment: {env: envs.tiny:TinyEnv}\nstop: {iterations: 3}\ncpus: 2\n"
        "resources: {num_cpus_for_main_process: 0}\n"
    )
    [plan] = plan_trials(load_spec(spec), _two_cores())
    idle = IDLE_PRESTART.format(n=1)
    assert {MINIMAL_AGENTS, WORKER_PRELOAD, idle} <= set(plan.differs_from_tune)
    assert plan.worker_preload_modules and plan.idle_prestart_workers == 1
    [off] = with_switches([plan], {ENV_VAR: "preload,on_demand_workers"})[0]
    assert off.differs_from_tune == [d for d in plan.differs_from_tune if d not in (WORKER_PRELOAD, idle)]
    assert (off.worker_preload_modules, off.idle_prestart_workers) == ([], 0)
    [off] = with_switches([plan], {ENV_VAR: "agents"})[0]
    assert MINIMAL_AGENTS not in off.differs_from_tune and len(off.differs_from_tune) == len(plan.differs_from_tune) - 1
