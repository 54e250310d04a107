"""The ``training:`` section: every algorithm's training keys, and which algorithm owns each.

The keys are RLlib 2.60's ``AlgorithmConfig.training()`` arguments on the new API stack: the ones
every algorithm has (``AlgorithmConfig.training``), PPO's (``PPOConfig.training``), IMPALA's
(``IMPALAConfig.training``) and APPO's (``APPOConfig.training``: IMPALA's plus its own, less
``learner_queue_size``, which APPO rejects on the new stack). One model holds them all, so a sweep
whose grid runs several algorithms validates its base section once; each trial's keys are then
checked against its own algorithm (:func:`check_training_keys`), and a key of another algorithm
is an error that names the algorithm it belongs to. Old-API-stack keys that RLlib 2.60 ignores or
rejects are refused with what to use instead (:data:`REMOVED`).
"""

from __future__ import annotations

from typing import Literal, Union

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from rlbench.spec.errors import _ValueErrorAt
from rlbench.spec.limits import MAX_BATCH, MAX_ITERATIONS, MAX_SECONDS, MAX_THREADS

#: The algorithms a spec may name (``algo:``, also a grid axis).
Algo = Literal["PPO", "APPO", "IMPALA"]
ALGOS: tuple[str, ...] = ("PPO", "APPO", "IMPALA")


