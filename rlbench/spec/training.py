"""The ``training:`` section: every algorithm's training keys, typed; which algorithm takes which, from its adapter.

What a framework accepts is its adapter's knowledge (``Adapter.algorithms``, ``training_keys(algo)``,
``algo_only_keys``, ``refused_values``, ``removed_keys``; RLlib's: ``rlbench/adapters/rllib/training.py``).
The keys' types and bounds stay here, in one pydantic model holding every adapter's keys: its checks
raise the spec's errors (:class:`~rlbench.spec.errors._ValueErrorAt`, at a key path) and use its bounds
(:mod:`rlbench.spec.limits`), which an adapter may not import. The field list is checked against the
adapters' keys when this module is imported, so a key cannot be accepted in one place and not typed in
the other. One model holds every algorithm's keys, so a sweep whose grid runs several algorithms validates
its base section once; each trial's keys are then checked against its own algorithm under its own
framework (:func:`foreign_training_keys`), and a key of another algorithm is an error that names the
algorithm it belongs to. Per-algorithm sub-sections (``training.<algo>``) are one field per algorithm
any adapter names. Keys a framework no longer has are refused with what to use instead (:data:`REMOVED`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal, Union

from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, create_model, field_validator, model_validator

from rlbench.adapters import ALL_ALGORITHMS, FRAMEWORKS, get_adapter
from rlbench.spec.errors import _ValueErrorAt
from rlbench.spec.limits import MAX_BATCH, MAX_ITERATIONS, MAX_SECONDS, MAX_THREADS

#: The algorithms a spec may name (``algo:``, also a grid axis): every adapter's, in registry order.
ALGOS: tuple[str, ...] = ALL_ALGORITHMS
Algo = Literal[ALGOS]  # type: ignore[valid-type]  # built from the adapters: pydantic checks it at run time

#: Keys some framework no longer has -> what to use instead (every adapter's ``removed_keys``; the first wins).
REMOVED: dict[str, str] = {}
#: Training key -> (a value some framework refuses, why): every adapter's ``refused_values``, the first wins.
REFUSED: dict[str, tuple[Any, str]] = {}
for _framework in FRAMEWORKS:
    for _key, _why in get_adapter(_framework).removed_keys.items():
        REMOVED.setdefault(_key, _why)
    for _key, _refused in get_adapter(_framework).refused_values.items():
        REFUSED.setdefault(_key, _refused)


def accepted_keys(algo: str, framework: str | None = None) -> frozenset[str]:
    """The training keys a trial of ``algo`` may set under ``framework`` (None: under any framework that runs it)."""
    adapters = [get_adapter(framework)] if framework else [get_adapter(f) for f in FRAMEWORKS]
    return frozenset().union(*(a.training_keys(algo) for a in adapters if algo in a.algorithms))


class ReplayBufferConfig(BaseModel):
    """``training.replay_buffer_config`` (DQN, SAC): RLlib's episode replay buffers on the new API stack."""

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True, allow_inf_nan=False)

    type: Literal["EpisodeReplayBuffer", "PrioritizedEpisodeReplayBuffer"] | None = None
    """The buffer class (the new stack takes episode buffers only); both algorithms default to the prioritized one."""
    capacity: int | None = Field(None, ge=1, le=MAX_BATCH)
    """Env steps the buffer holds."""
    alpha: float | None = Field(None, ge=0)
    """Prioritization exponent (0: uniform). Prioritized buffer."""
    beta: float | None = Field(None, ge=0)
    """Importance-sampling exponent. Prioritized buffer."""


