"""Plan stage: which trials run, on which cores, with how many torch threads; hand-made machines."""

from __future__ import annotations

import pytest

from rlbench.measure.machine import MachineInfo
from rlbench.planning.plan import derive_seed, plan_trials, repeat_seeds, trial_id
from rlbench.planning.skip_summary import skip_group, skip_summary
from rlbench.planning.skips import skip_reason
from rlbench.spec.load import spec_from_dict
from rlbench.spec.model import TrialConfig


def machine(cores: list[int], gpus: int = 0) -> MachineInfo:
    return MachineInfo(
        hostname="test",
        cpu_model="fake",
        logical_cores=len(cores),
        physical_cores=len(cores),
        usable_cores=cores,
        memory_bytes=2**34,
        gpus=[{"index": i, "name": "Fake GPU", "memory_bytes": 2**30} for i in range(gpus)],
    )


TWO_CORES = machine([0, 1])
BIG = machine(list(range(16)), gpus=1)


def spec(**sections) -> dict:
    """A spec mapping: the given sections over a minimal base."""
    return {"name": "t", "environment": {"env": "CartPole-v1"}, "stop": {"iterations": 3}, **sections}


def plans(data: dict, on: MachineInfo):
    return plan_trials(spec_from_dict(data, check_envs=False), on)


def config(**sections) -> TrialConfig:
    return TrialConfig.model_validate({"environment": {"env": "CartPole-v1"}, **sections})


def test_trial_id():
    assert trial_id(0, 0) == "t000r0"
    assert trial_id(12, 3) == "t012r3"


def test_default_cpus_is_all_usable_cores():
    [p] = plans(spec(), TWO_CORES)
    assert p.skip_reason is None
    assert (p.cpus, p.cores, p.driver_cores, p.ray_cpus, p.gpus) == (2, [0, 1], [0], 1, 0)


def test_cores_are_a_prefix_of_the_usable_cores():
    [p] = plans(spec(cpus=3), machine([3, 5, 7, 9]))
    assert p.skip_reason is None
    assert (p.cpus, p.cores, p.driver_cores, p.ray_cpus) == (3, [3, 5, 7], [3], 2)


def test_driver_with_two_cores():
    [p] = plans(spec(cpus=4, resources={"num_cpus_for_main_process": 2}), BIG)
    assert p.skip_reason is None
    assert (p.cores, p.driver_cores, p.ray_cpus, p.gpus) == ([0, 1, 2, 3], [0, 1], 2, 1)


def test_driver_with_no_core_gives_ray_all():
    [p] = plans(spec(cpus=2, resources={"num_cpus_for_main_process": 0}), TWO_CORES)
    assert p.skip_reason is None
    assert (p.driver_cores, p.ray_cpus) == ([], 2)
    assert p.torch_threads["driver"] == 1


def test_more_cpus_than_usable_cores_is_skipped():
    [p] = plans(spec(cpus=4), TWO_CORES)
    assert p.skip_reason == "cpus=4 but this machine has 2 usable cores"


def test_too_many_env_runners_is_skipped_naming_the_numbers():
    [p] = plans(spec(cpus=2, env_runners={"num_env_runners": 8}), BIG)
    assert p.skip_reason == (
        "needs 8 CPUs for actors (8 env runners x 1 CPU) but only 1 are left after the driver's 1 of cpus=2"
    )


def test_remote_learners_count_towards_actor_cpus():
    data = spec(cpus=3, learners={"num_learners": 2, "num_cpus_per_learner": 1})
    [p] = plans(data, BIG)
    assert p.skip_reason == (
        "needs 3 CPUs for actors (1 env runners x 1 CPU + 2 learners x 1 CPU) but only 2 are left "
        "after the driver's 1 of cpus=3"
    )
    [fits] = plans({**data, "cpus": 4}, BIG)
    assert fits.skip_reason is None and fits.ray_cpus == 3


