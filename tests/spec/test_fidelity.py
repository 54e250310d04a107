"""What a planned trial says about how it differs from the same configuration under Tune."""

from __future__ import annotations

from rlbench.spec.fidelity import ALWAYS, MINIMAL_AGENTS, tune_differences
from rlbench.spec.model import TrialConfig


def config(**sections) -> TrialConfig:
    return TrialConfig.model_validate({"environment": {"env": "CartPole-v1"}, **sections})


def test_the_whole_machine_differs_only_in_where_the_driver_runs_the_instruments_and_the_agents():
    assert tune_differences(config(), 2, 2) == [*ALWAYS, MINIMAL_AGENTS]
    assert tune_differences(config(switch_off=["agents"]), 2, 2) == list(ALWAYS)
    assert tune_differences(config(), 2, 2, include_dashboard=True) == list(ALWAYS)
    assert MINIMAL_AGENTS not in tune_differences(config(), 4, 4, on_cluster=True)  # a cluster's agents are its own
    assert tune_differences(config(), 2, 2, ray_runtime=False) == list(ALWAYS)  # a framework without Ray


def test_an_emulated_smaller_machine_pinning_and_hand_set_threads_are_named():
    got = tune_differences(config(resources={"pin_driver": True}, threads={"driver_torch_threads": 3}), 2, 8)
    assert got[:2] == list(ALWAYS)
    assert "pinned to 2 of the machine's 8 usable cores" in got[2]
    assert got[3].startswith("pin_driver:")
    assert "driver_torch_threads=3" in got[4]
    unpinned = tune_differences(config(switch_off=["affinity"], resources={"pin_driver": True}), 2, 8)  # none pinned
    assert not any("pinned" in d for d in unpinned)


def test_a_switch_added_after_planning_takes_its_line_back():
    from rlbench.spec.fidelity import without_switched

    said = tune_differences(config(resources={"pin_driver": True}), 2, 8, worker_preload=True, idle_prestart=3)
    assert len(said) == 7  # ALWAYS, the pinning, pin_driver, the agents, the preload, the 3 workers not started
    assert without_switched(said, ["stats", "threads"]) == said  # no line of theirs
    assert without_switched(said, ["affinity", "on_demand_workers"]) == [*ALWAYS, MINIMAL_AGENTS, said[5]]


def test_profiling_is_named_with_its_rate():
    got = tune_differences(config(), 2, 2, profile_hz=100)
    assert len(got) == 4 and "py-spy samples the trial's stacks at 100 Hz" in got[2]


def test_on_a_cluster_the_driver_reserves_nothing_and_nothing_is_pinned():
    got = tune_differences(config(resources={"pin_driver": True}), 4, 4, on_cluster=True)
    assert len(got) == 3 and "reserves nothing on the cluster" in got[2]


def test_a_script_execution_is_named_and_tune_is_not():
    got = tune_differences(config(execution="script"), 2, 2)
    assert len(got) == 4 and got[2].startswith("execution: script: the driver runs as a plain algo.train() loop")
    assert "niceness, 15" in got[2] and "OMP_NUM_THREADS" in got[2]
    assert tune_differences(config(execution="tune"), 2, 2) == [*ALWAYS, MINIMAL_AGENTS]


def test_workers_preload_only_where_remote_actors_use_them_and_never_on_a_cluster_or_switched_off():
    from rlbench.spec.fidelity import WORKER_PRELOAD, preloads_workers

    assert not preloads_workers(config(env_runners={"num_env_runners": 0}), on_cluster=False)  # all in the driver
    assert preloads_workers(config(), on_cluster=False)  # the default: one remote env runner
    assert preloads_workers(config(env_runners={"num_env_runners": 0}, learners={"num_learners": 2}), on_cluster=False)
    assert not preloads_workers(config(env_runners={"num_env_runners": 1}), on_cluster=True)
    assert not preloads_workers(config(env_runners={"num_env_runners": 1}, switch_off=["preload"]), on_cluster=False)
    assert tune_differences(config(), 2, 2, worker_preload=True)[-1] == WORKER_PRELOAD
    assert WORKER_PRELOAD not in tune_differences(config(), 2, 2)


def test_workers_ray_would_start_ahead_for_no_actor_are_counted_unless_switched_off():
    from rlbench.spec.fidelity import IDLE_PRESTART, idle_prestart

    assert idle_prestart(config(), 1, 1) == 0  # a runtime CPU for each actor: Ray's prestart kept
    assert idle_prestart(config(), 1, 2) == 0  # two half-CPU runners on one: both workers used
    assert idle_prestart(config(), 1, 0) == 1  # 0 runners: the one it would start idles
    assert idle_prestart(config(), 15, 8) == 7  # a 16-core machine's default trial of 8 runners
    assert idle_prestart(config(switch_off=["on_demand_workers"]), 15, 8) == 0
    got = tune_differences(config(), 16, 16, idle_prestart=7)[-1]
    assert got == IDLE_PRESTART.format(n=7) and got.count("7 of those") == 1
    assert not any("as its driver connects" in d for d in tune_differences(config(), 2, 2))
