"""Isolation measured: the CPU that processes other than the trial's and Ray's own used on a trial's node.

A node sampler (:mod:`rlbench.worker.node_sampler`) reads every process of its machine. What is
neither the trial's (its job's actors, the sampler, the trial's own process on the submitting
machine) nor Ray's own (the node's raylet, agents and session processes; a worker that is idle or
starting, ``ray::IDLE``, is the node's pool) is *foreign*:

- a Ray worker under this node's raylet that runs another job's actor or task (``ray::<name>``);
- on the one node of a machine that owns the machine's unnamed processes
  (:func:`~rlbench.worker.node_sampler.unnamed_owners`), any other process with a command line: a stray
  job, another Ray cluster's processes, a user's shell loop. Kernel threads (no command line) are the
  machine's own and are left out. Where several nodes share a machine (the tests), the processes under
  another node's raylet are that node's, and the machine's unnamed ones are counted only by their owner.

:class:`ForeignCpu` adds up each foreign process's CPU time from its first to its last reading while the
sampler ran (user + system ticks from ``/proc/<pid>/stat``, exact to a clock tick); a process that
started and ended between two readings is missed, so the sum is a lower bound. Standard library only.
"""

from __future__ import annotations

from collections.abc import Iterable

from rlbench.ray_facts.processes import NODE_ID, RAY_IDLE_TITLE, RAY_TITLE_PREFIX, RAY_WORKER_SCRIPTS


def _tree(procs: list[tuple[int, int, list[str]]], roots: set[int]) -> set[int]:
    """``roots`` and every process below them."""
    children: dict[int, list[int]] = {}
    for pid, ppid, _ in procs:
        children.setdefault(ppid, []).append(pid)
    out, todo = set(), [p for p in roots]
    while todo:
        pid = todo.pop()
        if pid not in out:
            out.add(pid)
            todo += children.get(pid, [])
    return out


def foreign_pids(
    procs: Iterable[tuple[int, int, list[str]]],
    *,
    node_id: str,
    cluster_nodes: Iterable[str],
    session_name: str,
    owns_unnamed: bool,
    ours: Iterable[int],
    exclude_trees: Iterable[int],
    system_titles: Iterable[str],
) -> dict[int, str]:
    """pid -> title of the foreign processes of ``node_id`` among ``procs`` ((pid, ppid, cmdline) of its
    machine), by the rules of this module. ``ours``: the trial's processes on the node (its job's actors, the
    sampler); ``exclude_trees``: processes that with all below them are the trial's own here (its process on
    the submitting machine, when that machine is this node's); ``cluster_nodes``: every node id of the cluster
    (a process naming another id belongs to another Ray, a stray)."""
    procs = list(procs)
    nodes = set(cluster_nodes)
    titles = (RAY_IDLE_TITLE, *system_titles)
    node_of: dict[int, str] = {}
    for pid, _, cmdline in procs:
        named = NODE_ID.search(" ".join(cmdline))
        if cmdline and not cmdline[0].startswith(RAY_TITLE_PREFIX) and named and named.group(1) in nodes:
            node_of[pid] = named.group(1)
    mine = set(ours) | _tree(procs, set(exclude_trees))
    out: dict[int, str] = {}
    for pid, ppid, cmdline in procs:
        if not cmdline or pid in mine or pid in node_of:
            continue
        title = cmdline[0].strip()
        parent_node = node_of.get(ppid)
        if parent_node is not None:  # a worker (or agent) of one of the cluster's raylets: that node's
            if parent_node == node_id and title.startswith(RAY_TITLE_PREFIX) and not title.startswith(titles):
                out[pid] = title
            continue
        joined = " ".join(cmdline)
        if (session_name and session_name in joined) or any(mark in joined for mark in RAY_WORKER_SCRIPTS):
            continue  # the cluster session's own processes, a worker starting
        if owns_unnamed:
            out[pid] = title[:200]
    return out


class ForeignCpu:
    """CPU seconds of foreign processes between their first and last reading (see the module)."""

    def __init__(self) -> None:
        self._seen: dict[tuple[int, int], list] = {}
        """(pid, start ticks) -> [title, first cpu_s, last cpu_s]."""
        self._dropped: set[int] = set()

    def read(self, pid: int, start_ticks: int, cpu_s: float, title: str) -> None:
        """One reading of a foreign process (its CPU seconds since it started)."""
        if pid in self._dropped:
            return
        entry = self._seen.get((pid, start_ticks))
        if entry is None:
            self._seen[(pid, start_ticks)] = [title, cpu_s, cpu_s]
        else:
            entry[2] = cpu_s

    def drop(self, pid: int) -> None:
        """``pid`` turned out to be the trial's (an actor the GCS listed late): none of its time is foreign."""
        self._dropped.add(pid)
        for key in [k for k in self._seen if k[0] == pid]:
            del self._seen[key]

    def processes(self) -> list[dict]:
        """Each foreign process read at least twice with CPU time used between: ``pid``, ``title``, ``cpu_s``."""
        return [
            {"pid": pid, "title": title, "cpu_s": last - first}
            for (pid, _), (title, first, last) in sorted(self._seen.items())
            if last > first
        ]

    @property
    def cpu_s(self) -> float:
        """Their CPU seconds together."""
        return sum(p["cpu_s"] for p in self.processes())