class _TrainingKeys(BaseModel):
    """The typed keys of :class:`TrainingSection` (every adapter's together), its checks and its merge."""

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True, populate_by_name=True, allow_inf_nan=False)

    train_batch_size_per_learner: int | None = Field(None, ge=1, le=MAX_BATCH)
    """Env steps per learner per update (total = this x max(1, num_learners)); DQN and SAC: replayed env steps per
    gradient update (an iteration runs many). All algorithms."""
    minibatch_size: int | None = Field(None, ge=1, le=MAX_BATCH)
    """SGD minibatch size (APPO/IMPALA: a multiple of rollout_fragment_length). PPO, APPO, IMPALA."""
    num_epochs: int | None = Field(None, ge=1, le=MAX_ITERATIONS)
    """Passes over each train batch. PPO, APPO, IMPALA."""
    lr: float | None = Field(None, gt=0)
    """Learning rate. PPO, APPO, IMPALA, DQN (SAC: actor_lr, critic_lr, alpha_lr)."""
    gamma: float | None = Field(None, ge=0, le=1)
    """Discount factor. All algorithms."""
    grad_clip: float | None = Field(None, gt=0)
    """Gradient clipping threshold. All algorithms."""
    shuffle_batch_per_epoch: bool | None = None
    """Shuffle the train batch before each epoch. PPO, APPO, IMPALA."""
    entropy_coeff: float | None = Field(None, ge=0)
    """Entropy bonus coefficient. PPO, APPO, IMPALA."""
    vf_loss_coeff: float | None = Field(None, ge=0)
    """Value-function loss coefficient. PPO, APPO, IMPALA."""
    lambda_: float | None = Field(None, ge=0, le=1, alias="lambda")
    """GAE lambda (YAML key ``lambda``). PPO, APPO."""
    clip_param: float | None = Field(None, gt=0)
    """Surrogate-objective clip parameter. PPO, APPO."""
    kl_coeff: float | None = Field(None, ge=0)
    """Initial KL coefficient. PPO, APPO."""
    kl_target: float | None = Field(None, gt=0)
    """Target KL the coefficient adapts to. PPO, APPO."""
    use_kl_loss: bool | None = None
    """Whether the KL term is in the loss. PPO, APPO."""
    vf_clip_param: float | None = Field(None, gt=0)
    """Value-function clip parameter. PPO."""
    vtrace: bool | None = None
    """V-trace off-policy correction. IMPALA, APPO; Ray 2.60 refuses ``false`` on the new API stack."""
    vtrace_clip_rho_threshold: float | None = Field(None, gt=0)
    """V-trace rho clip. IMPALA, APPO."""
    vtrace_clip_pg_rho_threshold: float | None = Field(None, gt=0)
    """V-trace policy-gradient rho clip. IMPALA, APPO."""
    broadcast_interval: int | None = Field(None, ge=1, le=MAX_ITERATIONS)
    """Training steps between weight broadcasts to the env runners (more: more policy lag). IMPALA, APPO."""
    timeout_s_sampler_manager: float | None = Field(None, ge=0, le=MAX_SECONDS)
    """How long a training step waits for env-runner results (0: take what is ready). IMPALA, APPO."""
    timeout_s_aggregator_manager: float | None = Field(None, ge=0, le=MAX_SECONDS)
    """How long a training step waits for aggregator results. IMPALA, APPO."""
    num_gpu_loader_threads: int | None = Field(None, ge=1, le=MAX_THREADS)
    """Threads per GPU learner that move batches to the GPU. IMPALA, APPO."""
    learner_queue_size: int | None = Field(None, ge=1, le=MAX_BATCH)
    """Train batches queued for each learner's update thread. IMPALA (APPO uses its circular buffer)."""
    use_circular_buffer: bool | None = None
    """Keep train batches in a circular buffer (re-sampled) instead of a queue. APPO."""
    circular_buffer_num_batches: int | None = Field(None, ge=1, le=MAX_BATCH)
    """Train batches the circular buffer holds. APPO."""
    circular_buffer_iterations_per_batch: int | None = Field(None, ge=1, le=MAX_ITERATIONS)
    """Times each batch in the circular buffer may be trained on. APPO."""
    simple_queue_size: int | None = Field(None, ge=1, le=MAX_BATCH)
    """Size of the queue used instead of the circular buffer. APPO."""
    target_network_update_freq: float | None = Field(None, ge=0)
    """Target-network update period. APPO: in units of circular_buffer_num_batches x
    circular_buffer_iterations_per_batch x train batch trained env steps; DQN, SAC: env steps sampled between two
    updates (0: after every gradient update; RLlib's defaults DQN 500, SAC 0)."""
    tau: float | None = Field(None, ge=0, le=1)
    """Target-network update rate (1: copy). APPO, DQN, SAC."""
    target_worker_clipping: float | None = Field(None, gt=0)
    """Clip of the importance ratio against the target network. APPO."""

    replay_buffer_config: ReplayBufferConfig | None = None
    """The replay buffer; keys left out keep the algorithm's (DQN: 50,000 steps, SAC: 1,000,000, both
    prioritized). DQN, SAC."""
    num_steps_sampled_before_learning_starts: int | None = Field(None, ge=0, le=MAX_BATCH)
    """Env steps sampled before the first gradient update (DQN 1000, SAC 1500): iterations before it only sample.
    DQN, SAC."""
    training_intensity: float | None = Field(None, gt=0)
    """Replayed env steps trained on per env step sampled (RLlib's ratio; unset: one update per sampling round).
    DQN, SAC."""
    n_step: int | tuple[int, int] | None = None
    """N-step returns: an int, or [low, high] drawn per sample. DQN, SAC."""
    epsilon: float | list[tuple[int, float]] | None = None
    """Exploration: a constant, or a schedule of [env step, epsilon] pairs (RLlib: [[0, 1.0], [10000, 0.05]]). DQN."""
    double_q: bool | None = None
    """Double Q-learning. DQN."""
    dueling: bool | None = None
    """Dueling heads. DQN."""
    num_atoms: int | None = Field(None, ge=1, le=MAX_THREADS)
    """Atoms of the distributional Q head (1: not distributional). DQN."""
    v_min: float | None = None
    """Lowest value of the distributional support. DQN."""
    v_max: float | None = None
    """Highest value of the distributional support. DQN."""
    noisy: bool | None = None
    """Noisy networks for exploration. DQN."""
    sigma0: float | None = Field(None, ge=0)
    """Initial noise of the noisy networks. DQN."""
    td_error_loss_fn: Literal["huber", "mse"] | None = None
    """Loss of the TD error. DQN."""
    adam_epsilon: float | None = Field(None, gt=0)
    """Adam's epsilon. DQN."""
    actor_lr: float | None = Field(None, gt=0)
    """Policy learning rate. SAC."""
    critic_lr: float | None = Field(None, gt=0)
    """Q-network learning rate. SAC."""
    alpha_lr: float | None = Field(None, gt=0)
    """Entropy-weight learning rate. SAC."""
    initial_alpha: float | None = Field(None, gt=0)
    """Initial entropy weight. SAC."""
    target_entropy: Literal["auto"] | float | None = None
    """Entropy target (``auto``: minus the action dimensions). SAC."""
    twin_q: bool | None = None
    """Two Q-networks (clipped double Q). SAC."""
    clip_actions: bool | None = None
    """Clip actions to the action space. SAC."""

    @model_validator(mode="after")
    def _per_algorithm_keys_are_its_own(self) -> _TrainingKeys:
        for algo in ALGOS:
            sub = getattr(self, algo, None)
            if sub is None:
                continue
            nested = [a for a in ALGOS if getattr(sub, a, None) is not None]
            if nested:
                raise _ValueErrorAt(("training", algo, nested[0]), "per-algorithm keys do not nest")
            foreign = foreign_training_keys(algo, sub)
            if foreign:
                key, belongs_to = foreign[0]
                raise _ValueErrorAt(
                    ("training", algo, key),
                    f"not an {algo} key: it is {_article(belongs_to)} {and_names(belongs_to)} key",
                )
        return self

    def for_algo(self, algo: str) -> _TrainingKeys:
        """The keys a trial of ``algo`` runs with: the section's own, with ``training.<algo>`` over them."""
        own = {name: getattr(self, name) for name in self.model_fields_set if name not in ALGOS}
        sub = getattr(self, algo)
        if sub is not None:
            own.update({name: getattr(sub, name) for name in sub.model_fields_set})
        fields = type(self).model_fields
        return type(self).model_validate({fields[k].alias or k: v for k, v in own.items()})

    @field_validator("*")
    @classmethod
    def _not_a_refused_value(cls, value: Any, info: ValidationInfo) -> Any:
        name = str(info.field_name)
        key = cls.model_fields[name].alias or name
        if key in REFUSED and value is not None and value == REFUSED[key][0]:
            raise ValueError(REFUSED[key][1])
        return value


