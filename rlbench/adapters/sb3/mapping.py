"""The spec's keys as Stable-Baselines3's PPO arguments, and the keys SB3 cannot run faithfully (standard library
only: the spec reads the refusals at load, the snippet and the trainer the arguments).

rlbench's vocabulary is RLlib's (docs/ARCHITECTURE.md); this module is the one mapping from it to SB3 2.9's
``PPO(...)``. Envs: with ``num_env_runners: 0`` the trial process steps ``num_envs_per_env_runner`` envs
(``DummyVecEnv``); with ``num_env_runners: N`` it steps N x ``num_envs_per_env_runner`` env processes of one env
each (``SubprocVecEnv``: SB3 has no process that steps several envs), the processes of one env runner sharing its
CPUs as RLlib's ``gym_env_vectorize_mode: async`` subprocesses share theirs. One iteration is one rollout of
``n_steps = train_batch_size_per_learner / envs`` steps per env and one ``train()``, as ``PPO.learn`` loops.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from rlbench.adapters.base import NEVER_BINDS
from rlbench.adapters.vocabulary import ALGO_TRAINING_KEYS, KeyHandling

if TYPE_CHECKING:
    from rlbench.adapters.base import TrialConfig

#: SB3's rollout steps per env (``PPO(n_steps=2048)``): its batch is this times the env count.
DEFAULT_N_STEPS = 2048

#: PPO's hyperparameters as SB3 2.9 trains with them where the spec sets nothing (``PPO.__init__``'s defaults and
#: ``ActorCriticPolicy``'s network), in the spec's keys; the train batch is ``DEFAULT_N_STEPS`` x envs. SB3 never
#: clips the value loss (``NEVER_BINDS``), has no KL term and reshuffles every epoch.
#: tests/adapters/test_sb3_mapping.py checks it against the installed SB3.
PPO_DEFAULTS: dict[tuple[str, str], Any] = {
    ("training", "lr"): 3e-4,
    ("training", "minibatch_size"): 64,
    ("training", "num_epochs"): 10,
    ("training", "gamma"): 0.99,
    ("training", "lambda"): 0.95,
    ("training", "clip_param"): 0.2,
    ("training", "vf_clip_param"): NEVER_BINDS,
    ("training", "vf_loss_coeff"): 0.5,
    ("training", "entropy_coeff"): 0.0,
    ("training", "grad_clip"): 0.5,
    ("training", "use_kl_loss"): False,
    ("training", "shuffle_batch_per_epoch"): True,
    ("rl_module", "fcnet_hiddens"): [64, 64],
    ("rl_module", "fcnet_activation"): "tanh",
    ("rl_module", "vf_share_layers"): False,
}

#: Training key (YAML) -> ``PPO(...)`` argument: the keys with a faithful SB3 equivalent.
PPO_ARGUMENTS: dict[str, str] = {
    "lr": "learning_rate",
    "minibatch_size": "batch_size",
    "num_epochs": "n_epochs",
    "gamma": "gamma",
    "lambda": "gae_lambda",
    "clip_param": "clip_range",
    "entropy_coeff": "ent_coef",
    "vf_loss_coeff": "vf_coef",
    "grad_clip": "max_grad_norm",
}

#: Every ``training:`` key of PPO in the spec's vocabulary -> what SB3's PPO does with it: mapped (``PPO_ARGUMENTS``,
#: and the batch as ``n_steps``), or refused where it cannot run as the spec means it (:func:`refusals`; the values
#: it does not refuse are what SB3 does anyway). None is ignored: a key silently dropped would make a grid over it
#: measure nothing (tests/adapters/test_key_handling.py sets each one and checks the arguments or the refusal).
PPO_KEYS: dict[str, KeyHandling] = {
    **{key: KeyHandling("mapped", f"PPO({argument}=...)") for key, argument in PPO_ARGUMENTS.items()},
    "train_batch_size_per_learner": KeyHandling("mapped", "PPO(n_steps=batch / envs)"),
    "use_kl_loss": KeyHandling("refused", "true refused (no KL penalty in SB3's loss); false is SB3's loss"),
    "kl_coeff": KeyHandling("refused", "any value refused: SB3's PPO has no KL term"),
    "kl_target": KeyHandling("refused", "any value refused: SB3's PPO has no KL term"),
    "vf_clip_param": KeyHandling("refused", f"below {NEVER_BINDS:g} refused: SB3 does not clip the value loss"),
    "shuffle_batch_per_epoch": KeyHandling("refused", "false refused; true is what SB3 does every epoch"),
}
assert set(PPO_KEYS) == ALGO_TRAINING_KEYS["PPO"], "every PPO key of the vocabulary: mapped or refused"

#: ``rl_module.fcnet_activation`` -> the ``torch.nn`` class SB3's ``activation_fn`` takes.
ACTIVATIONS: dict[str, str] = {"tanh": "Tanh", "relu": "ReLU", "swish": "SiLU", "linear": "Identity"}


def env_count(config: TrialConfig) -> int:
    """Envs the trial steps: ``num_envs_per_env_runner`` in the trial process, or one per env process."""
    runners = config.env_runners
    return max(1, runners.num_env_runners) * runners.num_envs_per_env_runner


def in_subprocesses(config: TrialConfig) -> bool:
    """Whether the envs run in processes of their own (``SubprocVecEnv``), not in the trial process."""
    return config.env_runners.num_env_runners > 0


def train_batch(config: TrialConfig) -> int:
    """Env steps per iteration: the spec's ``train_batch_size_per_learner``, else SB3's 2048 per env."""
    return config.training.train_batch_size_per_learner or DEFAULT_N_STEPS * env_count(config)


def defaults(config: TrialConfig) -> dict[tuple[str, str], Any]:
    """SB3's value of every hyperparameter the spec can name, for this trial (its batch counts its envs)."""
    return {**PPO_DEFAULTS, ("training", "train_batch_size_per_learner"): DEFAULT_N_STEPS * env_count(config)}


