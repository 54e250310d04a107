"""The report's columns and words for asynchronous configurations (APPO, IMPALA) and policy lag, and for
off-policy ones (DQN, SAC): the replay buffer's share of the iteration and the training intensity.

Kept apart from :mod:`rlbench.report.document` so the document only asks which extra columns a
result set has and what they say; the figures behind them come from :mod:`rlbench.analysis.overlap`.
"""

from __future__ import annotations

import pandas as pd

from rlbench.report.style import fmt, pct

#: What the time columns mean when a result set has asynchronous configurations.
ASYNC_TEXT = (
    "sample, learn and sync are the driver's share of each iteration; for asynchronous algorithms "
    "(APPO, IMPALA) the env runners sample and the learners update while the driver loops, so there "
    "they are the driver's waits, and sampler busy / learner busy are the shares of the iteration the "
    "env runners and learners worked (they overlap). Policy lag: how many learner updates the policy "
    "that sampled a batch was behind the learner that trained on it (RLlib's count, in which 1 is a batch "
    "sampled with the weights the update starts from: PPO's on-policy case), mean and largest over the "
    "steady-state updates. "
)


def any_async(configs: pd.DataFrame) -> bool:
    """Whether any configuration ran an asynchronous algorithm."""
    return "asynchronous" in configs and bool(configs["asynchronous"].fillna(False).astype(bool).any())


def async_text(configs: pd.DataFrame | None) -> str:
    """The method text's sentence on overlapping work ("" when every configuration is synchronous)."""
    return ASYNC_TEXT if configs is not None and any_async(configs) else ""


def _shown(configs: pd.DataFrame) -> tuple[bool, bool]:
    busy = "sampler_busy_frac" in configs and any_async(configs)
    lag = "policy_lag_mean" in configs and any_async(configs) and bool(configs["policy_lag_mean"].notna().any())
    return busy, lag


def _replayed(configs: pd.DataFrame) -> bool:
    return "replay_frac" in configs and bool(configs["replay_frac"].notna().any())


def async_header(configs: pd.DataFrame) -> list[str]:
    """The configurations table's extra column names: busy shares and policy lag when a configuration
    overlapped work (none for a PPO-only result set, whose lag is always 1); the replay buffer's share (part of
    the iteration's other time) and gradient steps per env step when one trained from a replay buffer."""
    busy, lag = _shown(configs)
    return [
        *(["sampler busy", "learner busy"] if busy else []),
        *(["policy lag mean / max"] if lag else []),
        *(["replay", "updates / env step"] if _replayed(configs) else []),
    ]


def async_cells(configs: pd.DataFrame, row: pd.Series) -> list[str]:
    """One configuration's cells for :func:`async_header`'s columns."""
    busy, lag = _shown(configs)
    return [
        *([pct(row["sampler_busy_frac"]), pct(row["learner_busy_frac"])] if busy else []),
        *([f"{fmt(row['policy_lag_mean'], 1)} / {fmt(row['policy_lag_max'], 1)}"] if lag else []),
        *([pct(row["replay_frac"]), fmt(row["updates_per_env_step"], 2)] if _replayed(configs) else []),
    ]
