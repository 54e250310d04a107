"""A trial's ``events.jsonl`` as it is read back: one pydantic model per event kind whose fields a reader reads.

The trial writes the events (:mod:`rlbench.worker.events`, the names: :class:`~rlbench.results.events.Event`); the
sweep, the resume, the tables and the analysis read them through :func:`read_events` and :class:`EventTail`, never
as raw dicts (tests/test_architecture.py checks). A results folder may come from elsewhere, damaged or hostile, so
reading never fails (:class:`~rlbench.results.file_record.FileRecord`): a line that is no JSON object is dropped,
as a torn last line is; a value not of its field's type reads as its default (None); an event of a kind no model
names, or whose fields no reader reads, reads as a plain :class:`TrialEvent`. Fields: docs/SCHEMA.md.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, TypeVar

from pydantic import ConfigDict

from rlbench.results import files
from rlbench.results.events import Event
from rlbench.results.file_record import FileRecord, Number, Rows

E = TypeVar("E", bound="TrialEvent")


class TrialEvent(FileRecord):
    """Any event: its name and time; an event of a kind below reads as its model."""

    event: str = ""
    """Its name (:class:`~rlbench.results.events.Event`); "" when it has none."""
    t_s: Number | None = None
    """Seconds since the trial was launched, when it was written."""


class StartEvent(TrialEvent):
    """``start``: the trial process, first."""

    pid: int | None = None
    """Its pid."""
    start_ticks: int | None = None
    """Its start time in clock ticks since boot (``/proc/PID/stat``): with the pid, names the process."""


class RayInitEvent(TrialEvent):
    """``ray_init``: the runtime is up."""

    ray_init_s: Number | None = None
    """Seconds ``ray.init`` took."""
    session_dir: str | None = None
    """The trial's private Ray session folder (None on a cluster)."""
    job_id: str | None = None
    """On a cluster: the trial's Ray job."""


class VersionsEvent(TrialEvent):
    """``versions``: what the trial's process imported."""

    versions: dict[str, str | None] | None = None
    """Package -> version (None: not installed)."""


class BuildEvent(TrialEvent):
    """``build``: the algorithm is built (the trainer's other facts are not read back)."""

    build_s: Number | None = None
    """Seconds building took."""
    torch_threads: dict[str, int | None] | None = None
    """Role -> torch threads it was given (None: left to torch)."""
    log_dir: str | None = None
    """The framework's log folder (removed with the trial's leftovers)."""
    weight_params: int | None = None
    """Parameters of the model the env runners hold (what is broadcast)."""
    weight_bytes: int | None = None
    """Bytes of its state."""
    weight_receivers: int | None = None
    """Remote env runners, each sent a copy every sync."""
    read_paths: dict[str, Any] | None = None
    """A history trial: how each figure was read from that release's results."""
    framework_config: dict[str, Any] | None = None
    """A history trial: the release's config values that differ between releases."""


class IterationEvent(TrialEvent):
    """``iteration``: one training iteration. The fields below are the ones read by name; the rest (the trainer's
    ``IterationTimings``, one per iterations.parquet column) are kept as written and typed where they become that
    table (``results/tables.py``, ``ITERATION_SCHEMA``)."""

    model_config = ConfigDict(extra="allow")

    iteration: int | None = None
    """Its number, from 1."""
    warmup: bool | None = None
    """Whether it is a warm-up iteration (left out of the steady figures)."""
    window: int | None = None
    """A warm trial: the measured window it belongs to."""
    t_start_s: Number | None = None
    """When it started, seconds since launch."""
    t_end_s: Number | None = None
    """When it ended."""
    wall_s: Number | None = None
    """Its wall seconds."""
    runners: Rows[dict[str, Any]] | None = None
    """Per env runner: its own timings (runner_iterations rows)."""

    def column(self, name: str) -> Any:
        """The value of iterations.parquet column ``name`` as written (None when not written)."""
        return getattr(self, name) if name in type(self).model_fields else (self.model_extra or {}).get(name)


class WindowEndEvent(TrialEvent):
    """``window_end``: a warm trial's measured window ended."""

    window: int | None = None
    """The window's index."""
    iterations: int | None = None
    """Its steady iterations."""
    wall_s: Number | None = None
    """Their walls summed."""
    waited_s: Number | None = None
    """Idle before its gate opened."""


class TargetReachedEvent(TrialEvent):
    """``target_reached``: an iteration reached the stop target."""

    iteration: int | None = None
    """That iteration."""


