"""DQN's and SAC's iteration, known answers from hand-made inputs (no training): the replay buffer's three
timers and the learner connector read from a hand-made result dict, and the learner probe's target-network
updates timed and counted on a hand-made learner."""

from __future__ import annotations

import time
from types import SimpleNamespace

import pytest
from test_rllib_learner_probe import _Data, _Learner

from rlbench.adapters.rllib.learner_probe import BUSY_S, TARGET_UPDATE_S, TARGET_UPDATES, install
from rlbench.adapters.rllib.results import iteration_timings
from rlbench.adapters.rllib.timing import DRIVER_SUM_TIMERS
from rlbench.adapters.timings import IterationTimings


def _algo(runners: int, learners: int, connectors_s: float = 0.004):
    """What iteration_timings reads of the algorithm: its config's counts and the connector-sync timer."""
    return SimpleNamespace(
        config=SimpleNamespace(num_env_runners=runners, num_learners=learners),
        metrics=SimpleNamespace(peek=lambda key, default=0.0: connectors_s),
    )


#: One DQN iteration of 1000 training steps, two env runners and the driver's learner, as RLlib 2.60 reports it
#: with rlbench's sums (binary fractions, so every expected value below is exact).
DQN_RESULT = {
    "timers": {
        "env_runner_sampling_timer": 1.5,
        "learner_update_timer": 2.0,
        "synch_weights": 0.25,
        "replay_buffer_add_data_timer": 0.125,
        "replay_buffer_sampling_timer": 0.5,
        "replay_buffer_update_prios_timer": 0.0625,
    },
    "env_runners": {"num_env_steps_sampled": 1000, "rlbench": {"env_step_s": 0.625, "inference_s": 0.375}},
    "learners": {
        "__all_modules__": {
            "num_env_steps_trained": 32000,
            "learner_connector": {"connector_pipeline_timer": 0.000375},
        },
        "rlbench": {
            "busy_s": 1.75,
            "updates": 1000,
            "sgd_steps": 1000,
            "target_update_s": 0.03125,
            "target_updates": 2,
            "batches_built": 1000,
            "batch_s": 0.5,
            "update_s": 1.21875,
        },
    },
    "num_training_step_calls_per_iteration": 1000,
}


def test_a_replay_iteration_splits_exactly():
    t = IterationTimings(**iteration_timings(_algo(runners=2, learners=0), DQN_RESULT, replay=True))
    # the driver's phases: RLlib's timers summed over the 1000 training steps
    assert (t.sample_s, t.learn_s, t.sync_s) == (1.5, 2.0, 0.25 + 0.004)
    # the replay buffer, apart from them (inside other_s): its three timers and their sum
    assert (t.replay_add_s, t.replay_sample_s, t.replay_update_s, t.replay_s) == (0.125, 0.5, 0.0625, 0.6875)
    # the learner connector ran once per train batch built: its mean per call (0.375 ms) times 1000 batches
    assert (t.learner_connector_s, t.sgd_s) == (0.375, 2.0 - 0.375)
    # the learner's split: batches, updates, and the rest of learn_s (the target updates inside it); a CPU learner
    # logs no copy or device time
    assert (t.learn_batches, t.learn_batch_s, t.learn_update_s, t.learn_other_s) == (1000.0, 0.5, 1.21875, 0.28125)
    assert (t.learn_copy_s, t.learn_device_s) == (None, None)
    assert (t.target_update_s, t.target_updates) == (0.03125, 2.0)
    # one gradient step per env step sampled: RLlib's default training intensity for DQN
    assert (t.updates_per_env_step, t.training_steps, t.env_steps_trained) == (1.0, 1000, 32000)
    # the sampling split is PPO's: runner totals over the 2 runners that sampled
    assert (t.env_step_s, t.inference_s, t.sample_other_s) == (0.3125, 0.1875, 1.0)


def test_two_learners_count_per_learner():
    result = {
        **DQN_RESULT,
        "learners": {
            **DQN_RESULT["learners"],
            "rlbench": {
                "busy_s": 3.5,
                "updates": 2000,
                "sgd_steps": 2000,
                "target_update_s": 0.0625,
                "target_updates": 4,
                "batches_built": 2000,
            },
        },
    }
    t = iteration_timings(_algo(runners=1, learners=2), result, replay=True)
    assert (t["learner_updates"], t["target_update_s"], t["target_updates"]) == (1000.0, 0.03125, 2.0)
    assert t["learner_connector_s"] == 0.375 and t["updates_per_env_step"] == 1.0


