"""Node to node: spread per configuration and a node slower than its peers, on hand-made trials."""

from __future__ import annotations

import json

import pandas as pd

from rlbench.analysis.node_spread import node_report


def trials(rows: list[tuple[int, str, str, float]]) -> pd.DataFrame:
    """(config index, node, node type, env steps/s) per ok trial."""
    return pd.DataFrame(
        [
            {
                "trial_id": f"t{i:03d}r{k}",
                "status": "ok",
                "index": i,
                "x": i,
                "env_steps_per_s": rate,
                "node_ids": json.dumps([node]),
                "node_type": kind,
            }
            for k, (i, node, kind, rate) in enumerate(rows)
        ]
    )


def test_a_node_at_half_speed_across_configurations_is_named_with_its_evidence():
    rows = [
        (i, node, "T", base * factor)
        for i, base in enumerate((100.0, 200.0, 300.0))
        for node, factor in (("a", 1.0), ("b", 1.02), ("c", 0.5))
    ]
    report = node_report(trials(rows), ["x"])
    assert report.types == {"T": 9}
    first = report.spreads[0]
    assert first.label == "x=0" and first.by_node == {"a": 100.0, "b": 102.0, "c": 50.0}
    assert first.spread == 102.0 / 50.0 and first.node_types == ("T",) and first.trials == 3
    assert [c.node_id for c in report.slow] == ["c"]
    c = next(c for c in report.checks if c.node_id == "c")
    # its trials at 0.5 of their configurations' medians, its peers' at 1.0 and 1.02: one-sided exact U test,
    # 3 against 6 all below: p = 1 / C(9, 3)
    assert c.change.runs_b == 3 and c.change.runs_a == 6 and abs(c.change.p_value - 1 / 84) < 1e-12
    assert c.sentence().startswith("node c is 50.5% slower than its peers")
    assert not next(c for c in report.checks if c.node_id == "a").slower


def test_two_repeats_a_node_are_too_few_to_name_one():
    rows = [(i, node, "T", 100.0 * factor) for i in (0, 1) for node, factor in (("a", 1.0), ("b", 0.5))]
    report = node_report(trials(rows), ["x"])
    assert report.slow == [] and all(not c.change.enough for c in report.checks)


def test_nodes_are_compared_with_their_own_type_only_and_mixed_types_are_said():
    rows = [(0, "a", "T1", 100.0), (0, "b", "T2", 50.0), (1, "a", "T1", 80.0), (1, "c", "T1", 80.0)]
    report = node_report(trials(rows), ["x"])
    assert [s.label for s in report.mixed] == ["x=0"]
    assert report.spreads[0].node_types == ("T1", "T2")
    assert {c.node_id for c in report.checks} == {"a", "c"}  # b has no peer of its type


def test_nothing_without_node_types():
    assert node_report(pd.DataFrame({"status": ["ok"], "env_steps_per_s": [1.0]}), []) is None


def test_no_ok_trial_gives_an_empty_report():
    frame = trials([(0, "a", "T", 1.0)]).assign(status="interrupted")
    report = node_report(frame, ["x"])
    assert report.types == {} and report.spreads == [] and report.checks == []
