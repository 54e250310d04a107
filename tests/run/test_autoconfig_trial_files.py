"""A finished trial read back as autoconfig's result, from hand-written per-trial files."""

from __future__ import annotations

import json

import pytest

from rlbench.results.layout import ResultsFolder
from rlbench.results.records import TrialRecord, write_record
from rlbench.run.autoconfig_driver.trial_files import State, read_result


def trial(
    folder: ResultsFolder,
    tid: str,
    status: str,
    walls: list[float],
    *,
    warmup: int = 1,
    hit: int | None = None,
    wall_s: float = 10.0,
) -> None:
    t = folder.trial(tid)
    t.path.mkdir(parents=True)
    events, t_s = [{"event": "start", "t_s": 0.0}], 3.0  # 3 s of cold start before the first iteration
    for i, w in enumerate(walls, 1):
        events.append(
            {
                "event": "iteration",
                "iteration": i,
                "warmup": i <= warmup,
                "t_start_s": t_s,
                "t_end_s": t_s + w,
                "wall_s": w,
                "env_steps_per_s": 100.0 / w,
                "env_steps_sampled": 100 * i,
            }
        )
        t_s += w
        if hit == i:
            events.append({"event": "target_reached", "iteration": i})
    (t.path / "events.jsonl").write_text("".join(json.dumps(e) + "\n" for e in events))
    write_record(t, TrialRecord(trial_id=tid, status=status, trial_wall_s=wall_s))


def test_throughput_is_the_median_steady_rate_and_the_rest_is_cold_start(tmp_path):
    folder = ResultsFolder(tmp_path)
    trial(folder, "t000r0", "ok", [5.0, 1.0, 2.0, 4.0])  # steady: 100, 50, 25 steps/s
    r = read_result(folder, "t000r0", "search/r0/i0/k", "throughput", charged_s=15.0)
    assert (r.value, r.wall_s, r.cold_start_s, r.iteration_s, r.reached) == (50.0, 12.0, 3.0, 2.0, True)
    assert read_result(folder, "t000r0", "x", "throughput", None).cold_start_s == 0.0  # record's 10 s < 12 s trained


def test_time_to_target_reached_or_censored(tmp_path):
    folder = ResultsFolder(tmp_path)
    trial(folder, "t000r0", "ok", [1.0, 2.0, 3.0, 4.0], hit=3)
    trial(folder, "t000r1", "ok", [1.0, 2.0, 3.0])
    reached = read_result(folder, "t000r0", "a", "time_to_target", None)
    censored = read_result(folder, "t000r1", "b", "time_to_target", None)
    assert (reached.value, reached.reached) == (6.0, True)
    assert (censored.value, censored.reached) == (6.0, False)
    assert (reached.env_steps, censored.env_steps) == (100 + 200 + 300, 100 + 200 + 300)  # up to the target; the cap


@pytest.mark.parametrize("status", ["failed", "timeout"])
def test_a_trial_that_did_not_end_ok_has_no_value(tmp_path, status):
    folder = ResultsFolder(tmp_path)
    trial(folder, "t000r0", status, [1.0, 2.0])
    assert read_result(folder, "t000r0", "a", "throughput", None).value is None


def test_no_verdict_or_interrupted_is_not_a_result(tmp_path):
    folder = ResultsFolder(tmp_path)
    assert read_result(folder, "t000r0", "a", "throughput", None) is None  # never started
    trial(folder, "t000r1", "interrupted", [1.0, 2.0])
    assert read_result(folder, "t000r1", "a", "throughput", None) is None


def test_trial_ids_are_the_next_repeat_of_the_grid_point_and_kept(tmp_path):
    state = State(ResultsFolder(tmp_path))
    assert [state.assign(r, i) for r, i in [("a", 0), ("b", 1), ("c", 0), ("a", 0)]] == [
        "t000r0",
        "t001r0",
        "t000r1",
        "t000r0",
    ]
    assert State.read(ResultsFolder(tmp_path)).trials["c"]["trial_id"] == "t000r1"


def test_a_new_warm_trial_takes_an_id_no_request_and_no_folder_used(tmp_path):
    """Issue 56: a warm trial holds several requests' windows; a request read again (after an interruption) gets a
    new trial, never its old id (that folder, moved aside, held the others' windows)."""
    folder = ResultsFolder(tmp_path)
    state = State(folder)
    assert state.assign_new("w0", 0, folder) == "t000r0"
    state.trials["w1"] = {"trial_id": "t000r0", "charged_s": None}  # a second window of the same trial
    trial(folder, "t000r1", "interrupted", [1.0])  # a folder no request names any more
    assert state.assign_new("w1", 0, folder) == "t000r2" and state.trials["w1"]["trial_id"] == "t000r2"
    assert state.assign_new("x", 1, folder) == "t001r0"


