"""``rlbench sweep --address ADDR --parallel N|auto``: several trials at once, each on a node set of its own.

The sweep holds the cluster's nodes as a pool (:class:`NodePool`). Whenever a trial ends, the
scheduler (:func:`rlbench.run.schedule.choose`) picks the waiting trials that fit the free nodes,
each on the fewest whole nodes of one type; each one's plan gets its node set
(:func:`~rlbench.planning.plan.placed`) and its trial process starts as any trial's does, a poll at a
time (:class:`~rlbench.run.trial.TrialRun`), its driver a trial actor on its nodes
(:mod:`rlbench.worker.node_set`). A trial's nodes go back to the pool once none of its processes is
left on them: its own release check, or, for a trial killed from outside (timeout), the sweep's
(:func:`rlbench.run.cluster.release_killed_trial`, in a thread). A node a trial reports lost
(``node_lost``) never goes back. Ctrl-C or SIGTERM stops every running trial cleanly (SIGINT to each,
one grace period for all, then the kill), as one trial at a time is stopped.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from rich.console import Console
from rich.text import Text

from rlbench.measure.machine import ClusterInfo
from rlbench.planning.placement import NodeRoom, Placement, node_rooms, trial_bundles
from rlbench.planning.plan import TrialPlan, placed
from rlbench.results.events_file import ClusterReleaseEvent, NodeLostEvent, RayInitEvent
from rlbench.results.layout import ResultsFolder, TrialFolder
from rlbench.results.records import TrialRecord, write_record
from rlbench.results.text import plain
from rlbench.run.progress import ParallelProgress
from rlbench.run.schedule import NodeHistory, Waiting, choose
from rlbench.run.trial import INTERRUPT_GRACE_S, TrialLauncher, TrialRun

#: What the fork server imports for ``--parallel`` trial processes: rlbench's own modules, never Ray. Ray's C++
#: random IDs come from a per-thread generator that forked children inherit; once the server had drawn one
#: (importing RLlib and torch does), every trial forked from it drew the same ``ObjectID::FromRandom`` sequence,
#: and two trials connecting to one node's object store at once created the same warm-up object: the second
#: died in ``ray.init`` (``Check failed: WarmupStore() ... Seal() called on an object without a reference``,
#: Ray 2.60, measured). Each trial imports Ray itself (0.5 s) and its trainer runs in its actor anyway.
PARALLEL_PRELOAD = ("rlbench.planning.plan", "rlbench.worker.node_set")
#: Seconds between two rounds of polls of the running trials.
POLL_S = 0.2
#: How a trial's reason starts when the nodes it could run on were lost before its turn.
NO_NODES_LEFT = "node lost: no node set that holds it is left"


@dataclass
class ParallelRun:
    """What ``--parallel`` asks of a sweep (or of autoconfig's batches, which keep one across batches)."""

    cluster: ClusterInfo
    """The probed cluster."""
    setting: str
    """``N`` or ``auto``."""
    history: NodeHistory = field(default_factory=NodeHistory)
    """Where its trials ran so far: repeats (and a race's rounds) rotate over nodes across batches too."""

    @property
    def limit(self) -> int | None:
        """At most this many trials at once; None: as many as the free nodes hold."""
        return None if self.setting == "auto" else int(self.setting)

    @property
    def width(self) -> int:
        """How many trials may run at once at most: N, or (auto) the nodes that can hold anything."""
        usable = sum(r.cpus > 0 or r.gpus > 0 for r in node_rooms(self.cluster))
        return max(1, usable if self.limit is None else min(self.limit, usable))


class NodePool:
    """The sweep's view of the cluster's nodes: which a trial holds, which are being released, which were lost."""

    def __init__(self, cluster: ClusterInfo):
        self.rooms = node_rooms(cluster)
        self.held: dict[str, set[str]] = {}
        """Trial id -> the nodes it holds (until its processes are gone from them)."""
        self.lost: set[str] = set()
        """Nodes a trial reported dead: never given again."""

    def free(self) -> list[NodeRoom]:
        """Alive nodes no trial holds, in the probe's order."""
        busy = set().union(*self.held.values()) if self.held else set()
        return [r for r in self.rooms if r.node_id not in busy and r.node_id not in self.lost]

    def take(self, trial_id: str, where: Placement) -> None:
        """``trial_id`` holds ``where``'s nodes from now on."""
        self.held[trial_id] = set(where.node_ids)

    def give_back(self, trial_id: str, lost: list[str]) -> None:
        """``trial_id`` is gone from its nodes; ``lost`` ones of them died."""
        self.held.pop(trial_id, None)
        self.lost |= set(lost)


def run_parallel(
    to_run: list[TrialPlan],
    folder: ResultsFolder,
    records: list[TrialRecord],
    *,
    run: ParallelRun,
    launcher: TrialLauncher,
    console: Console,
    prepare: Callable[[TrialPlan], TrialFolder],
    pyspy: str | None = None,
) -> bool:
    """Run ``to_run`` (plans of a ``--parallel`` sweep, skipped ones included) at most ``run.limit`` at once,
    appending each trial's record to ``records``; True when stopped by Ctrl-C."""
    cluster, limit, history = run.cluster, run.limit, run.history
    pool = NodePool(cluster)
    waiting = [p for p in to_run if p.skip_reason is None]
    running: dict[str, TrialRun] = {}
    releasing: dict[str, tuple[threading.Thread, list[str]]] = {}
    for plan in to_run:  # never started: one record each, as one at a time
        if plan.skip_reason is not None:
            record = TrialRecord(trial_id=plan.trial_id, status="skipped", reason=plan.skip_reason)
            write_record(prepare(plan), record)
            records.append(record)
    interrupted = False
    try:
        with ParallelProgress(console, to_run) as progress:
            while waiting or running or releasing:
                for trial_id, (thread, lost) in list(releasing.items()):
                    if not thread.is_alive():
                        del releasing[trial_id]
                        pool.give_back(trial_id, lost)
                room = None if limit is None else limit - len(running) - len(releasing)
                offered = [Waiting(p.trial_id, str(p.index), trial_bundles(p.demand())) for p in waiting]
                for trial, where in choose(offered, pool.free(), history, room):
                    plan = placed(next(p for p in waiting if p.trial_id == trial.trial_id), where)
                    waiting = [p for p in waiting if p.trial_id != plan.trial_id]
                    history.add(trial.config, where)
                    pool.take(plan.trial_id, where)
                    progress.start(plan)
                    running[plan.trial_id] = TrialRun(
                        plan,
                        prepare(plan),
                        launcher,
                        None,
                        lambda events, plan=plan: progress.poll(plan, events),
                        pyspy=pyspy,
                    )
                if waiting and not running and not releasing:  # nothing runs and nothing fits: nodes were lost
                    for plan in waiting:
                        records.append(_no_nodes_left(prepare(plan), plan, pool))
                    waiting = []
                ended = [trial_id for trial_id, trial_run in running.items() if trial_run.poll(0.0)]
                for trial_id in ended:
                    trial_run = running.pop(trial_id)
                    trial_run.end()
                    record = trial_run.record()
                    records.append(record)
                    progress.finish(trial_run.plan, record)
                    _say(console, trial_run.plan, record)
                    releasing[trial_id] = _release(trial_run, cluster)
                if not ended:
                    time.sleep(POLL_S)
    except KeyboardInterrupt:
        interrupted = True
        _stop_all(running)
        for trial_id, trial_run in list(running.items()):
            running.pop(trial_id)
            trial_run.end()
            records.append(trial_run.record())
    finally:
        for trial_run in running.values():  # an unexpected error: leave nothing behind
            trial_run.kill()
            trial_run.end()
        for thread, _ in releasing.values():
            thread.join()
    return interrupted


def _stop_all(running: dict[str, TrialRun]) -> None:
    """Ctrl-C: ask every running trial to stop cleanly, give them one grace period together, kill the rest
    (at once on a second Ctrl-C)."""
    for run in running.values():
        run.ask_to_stop()
    deadline = time.monotonic() + INTERRUPT_GRACE_S
    with contextlib.suppress(KeyboardInterrupt):
        while time.monotonic() < deadline and not all([run.poll(0.0) for run in running.values()]):
            time.sleep(0.1)
    for run in running.values():
        run.kill()


def _release(run: TrialRun, cluster: ClusterInfo) -> tuple[threading.Thread, list[str]]:
    """The ended trial's nodes go back once none of its processes is left on them: at once when its own release
    check ran (``cluster_release``), else after the sweep's, in a thread (a trial killed from outside)."""
    trial = run.trial
    node_lost, ray_init = trial.event(NodeLostEvent), trial.event(RayInitEvent)
    lost = list(node_lost.node_ids or []) if node_lost is not None else []
    job_id = ray_init.job_id if ray_init is not None else None

    def check() -> None:
        if trial.event(ClusterReleaseEvent) is None and job_id is not None:
            from rlbench.run.cluster import release_killed_trial

            release_killed_trial(cluster.gcs_address, job_id)

    thread = threading.Thread(target=check, name=f"rlbench-release-{run.plan.trial_id}", daemon=True)
    thread.start()
    return thread, lost


def _no_nodes_left(trial: TrialFolder, plan: TrialPlan, pool: NodePool) -> TrialRecord:
    record = TrialRecord(
        trial_id=plan.trial_id,
        status="failed",
        reason=f"{NO_NODES_LEFT} on the cluster (lost during the sweep: "
        f"{', '.join(sorted(n[:12] for n in pool.lost)) or 'none'}); it never started. "
        "Rerun it with --resume --retry-failed once the nodes are back",
    )
    write_record(trial, record)
    return record


def _say(console: Console, plan: TrialPlan, record: TrialRecord) -> None:
    """A trial that did not end ok, or ended ok with a note, said at once (the reason is plain text)."""
    if record.status not in ("ok", "skipped") or (record.status == "ok" and record.reason):
        console.print(Text.assemble((f"{plan.trial_id} {record.status}", "yellow"), ": ", plain(record.reason)))
