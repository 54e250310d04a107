"""An Atari game as RLlib's tuned Atari examples train on it: ALE's v5 game with RLlib's own preprocessing.

RLlib 2.60's new API stack does not preprocess Atari by itself (``clip_rewards``, ``is_atari`` and the
DeepMind wrappers are old-stack): its tuned example (``rllib/tuned_examples/ppo/atari_ppo.py``) registers an
env creator that makes ``ALE/<Game>-v5`` with ``frameskip=1``, ``full_action_space=False``,
``repeat_action_probability=0.0`` ("analogous to old v4 + NoFrameskip") and wraps it with
``wrap_atari_for_new_api_stack``: 64x64 grayscale frames normalized to [-1, 1], max over 4 skipped frames, up
to 30 no-op starts, a life as an episode, FIRE on reset. This class is that creator as a ``gymnasium.Env``
subclass, so a spec can name it (``envs.atari:AtariEnv``) and every adapter, ``rlbench envbench`` included,
steps the very observations an RLlib trial trains on.

One difference, said: the example stacks the last 4 frames in its connectors (``FrameStackingEnvToModule``,
which a spec cannot name); here the wrapper stacks them (``framestack: 4``, the wrapper's own option), so the
network sees the same 64x64x4 input, and each env step carries 4 frames instead of 1 (more bytes per
episode to the learner). Reward clipping (``clip_rewards=True`` in the example) is left out: Pong's
rewards are already -1, 0 or 1.

Needs the ``[atari]`` extra (``ale-py``, whose wheel holds the ROMs, and ``opencv-python-headless`` for the
resize); RLlib's wrappers come with ``ray[rllib]``.
"""

from __future__ import annotations

from typing import Any

import ale_py  # noqa: F401  (at the top: a spec naming this class without the [atari] extra is refused at load)
import cv2  # noqa: F401  (RLlib's WarpFrame resizes with it)
import gymnasium as gym


class AtariEnv(gym.Wrapper):
    """``env_config``: ``game`` (an ALE v5 id, default ``ALE/Pong-v5``), ``dim`` (frame side, 64),
    ``frameskip`` (frames per step, max-pooled, 4), ``framestack`` (frames stacked, 4)."""

    def __init__(self, config: dict[str, Any] | None = None):
        config = dict(config or {})
        from ray.rllib.env.wrappers.atari_wrappers import wrap_atari_for_new_api_stack

        gym.register_envs(ale_py)
        game = str(config.get("game", "ALE/Pong-v5"))
        if not game.startswith("ALE/"):
            raise ValueError(f"AtariEnv: game '{game}' is not an ALE id (ALE/<Game>-v5, e.g. ALE/Pong-v5)")
        base = gym.make(game, frameskip=1, full_action_space=False, repeat_action_probability=0.0)
        super().__init__(
            wrap_atari_for_new_api_stack(
                base,
                dim=int(config.get("dim", 64)),
                frameskip=int(config.get("frameskip", 4)),
                framestack=int(config.get("framestack", 4)) or None,
            )
        )
