"""trials.parquet's node set, time span and foreign CPU columns of one trial (hand-computed)."""

from __future__ import annotations

import json
from types import SimpleNamespace

from rlbench.analysis.isolation import node_set_columns
from rlbench.results.events_file import TrialEvent, parse_event
from rlbench.results.records import TrialRecord


def sampling(*nodes: dict) -> TrialEvent:
    return parse_event({"event": "node_sampling", "nodes": list(nodes)})


def test_a_parallel_trial_names_its_nodes_its_type_and_what_else_ran_there():
    plan = SimpleNamespace(cpus=4, placement=SimpleNamespace(node_ids=["n1", "n2"], node_type="T"))
    record = TrialRecord(trial_id="t000r0", status="ok", started_epoch=1000.0, trial_wall_s=12.5)
    events = [
        sampling(
            {"node_id": "n1", "actors": [{"pid": 1}], "foreign_cpu_s": 1.5, "sampled_s": 10.0},
            {"node_id": "n2", "actors": [], "foreign_cpu_s": 0.5, "sampled_s": 9.0},
        )
    ]
    got = node_set_columns(plan, record, events)
    assert json.loads(got["node_ids"]) == ["n1", "n2"] and got["node_type"] == "T"
    assert (got["started_epoch"], got["ended_epoch"]) == (1000.0, 1012.5)
    assert got["foreign_cpu_s"] == 2.0 and got["foreign_cpu_pct"] == 5.0  # 2 CPU-s of 4 CPUs x 10 s


def test_without_parallel_the_nodes_of_its_actors_and_locally_nulls():
    plan = SimpleNamespace(cpus=3, placement=None)
    record = TrialRecord(trial_id="t000r0", status="ok", started_epoch=5.0, trial_wall_s=1.0)
    events = [
        sampling(
            {"node_id": "b", "actors": [{"pid": 1}], "foreign_cpu_s": 0.0, "sampled_s": 2.0},
            {"node_id": "a", "actors": [{"pid": 2}], "foreign_cpu_s": 0.0, "sampled_s": 2.0},
            {"node_id": "c", "actors": [], "foreign_cpu_s": 0.0, "sampled_s": 2.0},
        )
    ]
    got = node_set_columns(plan, record, events)
    assert json.loads(got["node_ids"]) == ["a", "b"] and got["node_type"] is None
    assert got["foreign_cpu_s"] == 0.0 and got["foreign_cpu_pct"] == 0.0  # measured: nothing else ran there
    local = node_set_columns(plan, TrialRecord(trial_id="t", status="failed"), [])
    assert local == {
        "node_ids": None,
        "node_type": None,
        "started_epoch": None,
        "ended_epoch": None,
        "foreign_cpu_s": None,
        "foreign_cpu_pct": None,
    }
    # node samplers from before foreign accounting: unknown, not zero
    old = node_set_columns(plan, record, [sampling({"node_id": "a", "actors": [{"pid": 2}]})])
    assert old["foreign_cpu_s"] is None