class NodeLostEvent(TrialEvent):
    """``node_lost``: a ``--parallel`` trial's node died."""

    node_ids: list[str] | None = None
    """The dead nodes."""


class NodeSamplingEvent(TrialEvent):
    """``node_sampling``: the node samplers' summary, on a cluster."""

    nodes: Rows[dict[str, Any]] = []
    """Per node: ``node_id``, ``node_ip``, its ``actors`` (role, pid), ``foreign_cpu_s``, ``sampled_s``."""


class SkippedEvent(TrialEvent):
    """``skipped``: the trainer cannot run the config."""

    reason: str | None = None
    """Why."""


class ErrorEvent(TrialEvent):
    """``error``: the trial raised."""

    error: str | None = None
    """``Type: message`` of the exception."""


class EndEvent(TrialEvent):
    """``end``: the trial process, last."""

    status: str | None = None
    """ok, skipped, interrupted or failed."""


class ShutdownEvent(TrialEvent):
    """``shutdown``: the trainer and its runtime stopped."""

    shutdown_s: Number | None = None
    """Seconds stopping took."""


class ClusterReleaseEvent(TrialEvent):
    """``cluster_release``: the trial's own release check on a cluster."""

    processes_killed: list[Any] | None = None
    """The trial's processes it found left and killed."""


class ProfileEvent(TrialEvent):
    """``profile``: the sweep's profiler, after the trial."""

    status: str | None = None
    """ok, partial, unavailable or not started."""
    note: str | None = None
    """Why not ok."""
    t_start_s: Number | None = None
    """When profiling started, seconds since launch."""
    t_stop_s: Number | None = None
    """When it stopped."""
    cpu_s: Number | None = None
    """CPU seconds of the processes profiled."""
    processes: Rows[dict[str, Any]] = []
    """Per process profiled: its role, pid, ``status``, ``error``, ``cpu_s``."""


#: The model of each kind read back; any other kind reads as a :class:`TrialEvent`.
KINDS: dict[str, type[TrialEvent]] = {
    Event.START: StartEvent,
    Event.RAY_INIT: RayInitEvent,
    Event.VERSIONS: VersionsEvent,
    Event.BUILD: BuildEvent,
    Event.ITERATION: IterationEvent,
    Event.WINDOW_END: WindowEndEvent,
    Event.TARGET_REACHED: TargetReachedEvent,
    Event.NODE_LOST: NodeLostEvent,
    Event.NODE_SAMPLING: NodeSamplingEvent,
    Event.SKIPPED: SkippedEvent,
    Event.ERROR: ErrorEvent,
    Event.END: EndEvent,
    Event.SHUTDOWN: ShutdownEvent,
    Event.CLUSTER_RELEASE: ClusterReleaseEvent,
    Event.PROFILE: ProfileEvent,
}


def parse_event(data: dict[str, Any]) -> TrialEvent:
    """One event's JSON object as its kind's model."""
    kind = data.get("event")
    return KINDS.get(kind if isinstance(kind, str) else "", TrialEvent).model_validate(data)


def read_events(path: Path) -> list[TrialEvent]:
    """A trial's events, typed; a line that is no JSON object (a torn last line, a damaged one) is dropped."""
    return [parse_event(e) for e in files.read_events(path)]


def first(events: list[TrialEvent], kind: type[E]) -> E | None:
    """The first event of model ``kind``, or None."""
    return next((e for e in events if isinstance(e, kind)), None)


def last(events: list[TrialEvent], kind: type[E]) -> E | None:
    """The last event of model ``kind``, or None."""
    return first(events[::-1], kind)


class EventTail:
    """A running trial's events.jsonl, read as it grows: each :meth:`poll` parses only what was
    appended since the last one (the sweep polls five times a second while the trial runs)."""

    def __init__(self, path: Path):
        self.path = path
        self.events: list[TrialEvent] = []
        """Every complete event so far."""
        self._offset = 0
        self._partial = b""

    def poll(self) -> list[TrialEvent]:
        """Read the new lines; returns all events so far (a line still being written waits)."""
        try:
            with open(self.path, "rb") as f:
                f.seek(self._offset)
                data = f.read()
        except FileNotFoundError:
            return self.events
        self._offset += len(data)
        *lines, self._partial = (self._partial + data).split(b"\n")
        self.events += [parse_event(e) for e in files.event_objects(lines)]
        return self.events
