"""The report's one style (report/style.py): one number format, one role colour table, one save loop."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from rlbench.adapters import ALL_ROLES
from rlbench.report.blocks import Figure
from rlbench.report.servebench_plots import CPU_ROLES as SERVE_ROLES
from rlbench.report.style import ROLE_COLORS, fmt, new_axes, save_figures


def test_one_number_format_for_every_value_a_table_or_a_file_may_hold():
    assert [fmt(1234), fmt(np.int64(1234)), fmt(1234.56), fmt(1234.56, 1), fmt(np.float64(0.5), 2)] == [
        "1,234",
        "1,234",
        "1,235",
        "1,234.6",
        "0.50",
    ]
    # missing, NaN, and what a hostile autoconfig.json may hold where a number belongs
    assert {fmt(v) for v in (None, math.nan, pd.NA, np.nan, "12", {"a": 1}, [1], True)} == {"-"}


def test_one_role_colour_table_for_trials_and_servebench():
    assert set(ALL_ROLES) <= set(ROLE_COLORS) and set(SERVE_ROLES) <= set(ROLE_COLORS)
    assert all(SERVE_ROLES[r] == ROLE_COLORS[r] for r in SERVE_ROLES)
    assert len({ROLE_COLORS[r] for r in SERVE_ROLES}) == len(SERVE_ROLES)  # the roles one figure stacks: told apart
    assert len({ROLE_COLORS[r] for r in ALL_ROLES}) == len(ALL_ROLES)


def test_one_save_loop_saves_what_was_drawn_and_skips_what_was_not(tmp_path):
    ax = new_axes(2, 2)
    ax.plot([0, 1], [0, 1])
    figures = save_figures(tmp_path, [("a.png", "A", (ax, "drawn")), ("b.png", "B", None)])
    assert figures == [Figure(tmp_path / "a.png", "A", "drawn")]
    assert (tmp_path / "a.png").read_bytes()[:4] == b"\x89PNG" and not (tmp_path / "b.png").exists()