_TrainingSection = create_model(  # type: ignore[call-overload]  # its fields are built from the adapters' keys
    "TrainingSection",
    __base__=_TrainingKeys,
    __module__=__name__,
    __doc__="""Training keys of every algorithm; a key left out keeps the framework's default for the trial's
    algorithm. Which algorithm accepts which key: its adapter's ``training_keys(algo)``. Per algorithm, a
    sub-section ``training.<algo>`` holds keys for that algorithm's trials only, over the section's own (so a
    sweep over ``algo`` can give each algorithm its settings; a trial's config holds the merged keys).""",
    **{
        algo: (
            Union["TrainingSection", None],
            Field(None, description=f"Keys for {algo} trials only, over the section's own."),
        )
        for algo in ALGOS
    },
)
if TYPE_CHECKING:  # its fields are the adapters' keys, built at import: a type checker sees the typed base
    TrainingSection = _TrainingKeys
else:
    TrainingSection = _TrainingSection
TrainingSection.model_rebuild()

_TYPED = {f.alias or name for name, f in _TrainingKeys.model_fields.items()}
_ACCEPTED = frozenset().union(*(accepted_keys(algo) for algo in ALGOS))
if _TYPED != _ACCEPTED:  # one source: every key an adapter accepts is typed here, and nothing else is
    raise RuntimeError(
        f"training keys accepted by an adapter but not typed in TrainingSection: "
        f"{sorted(_ACCEPTED - _TYPED)}; typed but accepted by no adapter: {sorted(_TYPED - _ACCEPTED)}"
    )


