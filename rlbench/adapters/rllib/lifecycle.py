"""An RLlib trial's training lifecycle behind rlbench's :class:`~rlbench.adapters.base.Trainer`.

The trial process (:mod:`rlbench.worker.trial`) starts Ray, then asks the adapter for a trainer
and drives it: ``infeasible_reason`` (a placement-group check: RLlib's ``build_algo`` would block
forever on an actor Ray cannot place), ``build``, ``set_threads``, then per iteration ``train``
(timed by the harness) and ``iteration`` (the exact phase times), and ``stop``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from rlbench.adapters.rllib import compat
from rlbench.adapters.rllib.config import build_config, infeasible_reason
from rlbench.adapters.rllib.learner_probe import install_on_learners
from rlbench.adapters.rllib.resources import ASYNC_ALGOS
from rlbench.adapters.rllib.results import iteration_timings, metric_value
from rlbench.adapters.rllib.training import REPLAY_ALGOS
from rlbench.adapters.timings import IterationTimings

if TYPE_CHECKING:
    from rlbench.adapters.base import TrialConfig


class RLlibTrainer:
    """One trial's RLlib algorithm: built from the trial config, trained an iteration at a time."""

    def __init__(self, config: TrialConfig, *, seed: int | None, without: frozenset[str] = frozenset()):
        self.algo_config = build_config(config, seed=seed, without=without)
        self._release = compat.release()
        self._replay = config.algo in REPLAY_ALGOS
        self._asynchronous = config.algo in ASYNC_ALGOS
        self._updates_per_sync = updates_per_sync(self.algo_config) if self._replay else 1
        self.algo: Any = None
        self._result: dict[str, Any] | None = None
        self._facts: dict[str, Any] = {}
        self._deterministic: dict[str, Any] = {}

    def infeasible_reason(self) -> str | None:
        """Why Ray cannot place the trial's actors, or None."""
        return infeasible_reason(self.algo_config)

    def build(self) -> None:
        """``build_algo()`` (2.40: ``build()``): the env runners and learners start here; then torch's deterministic
        mode goes off in each (:func:`torch_as_unseeded`) and the learner probes go in."""
        self.algo = compat.build(self.algo_config)
        self._deterministic = torch_as_unseeded(self.algo)
        install_on_learners(self.algo)

    def set_threads(self, threads: dict[str, int]) -> dict[str, int | None]:
        """Set torch threads in env runners and remote learners; what each role reports back."""
        return set_worker_threads(self.algo, threads)

    def facts(self) -> dict[str, Any]:
        """What the built algorithm looks like (written with the trial's build event): the env
        runners' pids by worker index, the weights PPO broadcasts to them every iteration, and
        ``log_dir``: ``Trainable`` makes a folder in ``~/ray_results`` for every algorithm built
        outside Tune and never removes it (1,296 empty ones on one machine after a few days); the
        sweep removes it, if empty, once the trial is over, killed trials included. ``torch_deterministic``:
        torch's deterministic-algorithms mode in the driver, each remote env runner and each remote learner.
        ``read_paths``: how this release's figures were read (:func:`.compat.paths_taken`); ``framework_config``:
        the config's plain values as this release resolved them (:func:`effective_config`), so a history can say
        which defaults changed between two releases."""
        self._facts = {
            **runner_facts(self.algo),
            "read_paths": compat.paths_taken(),
            "framework_config": effective_config(self.algo_config),
            "log_dir": getattr(self.algo, "logdir", None),
            "torch_deterministic": self._deterministic,
        }
        return self._facts

    def train(self) -> None:
        """One ``algo.train()`` call: one training iteration."""
        self._result = self.algo.train()

    def iteration(self) -> IterationTimings:
        """The last iteration's exact phase times and counts."""
        return IterationTimings(
            **iteration_timings(
                self.algo,
                self._result or {},
                weight_bytes=self._facts.get("weight_bytes"),
                weight_receivers=self._facts.get("weight_receivers", 0),
                replay=self._replay,
                updates_per_sync=self._updates_per_sync,
                asynchronous=self._asynchronous,
                at=self._release,
            )
        )

    def metric(self, name: str) -> float | None:
        """The last iteration's value of a result metric (:data:`~rlbench.adapters.rllib.results.RESULT_METRICS`)."""
        return metric_value(self._result or {}, name)

    def stop(self) -> None:
        """``algo.stop()`` once (the actors go with it)."""
        if self.algo is not None:
            algo, self.algo = self.algo, None
            algo.stop()


def effective_config(algo_config) -> dict[str, Any]:
    """The algorithm config's plain values (numbers, words, flags, None; an enum as its value) as the running release
    resolves them, spec keys and the release's own defaults alike: what ``rlbench history`` compares between
    releases to tell a changed default from a slower release. Non-finite numbers are written as text."""
    import enum
    import math

    out: dict[str, Any] = {}
    for key, value in sorted(algo_config.to_dict().items()):
        if isinstance(value, enum.Enum):
            value = value.value
        if isinstance(value, float) and not math.isfinite(value):
            value = str(value)
        if value is None or isinstance(value, (bool, int, float, str)):
            out[str(key)] = value
    return out


