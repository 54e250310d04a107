"""Why a learner is slow (rlbench.analysis.learner, findings.learner_verdicts): the learn windows' GPU and CPU use
from hand-made samples, a trial's learner columns, the CPU twin by the one change rule, each verdict triggered from
what a fake GPU learner's probe logged (the fake CUDA-event seam of tests/adapters/test_rllib_learner_device.py),
none on a busy GPU, and the sweep a verdict asks for."""

from __future__ import annotations

import sys
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "adapters"))
from test_rllib_learner_device import FakeClocks, FakeDevice, GpuLearner  # noqa: E402
from test_rllib_learner_probe import _Data  # noqa: E402

from rlbench.adapters.rllib.learner_probe import install  # noqa: E402
from rlbench.adapters.rllib.results import iteration_timings  # noqa: E402
from rlbench.adapters.timings import IterationTimings  # noqa: E402
from rlbench.analysis.findings import learner_verdicts, verdict  # noqa: E402
from rlbench.analysis.learner import cpu_twins, learn_window_columns, learner_columns  # noqa: E402
from rlbench.analysis.next_step import knob_values, next_sweep  # noqa: E402


def _its(rows: list[dict], trial_id: str = "t0") -> pd.DataFrame:
    return pd.DataFrame([{"trial_id": trial_id, "warmup": False, **r} for r in rows])


def _samples(trial_id: str, kind: str, times: list[float], role=None, cpu_pct=None, util=None, index=None):
    return pd.DataFrame(
        {
            "trial_id": trial_id,
            "t_s": times,
            "kind": kind,
            "role": role,
            "node_id": None,
            "cpu_pct": cpu_pct,
            "gpu_index": index,
            "gpu_util_pct": util,
        }
    )


def test_learn_windows_read_the_learner_gpu_and_the_learners_cores():
    # one iteration: sampling 0-1 s, learning 1-3 s, sync after; samples every 0.5 s
    its = _its([{"t_start_s": 10.0, "t_end_s": 13.5, "sample_s": 1.0, "learn_s": 2.0}])
    t = [10.5, 11.0, 11.5, 12.0, 12.5, 13.0, 13.5]
    util = pd.concat(
        [
            _samples("t0", "gpu", t, util=[90, 90, 10, 20, 30, 40, 90], index=0),  # the learner's GPU
            _samples("t0", "gpu", t, util=[0, 0, 0, 0, 0, 0, 0], index=1),  # an idle one beside it
            _samples("t0", "process", t, role="driver", cpu_pct=[100, 100, 150, 150, 200, 200, 50]),
            _samples("t0", "process", t, role="env_runner", cpu_pct=[100] * 7),  # not the learner's
        ]
    )
    got = learn_window_columns(its, util, {"t0": (0, 1.0, False)})
    # the window (11, 13]: GPU 0's samples at 11.5 .. 13.0, the busiest GPU; the driver's 1.5, 1.5, 2, 2 cores
    assert got.loc[0, "gpu_busy_pct"] == pytest.approx((10 + 20 + 30 + 40) / 4)
    assert got.loc[0, "learn_cpus_used"] == pytest.approx(1.75)
    # a CPU learner has no GPU busy share even where the machine has GPUs; an asynchronous one learns all along
    cpu = learn_window_columns(its, util, {"t0": (0, 0.0, True)})
    assert np.isnan(cpu.loc[0, "gpu_busy_pct"])
    assert cpu.loc[0, "learn_cpus_used"] == pytest.approx((1 + 1 + 1.5 + 1.5 + 2 + 2 + 0.5) / 7)


def test_remote_learners_cores_are_per_learner_and_too_few_samples_give_null():
    its = _its([{"t_start_s": 0.0, "t_end_s": 4.0, "sample_s": 1.0, "learn_s": 2.0}])
    util = _samples("t0", "process", [1.5, 2.0, 2.5], role="learner", cpu_pct=[300, 300, 300])
    got = learn_window_columns(its, util, {"t0": (2, 0.0, False)})
    assert got.loc[0, "learn_cpus_used"] == pytest.approx(1.5)  # 3 cores over 2 learners
    sparse = learn_window_columns(its, util.iloc[:1], {"t0": (2, 0.0, False)})
    assert np.isnan(sparse.loc[0, "learn_cpus_used"])  # one sample in the window: no mean


