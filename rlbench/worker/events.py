"""The trial's own log: ``events.jsonl``, one JSON object per line, appended and fsynced at once.

Every step of a trial (start, Ray up, build, each iteration, shutdown, errors) is an event, so a
trial that is killed still leaves what it measured; the sweep reads the file as it grows
(:class:`rlbench.results.files.EventTail`) and the tables are rebuilt from it. The events' names
and fields: :mod:`rlbench.results.events`.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

from rlbench.results.events import Event
from rlbench.results.files import open_append


class EventLog:
    """Append-only JSON-lines log, flushed after each event."""

    def __init__(self, path: Path, t0_epoch: float):
        self._file = os.fdopen(open_append(path), "a", buffering=1)
        self.path = path
        self.t0_epoch = t0_epoch

    def now_s(self) -> float:
        """Seconds since the trial was launched."""
        return time.time() - self.t0_epoch

    def write(self, event: Event, **fields: Any) -> None:
        """Append one event (its fields: :class:`rlbench.results.events.Event`)."""
        record = {"event": event, "t_s": round(self.now_s(), 6), **fields}
        self._file.write(json.dumps(record, default=_json_default) + "\n")
        self._file.flush()
        os.fsync(self._file.fileno())

    def close(self) -> None:
        self._file.close()


def describe_error(error: BaseException) -> str:
    """``Type: message`` of the exception that started it all (RLlib re-raises an env's error as a
    bare ``RuntimeError from e``), plus what it surfaced as when that differs. An error raised ``from None``
    is where the story starts (its raiser put what it needed of the cause into its message)."""
    chain = [error]
    while (cause := _cause(chain[-1])) is not None and cause not in chain:
        chain.append(cause)
    root = chain[-1]
    text = f"{type(root).__name__}: {root}".rstrip(": ")
    if root is not error:
        text += f" (surfaced as {type(error).__name__}{': ' + str(error) if str(error) else ''})"
    return text


def _cause(error: BaseException) -> BaseException | None:
    """What ``error`` was raised from, or during; None after ``raise ... from None``."""
    if error.__cause__ is not None:
        return error.__cause__
    return None if error.__suppress_context__ else error.__context__


def _json_default(value: Any) -> Any:
    return value.item() if hasattr(value, "item") else str(value)