class TrainingSection(BaseModel):
    """Training keys of every algorithm; a key left out keeps RLlib's default for the trial's algorithm.
    Which algorithm accepts which key: :data:`ALGO_TRAINING_KEYS`."""

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True, populate_by_name=True,
                              allow_inf_nan=False)

    # --- every algorithm ---
    train_batch_size_per_learner: Union[int, None] = Field(None, ge=1, le=MAX_BATCH)
    """Env steps per learner per update (total = this x max(1, num_learners)). All algorithms."""
    minibatch_size: Union[int, None] = Field(None, ge=1, le=MAX_BATCH)
    """SGD minibatch size (APPO/IMPALA: a multiple of rollout_fragment_length). All algorithms."""
    num_epochs: Union[int, None] = Field(None, ge=1, le=MAX_ITERATIONS)
    """Passes over each train batch. All algorithms."""
    lr: Union[float, None] = Field(None, gt=0)
    """Learning rate. All algorithms."""
    gamma: Union[float, None] = Field(None, ge=0, le=1)
    """Discount factor. All algorithms."""
    grad_clip: Union[float, None] = Field(None, gt=0)
    """Gradient clipping threshold. All algorithms."""
    shuffle_batch_per_epoch: Union[bool, None] = None
    """Shuffle the train batch before each epoch. All algorithms."""
    # --- PPO, APPO, IMPALA (each its own default) ---
    entropy_coeff: Union[float, None] = Field(None, ge=0)
    """Entropy bonus coefficient. PPO, APPO, IMPALA."""
    vf_loss_coeff: Union[float, None] = Field(None, ge=0)
    """Value-function loss coefficient. PPO, APPO, IMPALA."""
    # --- PPO and APPO ---
    lambda_: Union[float, None] = Field(None, ge=0, le=1, alias="lambda")
    """GAE lambda (YAML key ``lambda``). PPO, APPO."""
    clip_param: Union[float, None] = Field(None, gt=0)
    """Surrogate-objective clip parameter. PPO, APPO."""
    kl_coeff: Union[float, None] = Field(None, ge=0)
    """Initial KL coefficient. PPO, APPO."""
    kl_target: Union[float, None] = Field(None, gt=0)
    """Target KL the coefficient adapts to. PPO, APPO."""
    use_kl_loss: Union[bool, None] = None
    """Whether the KL term is in the loss. PPO, APPO."""
    # --- PPO only ---
    vf_clip_param: Union[float, None] = Field(None, gt=0)
    """Value-function clip parameter. PPO."""
    # --- IMPALA and APPO ---
    vtrace: Union[bool, None] = None
    """V-trace off-policy correction. IMPALA, APPO; Ray 2.60 refuses ``false`` on the new API stack."""
    vtrace_clip_rho_threshold: Union[float, None] = Field(None, gt=0)
    """V-trace rho clip. IMPALA, APPO."""
    vtrace_clip_pg_rho_threshold: Union[float, None] = Field(None, gt=0)
    """V-trace policy-gradient rho clip. IMPALA, APPO."""
    broadcast_interval: Union[int, None] = Field(None, ge=1, le=MAX_ITERATIONS)
    """Training steps between weight broadcasts to the env runners (more: more policy lag). IMPALA, APPO."""
    timeout_s_sampler_manager: Union[float, None] = Field(None, ge=0, le=MAX_SECONDS)
    """How long a training step waits for env-runner results (0: take what is ready). IMPALA, APPO."""
    timeout_s_aggregator_manager: Union[float, None] = Field(None, ge=0, le=MAX_SECONDS)
    """How long a training step waits for aggregator results. IMPALA, APPO."""
    num_gpu_loader_threads: Union[int, None] = Field(None, ge=1, le=MAX_THREADS)
    """Threads per GPU learner that move batches to the GPU. IMPALA, APPO."""
    # --- IMPALA only ---
    learner_queue_size: Union[int, None] = Field(None, ge=1, le=MAX_BATCH)
    """Train batches queued for each learner's update thread. IMPALA (APPO uses its circular buffer)."""
    # --- APPO only ---
    use_circular_buffer: Union[bool, None] = None
    """Keep train batches in a circular buffer (re-sampled) instead of a queue. APPO."""
    circular_buffer_num_batches: Union[int, None] = Field(None, ge=1, le=MAX_BATCH)
    """Train batches the circular buffer holds. APPO."""
    circular_buffer_iterations_per_batch: Union[int, None] = Field(None, ge=1, le=MAX_ITERATIONS)
    """Times each batch in the circular buffer may be trained on. APPO."""
    simple_queue_size: Union[int, None] = Field(None, ge=1, le=MAX_BATCH)
    """Size of the queue used instead of the circular buffer. APPO."""
    target_network_update_freq: Union[float, None] = Field(None, gt=0)
    """Target-network update period, in units of circular_buffer_num_batches x
    circular_buffer_iterations_per_batch x train batch trained env steps. APPO."""
    tau: Union[float, None] = Field(None, ge=0, le=1)
    """Target-network update rate. APPO."""
    target_worker_clipping: Union[float, None] = Field(None, gt=0)
    """Clip of the importance ratio against the target network. APPO."""

    # --- per-algorithm settings ---
    PPO: Union["TrainingSection", None] = None
    """Keys for PPO trials only, over the section's own (so a sweep over ``algo`` can give each algorithm
    its settings; a trial's config holds the merged keys)."""
    APPO: Union["TrainingSection", None] = None
    """Keys for APPO trials only, over the section's own."""
    IMPALA: Union["TrainingSection", None] = None
    """Keys for IMPALA trials only, over the section's own."""

    @model_validator(mode="after")
    def _per_algorithm_keys_are_its_own(self) -> "TrainingSection":
        for algo in ALGOS:
            sub = getattr(self, algo)
            if sub is None:
                continue
            nested = [a for a in ALGOS if getattr(sub, a) is not None]
            if nested:
                raise _ValueErrorAt(("training", algo, nested[0]), "per-algorithm keys do not nest")
            foreign = foreign_training_keys(algo, sub)
            if foreign:
                key, belongs_to = foreign[0]
                raise _ValueErrorAt(("training", algo, key), f"not an {algo} key: it is "
                                    f"{_article(belongs_to)} {_names(belongs_to)} key")
        return self

    def for_algo(self, algo: str) -> "TrainingSection":
        """The keys a trial of ``algo`` runs with: the section's own, with ``training.<algo>`` over them."""
        own = {name: getattr(self, name) for name in self.model_fields_set if name not in ALGOS}
        sub = getattr(self, algo)
        if sub is not None:
            own.update({name: getattr(sub, name) for name in sub.model_fields_set})
        return TrainingSection.model_validate({TrainingSection.model_fields[k].alias or k: v for k, v in own.items()})

    @field_validator("vtrace")
    @classmethod
    def _vtrace_on(cls, value: bool | None) -> bool | None:
        if value is False:
            raise ValueError("Ray 2.60 runs IMPALA and APPO with V-trace only (vtrace: false is refused on the "
                             "new API stack): remove the key or set it to true")
        return value