def test_a_trials_learner_columns():
    its = _its(
        [
            {
                "learn_s": 2.0,
                "learn_batch_s": 0.5,
                "learn_update_s": 1.0,
                "learn_other_s": 0.5,
                "sgd_steps": 100,
                "gpu_busy_pct": 10.0,
                "learn_cpus_used": 1.0,
            },
            {
                "learn_s": 6.0,
                "learn_batch_s": 0.7,
                "learn_update_s": 3.0,
                "learn_other_s": 2.3,
                "sgd_steps": 100,
                "gpu_busy_pct": 50.0,
                "learn_cpus_used": None,
            },
        ]
    )
    row = learner_columns(its)
    assert (row["learn_batch_s"], row["learn_update_s"]) == (pytest.approx(0.6), pytest.approx(2.0))
    assert row["gpu_busy_pct"] == pytest.approx((10 * 2 + 50 * 6) / 8)  # weighted by the learn window
    assert row["learn_cpus_used"] == 1.0  # the iteration without a reading is left out, not a 0
    assert row["sgd_step_s"] == pytest.approx(4.0 / 200) and row["sgd_steps_per_iteration"] == 100
    assert row["learn_copy_s"] is None and row["learn_device_s"] is None  # a CPU learner, or an older folder
    assert learner_columns(its.drop(columns=["learn_batch_s", "gpu_busy_pct"]))["learn_batch_s"] is None


# ------------------------------------------------------------------------------------------------------------------
# Each verdict from what a fake GPU learner's probe logged


def _gpu_iteration(
    *, build_s: float, copy_s: float, step_host_s: float, step_device_s: float, steps: int, sample_s: float
) -> IterationTimings:
    """One PPO iteration of a GPU learner in the driver, through the probe on the fake clocks and RLlib's result."""
    clocks = FakeClocks()
    learner = GpuLearner(clocks)
    learner.BUILD_S, learner.COPY_S, learner.STEP_HOST_S, learner.STEP_DEVICE_S = (
        build_s,
        copy_s,
        step_host_s,
        step_device_s,
    )
    learner._learner_connector.connectors[0].host_s = build_s - copy_s
    learner._learner_connector.connectors[1].host_s = copy_s
    install(learner, clock=clocks.host, device_clock=FakeDevice(clocks))
    logged = learner.update(_Data(), minibatches=steps)
    learn_s = build_s + steps * step_host_s + 0.03125
    result = {
        "timers": {"env_runner_sampling_timer": sample_s, "learner_update_timer": learn_s},
        "env_runners": {"num_env_steps_sampled": 8000},
        "learners": {"rlbench": {k[1]: v for k, v in logged.items() if k[0] == "rlbench"}},
    }
    algo = SimpleNamespace(
        config=SimpleNamespace(num_env_runners=2, num_learners=0),
        metrics=SimpleNamespace(peek=lambda key, default=0.0: 0.0),
    )
    return IterationTimings(**iteration_timings(algo, result))


def _row(
    t: IterationTimings,
    *,
    gpu_util: float | None,
    learner_gpus: float = 1.0,
    threads: float = 4,
    cpu_pct: float = 100.0,
    cpus: float = 16,
    **extra,
) -> dict:
    """The configuration row of a trial of three such iterations, NVML and the driver sampled at 10 Hz."""
    wall = t.sample_s + t.learn_s + 0.0625
    rows, times, util, busy = [], [], [], []
    for i in range(3):
        start = 100.0 + i * wall
        rows.append(
            {
                **{k: v for k, v in vars(t).items() if k != "runners"},
                "t_start_s": start,
                "t_end_s": start + wall,
                "wall_s": wall,
            }
        )
        for s in np.arange(start + 0.05, start + wall, 0.1):
            learning = start + t.sample_s < s <= start + t.sample_s + t.learn_s
            times.append(s)
            util.append(gpu_util if learning else 0.0)
            busy.append(cpu_pct if learning else 10.0)
    its = _its(rows)
    samples = pd.concat(
        [
            _samples("t0", "gpu", times, util=util, index=0),
            _samples("t0", "process", times, role="driver", cpu_pct=busy),
        ]
    )
    if gpu_util is None:
        samples = samples[samples["kind"] != "gpu"]
    its[["gpu_busy_pct", "learn_cpus_used"]] = learn_window_columns(its, samples, {"t0": (0, learner_gpus, False)})
    return {
        "index": 0,
        "env_steps_per_s": t.env_steps_sampled / wall,
        "sample_frac": t.sample_s / wall,
        "learn_frac": t.learn_s / wall,
        "sync_frac": 0.0625 / wall,
        "learner_gpus": learner_gpus,
        "num_learners": 0,
        "driver_torch_threads": threads,
        "cpus": cpus,
        "num_env_runners": 2,
        "minibatch_size": 512,
        "num_epochs": 10,
        "train_batch_size_per_learner": 8000,
        "num_cpus_for_main_process": 4,
        **learner_columns(its),
        **extra,
    }


def _causes(row: dict) -> list[str]:
    return [v.label for v in learner_verdicts(row)]


