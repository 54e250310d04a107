"""sampling_efficiency and the CPU/GPU ratio on hand-made tables."""

from __future__ import annotations

import json
import math

import pandas as pd
import pytest

from rlbench.analysis.trial_rows import add_cpu_threads_per_gpu_sm, add_sampling_efficiency, teardown_text
from rlbench.results.ceilings_file import CeilingEntry
from rlbench.studies.envbench import ceiling_key


def _trials():
    return pd.DataFrame(
        {
            "trial_id": ["a", "b", "c"],
            "env": ["CartPole-v1"] * 3,
            "env_config": [json.dumps({})] * 3,
            "num_env_runners": [0, 2, 4],
            "cpus": [2, 2, 2],
            "num_gpus_per_learner": [0.0, 1.0, 1.0],
            "num_learners": [0, 0, 2],
            "learner_gpus_allocated": [0.0, 1.0, 2.0],  # the adapter's ResourceDemand.learner_gpus (tests/adapters)
        }
    )


def test_sampling_efficiency_is_sampling_rate_over_the_ceiling_for_that_many_processes():
    trials = _trials()
    iterations = pd.DataFrame(
        {
            "trial_id": ["a", "a", "a", "b", "b", "c"],
            "warmup": [True, False, False, False, False, False],
            "env_steps_sampled": [100, 1000, 1000, 1000, 1000, 1000],
            "sample_s": [1.0, 0.5, 0.25, 0.1, 0.1, 0.0],  # c: no sampling time, no rate
        }
    )
    ceilings = {
        ceiling_key("CartPole-v1", {}, 1, 2): CeilingEntry(steps_per_s=10_000.0),  # a: 0 runners sample in 1 process
        ceiling_key("CartPole-v1", {}, 2, 2): CeilingEntry(steps_per_s=20_000.0),  # b
        # c (4 processes) was not measured
    }
    keys = {
        "a": ceiling_key("CartPole-v1", {}, 1, 2),
        "b": ceiling_key("CartPole-v1", {}, 2, 2),
        "c": ceiling_key("CartPole-v1", {}, 4, 2),
    }  # what trial_ceiling_key gives their plans (tests/studies)
    add_sampling_efficiency(trials, iterations, ceilings, keys)
    # a: steady rates 2000 and 4000 -> median 3000; 3000 / 10000
    assert trials["sample_steps_per_s"].tolist()[:2] == [3000.0, 10_000.0]
    assert trials["sampling_efficiency"].tolist()[:2] == [pytest.approx(0.3), pytest.approx(0.5)]
    assert math.isnan(trials["sampling_efficiency"][2]) and math.isnan(trials["env_ceiling_steps_per_s"][2])


def test_cpu_threads_per_gpu_sm():
    trials = _trials()
    add_cpu_threads_per_gpu_sm(trials, sm_count=132)
    assert math.isnan(trials["cpu_threads_per_gpu_sm"][0])  # no learner GPU
    assert trials["cpu_threads_per_gpu_sm"][1] == pytest.approx(2 / 132)  # 1 GPU (learner in the driver)
    assert trials["cpu_threads_per_gpu_sm"][2] == pytest.approx(2 / 264)  # 2 learners x 1 GPU
    add_cpu_threads_per_gpu_sm(trials, sm_count=None)
    assert trials["cpu_threads_per_gpu_sm"].isna().all()
    no_column = trials.drop(columns="learner_gpus_allocated")  # a hand-made table without it: no learner GPU is read
    add_cpu_threads_per_gpu_sm(no_column, sm_count=132)
    assert no_column["cpu_threads_per_gpu_sm"].isna().all()


def test_teardown_text_names_each_ok_trial_that_ended_in_its_teardown_with_its_signal():
    trials = pd.DataFrame(
        {
            "trial_id": ["t000r0", "t001r0", "t002r0", "t003r0"],
            "status": ["ok", "ok", "failed", "ok"],
            "reason": [
                None,
                "teardown crash: its process died (signal 11, SIGSEGV) after it had trained, ...",
                "trial process died (signal 11, SIGSEGV) after 1 iterations",
                "teardown crash: it raised RuntimeError: x after it had trained, ...",
            ],
            "exit_signal": pd.array([None, 11, 11, None], dtype="Int64"),
        }
    )
    text = teardown_text(trials)
    assert text.startswith(
        "2 trials ended in their teardown, after training: t001r0 (signal 11, SIGSEGV), "
        "t003r0 (no signal). Every figure they measured"
    )
    assert teardown_text(trials.iloc[[0, 2]]) == ""  # a failed trial's crash is its reason, not this note
    assert teardown_text(trials.iloc[:2]).startswith("1 trial ended in its teardown, after training: t001r0 (signal 11")
