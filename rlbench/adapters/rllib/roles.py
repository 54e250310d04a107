"""Process roles of an RLlib trial: the titles Ray gives RLlib's actors (standard library only).

Ray sets ``ray::<ActorClass>`` (``.method`` while a call runs) as every worker's title; the samplers read it
(``cmdline()[0]``). Ray's own processes and its workers that are no actor yet are the one classifier's rules
(:mod:`rlbench.adapters.roles`), the same for servebench. Measured on Ray 2.60 (tests/adapters/test_rllib_roles.py
pins them).
"""

from __future__ import annotations

from rlbench.adapters.roles import RoleRules

#: Title prefix (``cmdline()[0]`` of a Ray worker) -> role; ``aggregator``: APPO/IMPALA's aggregator actors
#: (episodes -> train batches, 1 CPU each); ``state_server``: the actor APPO/IMPALA's env runners pull weights and
#: connector states from (0 CPUs). In the order the roles are reported (the tables' columns).
RAY_TITLE_ROLES: dict[str, str] = {
    "ray::_WrappedExecutable": "learner",
    "ray::SingleAgentEnvRunner": "env_runner",
    "ray::MultiAgentEnvRunner": "env_runner",
    "ray::AggregatorActor": "aggregator",
    "ray::EnvRunnerStateServer": "state_server",
}

#: How an RLlib trial's processes are named: its actors' titles, beside a Ray runtime.
ROLE_RULES = RoleRules(titles=tuple(RAY_TITLE_ROLES.items()), ray=True)
