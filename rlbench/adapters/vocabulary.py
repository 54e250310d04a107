"""The spec's keys, framework-neutral: the algorithms a spec may name and, for each, the ``training:`` keys it
takes, and the keys of other sections only some algorithms use (standard library only).

The names are RLlib's (docs/ARCHITECTURE.md: the spec's users are RLlib's, so those are rlbench's own words), but
the table is no adapter's: every adapter says which of these keys it takes for which algorithm
(``Adapter.training_keys``) and what it does with each (``Adapter.key_handling``: mapped, refused or ignored, with
why; tests/adapters/test_key_handling.py holds every adapter to it), and no adapter imports another's tables.
RLlib takes every key as it is (tests/adapters/test_rllib_training.py checks them against the installed Ray's
signatures); Stable-Baselines3 maps PPO's or refuses them; the plain adapter ignores them, since nothing learns.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

#: The algorithms a spec's ``algo`` may name, the default first.
ALGORITHMS: tuple[str, ...] = ("PPO", "APPO", "IMPALA", "DQN", "SAC")
#: The episode figures a ``stop:`` target may name whatever the framework: the return's and the length's mean, minimum
#: and maximum over the episodes that ended in the iteration, and how many ended (each adapter reads them its own way).
EPISODE_METRICS: tuple[str, ...] = (
    *(f"episode_{figure}_{stat}" for figure in ("return", "len") for stat in ("mean", "min", "max")),
    "num_episodes",
)

_EVERY = {
    "train_batch_size_per_learner",
    "minibatch_size",
    "num_epochs",
    "lr",
    "gamma",
    "grad_clip",
    "shuffle_batch_per_epoch",
    "entropy_coeff",
    "vf_loss_coeff",
}
_PPO_APPO = {"lambda", "clip_param", "kl_coeff", "kl_target", "use_kl_loss"}
_VTRACE = {
    "vtrace",
    "vtrace_clip_rho_threshold",
    "vtrace_clip_pg_rho_threshold",
    "broadcast_interval",
    "timeout_s_sampler_manager",
    "timeout_s_aggregator_manager",
    "num_gpu_loader_threads",
}
_APPO = {
    "use_circular_buffer",
    "circular_buffer_num_batches",
    "circular_buffer_iterations_per_batch",
    "simple_queue_size",
    "target_network_update_freq",
    "tau",
    "target_worker_clipping",
}

#: DQN's and SAC's: the replay buffer, when learning starts, updates per sampled step, n-step returns, the target net.
_REPLAY = {
    "train_batch_size_per_learner",
    "gamma",
    "grad_clip",
    "replay_buffer_config",
    "num_steps_sampled_before_learning_starts",
    "training_intensity",
    "n_step",
    "tau",
    "target_network_update_freq",
}
_DQN = {
    "lr",
    "epsilon",
    "double_q",
    "dueling",
    "num_atoms",
    "v_min",
    "v_max",
    "noisy",
    "sigma0",
    "td_error_loss_fn",
    "adam_epsilon",
}
_SAC = {"actor_lr", "critic_lr", "alpha_lr", "initial_alpha", "target_entropy", "twin_q", "clip_actions"}

#: Algorithm -> the training keys (YAML names) it accepts.
ALGO_TRAINING_KEYS: dict[str, frozenset[str]] = {
    "PPO": frozenset(_EVERY | _PPO_APPO | {"vf_clip_param"}),
    "IMPALA": frozenset(_EVERY | _VTRACE | {"learner_queue_size"}),
    "APPO": frozenset(_EVERY | _PPO_APPO | _VTRACE | _APPO),
    "DQN": frozenset(_REPLAY | _DQN),
    "SAC": frozenset(_REPLAY | _SAC),
}

#: Keys of other sections that only some algorithms use: (section, key) -> the algorithms.
ALGO_ONLY_KEYS: dict[tuple[str, str], tuple[str, ...]] = {
    ("learners", "num_aggregator_actors_per_learner"): ("APPO", "IMPALA"),
    ("learners", "max_requests_in_flight_per_aggregator_actor"): ("APPO", "IMPALA"),
}


@dataclass(frozen=True)
class KeyHandling:
    """What an adapter does with one spec key it takes: every key is mapped, refused or deliberately ignored, never
    dropped in silence (tests/adapters/test_key_handling.py holds every adapter to it)."""

    kind: Literal["mapped", "refused", "ignored"]
    """``mapped``: passed to the framework as the spec means it; ``refused``: the values it cannot run faithfully
    are refused at load (``Adapter.refusals``), the others are what the framework does anyway; ``ignored``: taken
    and left unused, deliberately."""
    how: str
    """Mapped: to what; refused: which values, and what the framework does with the rest; ignored: why."""