def test_fractional_env_runner_cpus():
    runners = {"num_env_runners": 3, "num_cpus_per_env_runner": 0.5}
    [tight] = plans(spec(cpus=2, env_runners=runners), BIG)
    assert tight.skip_reason is not None and "needs 1.5 CPUs" in tight.skip_reason
    assert "3 env runners x 0.5 CPU" in tight.skip_reason
    [fits] = plans(spec(cpus=3, env_runners=runners), BIG)
    assert fits.skip_reason is None


def test_driver_cpus_above_trial_cpus_is_skipped():
    [p] = plans(spec(cpus=2, resources={"num_cpus_for_main_process": 3}), TWO_CORES)
    assert p.skip_reason == "num_cpus_for_main_process=3 is more than the trial's cpus=2"
    assert p.ray_cpus == 0
    assert p.driver_cores == [0, 1]


def test_learner_gpu_on_gpu_less_machine_is_skipped():
    [p] = plans(spec(learners={"num_gpus": 1}), TWO_CORES)
    assert p.skip_reason == "needs 1 GPUs (learners and env runners) but this machine has 0"


def test_learner_gpu_on_gpu_machine_runs():
    [p] = plans(spec(cpus=2, learners={"num_gpus": 1}), BIG)
    assert p.skip_reason is None
    assert p.gpus == 1


def test_more_learner_gpus_than_the_machine_has_is_skipped():
    [p] = plans(spec(cpus=4, learners={"num_gpus": 2}), BIG)
    assert p.skip_reason == "needs 2 GPUs (learners and env runners) but this machine has 1"


def test_env_runner_gpus_on_gpu_less_machine_is_skipped():
    [p] = plans(spec(env_runners={"num_env_runners": 1, "num_gpus_per_env_runner": 0.5}), TWO_CORES)
    assert p.skip_reason == "needs 0.5 GPUs (learners and env runners) but this machine has 0"


def test_skip_reason_per_grid_point():
    ps = plans(spec(grid={"cpus": [1, 2, 4]}), TWO_CORES)
    assert [p.cpus for p in ps] == [1, 2, 4]
    assert ps[0].skip_reason == (
        "needs 1 CPUs for actors (1 env runners x 1 CPU) but only 0 are left after the driver's 1 of cpus=1"
    )
    assert ps[1].skip_reason is None
    assert ps[2].skip_reason == "cpus=4 but this machine has 2 usable cores"


def test_skip_reason_directly():
    assert skip_reason(config(), 2, TWO_CORES) is None
    assert skip_reason(config(), 3, TWO_CORES) == "cpus=3 but this machine has 2 usable cores"
    assert skip_reason(config(env_runners={"num_env_runners": 0}), 1, TWO_CORES) is None


@pytest.mark.parametrize(
    ("sections", "expected"),
    [
        ({}, {"driver": 1, "learner": 1, "env_runner": 1}),
        # learner runs in the driver (num_learners=0): it gets the driver's count
        (
            {"resources": {"num_cpus_for_main_process": 3}, "env_runners": {"num_cpus_per_env_runner": 2.5}},
            {"driver": 3, "learner": 3, "env_runner": 2},
        ),
        (
            {"resources": {"num_cpus_for_main_process": 0}, "env_runners": {"num_cpus_per_env_runner": 0.5}},
            {"driver": 1, "learner": 1, "env_runner": 1},
        ),
        ({"threads": {"driver_torch_threads": 6}}, {"driver": 6, "learner": 6, "env_runner": 1}),
        # an explicit learner count only applies to remote learners
        ({"threads": {"learner_torch_threads": 5}}, {"driver": 1, "learner": 1, "env_runner": 1}),
        ({"learners": {"num_learners": 2, "num_cpus_per_learner": 4}}, {"driver": 1, "learner": 4, "env_runner": 1}),
        (
            {"learners": {"num_learners": 2, "num_cpus_per_learner": 4}, "threads": {"learner_torch_threads": 2}},
            {"driver": 1, "learner": 2, "env_runner": 1},
        ),
        (
            {"env_runners": {"num_cpus_per_env_runner": 3}, "threads": {"env_runner_torch_threads": 7}},
            {"driver": 1, "learner": 1, "env_runner": 7},
        ),
    ],
)
def test_torch_threads_per_role(sections, expected):
    [p] = plans(spec(cpus=16, **sections), BIG)
    assert p.torch_threads == expected


