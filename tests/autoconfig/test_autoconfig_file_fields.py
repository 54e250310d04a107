"""autoconfig.json read back has the writer's fields: each record of the reader
(``rlbench.results.autoconfig_file``) holds the fields of the type the decision core writes it from, and a file the
writer wrote reads back whole, no value dropped to its default (a new field of a step is one field here, one there,
and this test says which is missing)."""

from __future__ import annotations

import ast
import dataclasses
import inspect
import json

import pytest
from test_autoconfig_outputs import result

from rlbench.autoconfig.ask_tell import Standing
from rlbench.autoconfig.model import PredictionRow
from rlbench.autoconfig.outputs import autoconfig_json, write_outputs
from rlbench.autoconfig.plan import BudgetPlan
from rlbench.autoconfig.search import Elimination
from rlbench.autoconfig.steps import StepsComparison, StepsStanding
from rlbench.autoconfig.walk.outputs import walk_summary
from rlbench.autoconfig.walk.path import PathStep, PointRead
from rlbench.results.autoconfig_file import (
    AutoconfigFile,
    EliminationEntry,
    PathStepEntry,
    PlanEntry,
    PointEntry,
    PredictionEntry,
    StandingEntry,
    StepsComparisonEntry,
    StepsEntry,
    read_autoconfig_file,
)


def names(cls) -> set[str]:
    return {f.name for f in dataclasses.fields(cls)}


@pytest.mark.parametrize(
    ("entry", "written"),
    [
        (PathStepEntry, names(PathStep)),
        (PointEntry, names(PointRead)),
        (StandingEntry, names(Standing) | {"axes", "steps_to_target"}),  # outputs._standing adds both
        (StepsEntry, names(StepsStanding) - {"key"}),  # nested under its standing, less the key
        (EliminationEntry, names(Elimination)),
        (PlanEntry, names(BudgetPlan)),
        (PredictionEntry, names(PredictionRow)),
        (StepsComparisonEntry, names(StepsComparison)),
    ],
)
def test_each_record_read_has_the_fields_of_the_type_written(entry, written):
    assert set(entry.model_fields) == written


def _walk_keys() -> set[str]:
    """The keys ``walk_summary`` writes, read from its returned dict (it needs a whole walk session to run)."""
    tree = ast.parse(inspect.getsource(walk_summary))
    [returned] = [n.value for n in ast.walk(tree) if isinstance(n, ast.Return)]
    assert isinstance(returned, ast.Dict)
    return {k.value for k in returned.keys if isinstance(k, ast.Constant)}


def test_the_file_read_has_the_fields_written_for_a_search_and_a_walk():
    assert set(AutoconfigFile.model_fields) == set(autoconfig_json(result())) | _walk_keys()


def _step(**changes) -> PathStep:
    base = dict(
        step=1,
        knob="num_env_runners",
        axis="num_env_runners",
        from_key="base",
        to_key="num_env_runners=2",
        from_value=1,
        to_value=2,
        values=(2, 4),
        verdict_label="env waits",
        verdict="env runners idle",
        outcome="gain",
        speedup=1.9,
        ci_low=1.5,
        ci_high=2.2,
        design="unpaired",
        readings_from=3,
        readings_to=3,
        rounds=3,
        wall_s=252.5,
        changes_learning="rollouts",
        learning="no lower return",
        learning_cost=False,
        race_stop_reason="one left",
        skipped=("8: too many",),
        kind="trade",
        passed=("a: no fit",),
        partner_axis="num_envs_per_env_runner",
        partner_from={"nested": [1, None]},
        partner_to=None,
    )
    return PathStep(**{**base, **changes})


@pytest.mark.parametrize("objective", ["throughput", "time_to_target"])
def test_a_file_the_writer_wrote_reads_back_whole(tmp_path, objective):
    walk = {
        "mode": "walk",
        "path": [dataclasses.asdict(_step()), dataclasses.asdict(_step(step=2, outcome="stay", speedup=None))],
        "stop_reason": "no_gain",
        "stop_text": "no gain",
        "walk_points": [dataclasses.asdict(PointRead(0, "base", 105.7, 97.0, 116.7, 3, 168.2, 0.63, "env waits"))],
        "grid_walk": False,
    }
    plan = BudgetPlan("full", 3, ("a", "b"), ("c",), (), 100.0, 50.0, 180.0, 12.0, "the plan")
    for r in (result(objective), dataclasses.replace(result(objective), plan=plan, trial="6 it", walk=walk)):
        out = tmp_path / objective
        write_outputs(out, r, snippet=None, spec_data={"name": "x", "grid": {}})
        written = json.loads((out / "autoconfig.json").read_text())
        read = read_autoconfig_file(out / "autoconfig.json")
        assert isinstance(read, AutoconfigFile)
        assert read.model_dump(mode="json", include=set(written)) == written
