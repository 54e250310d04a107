"""What RLlib 2.60 accepts per algorithm in a spec: the spec's vocabulary (:mod:`rlbench.adapters.vocabulary`:
the algorithms, each one's training keys, the keys of other sections only some use), every key of which RLlib
takes as it is, and what only RLlib says: its default batches and hyperparameters, the old-API-stack keys refused
with what to use instead, the values Ray 2.60 refuses.

The vocabulary's keys are RLlib 2.60's ``AlgorithmConfig.training()`` arguments on the new API stack, by their
YAML names: the ones every algorithm has (``AlgorithmConfig.training``), PPO's
(``PPOConfig.training``), IMPALA's (``IMPALAConfig.training``) and APPO's (``APPOConfig.training``:
IMPALA's plus its own, less ``learner_queue_size``, which APPO rejects on the new stack), DQN's
(``DQNConfig.training``) and SAC's (``SACConfig.training``: its own class, not DQN's, though ``SAC`` runs
DQN's training step). The off-policy two share the replay keys; SAC takes no ``lr`` (RLlib 2.60 refuses it on
the new stack: ``actor_lr``, ``critic_lr`` and ``alpha_lr`` instead).
tests/adapters/test_rllib_training.py checks every key against the installed Ray's signatures.
Plain data, standard library only: the spec reads it through the :class:`~rlbench.adapters.base.Adapter`
protocol and types each key itself (``rlbench.spec.training.TrainingSection``).
"""

from __future__ import annotations

from rlbench.adapters.base import NEVER_BINDS
from rlbench.adapters.vocabulary import ALGO_ONLY_KEYS, ALGO_TRAINING_KEYS, ALGORITHMS

__all__ = [
    "AGGREGATING_ALGOS",
    "ALGO_ONLY_KEYS",
    "ALGO_TRAINING_KEYS",
    "ALGORITHMS",
    "DEFAULT_TRAIN_BATCH",
    "PPO_DEFAULTS",
    "REFUSED_VALUES",
    "REMOVED_KEYS",
    "REPLAY_ALGOS",
]  # the vocabulary's tables: RLlib takes every key of it

#: Algorithms that train on replayed env steps (RLlib's DQN family: SAC subclasses DQN and runs its training
#: step): one iteration repeats sample -> store -> replay -> update -> sync until ``min_sample_timesteps_per_
#: iteration`` env steps were sampled (DQN: 1000; SAC: 100, and at least ``min_time_s_per_iteration`` 1 s).
REPLAY_ALGOS: frozenset[str] = frozenset({"DQN", "SAC"})

#: Algorithm -> RLlib 2.60's ``train_batch_size`` default (its config class's ``__init__``): with no
#: ``train_batch_size_per_learner`` in the spec, each of ``max(1, num_learners)`` learners trains on this // their
#: number (``AlgorithmConfig.train_batch_size_per_learner``). tests/adapters/test_rllib_training.py checks it.
#: DQN and SAC: the replayed env steps of one gradient update, not of an iteration (which runs many).
DEFAULT_TRAIN_BATCH: dict[str, int] = {"PPO": 4000, "APPO": 500, "IMPALA": 500, "DQN": 32, "SAC": 256}

#: PPO's hyperparameters as RLlib 2.60 trains with them where the spec sets nothing: (section, YAML key) -> value
#: (``PPOConfig()`` and ``DefaultModelConfig()``; ``grad_clip`` None there, no clipping, is ``NEVER_BINDS``;
#: the train batch is ``DEFAULT_TRAIN_BATCH``, per learner). What the matched preset pins when another framework
#: runs beside RLlib (docs/SPEC.md, "Comparing frameworks"); tests/adapters/test_sb3_mapping.py checks it against
#: the installed RLlib.
PPO_DEFAULTS: dict[tuple[str, str], object] = {
    ("training", "lr"): 5e-05,
    ("training", "minibatch_size"): 128,
    ("training", "num_epochs"): 30,
    ("training", "gamma"): 0.99,
    ("training", "lambda"): 1.0,
    ("training", "clip_param"): 0.3,
    ("training", "vf_clip_param"): 10.0,
    ("training", "vf_loss_coeff"): 1.0,
    ("training", "entropy_coeff"): 0.0,
    ("training", "grad_clip"): NEVER_BINDS,
    ("training", "use_kl_loss"): True,
    ("training", "shuffle_batch_per_epoch"): True,
    ("rl_module", "fcnet_hiddens"): [256, 256],
    ("rl_module", "fcnet_activation"): "tanh",
    ("rl_module", "vf_share_layers"): True,
}

#: Algorithms that start aggregator actors (RLlib's IMPALA family): the ones its aggregator keys are for.
AGGREGATING_ALGOS: frozenset[str] = frozenset(ALGO_ONLY_KEYS[("learners", "num_aggregator_actors_per_learner")])

#: Training key -> (a value RLlib 2.60 refuses on the new API stack, why and what to do).
REFUSED_VALUES: dict[str, tuple[object, str]] = {
    "vtrace": (
        False,
        "Ray 2.60 runs IMPALA and APPO with V-trace only (vtrace: false is refused on the new API "
        "stack): remove the key or set it to true",
    ),
}

