"""The SB3 timer split on a fake clock: known answers that load cannot move (no training, no Ray).

A fake model drives the trainer's loop as SB3's ``collect_rollouts`` and ``train`` do: per rollout step one
forward pass of the policy (2 ms on the fake clock), one vec-env step of a real ``DummyVecEnv`` over an env whose
``step`` takes 3 ms, 1 ms of bookkeeping; 10 ms of GAE at the rollout's end; ``train()``: per epoch 5 ms of setup,
then per minibatch 1 ms to hand it out (the rollout buffer's ``get``), 2 ms of ``evaluate_actions`` and 1 ms of
loss, backward and optimizer step; 2 ms of statistics at its end. Episodes end every 4 steps with reward 1 a step,
so each returns 4.
"""

from __future__ import annotations

import math

import gymnasium
import numpy as np
import pytest
import torch
from stable_baselines3.common.vec_env import DummyVecEnv

from rlbench.adapters.sb3.envs import EnvFactory
from rlbench.adapters.sb3.timing import timed_vec_env
from rlbench.adapters.sb3.trainer import SB3Trainer
from rlbench.spec.model import TrialConfig


class FakeClock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


CLOCK = FakeClock()


class ClockEnv(gymnasium.Env):
    """Each step takes 3 ms of the fake clock; episodes of 4 steps, reward 1 a step."""

    observation_space = gymnasium.spaces.Box(-1.0, 1.0, (2,), np.float32)
    action_space = gymnasium.spaces.Discrete(2)

    def __init__(self, config: dict | None = None) -> None:
        self.t = 0

    def reset(self, *, seed=None, options=None):
        self.t = 0
        return np.zeros(2, np.float32), {}

    def step(self, action):
        CLOCK.advance(0.003)
        self.t += 1
        return np.zeros(2, np.float32), 1.0, self.t == 4, False, {}


