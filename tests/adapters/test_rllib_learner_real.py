"""The GPU learner's probes on a real RLlib 2.60 PPO learner, on the CPU: the real learner connector pipeline, its
real ``NumpyToTensor`` piece and RLlib's ``Learner.update``, with the fake CUDA-event clock of
test_rllib_learner_device.py standing in for the GPU (no GPU here, none skipped: the seam is what differs). No Ray
runtime starts: the learner is built in this process."""

from __future__ import annotations

import numpy as np
import pytest
from test_rllib_learner_device import FakeClocks, FakeDevice

from rlbench.adapters.rllib.learner_probe import install

pytestmark = pytest.mark.slow

#: One device step costs 1/64 s of the fake device's time.
STEP_DEVICE_S = 0.015625


def _episodes(env, steps: int):
    from ray.rllib.env.single_agent_episode import SingleAgentEpisode

    out, obs = [], env.reset(seed=0)[0]
    episode = SingleAgentEpisode(
        observations=[obs], observation_space=env.observation_space, action_space=env.action_space
    )
    for _ in range(steps):
        obs, reward, terminated, truncated, _ = env.step(env.action_space.sample())
        episode.add_env_step(
            obs,
            env.action_space.sample(),
            reward,
            terminated=terminated,
            truncated=truncated,
            extra_model_outputs={"action_logp": np.float32(-0.69), "action_dist_inputs": np.zeros(2, np.float32)},
        )
        if terminated or truncated:
            out.append(episode.to_numpy())
            episode = SingleAgentEpisode(
                observations=[env.reset()[0]], observation_space=env.observation_space, action_space=env.action_space
            )
    if len(episode):  # a just-reset episode has no step to learn from
        out.append(episode.to_numpy())
    return out


def test_a_real_learner_times_its_copy_and_device_steps_through_the_seam():
    import gymnasium as gym
    from ray.rllib.algorithms.ppo import PPOConfig

    env = gym.make("CartPole-v1")
    config = (
        PPOConfig()
        .environment("CartPole-v1")
        .training(train_batch_size_per_learner=256, minibatch_size=64, num_epochs=2)
    )
    learner = config.build_learner(env=env)
    clocks, update = FakeClocks(), learner._update

    def device_step(*args, **kwargs):  # what the GPU would spend on each minibatch step, on the fake device
        clocks.device_s += STEP_DEVICE_S
        return update(*args, **kwargs)

    learner._update = device_step
    device = FakeDevice(clocks)
    install(learner, device_clock=device)
    result = learner.update(
        episodes=_episodes(env, 256), timesteps={"num_env_steps_sampled_lifetime": 256}, minibatch_size=64, num_epochs=2
    )
    got = {k: v.peek() for k, v in result["rlbench"].items()}
    steps = got["sgd_steps"]
    assert steps >= 8 and got["batches_built"] == 1  # 2 epochs of 64-step minibatches over a batch of >= 256
    assert got["device_s"] == steps * STEP_DEVICE_S and device.syncs == 1  # one synchronize for the whole update
    assert 0 < got["copy_s"] <= got["batch_s"]  # RLlib's NumpyToTensor piece, inside the batch build
    assert got["busy_s"] == pytest.approx(got["batch_s"] + got["update_s"])
    # RLlib still names its per-piece timer by the piece's class, and removes pieces by class
    pieces = [type(p).__name__ for p in learner._learner_connector.connectors]
    assert (
        "NumpyToTensor" in pieces
        and "numpy_to_tensor" in result["__all_modules__"]["learner_connector"]["timers"]["connectors"]
    )