def test_many_small_steps_on_an_idle_gpu_are_launch_bound():
    """configs/ppo_gpu.yaml's shape: 160 minibatch steps an iteration, 1/128 s of launches and syncs each on the
    host, 1/2048 s on the device; the GPU busy 3% of the learn window."""
    t = _gpu_iteration(
        build_s=0.0625, copy_s=0.015625, step_host_s=1 / 128, step_device_s=1 / 2048, steps=160, sample_s=0.5
    )
    assert (t.learn_update_s, t.learn_device_s) == (1.25, 160 / 2048)
    row = _row(t, gpu_util=3.0)
    assert row["gpu_busy_pct"] == pytest.approx(3.0) and row["sgd_step_s"] == 1 / 128
    (v,) = learner_verdicts(row)
    assert (v.label, v.knob) == ("launch-bound", "minibatch_size")
    for evidence in (
        "160 minibatch steps an iteration of 7.8 ms each",
        "the GPU busy 3% of the learn window",
        "device time in the updates 0.0781 s of 1.25 s",
        "now 512",
        "time to a target settles it",
    ):
        assert evidence in v.text
    label, findings = verdict(row)
    assert label == "learning-bound, launch-bound" and v.text in findings


def test_batch_building_that_dominates_is_the_cpu_feeding_the_gpu_too_slowly():
    t = _gpu_iteration(build_s=2.0, copy_s=0.25, step_host_s=1 / 16, step_device_s=1 / 32, steps=8, sample_s=0.5)
    (v,) = learner_verdicts(_row(t, gpu_util=30.0, cpu_pct=90.0))
    assert (v.label, v.knob) == ("learner fed by the CPU", "num_cpus_for_main_process")
    assert "building the train batch 2 s, the minibatch updates 0.5 s" in v.text
    assert "(copying to the GPU 0.25 s of it): 80% of its work is on the CPU" in v.text
    assert "kept 0.90 of its 4 threads busy" in v.text  # the learn window's samples: 90% of one core


def test_sampling_that_starves_a_gpu_learner_leaves_the_knob_to_the_sampler_verdict():
    """Issue 49: more env runners is one of several causes of slow sampling
    (tests/analysis/test_sampling_verdicts.py picks among them); the learner's verdict says sampling is the side to
    speed up and names no knob of its own."""
    t = _gpu_iteration(
        build_s=0.0625, copy_s=0.015625, step_host_s=1 / 64, step_device_s=1 / 64, steps=16, sample_s=4.0
    )
    (v,) = learner_verdicts(_row(t, gpu_util=95.0))
    assert (v.label, v.knob) == ("learner starved", None)
    assert "sampling takes 91% of each iteration, learning 8%" in v.text and "the sampler's verdict" in v.text


def test_a_cpu_learner_short_of_threads_asks_for_cpus():
    # no GPU: the driver's learner keeps its 2 threads busy (190%) while it learns, on a 4-core trial
    t = _gpu_iteration(build_s=0.125, copy_s=0.0, step_host_s=1 / 8, step_device_s=0.0, steps=20, sample_s=0.5)
    row = _row(t, gpu_util=None, learner_gpus=0.0, threads=2, cpu_pct=190.0, cpus=4)
    (v,) = learner_verdicts(row)
    assert (v.label, v.knob) == ("learner short of threads", "num_cpus_for_main_process")
    assert "kept 1.90 of its 2 threads busy" in v.text and "the trial has 4 cores" in v.text
    # with every core already its own, there is nothing to give
    assert learner_verdicts({**row, "cpus": 2}) == []
    # its threads mostly idle: more would not help
    assert learner_verdicts({**row, "learn_cpus_used": 0.7}) == []


def _twins(gpu: list[float], cpu: list[float]) -> dict:
    trials = pd.DataFrame({"index": [0] * len(cpu) + [1] * len(gpu), "status": "ok", "env_steps_per_s": cpu + gpu})
    configs = pd.DataFrame(
        {
            "index": [0, 1],
            "learner_gpus": [0.0, 1.0],
            "num_env_runners": [4, 4],
            "env_steps_per_s": [float(np.median(cpu)), float(np.median(gpu))],
        }
    )
    twins = cpu_twins(configs, trials, ["learner_gpus", "num_env_runners"])
    assert twins.loc[0].isna().all() or twins.loc[0, "cpu_twin_index"] is None  # a CPU point has no twin
    return twins.loc[1].to_dict()


def test_a_gpu_learner_no_faster_than_its_cpu_twin_is_a_model_too_small():
    twin = _twins(gpu=[1010.0, 990.0, 1000.0], cpu=[1000.0, 1005.0, 995.0])
    assert twin["cpu_twin_index"] == 0 and twin["cpu_twin_ratio"] == pytest.approx(1.0)
    assert twin["cpu_twin_differs"] is False
    t = _gpu_iteration(
        build_s=0.0625, copy_s=0.015625, step_host_s=1 / 64, step_device_s=1 / 80, steps=16, sample_s=0.25
    )
    (v,) = learner_verdicts(_row(t, gpu_util=80.0, **twin))
    assert v.label == "model too small for the GPU" and v.knob is None
    assert "gave 1.00x the throughput of the CPU learner one axis away (grid point 0, 1,000 env steps/s" in v.text
    assert "no evidence of a difference (3 runs a side" in v.text  # the one change rule's sentence


