"""Process roles of an RLlib trial, from the titles Ray and RLlib give their processes (standard library only).

The samplers read each process's title (``cmdline()[0]``) once: Ray sets ``ray::<ActorClass>``
(``.method`` while a call runs) in every worker; its system processes are recognised by their
command lines. Measured on Ray 2.60 (tests/adapters/test_rllib_roles.py pins them).
"""

from __future__ import annotations

#: Title prefix (``cmdline()[0]`` of a Ray worker) -> role.
RAY_TITLE_ROLES: dict[str, str] = {
    "ray::SingleAgentEnvRunner": "env_runner",
    "ray::MultiAgentEnvRunner": "env_runner",
    "ray::_WrappedExecutable": "learner",
    "ray::AggregatorActor": "aggregator",
    "ray::EnvRunnerStateServer": "state_server",
    "ray::DashboardAgent": "ray_system",
    "ray::RuntimeEnvAgent": "ray_system",
}


#: Substrings of a system process's command line -> role ``ray_system``.
RAY_SYSTEM_MARKERS: tuple[str, ...] = (
    "gcs_server",
    "raylet",
    "autoscaler/_private/monitor.py",
    "dashboard/dashboard.py",
    "_private/log_monitor.py",
    "dashboard/agent.py",
    "runtime_env/agent/main.py",
)


#: ``aggregator``: APPO/IMPALA's aggregator actors (episodes -> train batches, 1 CPU each);
#: ``state_server``: the actor APPO/IMPALA's env runners pull weights and connector states from (0 CPUs).
ROLES: tuple[str, ...] = ("driver", "learner", "env_runner", "aggregator", "state_server", "ray_system", "other")


def classify_process(cmdline: list[str], *, is_driver: bool) -> str:
    """The role of one process of a trial's tree, from its command line (Ray sets it as the title)."""
    if is_driver:
        return "driver"
    title = (cmdline[0].strip() if cmdline else "")
    for prefix, role in RAY_TITLE_ROLES.items():
        if title.startswith(prefix):
            return role
    joined = " ".join(cmdline[:3])
    if any(marker in joined for marker in RAY_SYSTEM_MARKERS):
        return "ray_system"
    return "other"
