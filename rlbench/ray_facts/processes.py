"""How Ray's own processes are named, the one copy (standard library only): what the one role classifier
(:mod:`rlbench.adapters.roles`), the cluster's node samplers (:mod:`rlbench.worker.node_sampler`) and the foreign-CPU
rule (:mod:`rlbench.worker.foreign`) read. Read off Ray 2.60.0's process titles and command lines (``ps`` on a trial's
runtime and on a cluster's nodes, 2026-11); a Ray that renames one shows up in the roles tests.
"""

from __future__ import annotations

import re

#: The prefix of every Ray worker's title (an actor's ``ray::SingleAgentEnvRunner``, a pooled one's ``ray::IDLE``).
RAY_TITLE_PREFIX = "ray::"

#: Titles of the raylet's agents (children of the raylet): Ray's own, ``ray_system``.
RAY_SYSTEM_TITLES: tuple[str, ...] = ("ray::DashboardAgent", "ray::RuntimeEnvAgent")

#: Substrings of a Ray system process's command line (its first 3 arguments) -> ``ray_system``.
RAY_SYSTEM_MARKERS: tuple[str, ...] = (
    "gcs_server",
    "raylet",
    "autoscaler/_private/monitor.py",
    "dashboard/dashboard.py",
    "_private/log_monitor.py",
    "dashboard/agent.py",
    "runtime_env/agent/main.py",
)

#: A Ray worker that is no actor yet: its title while pooled.
RAY_IDLE_TITLE = "ray::IDLE"

#: The scripts a Ray worker runs before it sets a title (it is starting: the node's pool). The classifier reads the
#: first (a worker's interpreter running it), the foreign-CPU rule both (``setup_worker.py`` sets up a runtime env).
RAY_WORKER_SCRIPTS: tuple[str, ...] = ("_private/workers/default_worker.py", "setup_worker.py")

#: A Ray process's node, as its command line names it (``--node_id=<hex>`` or ``--node-id=<hex>``).
NODE_ID = re.compile(r"--node[-_]id=([0-9a-fA-F]+)")