#: Old-API-stack keys Ray 2.60's new stack ignores or rejects -> what to do instead. They are
#: refused, never passed on: a translation would change what they mean.
REMOVED_KEYS: dict[str, str] = {
    "num_aggregation_workers": "aggregation workers are gone; the new stack's aggregator actors are "
    "learners.num_aggregator_actors_per_learner (counted per learner)",
    "replay_proportion": "old API stack only (no mix-in replay on the new stack); APPO re-uses batches through "
    "training.circular_buffer_iterations_per_batch",
    "replay_buffer_num_slots": "old API stack only; APPO's buffer size is training.circular_buffer_num_batches",
    "minibatch_buffer_size": "old API stack only; APPO's buffer size is training.circular_buffer_num_batches",
    "num_multi_gpu_tower_stacks": "old API stack only; several GPUs are learners.num_learners with "
    "num_gpus_per_learner",
    "learner_queue_timeout": "old API stack only",
    "target_update_frequency": "replaced by training.target_network_update_freq, which counts in different units "
    "(trained batches of the circular buffer, not sampled env steps): set it yourself",
    "use_critic": "APPO always uses a value function in Ray 2.60",
    "opt_type": "old API stack only: the new stack's learners use Adam",
    "vtrace_drop_last_ts": "old API stack only",
}

#: ``rlbench sweep --quick`` (docs/SPEC.md, "--quick"): the train batch per learner one check iteration of each
#: algorithm trains on, the spec's own when smaller. PPO: RLlib's default minibatch (128), so one minibatch an
#: epoch; APPO/IMPALA: two of RLlib's default 50-step rollout fragments (its minibatch must be a multiple of one);
#: DQN: its default (32, one update's batch already); SAC: a quarter of its 256.
QUICK_TRAIN_BATCH: dict[str, int] = {"PPO": 128, "APPO": 100, "IMPALA": 100, "DQN": 32, "SAC": 64}

#: RLlib 2.60's defaults the quick rule reads (each algorithm's config class's ``__init__``): APPO's and IMPALA's
#: rollout fragment and time-bounded iteration (10 s), DQN's and SAC's first learning step and DQN's env steps
#: per iteration.
DEFAULT_FRAGMENT = 50
DEFAULT_LEARNING_STARTS: dict[str, int] = {"DQN": 1000, "SAC": 1500}
DEFAULT_MIN_TIME_S: dict[str, float] = {"APPO": 10.0, "IMPALA": 10.0}
DEFAULT_MIN_SAMPLE_STEPS: dict[str, int] = {"DQN": 1000}
#: A quick iteration's bounds, whatever the algorithm and the spec's ``reporting:``: it repeats its training step
#: for at most 1 s (APPO/IMPALA: 10 s by default) and until at most 200 env steps were sampled (DQN: 1000) or
#: trained on; DQN and SAC start learning within two train batches, so the one iteration learns; APPO and IMPALA
#: repeat it until one train batch was sampled and trained on (their learners answer asynchronously: with 1 s
#: alone, 6 of 6 quick APPO trials at load average 10-19 sampled and trained 0 env steps in their iteration).
QUICK_MIN_TIME_S = 1.0
QUICK_MIN_SAMPLE_STEPS = 200


def quick_settings(config) -> dict[tuple[str, str], object]:
    """(section, key) -> value for a ``--quick`` check of an RLlib trial config (only values that change): the train
    batch cut to :data:`QUICK_TRAIN_BATCH`, the minibatch kept within it, and the iteration bounded (see above)."""
    algo, t, runners = config.algo, config.training, config.env_runners
    out: dict[tuple[str, str], object] = {}
    per_learner = t.train_batch_size_per_learner or DEFAULT_TRAIN_BATCH[algo] // max(1, config.learners.num_learners)
    batch = min(per_learner, QUICK_TRAIN_BATCH[algo])
    if algo in ("APPO", "IMPALA"):
        fragment = (
            runners.rollout_fragment_length if isinstance(runners.rollout_fragment_length, int) else DEFAULT_FRAGMENT
        )
        batch = max(fragment, batch // fragment * fragment) if per_learner >= fragment else per_learner
        if t.minibatch_size is not None and t.minibatch_size > batch:
            out[("training", "minibatch_size")] = max(fragment, batch // fragment * fragment)
    elif algo == "PPO" and (t.minibatch_size or PPO_DEFAULTS[("training", "minibatch_size")]) > batch:
        out[("training", "minibatch_size")] = batch
    if t.train_batch_size_per_learner != batch:
        out[("training", "train_batch_size_per_learner")] = batch
    if algo in REPLAY_ALGOS:
        if _or(t.num_steps_sampled_before_learning_starts, DEFAULT_LEARNING_STARTS[algo]) > 2 * batch:
            out[("training", "num_steps_sampled_before_learning_starts")] = 2 * batch
    # one iteration is one training step, or a few for a time- or step-bounded iteration: bounded by the quick caps
    for key, default, cap in (
        ("min_time_s_per_iteration", DEFAULT_MIN_TIME_S.get(algo, 0.0), QUICK_MIN_TIME_S),
        ("min_sample_timesteps_per_iteration", DEFAULT_MIN_SAMPLE_STEPS.get(algo, 0), QUICK_MIN_SAMPLE_STEPS),
        ("min_train_timesteps_per_iteration", 0, QUICK_MIN_SAMPLE_STEPS),
    ):
        if _or(getattr(config.reporting, key), default) > cap:
            out[("reporting", key)] = cap
    if algo in ("APPO", "IMPALA"):  # asynchronous: a second of training steps sampled and trained nothing at load 10
        for key in ("min_sample_timesteps_per_iteration", "min_train_timesteps_per_iteration"):
            if _or(out.get(("reporting", key), getattr(config.reporting, key)), 0) < batch:
                out[("reporting", key)] = batch
    return out


def _or(value, default):
    """The spec's value, or RLlib's default where the spec leaves it unset (0 is a value: no minimum)."""
    return default if value is None else value
