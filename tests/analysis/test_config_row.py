"""The configuration row the verdicts read (analysis/findings.py's ConfigRow): every field a column the analysis
writes, so a misspelt one cannot read as a silent None, and each value read once, as the verdicts took it."""

from __future__ import annotations

import math
import shutil
from dataclasses import fields

from conftest import REPO

from rlbench.analysis import analyze
from rlbench.analysis.config_row import ConfigRow
from rlbench.analysis.knobs import Knob


def test_every_field_is_a_column_of_the_configurations_table(tmp_path):
    folder = shutil.copytree(REPO / "tests" / "data" / "results-format-1", tmp_path / "r")
    columns = set(analyze(folder).configs.columns)
    assert [f.name for f in fields(ConfigRow) if f.name not in columns] == []
    # the knobs a verdict names, and those the next sweep reads, are fields (advices reads the current value by name)
    names = {f.name for f in fields(ConfigRow)}
    assert {Knob.MINIBATCH_SIZE, Knob.NUM_ENVS_PER_ENV_RUNNER, Knob.NUM_ENV_RUNNERS} <= names
    assert {Knob.NUM_CPUS_FOR_MAIN_PROCESS, Knob.NUM_CPUS_PER_LEARNER, Knob.DRIVER_TORCH_THREADS} <= names


def test_a_row_is_read_as_the_verdicts_took_it():
    row = ConfigRow.of(
        {"index": 3, "cpus": "4", "learn_frac": math.nan, "sample_frac": "x", "reason": 7, "statuses": "1 ok"}
        | {"asynchronous": 1, "noisy": None, "env_steps_per_s": 1200, "unknown_column": 1.0}
    )
    assert (row.index, row.cpus, row.learn_frac, row.sample_frac, row.env_steps_per_s) == (3, 4.0, None, None, 1200.0)
    assert (row.reason, row.statuses, row.asynchronous, row.noisy) == (None, "1 ok", True, False)
    assert row.num_env_runners is None and ConfigRow.of(row) is row