def test_repeats_make_ids_in_run_order():
    ps = plans(spec(repeats=2, grid={"num_env_runners": [0, 1]}), TWO_CORES)
    assert [p.trial_id for p in ps] == ["t000r0", "t000r1", "t001r0", "t001r1"]
    assert [(p.index, p.repeat) for p in ps] == [(0, 0), (0, 1), (1, 0), (1, 1)]
    assert [p.axes for p in ps] == [{"num_env_runners": n} for n in (0, 0, 1, 1)]
    assert [p.config.env_runners.num_env_runners for p in ps] == [0, 0, 1, 1]


def test_run_settings_come_from_the_spec():
    data = spec(stop={"iterations": 5, "seconds": 60}, warmup_iterations=2, trial_timeout_s=30, sample_hz=4, seed=7)
    [p] = plans(data, TWO_CORES)
    # seed 7, repeat 0: SHA-256("rlbench-seed:7:0")[:4] = 0xba44156c, mod 2**31 = 977540460 (the documented rule)
    assert (p.stop_iterations, p.stop_seconds, p.warmup_iterations, p.timeout_s, p.sample_hz, p.seed) == (
        5,
        60.0,
        2,
        30.0,
        4.0,
        977540460,
    )
    assert p.stop_target is None


def test_a_stop_target_reaches_the_plan():
    [p] = plans(spec(stop={"iterations": 9, "episode_return_mean": 150}), TWO_CORES)
    assert (p.stop_target.metric, p.stop_target.threshold, p.stop_target.mode) == (
        "episode_return_mean",
        150.0,
        "at_least",
    )
    [p] = plans(spec(stop={"iterations": 9, "vf_loss": {"at_most": 0.5}}), TWO_CORES)
    assert (p.stop_target.threshold, p.stop_target.mode) == (0.5, "at_most")
    assert p.stop_target.reached(0.5) and not p.stop_target.reached(0.51) and not p.stop_target.reached(None)


def test_each_repeat_has_its_own_seed_shared_across_grid_points():
    ps = plans(spec(repeats=3, seed=7, grid={"num_env_runners": [0, 1]}), TWO_CORES)
    by_repeat = {}
    for p in ps:
        by_repeat.setdefault(p.repeat, set()).add(p.seed)
    assert all(len(s) == 1 for s in by_repeat.values())  # same repeat index, same seed
    seeds = [by_repeat[r].pop() for r in range(3)]
    assert len(set(seeds)) == 3 and seeds[0] == 977540460
    assert seeds == [derive_seed(7, r) for r in range(3)]


def test_unseeded_sweeps_draw_fresh_seeds_and_a_resume_reuses_the_recorded_ones():
    loaded = spec_from_dict(spec(repeats=2), check_envs=False)
    first, second = repeat_seeds(loaded.spec), repeat_seeds(loaded.spec)
    assert first != second and all(0 <= s < 2**31 for s in first + second)
    assert repeat_seeds(loaded.spec, {0: 11, 1: None}) == [11, None]  # a folder from before seeding: kept as run
    assert repeat_seeds(loaded.spec, {0: 11})[0] == 11


def test_a_seed_list_is_taken_as_given():
    [p0, p1] = plans(spec(repeats=2, seed=[5, 6]), TWO_CORES)
    assert (p0.seed, p1.seed) == (5, 6)


# ---------------------------------------------------------------------------------------------
# Skipped trials, said once per kind of reason