def test_a_busy_gpu_learner_triggers_no_verdict():
    """The GPU busy 92% of the learn window, the batch a small share of the learner's work, 3x its CPU twin with 3
    repeats a side: nothing to change in the learner."""
    twin = _twins(gpu=[3000.0, 3100.0, 3050.0], cpu=[1000.0, 1010.0, 990.0])
    assert twin["cpu_twin_differs"] is True
    t = _gpu_iteration(
        build_s=0.0625, copy_s=0.015625, step_host_s=1 / 32, step_device_s=1 / 32, steps=32, sample_s=0.25
    )
    row = _row(t, gpu_util=92.0, **twin)
    assert row["learn_frac"] > 0.5 and learner_verdicts(row) == []
    assert verdict(row)[0] == "learning-bound"


def test_knob_values_around_the_current_one():
    assert knob_values("minibatch_size", 128, {"train_batch_size_per_learner": 4000}) == (128, 256, 512, 1024)
    assert knob_values("minibatch_size", 512, {"train_batch_size_per_learner": 1024}) == (512, 1024)
    assert knob_values("num_cpus_for_main_process", 1, {"cpus": 2}) == (1, 2)
    assert knob_values("num_cpus_for_main_process", 0, {"cpus": 2}) == (0, 1, 2)
    assert knob_values("num_env_runners", 4, {"cpus": 16}) == (2, 4, 8, 16)
    # only what the trial's cores hold beside its other roles: the plan would skip the rest
    two_cores = {
        "cpus": 2,
        "driver_cpus_allocated": 1.0,
        "env_runner_cpus_allocated": 1.0,
        "num_cpus_per_env_runner": 1.0,
    }
    assert knob_values("num_env_runners", 1, two_cores) == (1,)
    assert knob_values("num_cpus_for_main_process", 1, two_cores) == (1,)
    assert knob_values("num_env_runners", 1, {**two_cores, "num_cpus_per_env_runner": 0.5}) == (1, 2)
    four = {"cpus": 8, "driver_cpus_allocated": 2.0, "learner_cpus_allocated": 2.0, "num_learners": 2}
    assert knob_values("num_cpus_per_learner", 1, four) == (1, 2)  # (8 - 2) / 2 learners: up to 3 each


def test_the_next_sweep_is_the_fastest_configuration_with_a_knob():
    t = _gpu_iteration(
        build_s=0.0625, copy_s=0.015625, step_host_s=1 / 128, step_device_s=1 / 2048, steps=160, sample_s=0.5
    )
    slow, fast = _row(t, gpu_util=3.0), _row(t, gpu_util=3.0)
    configs = pd.DataFrame(
        [
            {**slow, "index": 0, "env_steps_per_s": 100.0},
            {**fast, "index": 1, "env_steps_per_s": 200.0, "minibatch_size": 256},
        ]
    )
    step = next_sweep(configs)
    assert (step.index, step.knob, step.current, step.values) == (1, "minibatch_size", 256, (256, 512, 1024, 2048))
    assert step.verdict.label == "launch-bound"
    # a folder that swept the knob already (next.yaml's own) asks for no second one
    swept = pd.DataFrame(
        [
            {**fast, "index": i, "env_steps_per_s": 200.0 - i, "minibatch_size": m}
            for i, m in enumerate((256, 512, 1024, 2048))
        ]
    )
    assert next_sweep(swept) is None
    busy = _row(
        _gpu_iteration(
            build_s=0.0625, copy_s=0.015625, step_host_s=1 / 32, step_device_s=1 / 32, steps=32, sample_s=0.25
        ),
        gpu_util=92.0,
    )
    assert next_sweep(pd.DataFrame([busy])) is None  # no verdict names a knob: no next.yaml
    starved = _row(
        _gpu_iteration(
            build_s=0.0625, copy_s=0.015625, step_host_s=1 / 64, step_device_s=1 / 64, steps=16, sample_s=4.0
        ),
        gpu_util=95.0,
        cpus=3,
        driver_cpus_allocated=1.0,
        env_runner_cpus_allocated=2.0,
        num_cpus_per_env_runner=1.0,
    )
    assert [v.knob for v in learner_verdicts(starved)] == [None]  # the sampler's verdict names the knob
    busy_in_env = {"runner_sample_s": 3.9, "runner_sample_cpu_s": 3.8, "runner_env_s": 3.5, "runner_inference_s": 0.2}
    assert next_sweep(pd.DataFrame([{**starved, **busy_in_env}])) is None  # no more env runners fit its 3 cores
