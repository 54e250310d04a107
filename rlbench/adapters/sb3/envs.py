"""One SB3 env as rlbench makes it: the spec's env (:func:`rlbench.adapters.envs.make_env`, as every adapter's)
in SB3's ``Monitor`` (its episode returns), and, in an env process of ``SubprocVecEnv``, that process titled
:data:`ENV_RUNNER_TITLE` and its torch threads set: the samplers read a process's role from its title, as Ray's
``ray::SingleAgentEnvRunner`` gives RLlib's."""

from __future__ import annotations

from typing import Any

#: The title of an SB3 env process (its role: ``env_runner``).
ENV_RUNNER_TITLE = "rlbench::SB3EnvRunner"


class EnvFactory:
    """A picklable ``() -> env`` for SB3's vec envs (``SubprocVecEnv`` calls it in the env process)."""

    def __init__(
        self, env: str, env_config: dict[str, Any], *, env_process: bool = False, torch_threads: int | None = None
    ):
        self.env = env
        self.env_config = dict(env_config)
        self.env_process = env_process
        self.torch_threads = torch_threads

    def __call__(self) -> Any:
        from stable_baselines3.common.monitor import Monitor

        from rlbench.adapters.envs import make_env

        threads = None
        if self.env_process:
            import setproctitle
            import torch  # SB3's env worker has imported it already

            setproctitle.setproctitle(ENV_RUNNER_TITLE)
            if self.torch_threads:
                torch.set_num_threads(self.torch_threads)
            threads = torch.get_num_threads()
        env = Monitor(make_env(self.env, self.env_config))
        env.rlbench_torch_threads = threads  # read back by the trainer (``get_attr``)
        return env