def test_skip_summary_of_the_old_leading_example_on_two_cores():
    """configs/ppo_cpu.yaml as it was: 14 of its 16 trials cannot run on 2 cores."""
    data = spec(grid={"num_env_runners": [1, 2, 4, 8], "num_cpus_for_main_process": [1, 2]}, repeats=2)
    ps = plans(data, TWO_CORES)
    assert skip_summary(ps) == [
        "14 of 16 trials need more CPUs than this machine's 2: they will be skipped "
        "(largest feasible: num_env_runners=1, num_cpus_for_main_process=1, 2 CPUs)"
    ]
    assert skip_group(ps[0]) is None


def test_skip_groups_name_the_limit_that_was_hit():
    assert [skip_group(p) for p in plans(spec(cpus=2, grid={"num_env_runners": [0, 2]}), BIG)] == [
        None,
        "need more CPUs than their cpus=2",
    ]
    assert [skip_group(p) for p in plans(spec(grid={"cpus": [2, 4]}), TWO_CORES)] == [
        None,
        "ask for more cpus than this machine's 2 usable cores",
    ]
    gpu = plans(spec(grid={"learner_gpus": [0, 2]}), TWO_CORES)
    assert [skip_group(p) for p in gpu] == [None, "need more GPUs than this machine's 0"]
    assert skip_summary(gpu) == [
        "1 of 2 trials need more GPUs than this machine's 0: it will be skipped "
        "(largest feasible: learner_gpus=0, 0 GPUs)"
    ]


def test_skip_summary_when_nothing_fits():
    ps = plans(spec(grid={"num_env_runners": [4, 8]}), TWO_CORES)
    assert skip_summary(ps) == [
        "2 of 2 trials need more CPUs than this machine's 2: they will be skipped (none of the trials fits)"
    ]
    assert skip_summary(plans(spec(), TWO_CORES)) == []


def test_driver_is_reserved_but_not_pinned_by_default_as_under_tune():
    [p] = plans(spec(), TWO_CORES)
    assert p.config.resources.pin_driver is False and p.driver_cores == [0] and p.ray_cpus == 1
    assert p.switched_off == [] and len(p.differs_from_tune) == 4  # ALWAYS, the minimal agents, the preload
    assert p.worker_preload_modules == ["ray.rllib.env.single_agent_env_runner"]  # its one remote env runner
    assert p.idle_prestart_workers == 0  # the runtime's one CPU is its env runner's
    [p] = plans(spec(env_runners={"num_env_runners": 0}), TWO_CORES)
    assert p.worker_preload_modules == [] and p.idle_prestart_workers == 1  # no remote actor: nothing preloaded,
    assert len(p.differs_from_tune) == 4 and "1 of those" in p.differs_from_tune[-1]  # no worker started ahead
    [p] = plans(spec(resources={"num_cpus_for_main_process": 0}), TWO_CORES)
    assert (p.ray_cpus, p.idle_prestart_workers) == (2, 1)  # two runtime CPUs, one env runner
    [p] = plans(spec(resources={"pin_driver": True}), TWO_CORES)
    assert p.config.resources.pin_driver is True and any(d.startswith("pin_driver:") for d in p.differs_from_tune)


def test_profiling_settings_reach_the_plan_and_default_to_off():
    [off] = plans(spec(), TWO_CORES)
    assert (off.profile_hz, off.profile_native) == (0, False)
    assert off.profile_roles == ["driver", "learner", "env_runner", "ray_system", "other"]  # every process
    [on] = plans(spec(profile_hz=100, profile_native=True, profile_roles=["env_runner"]), TWO_CORES)
    assert (on.profile_hz, on.profile_native, on.profile_roles) == (100, True, ["env_runner"])