def ppo_arguments(config: TrialConfig) -> dict[str, Any]:
    """``PPO(...)``'s keyword arguments for a trial config (plain data; ``policy_kwargs["activation_fn"]`` names
    a ``torch.nn`` class). Keys the spec leaves unset keep SB3's defaults."""
    training = config.training.model_dump(by_alias=True, exclude_none=True)
    out: dict[str, Any] = {"n_steps": train_batch(config) // env_count(config)}
    out.update({PPO_ARGUMENTS[key]: value for key, value in training.items() if key in PPO_ARGUMENTS})
    policy: dict[str, Any] = {}
    module = config.rl_module
    if module.fcnet_hiddens is not None:  # separate policy and value networks, as SB3's (and RLlib's unshared) are
        policy["net_arch"] = {"pi": list(module.fcnet_hiddens), "vf": list(module.fcnet_hiddens)}
    if module.fcnet_activation is not None:
        policy["activation_fn"] = ACTIVATIONS[module.fcnet_activation]
    if policy:
        out["policy_kwargs"] = policy
    return out


#: Env steps a ``--quick`` iteration collects at most (the spec's own when fewer), as whole rollouts of every env.
QUICK_BATCH = 128


def quick_settings(config: TrialConfig) -> dict[tuple[str, str], Any]:
    """``--quick``: the rollout cut to :data:`QUICK_BATCH` env steps, at least 2 per env (n_steps = batch / envs, a
    whole number, and SB3 refuses a rollout buffer of one step), the minibatch (``batch_size``, SB3's default 64)
    kept within it."""
    envs, batch = env_count(config), train_batch(config)
    quick = min(batch, envs * max(2, QUICK_BATCH // envs))
    out: dict[tuple[str, str], Any] = {}
    if quick != config.training.train_batch_size_per_learner:
        out[("training", "train_batch_size_per_learner")] = quick
    if (config.training.minibatch_size or PPO_DEFAULTS[("training", "minibatch_size")]) > quick:
        out[("training", "minibatch_size")] = quick
    return out


def refusals(config: TrialConfig) -> list[tuple[tuple[str, ...], str]]:
    """(key path, why and what to set instead) for every key of a trial config SB3's PPO cannot run as the spec
    means it: refused at load, never dropped or approximated."""
    out: list[tuple[tuple[str, ...], str]] = []

    def refuse(path: tuple[str, ...], why: str) -> None:
        out.append((path, why))

    t, runners, learners = config.training, config.env_runners, config.learners
    if t.use_kl_loss:
        refuse(
            ("training", "use_kl_loss"),
            "an RLlib-only knob: SB3's PPO has no KL penalty in its loss (its "
            "target_kl stops an update early, another rule); set training.use_kl_loss: false on every side",
        )
    for key in ("kl_coeff", "kl_target"):
        if getattr(t, key) is not None:
            refuse(
                ("training", key),
                "SB3's PPO has no KL term for it to weigh: remove it (and set "
                "training.use_kl_loss: false on every side)",
            )
    if t.vf_clip_param is not None and t.vf_clip_param < NEVER_BINDS:
        refuse(
            ("training", "vf_clip_param"),
            "SB3 does not clip the value loss (its clip_range_vf clips the "
            f"change of the value, another rule): remove it, or set {NEVER_BINDS:g} (never binds) on every side",
        )
    if t.shuffle_batch_per_epoch is False:
        refuse(("training", "shuffle_batch_per_epoch"), "SB3 reshuffles the batch every epoch: remove it")
    if t.train_batch_size_per_learner is not None and t.train_batch_size_per_learner % env_count(config):
        refuse(
            ("training", "train_batch_size_per_learner"),
            f"SB3 collects the same steps from each of the "
            f"trial's {env_count(config)} envs (n_steps = batch / envs): set a multiple of {env_count(config)}",
        )
    if config.rl_module.vf_share_layers:
        refuse(
            ("rl_module", "vf_share_layers"),
            "SB3 2.x's MLP policy keeps separate policy and value networks "
            "(no shared hidden layers): set rl_module.vf_share_layers: false on every side",
        )
    if learners.num_learners:
        refuse(("learners", "num_learners"), "SB3 learns in the trial process: set learners.num_learners: 0")
    if learners.num_gpus_per_learner:
        refuse(
            ("learners", "num_gpus_per_learner"),
            "framework sb3 trains on the CPU in rlbench (no GPU mapping yet): set 0",
        )
    if runners.num_gpus_per_env_runner:
        refuse(("env_runners", "num_gpus_per_env_runner"), "SB3's env processes use no GPU: set 0")
    if runners.gym_env_vectorize_mode is not None:
        refuse(
            ("env_runners", "gym_env_vectorize_mode"),
            "an RLlib knob: with framework sb3 num_env_runners "
            "decides (0: every env in the trial process, DummyVecEnv; N: N x num_envs_per_env_runner env "
            "processes, SubprocVecEnv): remove it",
        )
    if runners.rollout_fragment_length not in (None, "auto"):
        refuse(
            ("env_runners", "rollout_fragment_length"),
            "SB3's rollout is train_batch_size_per_learner / envs steps per env (n_steps): remove it or set auto",
        )
    for key in config.reporting.model_fields_set:
        if getattr(config.reporting, key) is not None:
            refuse(("reporting", key), "an SB3 iteration is one rollout and one train(), as PPO.learn loops: remove it")
    return out