class Policy(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.weight = torch.nn.Parameter(torch.zeros(1))
        self.optimizer = torch.optim.SGD(self.parameters(), lr=0.1)

    def forward(self, obs):
        CLOCK.advance(0.002)
        return np.zeros(len(obs), np.int64)

    def evaluate_actions(self, obs, actions):
        CLOCK.advance(0.002)
        return self.weight * 1.0


class Buffer:
    """SB3's rollout buffer as train() reads it: ``get(batch_size)`` yields minibatches, 1 ms each to make."""

    def __init__(self, size: int) -> None:
        self.size = size

    def get(self, batch_size: int):
        for _ in range(0, self.size, batch_size):
            CLOCK.advance(0.001)
            yield object()


class Callback:
    def on_training_start(self, *_):
        pass


class FakeModel:
    """The things the trainer calls, timed on the fake clock as SB3's loop spends it."""

    def __init__(self, env, n_steps: int) -> None:
        self.env, self.n_steps, self.policy = env, n_steps, Policy()
        self.rollout_buffer = Buffer(n_steps * env.num_envs)
        self.batch_size, self.n_epochs, self.num_timesteps = 4, 3, 0
        self.trained = 0

    def set_logger(self, logger) -> None:
        self.logger = logger

    def _setup_learn(self, total, callback, reset, name, progress):
        self.obs = self.env.reset()
        return total, Callback()

    def collect_rollouts(self, env, callback, buffer, n_rollout_steps):
        for _ in range(n_rollout_steps):
            actions = self.policy(self.obs)
            self.obs, _, _, _ = env.step(actions)
            self.num_timesteps += env.num_envs
            CLOCK.advance(0.001)
        CLOCK.advance(0.010)  # compute_returns_and_advantage
        return True

    def _update_current_progress_remaining(self, done, total):
        pass

    def train(self):
        """SB3's PPO.train: per epoch, per minibatch: evaluate the actions, the loss (1 ms), backward, step."""
        for _ in range(self.n_epochs):
            CLOCK.advance(0.005)  # the epoch's setup
            for _ in self.rollout_buffer.get(self.batch_size):
                loss = self.policy.evaluate_actions(None, None).sum()
                CLOCK.advance(0.001)  # the loss terms
                self.policy.optimizer.zero_grad()
                loss.backward()
                self.policy.optimizer.step()
        CLOCK.advance(0.002)  # explained variance, the logged statistics
        self.trained += 1


def trainer(envs: int, batch: int) -> tuple[SB3Trainer, FakeModel]:
    config = TrialConfig.model_validate(
        {
            "framework": "sb3",
            "environment": {"env": f"{__name__}:ClockEnv"},
            "env_runners": {"num_env_runners": 0, "num_envs_per_env_runner": envs},
            "training": {"train_batch_size_per_learner": batch, "minibatch_size": min(4, batch)},
        }
    )
    t = SB3Trainer(config, seed=1, threads={"driver": 1}, clock=CLOCK)
    venv = DummyVecEnv([EnvFactory(f"{__name__}:ClockEnv", {}) for _ in range(envs)])
    model = FakeModel(timed_vec_env(venv, t.timer), n_steps=batch // envs)
    t.attach(model)
    return t, model


def test_the_split_of_one_iteration_is_what_the_clock_was_given():
    """2 envs, batch 12: 6 rollout steps, each a forward (2 ms), a vec-env step of 2 envs (2 x 3 ms) and 1 ms;
    then 10 ms of GAE; then train(): 3 epochs of 3 minibatches, 1 ms to hand each out, 3 ms each step, 5 ms each
    epoch's setup and 2 ms at the end: 9 + 27 + 15 + 2 = 53 ms."""
    t, model = trainer(envs=2, batch=12)
    t.train()
    it = t.iteration()
    assert it.env_steps_sampled == it.env_steps_trained == 12
    assert it.sample_s == pytest.approx(6 * (0.002 + 0.006 + 0.001) + 0.010)
    assert it.learn_s == pytest.approx(0.053) and it.sync_s == 0.0 and it.weight_sync_s == 0.0
    # the learner's split: minibatches handed out, the steps, the rest; no GPU (SB3 runs on the CPU here)
    assert (it.learn_batch_s, it.learn_update_s) == (pytest.approx(9 * 0.001), pytest.approx(9 * 0.003))
    assert it.learn_other_s == pytest.approx(3 * 0.005 + 0.002) and it.learn_batches == 1.0
    assert (it.learn_copy_s, it.learn_device_s) == (None, None)
    assert it.env_step_s == pytest.approx(6 * 0.006)
    assert it.inference_s == pytest.approx(6 * 0.002)
    assert it.sample_other_s == pytest.approx(6 * 0.001 + 0.010)  # GAE and bookkeeping
    assert it.sgd_steps == 3 * math.ceil(12 / 4) and it.training_steps == 1 and model.trained == 1


def test_episodes_are_the_ones_that_ended_in_the_iteration():
    """1 env, batch 6: iteration 1 ends the episode at step 4; iteration 2 (steps 7-12) the one at step 8 and 12."""
    t, _ = trainer(envs=1, batch=6)
    t.train()
    assert (t.metric("num_episodes"), t.metric("episode_return_mean"), t.metric("episode_len_max")) == (1.0, 4.0, 4.0)
    assert t.iteration().episode_return_mean == 4.0
    t.train()
    assert t.metric("num_episodes") == 2.0 and t.metric("num_env_steps_sampled_lifetime") == 12.0
    assert t.iteration().sample_s == pytest.approx(6 * 0.006 + 0.010)  # the timers restart every iteration


def test_an_iteration_without_an_episode_reports_none_and_nan():
    t, _ = trainer(envs=1, batch=3)
    t.train()
    assert t.metric("episode_return_mean") is None and t.metric("num_episodes") == 0.0
    assert math.isnan(t.iteration().episode_return_mean)


def test_a_real_model_attached_writes_no_log_folder(tmp_path, monkeypatch):
    """SB3's silent default logger made an empty ``SB3-<date>`` folder in the temp dir for every trial."""
    import tempfile

    from stable_baselines3 import PPO

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    t = SB3Trainer(
        TrialConfig.model_validate(
            {"framework": "sb3", "environment": {"env": f"{__name__}:ClockEnv"}, "env_runners": {"num_env_runners": 0}}
        ),
        seed=1,
        threads={"driver": 1},
    )
    venv = DummyVecEnv([EnvFactory(f"{__name__}:ClockEnv", {})])
    t.attach(PPO("MlpPolicy", timed_vec_env(venv, t.timer), n_steps=8, batch_size=8, seed=1, device="cpu", verbose=0))
    assert list(tmp_path.iterdir()) == []
    assert t.model.logger.get_dir() is None