_EVERY = {"train_batch_size_per_learner", "minibatch_size", "num_epochs", "lr", "gamma", "grad_clip",
          "shuffle_batch_per_epoch", "entropy_coeff", "vf_loss_coeff"}
_PPO_APPO = {"lambda", "clip_param", "kl_coeff", "kl_target", "use_kl_loss"}
_VTRACE = {"vtrace", "vtrace_clip_rho_threshold", "vtrace_clip_pg_rho_threshold", "broadcast_interval",
           "timeout_s_sampler_manager", "timeout_s_aggregator_manager", "num_gpu_loader_threads"}
_APPO = {"use_circular_buffer", "circular_buffer_num_batches", "circular_buffer_iterations_per_batch",
         "simple_queue_size", "target_network_update_freq", "tau", "target_worker_clipping"}

#: Algorithm -> the training keys (YAML names) it accepts.
ALGO_TRAINING_KEYS: dict[str, frozenset[str]] = {
    "PPO": frozenset(_EVERY | _PPO_APPO | {"vf_clip_param"}),
    "IMPALA": frozenset(_EVERY | _VTRACE | {"learner_queue_size"}),
    "APPO": frozenset(_EVERY | _PPO_APPO | _VTRACE | _APPO),
}

#: Keys of other sections that only some algorithms use: (section, key) -> the algorithms.
ALGO_ONLY_KNOBS: dict[tuple[str, str], tuple[str, ...]] = {
    ("learners", "num_aggregator_actors_per_learner"): ("APPO", "IMPALA"),
    ("learners", "max_requests_in_flight_per_aggregator_actor"): ("APPO", "IMPALA"),
}

#: Old-API-stack keys Ray 2.60's new stack ignores or rejects -> what to do instead. They are
#: refused, never passed on: a translation would change what they mean.
REMOVED: dict[str, str] = {
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


def owners(key: str) -> list[str]:
    """The algorithms whose training keys include ``key`` (YAML name), in :data:`ALGOS` order."""
    return [a for a in ALGOS if key in ALGO_TRAINING_KEYS[a]]


def foreign_training_keys(algo: str, training: TrainingSection) -> list[tuple[str, list[str]]]:
    """(key, the algorithms it belongs to) for every key set in ``training`` that ``algo`` does not accept."""
    out = []
    for name, field in TrainingSection.model_fields.items():
        key = field.alias or name
        if key in ALGOS:
            continue
        if getattr(training, name) is not None and key not in ALGO_TRAINING_KEYS[algo]:
            out.append((key, owners(key)))
    return out


def _names(algos: list[str] | tuple[str, ...]) -> str:
    return " and ".join(algos) if len(algos) <= 2 else ", ".join(algos[:-1]) + " and " + algos[-1]


def _article(algos: list[str] | tuple[str, ...]) -> str:
    return "an" if algos[0][0] in "AEIOU" else "a"


def foreign_key_message(algo: str, section: str, key: str, belongs_to: list[str] | tuple[str, ...]) -> str:
    """The error for a key of another algorithm: which algorithm it belongs to, and what to do."""
    where = f"{section}.{key}"
    if section == "training":
        where += f" (or move it under training.{belongs_to[0]})"
    return (f"{_article(belongs_to)} {_names(belongs_to)} key, but this trial runs {algo}: remove {where}, or set "
            f"algo to {' or '.join(belongs_to)}")
