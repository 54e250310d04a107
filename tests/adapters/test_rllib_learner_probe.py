"""The learner probes on a hand-made learner: busy time, updates, minibatch steps and policy lag, and
the per-iteration columns read back from a hand-made result dict."""

from __future__ import annotations

import time

import pytest

from rlbench.adapters.rllib.learner_probe import (
    BUSY_S,
    LAG_MAX,
    LAG_MEAN,
    RLLIB_LAG_KEY,
    SGD_STEPS,
    UPDATES,
    WEIGHTS_SEQ_NO,
    install,
)
from rlbench.adapters.rllib.results import overlap_counts


class _Metrics:
    """The MetricsLogger calls the probes and RLlib's Learner.update make: log_value (a reduce rule by name), peek,
    and reduce (every value reduced by its rule, then cleared)."""

    def __init__(self):
        self.values: dict[tuple, list] = {}
        self.rules: dict[tuple, str] = {}

    def log_value(self, key, value, reduce="mean", window=None):
        self.values.setdefault(key, []).append(value)
        self.rules[key] = reduce

    def peek(self, key, default=None):
        values = self.values.get(key)
        return values[-1] if values else default

    def reduced(self, key):
        values, how = self.values.get(key, []), self.rules.get(key)
        return {"sum": sum, "max": max, "mean": lambda v: sum(v) / len(v)}[how](values) if values else None

    def reduce(self):
        out = {key: self.reduced(key) for key in self.values}
        self.values.clear()
        return out


class _Data:
    def __init__(self, batch=None):
        self.batch = batch


class _Learner:
    """Mimics RLlib's Learner.update: one weights version per call, minibatches through _update."""

    def __init__(self):
        self.metrics = _Metrics()
        self._weights_seq_no = 0

    def _make_batch_if_necessary(self, training_data):
        if training_data.batch is not None:
            return training_data.batch
        time.sleep(0.01)  # the learner connector
        return {"default_policy": {WEIGHTS_SEQ_NO: [0, 0]}}

    def before_gradient_based_update(self, *, timesteps):
        pass

    def _compute_off_policyness(self, batch):
        for mid, module_batch in batch.items():
            if WEIGHTS_SEQ_NO in module_batch:
                sampled = module_batch[WEIGHTS_SEQ_NO]
                self.metrics.log_value(
                    (mid, RLLIB_LAG_KEY), self._weights_seq_no - sum(sampled) / len(sampled), window=1
                )

    def _update(self, batch):
        self._compute_off_policyness(batch)
        time.sleep(0.005)
        return {}, {}, {}

    def update(self, training_data, minibatches: int):
        self.before_gradient_based_update(timesteps={})
        batch = self._make_batch_if_necessary(training_data=training_data)
        self._weights_seq_no += 1
        for _ in range(minibatches):
            self._update(batch)


def test_probes_count_updates_and_minibatches_and_time_the_work():
    learner = _Learner()
    assert install(learner) is True
    assert install(learner) is True  # idempotent: nothing wrapped twice
    learner.update(_Data(), minibatches=3)
    learner.update(_Data(), minibatches=2)
    m = learner.metrics
    assert (m.reduced(UPDATES), m.reduced(SGD_STEPS)) == (2, 5)
    assert {m.rules[k] for k in (UPDATES, SGD_STEPS, BUSY_S)} == {"sum"}
    # two connector calls (>= 0.01 s each) and five minibatch updates (>= 0.005 s each): a lower bound
    assert m.reduced(BUSY_S) >= 2 * 0.01 + 5 * 0.005


def test_a_batch_handed_over_ready_is_not_timed_again():
    # IMPALA's update thread calls _make_batch_if_necessary again with the batch already built
    learner = _Learner()
    install(learner)
    learner._make_batch_if_necessary(training_data=_Data(batch={"default_policy": {}}))
    assert learner.metrics.reduced(BUSY_S) is None


def test_policy_lag_mean_and_max_over_the_minibatches():
    learner = _Learner()
    install(learner)
    # sampled with version 0: lags 1 (update 1, 2 minibatches) then 2 (update 2, 1 minibatch)
    learner.update(_Data(), minibatches=2)
    learner.update(_Data(), minibatches=1)
    m = learner.metrics
    assert m.values[LAG_MEAN] == [1.0, 1.0, 2.0] and m.rules[LAG_MEAN] == "mean"
    assert m.reduced(LAG_MAX) == 2.0 and m.rules[LAG_MAX] == "max"


def test_no_lag_without_the_samplers_weights_version():
    learner = _Learner()
    install(learner)
    learner._update({"default_policy": {"obs": [1, 2]}})
    assert LAG_MEAN not in learner.metrics.values


def test_overlap_counts_divide_by_runners_and_learners():
    result = {
        "num_training_step_calls_per_iteration": 7,
        "learners": {
            "rlbench": {"busy_s": 2.0, "updates": 8, "sgd_steps": 16, "policy_lag_mean": 1.5, "policy_lag_max": 4.0}
        },
    }
    runners = [{"env_runner": 1, "sample_s": 1.0}, {"env_runner": 2, "sample_s": 2.0}]  # runner_timings' rows
    got = overlap_counts(result, runners, sampling_runners=2, learners=2)
    assert got == pytest.approx(
        {
            "training_steps": 7,
            "sampler_busy_s": 1.5,
            "learner_busy_s": 1.0,
            "learner_updates": 4.0,
            "sgd_steps": 8.0,
            "policy_lag_mean": 1.5,
            "policy_lag_max": 4.0,
        }
    )


def test_overlap_counts_without_learner_results():
    got = overlap_counts({"num_training_step_calls_per_iteration": 1}, [], sampling_runners=1, learners=1)
    assert got["policy_lag_mean"] is None and got["policy_lag_max"] is None
    assert got["sampler_busy_s"] is None  # no runner timed a sample() call: missing, not 0
    assert got["learner_updates"] == 0 and got["learner_busy_s"] == 0.0
