"""The report's extra columns for asynchronous configurations: shown only when a result set has them."""

from __future__ import annotations

import math

import pandas as pd

from rlbench.report.async_section import (
    ASYNC_TEXT,
    async_cells,
    async_header,
    async_text,
)


def _configs(asynchronous: list[bool], lag: list[float]) -> pd.DataFrame:
    return pd.DataFrame(
        {
            "asynchronous": asynchronous,
            "sampler_busy_frac": [0.5, 0.9],
            "learner_busy_frac": [0.25, 0.75],
            "policy_lag_mean": lag,
            "policy_lag_max": [2.0, 3.0],
        }
    )


def test_ppo_only_result_set_gets_no_extra_columns():
    c = _configs([False, False], [1.0, 1.0])  # PPO's lag is RLlib's on-policy 1: no column for it
    assert async_header(c) == [] and async_cells(c, c.iloc[0]) == [] and async_text(c) == ""


def test_async_result_set_gets_busy_shares_and_lag():
    c = _configs([False, True], [math.nan, 1.5])
    assert async_header(c) == ["sampler busy", "learner busy", "policy lag mean / max"]
    cells = async_cells(c, c.iloc[1])
    assert cells[0].startswith("90") and cells[1].startswith("75") and cells[2] == "1.5 / 3.0"
    assert async_text(c) == ASYNC_TEXT and async_text(None) == ""


def test_tables_from_before_the_columns_existed():
    old = pd.DataFrame({"env_steps_per_s": [10.0]})
    assert async_header(old) == [] and async_text(old) == ""