def owners(key: str, framework: str | None = None) -> list[str]:
    """The algorithms whose training keys include ``key`` (YAML name) under ``framework`` (None: any), in
    :data:`ALGOS` order."""
    return [a for a in ALGOS if key in accepted_keys(a, framework)]


def foreign_training_keys(
    algo: str, training: _TrainingKeys, framework: str | None = None
) -> list[tuple[str, list[str]]]:
    """(key, the algorithms it belongs to) for every key set in ``training`` that ``algo`` does not accept
    under ``framework`` (None: under any framework that runs it)."""
    accepted = accepted_keys(algo, framework)
    out = []
    for name, field in _TrainingKeys.model_fields.items():
        key = field.alias or name
        if getattr(training, name) is not None and key not in accepted:
            out.append((key, owners(key, framework)))
    return out


def and_names(algos: list[str] | tuple[str, ...]) -> str:
    """``A``, ``A and B``, ``A, B and C``."""
    return " and ".join(algos) if len(algos) <= 2 else ", ".join(algos[:-1]) + " and " + algos[-1]


def _article(algos: list[str] | tuple[str, ...]) -> str:
    return "an" if algos[0][0] in "AEIOU" else "a"


def foreign_key_message(algo: str, section: str, key: str, belongs_to: list[str] | tuple[str, ...]) -> str:
    """The error for a key of another algorithm: which algorithm it belongs to, and what to do."""
    where = f"{section}.{key}"
    if section == "training":
        where += f" (or move it under training.{belongs_to[0]})"
    return (
        f"{_article(belongs_to)} {and_names(belongs_to)} key, but this trial runs {algo}: remove {where}, or set "
        f"algo to {' or '.join(belongs_to)}"
    )
