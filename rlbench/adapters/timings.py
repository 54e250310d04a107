"""One training iteration as an adapter measured it, in rlbench's column names (standard library only): what a
trainer's ``iteration()`` returns and the trial writes with its ``iteration`` event (docs/SCHEMA.md, iterations
table). A per-iteration figure new to every framework gets its field here, its column in ``results/tables.py``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class IterationTimings:
    """One training iteration as the adapter measured it, in rlbench's column names (docs/SCHEMA.md,
    iterations table): what the trial writes with its ``iteration`` event, without knowing any
    framework's result keys. A figure the framework does not measure stays None (a null column)."""

    env_steps_sampled: int
    """Env steps sampled in the iteration."""
    sample_s: float
    """Seconds the iteration spent sampling (the driver's wait for it, for an asynchronous algorithm)."""
    learn_s: float = 0.0
    """Seconds the iteration spent learning."""
    sync_s: float = 0.0
    """Seconds syncing weights and connector states to the samplers."""
    env_step_s: float | None = None
    """Of ``sample_s``: inside the env's ``step``/``reset`` (wall-equivalent over the samplers)."""
    inference_s: float | None = None
    """Of ``sample_s``: choosing actions (the policy's forward pass)."""
    sample_other_s: float | None = None
    """Of ``sample_s``: the rest (connectors, episode bookkeeping)."""
    learner_connector_s: float | None = None
    """Of ``learn_s``: the learner connector pipeline (GAE etc.)."""
    sgd_s: float | None = None
    """Of ``learn_s``: the gradient steps (``learn_s - learner_connector_s``; None for an asynchronous algorithm)."""
    learn_batch_s: float | None = None
    """The learner building train batches (connectors, GAE, on a GPU learner the copy to it), per learner."""
    learn_update_s: float | None = None
    """The learner's minibatch updates (forward, loss, backward, optimizer step), per learner."""
    learn_other_s: float | None = None
    """``learn_s - learn_batch_s - learn_update_s``: the rest of the learning phase (None: asynchronous, or not
    measured)."""
    learn_batches: float | None = None
    """Train batches each learner built."""
    learn_copy_s: float | None = None
    """Of ``learn_batch_s`` (APPO, IMPALA: beside it): host-to-device copies, per GPU learner; None on a CPU."""
    learn_device_s: float | None = None
    """The device's time in the minibatch updates (CUDA events), per GPU learner; None on a CPU."""
    weight_sync_s: float | None = None
    """Of ``sync_s``: the weight broadcast alone."""
    sync_bytes: int | None = None
    """Bytes of weights sent to the samplers."""
    sync_bytes_per_s: float | None = None
    """``sync_bytes / weight_sync_s``."""
    env_steps_trained: int | None = None
    """Env steps the learners trained on."""
    episode_return_mean: float | None = None
    """Mean return of the episodes that ended in the iteration (NaN/None when none ended)."""
    training_steps: int | None = None
    """The framework's training-step calls in the iteration."""
    sampler_busy_s: float | None = None
    """Seconds the samplers were inside sampling, per sampler."""
    learner_busy_s: float | None = None
    """Seconds the learners were busy, per learner."""
    learner_updates: float | None = None
    """Weight updates per learner."""
    sgd_steps: float | None = None
    """Minibatch steps per learner."""
    policy_lag_mean: float | None = None
    """Mean policy lag of the iteration's updates (1: on-policy)."""
    policy_lag_max: float | None = None
    """Largest policy lag of the iteration's updates."""
    replay_s: float | None = None
    """Of ``other_s``: the driver inside its replay buffer (storing, drawing, re-prioritizing), off-policy only."""
    replay_add_s: float | None = None
    """Of ``replay_s``: storing the sampled steps."""
    replay_sample_s: float | None = None
    """Of ``replay_s``: drawing the train batches."""
    replay_update_s: float | None = None
    """Of ``replay_s``: updating the priorities from the TD errors."""
    target_update_s: float | None = None
    """Of ``learn_s``: the target-network updates, per learner."""
    target_updates: float | None = None
    """Target-network updates, per learner."""
    updates_per_env_step: float | None = None
    """Training intensity: gradient (minibatch) steps per learner over the env steps sampled."""
    runners: list[dict[str, Any]] | None = None
    """Per env runner: its own timings (runner_iterations table rows), or None."""
