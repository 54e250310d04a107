"""An SB3 PPO trial behind rlbench's :class:`~rlbench.adapters.base.Trainer`: ``PPO.learn``'s loop, one
iteration per :meth:`SB3Trainer.train` (``_setup_learn`` once at build, then ``collect_rollouts`` and ``train``
timed apart, as ``OnPolicyAlgorithm.learn`` calls them; its logging, ``dump_logs``, is left out: it prints
nothing at ``verbose=0`` and its ``time/fps`` counts from the start, SB3#1597)."""

from __future__ import annotations

import math
import multiprocessing
import os
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from rlbench.adapters.sb3.envs import EnvFactory
from rlbench.adapters.sb3.mapping import env_count, in_subprocesses, ppo_arguments, train_batch
from rlbench.adapters.sb3.timing import IterationClock, timed_vec_env
from rlbench.adapters.timings import IterationTimings

if TYPE_CHECKING:
    from rlbench.adapters.base import TrialConfig

#: ``_setup_learn``'s total: learning never ends by SB3's count (rlbench's ``stop:`` decides); the progress
#: SB3 derives from it moves only schedules, and rlbench's values are constants.
TOTAL_TIMESTEPS = 1 << 62

#: What the env processes' fork server imports once (SB3's env worker and rlbench's env factory).
PRELOAD = ["stable_baselines3.common.vec_env.subproc_vec_env", "rlbench.adapters.sb3.envs", "setproctitle"]


