"""reproduce of a trial whose grid value was relative to the machine: plain numbers, said in a comment."""

from __future__ import annotations

import importlib.util

import yaml
from conftest import REPO

from rlbench.planning.plan import read_plan
from rlbench.report.plan_table import plan_table
from rlbench.report.reproduce import write_reproduction
from rlbench.results.layout import ResultsFolder

_spec = importlib.util.spec_from_file_location("bench_tables", REPO / "scripts" / "bench_tables.py")
bench_tables = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(bench_tables)


def test_reproduce_writes_what_a_relative_value_resolved_to(tmp_path):
    out = bench_tables.generate(
        tmp_path / "r", trials=2, iterations=3, repeats=1, grid={"num_env_runners": [0, "cpus-1"]}
    )  # the generator's machine has 2 cores
    plan = read_plan(ResultsFolder(out).trial("t001r0"))
    assert plan.relative == {"num_env_runners": "cpus-1"} and plan.axes == {"num_env_runners": 1}
    rep = write_reproduction(out, "t001r0")
    text = rep.spec_path.read_text()
    assert "# Values relative to the original machine, as they resolved there: num_env_runners: cpus-1 = 1\n" in text
    spec = yaml.safe_load(text)
    assert spec["env_runners"]["num_env_runners"] == 1 and spec["cpus"] == 2 and "grid" not in spec
    # the dry-run table shows the resolved value and how it was written
    assert [str(c) for c in plan_table([plan]).columns[1].cells] == ["1 (cpus-1)"]
