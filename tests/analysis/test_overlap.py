"""Overlap, learners and policy lag per trial and per configuration, on hand-made iterations."""

from __future__ import annotations

import pandas as pd
import pytest

from rlbench.analysis.configs import configurations
from rlbench.analysis.findings import verdict
from rlbench.analysis.overlap import lag_columns, overlap_columns


def _its(**columns) -> pd.DataFrame:
    return pd.DataFrame(columns)


def test_busy_shares_are_sums_over_the_steady_wall_time():
    its = _its(
        wall_s=[2.0, 2.0],
        learn_s=[0.5, 1.5],
        sampler_busy_s=[1.8, 2.0],
        learner_busy_s=[1.0, 1.4],
        busy_overlap_s=[0.8, 1.4],
        learner_updates=[4.0, 6.0],
        sgd_steps=[4.0, 6.0],
        policy_lag_mean=[1.0, 2.0],
        policy_lag_max=[2.0, 5.0],
    )
    row = overlap_columns(True, 2, its, learner_cpus_used=1.5)
    assert row["asynchronous"] is True
    assert row["sampler_busy_frac"] == pytest.approx(3.8 / 4.0)
    assert row["learner_busy_frac"] == pytest.approx(2.4 / 4.0)
    assert row["busy_overlap_frac"] == pytest.approx(2.2 / 4.0)
    assert row["learn_s_per_iteration"] == 1.0 and row["learner_busy_s_per_iteration"] == pytest.approx(1.2)
    assert row["learner_updates_per_s"] == pytest.approx(2.5)  # median of 4/2 and 6/2
    assert row["cpus_used_per_learner"] == 0.75
    # lag: each iteration's mean weighted by its minibatch updates: (1 x 4 + 2 x 6) / 10
    assert row["policy_lag_mean"] == pytest.approx(1.6) and row["policy_lag_max"] == 5.0


def test_missing_values_leave_nulls_not_guesses():
    its = _its(
        wall_s=[1.0, 1.0],
        learn_s=[0.3, 0.3],
        sampler_busy_s=[0.5, None],
        learner_busy_s=[None, None],
        busy_overlap_s=[None, None],
        learner_updates=[None, None],
        sgd_steps=[None, None],
        policy_lag_mean=[None, None],
        policy_lag_max=[None, None],
    )
    row = overlap_columns(False, 0, its, learner_cpus_used=0.0)
    assert row["asynchronous"] is False
    assert row["sampler_busy_frac"] is None  # one iteration lacks it: no share over a partial sum
    assert row["learner_busy_frac"] is None and row["learner_busy_s_per_iteration"] is None
    assert row["cpus_used_per_learner"] is None  # the learner is the driver's
    assert row["policy_lag_mean"] is None and row["policy_lag_max"] is None
    assert row["learner_updates_per_s"] is None


def test_iterations_without_a_lag_are_left_out_of_the_lag():
    its = _its(sgd_steps=[3.0, 0.0], policy_lag_mean=[1.0, None], policy_lag_max=[1.0, None])
    assert lag_columns(its) == {"policy_lag_mean": 1.0, "policy_lag_max": 1.0}
    assert lag_columns(its.iloc[:0]) == {"policy_lag_mean": None, "policy_lag_max": None}


def _row(**kw) -> dict:
    base = {
        "env_steps_per_s": 100.0,
        "sample_frac": 0.05,
        "learn_frac": 0.8,
        "sync_frac": 0.01,
        "other_frac": 0.14,
        "cpus": 2,
        "cpus_used": 1.0,
        "asynchronous": True,
        "sampler_busy_frac": 0.95,
        "learner_busy_frac": 0.5,
        "busy_overlap_frac": 0.45,
        "policy_lag_mean": 1.4,
        "policy_lag_max": 3.0,
    }
    base.update(kw)
    return base


def test_async_verdicts_come_from_where_the_work_ran_not_the_drivers_waits():
    # the driver spends 80% waiting on the learner, but the learner works half the time: sampling limits
    label, words = verdict(_row())
    assert label == "sampling-bound"
    assert words[0].startswith("sampling-bound: env runners busy 95%, learner busy 50% of each iteration")
    assert (
        "overlap for at least 45% of each iteration; the driver waits 5% for samples and 80% for the learner"
        in words[1]
    )
    assert "policy lag: 1.4 learner updates on average, at most 3.0 (1: on-policy, as PPO)" in words
    assert verdict(_row(sampler_busy_frac=0.4, learner_busy_frac=0.9))[0] == "learning-bound"
    assert verdict(_row(sampler_busy_frac=0.9, learner_busy_frac=0.9))[0] == "sampling- and learning-bound"
    label, words = verdict(_row(sampler_busy_frac=0.3, learner_busy_frac=0.3))
    assert label == "mixed" and "the driver's loop takes 14%" in words[0]


def test_synchronous_verdict_keeps_the_phase_rule():
    label, _ = verdict(_row(asynchronous=False, sample_frac=0.7, learn_frac=0.2))
    assert label == "sampling-bound"
    label, words = verdict(_row(asynchronous=False, learn_frac=0.6, policy_lag_mean=None))
    assert label == "learning-bound" and not any(w.startswith("policy lag") for w in words)
    # PPO's lag is RLlib's on-policy 1 every time: not a finding
    _, words = verdict(_row(asynchronous=False, learn_frac=0.6, policy_lag_mean=1.0, policy_lag_max=1.0))
    assert not any(w.startswith("policy lag") for w in words)


def test_configurations_carry_overlap_medians_and_the_async_flag():
    rows = []
    for index, (algo, busy) in enumerate((("PPO", [0.4, 0.6]), ("APPO", [0.9, 1.0]))):
        for repeat, b in enumerate(busy):
            rows.append(
                {
                    "trial_id": f"t{index:03d}r{repeat}",
                    "status": "ok",
                    "reason": None,
                    "index": index,
                    "repeat": repeat,
                    "cpus": 2,
                    "num_learners": 0,
                    "num_gpus_per_learner": 0.0,
                    "algo": algo,
                    "env_steps_per_s": 100.0 + repeat,
                    "sample_frac": 0.5,
                    "learn_frac": 0.3,
                    "sync_frac": 0.1,
                    "other_frac": 0.1,
                    "asynchronous": algo == "APPO",
                    "sampler_busy_frac": b,
                    "learner_busy_frac": 0.5,
                    "busy_overlap_frac": 0.2,
                    "policy_lag_mean": 1.0 + repeat,
                    "policy_lag_max": 2.0,
                }
            )
    c = configurations(pd.DataFrame(rows), ["algo"])
    assert list(c["asynchronous"]) == [False, True]
    assert list(c["sampler_busy_frac"]) == pytest.approx([0.5, 0.95])
    assert list(c["policy_lag_mean"]) == pytest.approx([1.5, 1.5])
    assert c["bottleneck"].iloc[1] == "sampling-bound"