def test_an_on_policy_iteration_has_no_replay_figures():
    ppo = {
        **DQN_RESULT,
        "learners": {**DQN_RESULT["learners"], "rlbench": {"updates": 1, "sgd_steps": 30, "batches_built": 1}},
    }
    t = IterationTimings(**iteration_timings(_algo(runners=2, learners=0), ppo))
    assert (t.replay_s, t.replay_sample_s, t.target_update_s, t.target_updates) == (None, None, None, None)
    assert t.learner_connector_s == 0.000375  # one batch built: the mean is the time (PPO's reading, unchanged)
    assert t.updates_per_env_step == 30 / 1000


def test_the_replay_timers_are_summed_over_the_iteration():
    assert {
        ("timers", "replay_buffer_add_data_timer"),
        ("timers", "replay_buffer_sampling_timer"),
        ("timers", "replay_buffer_update_prios_timer"),
    } <= set(DRIVER_SUM_TIMERS)


class _TargetModule:
    """A module with target networks: RLlib's DQN learner calls get_target_network_pairs once per target update."""

    def get_target_network_pairs(self):
        time.sleep(0.002)  # the copy (or the soft update) of the weights
        return []

    def unwrapped(self):
        return self


class _DQNLearner(_Learner):
    """RLlib 2.60's DQNLearner.after_gradient_based_update: a target update when ``freq`` env steps have passed."""

    def __init__(self, freq: int):
        super().__init__()
        self.freq, self.module = freq, {"default_policy": _TargetModule()}
        self.last_update_ts_by_mid = {"default_policy": 0}

    def after_gradient_based_update(self, *, timesteps):
        ts = timesteps["num_env_steps_sampled_lifetime"]
        for mid, module in self.module.items():
            if ts - self.last_update_ts_by_mid[mid] >= self.freq:
                module.unwrapped().get_target_network_pairs()
                self.last_update_ts_by_mid[mid] = ts

    def update_at(self, env_steps: int):
        self.update(_Data(), minibatches=1)
        self.after_gradient_based_update(timesteps={"num_env_steps_sampled_lifetime": env_steps})


@pytest.mark.parametrize(
    "freq, steps, updates",
    [
        (0, [1, 1, 2], 3),  # SAC: every update, same step or not
        (500, [100, 499, 500, 999, 1000], 2),  # DQN: every 500 steps
        (1, [1, 1, 1], 1),
    ],
)  # no new step since the last: no update
def test_target_updates_are_counted_and_timed(freq, steps, updates):
    learner = _DQNLearner(freq)
    install(learner)
    install(learner)  # idempotent
    for env_steps in steps:
        learner.update_at(env_steps)
    m = learner.metrics
    assert m.reduced(TARGET_UPDATES) == updates
    assert m.rules[TARGET_UPDATES] == m.rules[TARGET_UPDATE_S] == "sum"
    assert m.reduced(TARGET_UPDATE_S) >= 0.002 * updates  # each update sleeps 2 ms: a lower bound
    assert m.reduced(BUSY_S) >= m.reduced(TARGET_UPDATE_S) + 0.01 * len(steps)  # and the connector calls


def test_a_learner_without_target_networks_is_not_probed_for_them():
    learner = _Learner()  # PPO's: no last_update_ts_by_mid
    install(learner)
    learner.update(_Data(), minibatches=1)
    assert learner.metrics.reduced(TARGET_UPDATES) is None


def test_replay_weights_go_out_once_per_training_step_that_learned():
    # 1000 updates, one per training step: 1000 broadcasts of 4,000 bytes to 2 runners; with 4 updates a step, 250
    t = iteration_timings(_algo(runners=2, learners=0), DQN_RESULT, replay=True, weight_bytes=4000, weight_receivers=2)
    assert t["sync_bytes"] == 4000 * 2 * 1000 and t["sync_bytes_per_s"] == 4000 * 2 * 1000 / 0.25
    t = iteration_timings(
        _algo(runners=2, learners=0), DQN_RESULT, replay=True, weight_bytes=4000, weight_receivers=2, updates_per_sync=4
    )
    assert t["sync_bytes"] == 4000 * 2 * 250
    ppo = iteration_timings(_algo(runners=2, learners=0), DQN_RESULT, weight_bytes=4000, weight_receivers=2)
    assert ppo["sync_bytes"] == 4000 * 2  # PPO: once an iteration


def test_updates_per_sync_is_rllibs_round_robin():
    from rlbench.adapters.rllib.config import config_class
    from rlbench.adapters.rllib.lifecycle import updates_per_sync

    dqn = config_class("DQN")().training(train_batch_size_per_learner=32)
    assert updates_per_sync(dqn) == 1  # no training_intensity: one update per sampling round
    # intensity 128 replayed steps per sampled step, batch 32, fragment 1 x 1 env x (0 runners + 1): 4 updates
    assert updates_per_sync(dqn.training(training_intensity=128)) == 4
