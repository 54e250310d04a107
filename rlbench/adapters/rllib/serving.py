"""RLlib's side of ``rlbench servebench``: a policy trained and saved, models of a given size saved, and either
loaded back as RLlib serves one (the adapter's :class:`~rlbench.adapters.base.Serving`).

Loading is RLlib's own serving recipe (``rllib/examples/ray_serve/ray_serve_with_rllib.py``, Ray 2.60):
``RLModule.from_checkpoint(<algorithm checkpoint>/learner_group/learner/rl_module/default_policy)``, then
``forward_inference({"obs": batch})`` and the greedy action of the logits. With ``connectors`` every call
also runs the env-to-module and module-to-env pipelines an env runner runs around its forward pass (RLlib's
default pieces, built from the module's spaces), over one fresh episode per state: what serving through
RLlib's own pre- and post-processing costs. Ray, RLlib and torch are imported inside the functions.
"""

from __future__ import annotations

import os
import time
import warnings
from typing import Any

#: The env the short training run learns (4 float32 per state: 16 bytes).
TRAIN_ENV = "CartPole-v1"
#: Where an algorithm checkpoint keeps its RLModule (``ray.rllib.core``'s component names, Ray 2.60).
MODULE_IN_CHECKPOINT = ("learner_group", "learner", "rl_module", "default_policy")


def _quiet() -> None:
    from rlbench.adapters.rllib.config import quiet_logging

    quiet_logging()


def train_policy(folder: str, *, seed: int, iterations: int) -> dict[str, Any]:
    """PPO on CartPole-v1 for ``iterations`` iterations of 1,000 env steps, sampling in the driver (Ray
    must be up), saved as an algorithm checkpoint in ``folder``; the facts of :meth:`Serving.train_policy`."""
    _quiet()
    from ray.rllib.algorithms.ppo import PPOConfig

    started = time.perf_counter()
    config = (
        PPOConfig()
        .environment(TRAIN_ENV)
        .env_runners(num_env_runners=0)
        .training(train_batch_size_per_learner=1000, minibatch_size=100, num_epochs=6, lr=3e-4)
        .fault_tolerance(restart_failed_env_runners=False)
        .debugging(log_level="ERROR", seed=seed)
    )
    algo = config.build_algo()
    try:
        result: dict[str, Any] = {}
        for _ in range(iterations):
            result = algo.train()
        algo.save_to_path(folder)
        runners = result.get("env_runners", {})
        steps = runners.get("num_env_steps_sampled_lifetime")
        ret = runners.get("episode_return_mean")
    finally:
        algo.stop()
    return {
        "checkpoint": os.path.join(folder, *MODULE_IN_CHECKPOINT),
        "env": TRAIN_ENV,
        "input_floats": 4,
        "iterations": iterations,
        "env_steps": int(steps) if steps is not None else None,
        "episode_return_mean": float(ret) if ret is not None else None,
        "train_s": time.perf_counter() - started,
        "model": "PPO default RLModule, 2 x 256 tanh",
    }


def save_model(folder: str, *, input_floats: int, width: int, depth: int, residual: bool, seed: int) -> dict[str, Any]:
    """An untrained model saved as an RLModule checkpoint: RLlib's default PPO module with ``depth`` hidden
    layers of ``width`` (``residual`` False), or :class:`~rlbench.adapters.rllib.serving_models.ResidualPolicy` with
    ``depth`` blocks; 2 actions.
    Untrained weights cost what trained ones do."""
    _quiet()
    import gymnasium as gym
    import numpy as np
    import torch
    from ray.rllib.core.rl_module.rl_module import RLModuleSpec

    torch.manual_seed(seed)
    space = gym.spaces.Box(-1.0, 1.0, (input_floats,), np.float32)
    if residual:
        from rlbench.adapters.rllib.serving_models import ResidualPolicy

        module_class, model_config = ResidualPolicy, {"width": width, "depth": depth}
    else:
        from ray.rllib.algorithms.ppo.torch.default_ppo_torch_rl_module import DefaultPPOTorchRLModule
        from ray.rllib.core.rl_module.default_model_config import DefaultModelConfig

        module_class, model_config = DefaultPPOTorchRLModule, DefaultModelConfig(fcnet_hiddens=[width] * depth)
    spec = RLModuleSpec(
        module_class=module_class,
        observation_space=space,
        action_space=gym.spaces.Discrete(2),
        model_config=model_config,
        inference_only=True,
    )
    module = spec.build()
    module.save_to_path(folder)
    return {"checkpoint": folder, "parameters": int(sum(p.numel() for p in module.parameters()))}


class ModulePolicy:
    """An RLModule loaded from its checkpoint: ``act`` is one ``forward_inference`` (and, with connectors,
    RLlib's env-to-module and module-to-env pipelines around it)."""

    def __init__(self, checkpoint: str, *, connectors: bool = False, threads: int = 1):
        _quiet()
        import torch
        from ray.rllib.core.rl_module.rl_module import RLModule

        torch.set_num_threads(threads)
        # A body read as np.frombuffer is read-only; torch warns once per process that it could write to it (it
        # does not: inference only).
        warnings.filterwarnings("ignore", message="The given NumPy array is not writable")
        self.module = RLModule.from_checkpoint(checkpoint)
        self.module.eval()
        self.input_floats = int(self.module.observation_space.shape[0])
        self._pipelines = self._build_pipelines() if connectors else None

    def _build_pipelines(self):
        from ray.rllib.algorithms.ppo import PPOConfig

        spaces = {"__env_single__": (self.module.observation_space, self.module.action_space)}
        config = PPOConfig()
        return config.build_env_to_module_connector(spaces=spaces), config.build_module_to_env_connector(spaces=spaces)

    def act(self, states):
        import numpy as np
        import torch
        from ray.rllib.core.columns import Columns

        with torch.inference_mode():
            if self._pipelines is None:
                out = self.module.forward_inference({Columns.OBS: torch.from_numpy(states)})
                return out[Columns.ACTION_DIST_INPUTS].argmax(-1).numpy()
            return np.asarray(self._through_connectors(states), dtype=np.int64)

    def _through_connectors(self, states):
        from ray.rllib.core.columns import Columns
        from ray.rllib.env.single_agent_episode import SingleAgentEpisode

        to_module_pipeline, to_env_pipeline = self._pipelines
        module = self.module
        episodes = [
            SingleAgentEpisode(
                observations=[s], observation_space=module.observation_space, action_space=module.action_space
            )
            for s in states
        ]
        shared: dict[str, Any] = {}  # the batch's structure, left by the first pipeline for the second
        to_module = to_module_pipeline(episodes=episodes, batch={}, rl_module=module, explore=False, shared_data=shared)
        out = module.forward_inference(to_module)
        to_env = to_env_pipeline(batch=out, episodes=episodes, rl_module=module, explore=False, shared_data=shared)
        return to_env[Columns.ACTIONS]


class RLlibServing:
    """The RLlib adapter's :class:`~rlbench.adapters.base.Serving`."""

    def train_policy(self, folder: str, *, seed: int, iterations: int) -> dict[str, Any]:
        return train_policy(folder, seed=seed, iterations=iterations)

    def save_model(
        self, folder: str, *, input_floats: int, width: int, depth: int, residual: bool, seed: int
    ) -> dict[str, Any]:
        return save_model(folder, input_floats=input_floats, width=width, depth=depth, residual=residual, seed=seed)

    def load_policy(self, checkpoint: str, *, connectors: bool = False, threads: int = 1) -> ModulePolicy:
        return ModulePolicy(checkpoint, connectors=connectors, threads=threads)
