"""The one role classifier: which part of a trial (or of a servebench run) a process is, from its command line, or
why it is none of them (standard library only: the fork server, the samplers and the studies read it).

Every adapter (and servebench) gives its rules as data (:class:`RoleRules`: its titles, its markers, whether a Ray
runtime runs beside it); the rules Ray's own processes follow are here once, the same for every user:

1. the trial process itself is the ``driver``;
2. a title or marker the rules name: that role (a framework's actor, ``ray::SingleAgentEnvRunner``; a server's
   module on its command line);
3. with a Ray runtime, a Ray worker that is no actor yet (titled ``ray::IDLE``, or still its interpreter running
   ``default_worker.py`` before it sets a title) is ``ray_system`` *for now*: the raylet starts and pools workers
   of its own, and one becomes an actor only once it is leased to one (Ray titles it ``ray::IDLE`` while it imports
   the actor's class: measured 6-7 s at 25-47% of a core for APPO's aggregator on 2 busy cores), so it is read
   again until it settles (:attr:`Role.settled`), and when it takes an actor's title its rows take that role;
4. with a Ray runtime, Ray's own processes (GCS, raylet, agents, monitors: :data:`RAY_SYSTEM_MARKERS`, or a script
   under Ray's package) and its agents' titles (:data:`RAY_SYSTEM_TITLES`) are ``ray_system`` (Ray's process facts,
   the one copy: :mod:`rlbench.ray_facts.processes`);
5. anything else is ``other``, with why (what it is, as far as its command line says), read again in case it
   is a child not yet exec'd or a process about to take its title.
"""

from __future__ import annotations

from dataclasses import dataclass

from rlbench.ray_facts.processes import (
    RAY_IDLE_TITLE,
    RAY_SYSTEM_MARKERS,
    RAY_SYSTEM_TITLES,
    RAY_TITLE_PREFIX,
    RAY_WORKER_SCRIPTS,
)

#: The script a Ray worker's interpreter runs before it sets a title (Ray's process facts: rlbench.ray_facts).
RAY_WORKER_SCRIPT = RAY_WORKER_SCRIPTS[0]


@dataclass(frozen=True)
class Role:
    """What a process is, and how sure: the one classifier's answer."""

    name: str
    """The role (``driver``, the rules' roles, ``ray_system``, ``other``)."""
    why: str | None = None
    """Why it has this role where no title or marker names it (``other``, or a Ray worker that is no actor yet);
    None when its title or its command line names it."""
    settled: bool = True
    """False while it may still change: the sampler reads the process again and relabels its rows when it does."""


@dataclass(frozen=True)
class RoleRules:
    """How one kind of run names its processes."""

    titles: tuple[tuple[str, str], ...]
    """Title prefix (``cmdline()[0]``) -> role, first match wins: the framework's actors and processes."""
    markers: tuple[tuple[str, str], ...] = ()
    """Substring of one of the first 4 arguments -> role (a server started as ``python -m module``)."""
    ray: bool = False
    """A Ray runtime runs beside the trial: Ray's own processes are ``ray_system`` (rules 3 and 4)."""

    @property
    def roles(self) -> tuple[str, ...]:
        """Every role these rules can give, in order: ``driver``, the titles' and markers' roles, ``ray_system``
        (with Ray), ``other``."""
        named = [role for _, role in (*self.titles, *self.markers)]
        return tuple(dict.fromkeys(["driver", *named, *(["ray_system"] if self.ray else []), "other"]))


def classify(cmdline: list[str], *, is_driver: bool, rules: RoleRules) -> Role:
    """The role of one process, from its command line (Ray and the frameworks set it as the title)."""
    if is_driver:
        return Role("driver")
    title = cmdline[0].strip() if cmdline else ""
    for prefix, role in rules.titles:
        if title.startswith(prefix):
            return Role(role)
    head = cmdline[:4]
    for marker, role in rules.markers:
        if any(marker in arg for arg in head):
            return Role(role)
    if rules.ray:
        if title.startswith(RAY_IDLE_TITLE) or any(RAY_WORKER_SCRIPT in arg for arg in head):
            what = "pooled, titled ray::IDLE" if title.startswith(RAY_IDLE_TITLE) else "starting, not yet titled"
            return Role("ray_system", f"a Ray worker that is no actor yet ({what})", settled=False)
        if title.startswith(RAY_SYSTEM_TITLES) or any(m in arg for m in RAY_SYSTEM_MARKERS for arg in head[:3]):
            return Role("ray_system")
        if any("/ray/" in arg for arg in head[:2]):
            return Role("ray_system", "a script under Ray's package")
    shown = " ".join(cmdline)[:120] if cmdline else "(no command line: a zombie or a kernel thread)"
    if title.startswith(RAY_TITLE_PREFIX):
        return Role("other", f"an actor these rules do not name: {shown}", settled=False)
    return Role("other", f"no rule names it: {shown}", settled=False)