class SB3Trainer:
    """One trial's SB3 PPO, built from the trial config, trained an iteration at a time."""

    def __init__(
        self,
        config: TrialConfig,
        *,
        seed: int | None,
        threads: dict[str, int],
        clock: Callable[[], float] | None = None,
    ):
        self.config = config
        self.seed = seed
        self.threads = threads
        self.timer = IterationClock(clock) if clock else IterationClock()
        self.arguments = ppo_arguments(config)
        self.model: Any = None
        self.venv: Any = None
        self._callback: Any = None
        self._last: dict[str, float] = {}

    def infeasible_reason(self) -> str | None:
        return None  # no runtime places anything; what SB3 cannot run is refused when the spec loads

    def build(self) -> None:
        """The vec env (its env processes start here) and ``PPO``, then ``_setup_learn`` (the first reset)."""
        import torch
        from stable_baselines3 import PPO
        from stable_baselines3.common.vec_env import DummyVecEnv, SubprocVecEnv

        env = self.config.environment
        n = env_count(self.config)
        if in_subprocesses(self.config):
            factories = [
                EnvFactory(env.env, env.env_config, env_process=True, torch_threads=self.threads.get("env_runner"))
                for _ in range(n)
            ]
            # SB3's default start method (forkserver), its server importing SB3 once for all env processes (else
            # each imports torch and SB3 itself: 4 env processes built in 12 s instead of about 4 on 2 busy cores);
            # the env processes' BLAS pools as Ray sizes an actor's
            multiprocessing.set_forkserver_preload(PRELOAD)
            saved = os.environ.get("OMP_NUM_THREADS")
            os.environ["OMP_NUM_THREADS"] = str(self.threads.get("env_runner") or 1)
            try:
                self.venv = SubprocVecEnv(factories)
            finally:
                if saved is None:
                    del os.environ["OMP_NUM_THREADS"]
                else:
                    os.environ["OMP_NUM_THREADS"] = saved
        else:
            self.venv = DummyVecEnv([EnvFactory(env.env, env.env_config) for _ in range(n)])
        arguments = dict(self.arguments)
        policy = dict(arguments.pop("policy_kwargs", {}))
        if "activation_fn" in policy:
            policy["activation_fn"] = getattr(torch.nn, policy["activation_fn"])
        self.attach(
            PPO(
                "MlpPolicy",
                timed_vec_env(self.venv, self.timer),
                seed=self.seed,
                device="cpu",
                verbose=0,
                policy_kwargs=policy or None,
                **arguments,
            )
        )

    def attach(self, model: Any) -> None:
        """Time ``model``'s policy and set its loop up as ``learn`` does (``_setup_learn``: the first reset;
        ``on_training_start``). Its env must be wrapped by :func:`~.timing.timed_vec_env` on this trainer's
        clock; the tests attach a model of their own on a fake clock."""
        from stable_baselines3.common.logger import Logger

        # SB3's default logger, even silent (verbose=0), makes an empty folder tempdir/SB3-<date> per model: one
        # stray folder per trial. A logger with no outputs keeps its records in memory and writes nothing.
        model.set_logger(Logger(folder=None, output_formats=[]))
        self.model = model
        self.timer.hook(model.policy)
        self.timer.hook_learner(model)
        _, self._callback = model._setup_learn(TOTAL_TIMESTEPS, None, True, "rlbench", False)
        self._callback.on_training_start(locals(), globals())

    def set_threads(self, threads: dict[str, int]) -> dict[str, int | None]:
        """torch threads in the trial process (inference and learning) as set; the env processes' as they
        report them (set when they started)."""
        import torch

        if threads.get("driver"):
            torch.set_num_threads(threads["driver"])
        driver = torch.get_num_threads()
        runner = driver
        if in_subprocesses(self.config):
            got = [t for t in self.venv.get_attr("rlbench_torch_threads") if t is not None]
            runner = min(got) if got else None
        return {"driver": driver, "learner": driver, "env_runner": runner}

    def facts(self) -> dict[str, Any]:
        """The env processes' pids (one env runner per process), the vec env, and SB3's arguments as passed."""
        facts: dict[str, Any] = {
            "weight_receivers": 0,
            "vec_env": type(self.venv).__name__,
            "num_envs": env_count(self.config),
            "sb3_arguments": self.arguments,
        }
        if in_subprocesses(self.config):
            facts["env_runner_pids"] = {str(i + 1): p.pid for i, p in enumerate(self.venv.processes)}
        return facts

    def train(self) -> None:
        """One iteration: a rollout of ``n_steps`` per env (GAE at its end), then ``train()``."""
        model, timer = self.model, self.timer
        timer.reset()
        t0 = timer.clock()
        if not model.collect_rollouts(model.env, self._callback, model.rollout_buffer, n_rollout_steps=model.n_steps):
            raise RuntimeError("SB3's rollout was stopped by a callback")  # rlbench installs none that stops
        t1 = timer.clock()
        model._update_current_progress_remaining(model.num_timesteps, TOTAL_TIMESTEPS)
        model.train()
        t2 = timer.clock()
        self._last = {"sample_s": t1 - t0, "learn_s": t2 - t1}

    def iteration(self) -> IterationTimings:
        """The last iteration's split: ``sync_s`` 0 (the policy that acts is the one that learns: nothing is
        sent), ``sample_other_s`` the rollout less env steps and forward passes (GAE, the buffer, values of last
        and truncated observations); ``train()`` split into minibatches handed out, minibatch steps and the rest
        (the loss statistics SB3 logs, the explained variance)."""
        timer, batch = self.timer, train_batch(self.config)
        sample_s, learn_s = self._last.get("sample_s", 0.0), self._last.get("learn_s", 0.0)
        minibatch = self.model.batch_size
        return IterationTimings(
            env_steps_sampled=batch,
            sample_s=sample_s,
            learn_s=learn_s,
            sync_s=0.0,
            learn_batch_s=timer.learn_batch_s,
            learn_update_s=timer.learn_update_s,
            learn_batches=1.0,
            learn_other_s=learn_s - timer.learn_batch_s - timer.learn_update_s,
            env_step_s=timer.env_step_s,
            inference_s=timer.inference_s,
            sample_other_s=sample_s - timer.env_step_s - timer.inference_s,
            weight_sync_s=0.0,
            sync_bytes=0,
            env_steps_trained=batch,
            episode_return_mean=timer.return_mean(),
            training_steps=1,
            learner_updates=1.0,
            sgd_steps=float(self.model.n_epochs * math.ceil(batch / minibatch)),
        )

    def metric(self, name: str) -> float | None:
        """The last iteration's value of :data:`~rlbench.adapters.sb3.SB3_METRICS` ``name``; None when no
        episode ended for an episode metric."""
        timer, name = self.timer, name.removeprefix("env_runners/")
        if name == "num_episodes":
            return float(len(timer.returns))
        if name == "num_env_steps_sampled_lifetime":
            return float(self.model.num_timesteps) if self.model is not None else None
        values: dict[str, Sequence[float]] = {"episode_return": timer.returns, "episode_len": timer.lengths}
        reducers: tuple[tuple[str, Callable[[Sequence[float]], float]], ...] = (
            ("_mean", lambda v: sum(v) / len(v)),
            ("_min", min),
            ("_max", max),
        )
        for prefix, reduce in reducers:
            stem = name.removesuffix(prefix)
            if stem != name and stem in values:
                return float(reduce(values[stem])) if values[stem] else None
        return None

    def stop(self) -> None:
        """Close the vec env (its env processes exit) once."""
        if self.venv is not None:
            venv, self.venv = self.venv, None
            venv.close()
