"""Exact per-iteration timers of an SB3 PPO iteration, on any clock (so a fake clock gives known answers).

The trainer times ``collect_rollouts`` (``sample_s``: the rollout, GAE included: SB3 computes returns and
advantages at its end) and ``train()`` (``learn_s``). Inside the rollout, :func:`timed_vec_env` times the vec
env's ``step`` (``env_step_s``: with ``SubprocVecEnv`` the driver's wait for its env processes, pipes included)
and :meth:`IterationClock.hook` the policy's forward pass (``inference_s``: the action, value and log-prob of
every step; the value of the last observation and of truncated episodes is ``predict_values``, left in
``sample_other_s``). Episode returns come from the ``Monitor`` info of the episodes that end in the iteration.

Inside ``train()``, :meth:`IterationClock.hook_learner` splits the learner's time as RLlib's is split
(docs/SCHEMA.md): ``learn_batch_s`` is the rollout buffer's ``get`` handing out minibatches (the shuffle, the slices,
their conversion to tensors); ``learn_update_s`` each minibatch step from ``evaluate_actions`` to the end of the
optimizer's ``step`` (forward, loss, backward, clipping, step). SB3 computes GAE at the rollout's end, so it is in
``sample_s`` here, not in ``learn_batch_s`` as RLlib's learner connector has it; rlbench runs SB3 on the CPU
(``device="cpu"``), so there is no copy or device time.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any


@dataclass
class IterationClock:
    """What one iteration's timers have summed so far; :meth:`reset` at the start of each iteration."""

    clock: Callable[[], float] = time.perf_counter
    """Seconds, monotonic (a fake one in tests)."""
    env_step_s: float = 0.0
    """Inside the vec env's ``step`` this iteration."""
    inference_s: float = 0.0
    """Inside the policy's forward pass this iteration."""
    learn_batch_s: float = 0.0
    """Inside the rollout buffer's ``get`` during ``train()`` this iteration (minibatches handed out)."""
    learn_update_s: float = 0.0
    """Inside the minibatch steps (``evaluate_actions`` to the optimizer's ``step``) this iteration."""
    returns: list[float] = field(default_factory=list)
    """Returns of the episodes that ended this iteration."""
    lengths: list[int] = field(default_factory=list)
    """Their lengths."""
    _forward_t0: float | None = None
    _step_t0: float | None = None

    def reset(self) -> None:
        self.env_step_s = self.inference_s = self.learn_batch_s = self.learn_update_s = 0.0
        self.returns, self.lengths = [], []

    def hook_learner(self, model: Any) -> None:
        """Time ``model``'s ``train()`` parts: its rollout buffer's ``get`` (each minibatch handed out) and each
        minibatch step, from ``policy.evaluate_actions`` to the end of ``policy.optimizer.step`` (a post-step hook:
        a step SB3 skips, its KL target met, adds nothing)."""
        buffer, policy = model.rollout_buffer, model.policy
        get, evaluate = buffer.get, policy.evaluate_actions

        def timed_get(*args: Any, **kwargs: Any) -> Any:
            batches = get(*args, **kwargs)
            while True:
                t = self.clock()
                try:
                    batch = next(batches)
                except StopIteration:
                    return
                finally:
                    self.learn_batch_s += self.clock() - t
                yield batch

        def timed_evaluate(*args: Any, **kwargs: Any) -> Any:
            self._step_t0 = self.clock()
            return evaluate(*args, **kwargs)

        def stepped(*_: Any) -> None:
            if self._step_t0 is not None:
                self.learn_update_s += self.clock() - self._step_t0
                self._step_t0 = None

        buffer.get, policy.evaluate_actions = timed_get, timed_evaluate
        policy.optimizer.register_step_post_hook(stepped)

    def hook(self, policy: Any) -> None:
        """Time every forward pass of ``policy`` (a ``torch.nn.Module``): the rollout calls it once a step;
        ``train()`` calls ``evaluate_actions``, not ``forward``, so learning is not counted."""

        def before(_module: Any, _args: Any) -> None:
            self._forward_t0 = self.clock()

        def after(_module: Any, _args: Any, _out: Any) -> None:
            if self._forward_t0 is not None:
                self.inference_s += self.clock() - self._forward_t0
                self._forward_t0 = None

        policy.register_forward_pre_hook(before)
        policy.register_forward_hook(after)

    def episodes(self, infos: Any) -> None:
        """Record the episodes that ended in one vec-env step (``Monitor`` puts ``episode`` in their info)."""
        for info in infos:
            episode = info.get("episode") if isinstance(info, dict) else None
            if episode is not None:
                self.returns.append(float(episode["r"]))
                self.lengths.append(int(episode["l"]))

    def return_mean(self) -> float:
        """Mean return of the iteration's episodes; NaN when none ended (as RLlib's column is)."""
        return sum(self.returns) / len(self.returns) if self.returns else math.nan


def timed_vec_env(venv: Any, clock: IterationClock) -> Any:
    """``venv`` wrapped so that each ``step`` (``step_async`` + ``step_wait``) adds to ``clock.env_step_s`` and
    the episodes it ends to ``clock.returns`` (imports SB3)."""
    from stable_baselines3.common.vec_env import VecEnvWrapper

    class TimedVecEnv(VecEnvWrapper):
        def reset(self) -> Any:
            return self.venv.reset()

        def step_async(self, actions: Any) -> None:
            self._t0 = clock.clock()
            self.venv.step_async(actions)

        def step_wait(self) -> Any:
            obs, rewards, dones, infos = self.venv.step_wait()
            clock.env_step_s += clock.clock() - self._t0
            clock.episodes(infos)
            return obs, rewards, dones, infos

    return TimedVecEnv(venv)