def test_a_window_is_a_result_once_it_ended_whatever_became_of_its_trial(tmp_path):
    """A warm trial's window is read from its iterations alone, once its window_end is written, the trial kept or
    ended; a window not ended is no result."""
    folder = ResultsFolder(tmp_path)
    path = folder.trial("t000r0").path
    path.mkdir(parents=True)
    rows = [
        {
            "event": "iteration",
            "iteration": 1,
            "warmup": True,
            "window": 0,
            "wall_s": 1.0,
            "env_steps_sampled": 10,
            "env_steps_per_s": 10.0,
        },
        {
            "event": "iteration",
            "iteration": 2,
            "warmup": False,
            "window": 0,
            "wall_s": 1.0,
            "env_steps_sampled": 20,
            "env_steps_per_s": 20.0,
        },
        {"event": "window_end", "window": 0},
        {
            "event": "iteration",
            "iteration": 3,
            "warmup": False,
            "window": 1,
            "wall_s": 0.5,
            "env_steps_sampled": 20,
            "env_steps_per_s": 40.0,
        },
    ]
    (path / "events.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    got = read_result(folder, "t000r0", "a", "throughput", 5.0, window=0)
    assert got is not None and got.value == 20.0 and got.charged_s == 5.0
    assert read_result(folder, "t000r0", "b", "throughput", 1.0, window=1) is None  # no window_end yet


def test_two_probes_separate_the_per_step_and_the_per_call_cost(tmp_path):
    """Known answer: env 10 us a step, then 20 us a step plus 400 us a forward call of E envs."""
    from rlbench.measure.machine import probe_machine
    from rlbench.planning.plan import plan_trials
    from rlbench.run.autoconfig_driver.trial_files import probes_of
    from rlbench.spec.load import spec_from_dict

    loaded = spec_from_dict(
        {
            "name": "p",
            "environment": {"env": "CartPole-v1"},
            "env_runners": {"num_env_runners": 0},
            "training": {"train_batch_size_per_learner": 1000},
            "cpus": 1,
            "grid": {"num_envs_per_env_runner": [1, 4]},
            "stop": {"seconds": 1},
        },
        check_envs=False,
    )
    one, four = plan_trials(loaded, probe_machine(), [0])
    folder = ResultsFolder(tmp_path)
    for plan, rest_us in ((one, 20 + 400 / 1), (four, 20 + 400 / 4)):
        t = folder.trial(plan.trial_id)
        t.path.mkdir(parents=True)
        its = [
            {
                "event": "iteration",
                "iteration": i,
                "warmup": i == 1,
                "wall_s": 1.0,
                "env_steps_sampled": 1000,
                "sample_s": 1000 * (10 + rest_us) * 1e-6,
                "env_step_s": 1000 * 10e-6,
                "learn_s": 0.2,
                "sync_s": 0.0,
            }
            for i in (1, 2, 3)
        ]
        (t.path / "events.jsonl").write_text("".join(json.dumps(e) + "\n" for e in its))
    p = probes_of(folder, one, four)
    assert (p.env_step_s, p.inference_step_s, p.inference_call_s, p.learner_step_s) == pytest.approx(
        (10e-6, 20e-6, 400e-6, 0.2 / 1000)
    )
    alone = probes_of(folder, one)
    assert (alone.inference_step_s, alone.inference_call_s) == pytest.approx((420e-6, 0.0))


def test_each_other_env_config_steps_at_its_ceiling_and_survives_the_state(tmp_path):
    """Known answer: env_config cost 5 stepped at 2000 steps/s a process (0.5 ms), cost 9's ceiling failed."""
    from rlbench.autoconfig.model import ProbeCosts, env_id
    from rlbench.autoconfig.session import dump_decided, load_decided
    from rlbench.measure.machine import probe_machine
    from rlbench.planning.plan import plan_trials
    from rlbench.run.autoconfig_driver.trial_files import env_steps_from
    from rlbench.spec.load import spec_from_dict
    from rlbench.studies.envbench import ceiling_key

    loaded = spec_from_dict(
        {
            "name": "p",
            "environment": {"env": "CartPole-v1"},
            "env_runners": {"num_env_runners": 0},
            "cpus": 1,
            "grid": {"env_config.cost": [5, 9]},
            "stop": {"seconds": 1},
        },
        check_envs=False,
    )
    five, nine = plan_trials(loaded, probe_machine(), [0])
    folder = ResultsFolder(tmp_path)

    def key(p):
        return ceiling_key(p.config.environment.env, p.config.environment.env_config, 1, p.cpus)  # 0 runners: 1 process

    folder.ceilings.write_text(json.dumps({key(five): {"steps_per_s_per_proc": 2000.0}, key(nine): {"error": "boom"}}))
    id5, id9 = (env_id(p.config.environment.env, p.config.environment.env_config) for p in (five, nine))
    steps, unmeasured = env_steps_from(folder, {id5: five, id9: nine})
    assert steps == ((id5, pytest.approx(0.0005)),) and unmeasured == (id9,)
    # a ceiling that stepped nothing in its time (under load) is no measurement either
    folder.ceilings.write_text(
        json.dumps({key(five): {"steps_per_s_per_proc": 2000.0}, key(nine): {"steps": 0, "steps_per_s_per_proc": 0.0}})
    )
    assert env_steps_from(folder, {id5: five, id9: nine})[1] == (id9,)
    probes = ProbeCosts(0.001, 0.0, 0.0, 0.0, 1, env_steps_s=steps, unmeasured_envs=unmeasured)
    through_the_state = load_decided(json.loads(json.dumps(dump_decided({"probes": probes}))))
    assert through_the_state["probes"] == probes  # through autoconfig_state.json


def test_a_gpu_probe_reads_its_busy_share_from_its_own_samples(tmp_path):
    """Known answer: a CPU baseline (1 ms of learner per env step) and a GPU learner's probe whose learn windows
    (1 s after 0.5 s of sampling) NVML read 10% busy, 0.9 s of 100 updates: 8.1 ms a step, 0.19 ms an env step."""
    from rlbench.measure.machine import probe_machine
    from rlbench.planning.plan import plan_trials
    from rlbench.results.tables import write_utilization
    from rlbench.run.autoconfig_driver.trial_files import probes_of
    from rlbench.spec.load import spec_from_dict

    loaded = spec_from_dict(
        {
            "name": "p",
            "environment": {"env": "CartPole-v1"},
            "env_runners": {"num_env_runners": 0},
            "training": {"train_batch_size_per_learner": 1000},
            "cpus": 1,
            "grid": {"num_gpus_per_learner": [0, 1]},
            "stop": {"seconds": 1},
        },
        check_envs=False,
    )
    cpu, gpu = plan_trials(loaded, probe_machine(), [0])
    folder = ResultsFolder(tmp_path)
    for plan, learn, update in ((cpu, 1.0, 0.9), (gpu, 1.0, 0.9)):
        t = folder.trial(plan.trial_id)
        t.path.mkdir(parents=True)
        its = [
            {
                "event": "iteration",
                "iteration": i,
                "warmup": i == 1,
                "t_start_s": 10.0 * i,
                "t_end_s": 10.0 * i + 2,
                "wall_s": 2.0,
                "env_steps_sampled": 1000,
                "sample_s": 0.5,
                "env_step_s": 0.25,
                "learn_s": learn,
                "learn_update_s": update,
                "sgd_steps": 100,
                "sync_s": 0.0,
            }
            for i in (1, 2, 3)
        ]
        (t.path / "events.jsonl").write_text("".join(json.dumps(e) + "\n" for e in its))
    stamps = [10.0 * i + 0.5 + k / 10 for i in (1, 2, 3) for k in range(1, 11)]  # inside each learn window
    write_utilization(
        folder.trial(gpu.trial_id).utilization,
        gpu.trial_id,
        {
            "t_s": stamps,
            "kind": ["gpu"] * len(stamps),
            "gpu_index": [0] * len(stamps),
            "gpu_util_pct": [10.0] * len(stamps),
        },
    )
    p = probes_of(folder, cpu, device=gpu)
    assert (p.learner_step_s, p.learner_sgd_step_s) == pytest.approx((1e-3, 0.0))
    assert (p.learner_gpu_step_s, p.learner_gpu_sgd_step_s) == pytest.approx((0.19e-3, 0.0081))


def test_a_warm_trials_first_window_pays_its_launch_within_the_specs_own_limit():
    """A request is killed its cap + a grace of 3 cold starts after it starts; a warm trial's first window also pays
    the launch, which grows with the point's runners and envs (issue 57: three new 4-runner points timed out at 44 s
    in their first window), so it gets the spec's own ``trial_timeout_s`` (walk_cpu.yaml: 600 s)."""
    from dataclasses import replace as dc_replace

    from conftest import REPO

    from rlbench.autoconfig.ask_tell import TrialRequest
    from rlbench.measure.machine import probe_machine
    from rlbench.run.autoconfig_driver.space import prepare
    from rlbench.run.autoconfig_driver.trial_files import request_plan

    machine = dc_replace(probe_machine(), logical_cores=2, usable_cores=[0, 1], gpus=[])
    setup = prepare(REPO / "configs" / "walk_cpu.yaml", budget="20m", objective=None, machine=machine)
    template = setup.templates[setup.baseline_key]
    request = TrialRequest("walk2/r0/i0/x", setup.baseline_key, "walk", 0, 0, 7, 20.0, step=2)
    kw = {"stop_iterations": 4, "stop_seconds": 20.0, "cold_start_s": 4.0, "objective": "throughput"}
    assert request_plan(template, "t001r0", request, **kw).timeout_s == 20.0 + 30.0  # the grace's floor
    assert request_plan(template, "t001r0", request, **{**kw, "cold_start_s": 12.0}).timeout_s == 20.0 + 36.0
    assert request_plan(template, "t001r0", request, **kw, launch=True).timeout_s == template.timeout_s == 600
