"""Utilization rows: a worker's rows from before it took an actor's title get the actor's role."""

from __future__ import annotations

from rlbench.worker.sampling import Rows


def test_relabel_gives_a_pids_other_rows_its_role_from_its_first_row_on():
    rows = Rows()
    rows.process(0.0, "other", 7, 10.0, 1)  # an earlier process with the same pid: left alone
    rows.process(0.1, "other", 8, 5.0, 1)  # another worker: left alone
    rows.process(0.2, "other", 7, 40.0, 2)  # pid 7 starting as ray::IDLE
    rows.process(0.3, "driver", 1, 90.0, 3)
    rows.process(0.4, "aggregator", 7, 60.0, 2)
    rows.relabel(7, "aggregator", since=2)
    cols = rows.columns()
    assert cols["role"] == ["other", "other", "aggregator", "driver", "aggregator"]
    assert cols["cpu_pct"] == [10.0, 5.0, 40.0, 90.0, 60.0]  # only the label changes
