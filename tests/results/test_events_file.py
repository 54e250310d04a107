"""events.jsonl read back typed: what the writer wrote reads as written, a damaged or forged line never fails."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rlbench.results import files
from rlbench.results.events import Event
from rlbench.results.events_file import (
    KINDS,
    EndEvent,
    IterationEvent,
    StartEvent,
    TrialEvent,
    first,
    last,
    parse_event,
    read_events,
)

TESTS = Path(__file__).resolve().parents[1]
GOLDEN = sorted(TESTS.glob("data/results-format-*/trials/*/events.jsonl")) + sorted(
    TESTS.glob("report/fixtures/history_golden/runs/*/trials/*/events.jsonl")
)


def test_every_kind_read_back_is_an_event_name():
    assert set(KINDS) <= {e.value for e in Event}


@pytest.mark.parametrize("path", GOLDEN, ids=lambda p: str(p.relative_to(TESTS).parent))
def test_the_golden_folders_events_read_as_written(path):
    """Every field a model reads holds what the writer wrote: no written value of a type the model refuses."""
    raw, typed = files.read_events(path), read_events(path)
    assert len(raw) == len(typed) > 0
    for data, event in zip(raw, typed):
        assert type(event) is KINDS.get(data["event"], TrialEvent)
        assert {k: getattr(event, k) for k in type(event).model_fields if k in data} == {
            k: data[k] for k in type(event).model_fields if k in data
        }
    its = [e for e in typed if isinstance(e, IterationEvent)]
    assert all(e.column("env_steps_sampled") is not None for e in its)  # the trainer's columns, kept


def test_a_damaged_value_reads_as_its_default_and_an_unknown_kind_as_a_plain_event():
    start = parse_event({"event": "start", "t_s": "soon", "pid": "12", "start_ticks": True})
    assert start == StartEvent(event="start")  # a text is no pid, a bool no count
    other = parse_event({"event": "from_a_newer_rlbench", "t_s": 1.5, "x": 1})
    assert type(other) is TrialEvent and (other.event, other.t_s) == ("from_a_newer_rlbench", 1.5)
    assert parse_event({"event": ["end"]}) == TrialEvent()  # a name that is no text: no kind
    it = parse_event({"event": "iteration", "iteration": 2, "runners": [{"pid": 1}, 7], "sample_s": 0.5})
    assert isinstance(it, IterationEvent) and it.runners == [{"pid": 1}] and it.column("sample_s") == 0.5
    assert it.column("learn_s") is None and it.column("model_fields") is None  # not written; no model attribute


def test_lines_that_are_no_object_are_dropped_and_first_last_pick_by_kind(tmp_path):
    path = tmp_path / "events.jsonl"
    lines = ['{"event": "end", "status": "failed"}', "[1, 2]", "null", '"end"', '{"event": "end", "status": "ok"}']
    path.write_text("\n".join(lines) + '\n{"event": "end", "sta')  # and a torn last line
    events = read_events(path)
    assert [e.status for e in events if isinstance(e, EndEvent)] == ["failed", "ok"]
    assert first(events, EndEvent) == EndEvent(event="end", status="failed")
    assert last(events, EndEvent) == EndEvent(event="end", status="ok")
    assert first(events, StartEvent) is None
    assert read_events(tmp_path / "none.jsonl") == []
    path.write_text(json.dumps({"event": "end", "status": 3}) + "\n")
    assert read_events(path) == [EndEvent(event="end")]