def updates_per_sync(algo_config) -> int:
    """Learner updates between two weight broadcasts of a DQN or SAC training step: RLlib's round-robin weights
    (``calculate_rr_weights``: [store rounds, updates], [1, 1] unless ``training_intensity`` is set)."""
    from ray.rllib.algorithms.dqn.dqn import calculate_rr_weights

    return max(1, int(calculate_rr_weights(algo_config)[1]))


def torch_as_unseeded(algo) -> dict[str, Any]:
    """Turn torch's deterministic-algorithms mode off in the driver, the remote env runners and the remote learners,
    as an unseeded run (a Tune trial's, whose config sets no seed) has it; returns the mode each reports after.

    rlbench seeds every trial (a seed per repeat, docs/MEASUREMENT.md "Seeds"), and RLlib 2.60's seeding of a
    CPU-only torch (``set_torch_seed``) also calls ``torch.use_deterministic_algorithms(True)``, whose checks and
    NaN-filled fresh tensors made an env runner's ``sample()`` cost 3% more CPU a step (CartPole, paired 0.981
    against 0.952 of Tune's runner, docs/MEASUREMENT.md 7). The seed's purpose stays: RNGs seeded as before, and
    the same seed still replays a CPU trial exactly (tests/e2e/test_learning_e2e.py); a CUDA torch build gets no
    such mode from RLlib at all."""

    def unset(_worker=None) -> bool:
        import torch

        torch.use_deterministic_algorithms(False)
        return torch.are_deterministic_algorithms_enabled()

    out: dict[str, Any] = {"driver": unset()}  # the driver's learner and local env runner
    group = algo.env_runner_group
    if group is not None and group.num_remote_env_runners() > 0:
        got = compat.foreach_env_runner(group, lambda w: (w.worker_index, unset()), local_env_runner=False)
        out["env_runners"] = {str(index): mode for index, mode in got}
    learners = algo.learner_group
    if learners is not None and not learners.is_local:
        out["learners"] = [r.get() for r in learners.foreach_learner(unset) if r.ok]
    return out


def set_worker_threads(algo, threads: dict[str, int]) -> dict[str, int | None]:
    """Set torch threads in env runners and remote learners; return what each role reports back.
    A role missing from ``threads`` keeps what it has and only reports it."""
    import torch

    def setter(n: int | None):
        def apply(_worker) -> int:
            import torch as t

            if n is not None:
                t.set_num_threads(n)
            return t.get_num_threads()

        return apply

    observed: dict[str, int | None] = {"driver": torch.get_num_threads(), "learner": None, "env_runner": None}
    group = algo.env_runner_group
    if group is not None and group.num_remote_env_runners() > 0:
        got = compat.foreach_env_runner(group, setter(threads.get("env_runner")), local_env_runner=False)
        observed["env_runner"] = min(got) if got else None
    learner_group = algo.learner_group
    if learner_group is not None and not learner_group.is_local:
        got = learner_group.foreach_learner(setter(threads.get("learner")))
        values = [r.get() for r in got if r.ok]
        observed["learner"] = min(values) if values else None
    else:
        observed["learner"] = observed["driver"]
    if observed["env_runner"] is None:
        observed["env_runner"] = observed["driver"]  # sampling happens in the driver's local runner
    return observed


def _module_weights(worker) -> tuple[int, int, int]:
    """(pid, parameter count, bytes of its state) of an env runner's RLModule: the inference-only
    module whose state PPO broadcasts (buffers included; bytes are each tensor's count x dtype size)."""
    import os

    module = worker.module
    params = sum(p.numel() for p in module.parameters()) if module is not None else 0
    size = sum(t.numel() * t.element_size() for t in module.state_dict().values()) if module is not None else 0
    return os.getpid(), int(params), int(size)


def runner_facts(algo) -> dict[str, Any]:
    """``env_runner_pids`` (worker index -> pid), ``weight_params`` and ``weight_bytes`` (one copy of
    the broadcast weights) and ``weight_receivers`` (remote env runners: each gets a copy from the
    object store every iteration; the driver's own local runner is updated in-process and is not
    counted)."""
    group = algo.env_runner_group
    if group is None:
        return {}
    remote = group.num_remote_env_runners()

    def describe(worker):
        return (worker.worker_index, *_module_weights(worker))

    found = compat.foreach_env_runner(group, describe, local_env_runner=remote == 0)
    if not found:
        return {"weight_receivers": remote}
    pids = {str(index): pid for index, pid, _, _ in found}
    _, _, params, size = max(found, key=lambda f: f[3])
    return {"env_runner_pids": pids, "weight_params": params, "weight_bytes": size, "weight_receivers": remote}