@pytest.mark.parametrize("gpus", [0, 0.5, 1, 2])
def test_a_learner_gpus_plan_reads_back_as_written(tmp_path, gpus):
    """plan.json holds learner_gpus beside the num_learners/num_gpus_per_learner it resolved to: every reader
    (the trial, the tables, --resume, reproduce) goes through read_plan and gets the same plan back (on
    1923cec every learner_gpus plan failed to read: "both set: keep one")."""
    from rlbench.planning.plan import read_plan, write_plan
    from rlbench.results.layout import ResultsFolder

    [p] = plans(spec(learners={"learner_gpus": gpus}), machine(list(range(4)), gpus=2))
    assert read_plan(write_plan(ResultsFolder(tmp_path), p)) == p


def test_a_gpu_point_short_of_cpus_too_says_both():
    """configs/ppo_gpu.yaml on 2 cores: its learner_gpus=1 points lack CPUs and a GPU; both are said, so a GPU
    point says why on any machine (issue 42), and it groups apart from the CPU points that lack CPUs alone."""
    grid = {"learner_gpus": [0, 1]}
    cpu, gpu = plans(spec(env_runners={"num_env_runners": 2}, grid=grid), TWO_CORES)
    assert (
        cpu.skip_reason
        == "needs 2 CPUs for actors (2 env runners x 1 CPU) but only 1 are left after the driver's 1 of cpus=2"
    )
    assert (
        gpu.skip_reason == cpu.skip_reason + "; it also needs 1 GPUs (learners and env runners) but this machine has 0"
    )
    assert (skip_group(cpu), skip_group(gpu)) == (
        "need more CPUs than this machine's 2",
        "need more CPUs than this machine's 2 and more GPUs than its 0",
    )


def test_rounds_per_process_reads_a_block_of_rounds_as_the_windows_of_its_first_rounds_trial():
    """rounds 5, 2 a process (issue 56): rounds 0-1 are trial r0's two windows, 2-3 r2's, round 4 a cold trial of its
    own; each windowed trial reads its steady iterations (3 - 1 warm-up = 2) per window, the warm-up once."""
    got = plans(spec(grid={"lr": [0.1, 0.2]}, rounds=5, rounds_per_process=2, warmup_iterations=1), TWO_CORES)
    assert [(p.trial_id, p.round, p.windows) for p in got] == [
        ("t000r0", 0, 2),
        ("t001r0", 0, 2),
        ("t000r2", 2, 2),
        ("t001r2", 2, 2),
        ("t000r4", 4, None),
        ("t001r4", 4, None),
    ]
    assert {(p.window_iterations, p.stop_iterations) for p in got if p.windows} == {(2, 1 + 2 * 2)}
    assert {p.stop_iterations for p in got if not p.windows} == {3}


def test_rounds_per_process_changes_nothing_without_rounds():
    """A history's spec swept as it is (one round): the trials it always had."""
    got = plans(spec(rounds_per_process=3), TWO_CORES)
    assert [(p.trial_id, p.windows) for p in got] == [("t000r0", None)]


def test_rounds_per_process_leaves_a_skipped_trial_unwindowed():
    got = plans(spec(grid={"num_env_runners": [0, 4]}, rounds=2, rounds_per_process=2), TWO_CORES)
    assert [(p.trial_id, p.windows, p.skip_reason is None) for p in got] == [
        ("t000r0", 2, True),
        ("t001r0", None, False),
    ]


def test_warm_blocks_spread_the_variants_first_places_over_the_order():
    """rounds 6, 3 a process, 3 variants: block 0 runs A B C, block 1 starts at variant 3 x 1 // 2 = 1 (B C A), where
    rotating by the round (3 mod 3 = 0) would run A B C twice and leave A first in every pass."""
    data = spec(
        variants=[
            {"name": "A"},
            {"name": "B", "set": {"training.lr": 0.2}},
            {"name": "C", "set": {"training.lr": 0.3}},
        ],
        rounds=6,
        rounds_per_process=3,
    )
    got = plans(data, TWO_CORES)
    assert [(p.variant, p.round) for p in got] == [("A", 0), ("B", 0), ("C", 0), ("B", 3), ("C", 3), ("A", 3)]
