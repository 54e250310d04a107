"""summary.csv and compare.csv open in a spreadsheet without running what a value from elsewhere carries."""

from __future__ import annotations

import io

import pandas as pd

from rlbench.results.tables import csv_bytes


def test_formula_cells_are_neutralised_numbers_are_not():
    frame = pd.DataFrame(
        {
            "trial_id": ["t000r0", "t001r0"],
            "reason": ['=HYPERLINK("http://evil","click")', "@SUM(1)"],
            "env_config.x": ["+1", "-cmd|' /C calc'!A0"],
            "delta": [-1.5, 2.0],
        }
    )
    back = pd.read_csv(io.BytesIO(csv_bytes(frame)))
    assert list(back["reason"]) == ['\'=HYPERLINK("http://evil","click")', "'@SUM(1)"]
    assert list(back["env_config.x"]) == ["'+1", "'-cmd|' /C calc'!A0"]
    assert list(back["delta"]) == [-1.5, 2.0] and list(back["trial_id"]) == ["t000r0", "t001r0"]
