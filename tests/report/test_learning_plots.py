"""The learning figure's target line: drawn when the framework's adapter says the target's metric is the curves'
column (RLlib's short name and its result path alike), never from a result path the report knows itself."""

from __future__ import annotations

import pandas as pd

from rlbench.analysis.result_set import target_of
from rlbench.report.learning_plots import plot_learning_curves

CURVES = pd.DataFrame(
    {"index": [0, 0], "x": [0.0, 100.0], "median": [10.0, 50.0], "low": [8.0, 40.0], "high": [12.0, 60.0]}
)


def trials(metric: str, framework: str | None = "rllib") -> pd.DataFrame:
    row = {"trial_id": "t000r0", "target_metric": metric, "target_threshold": 150.0, "target_mode": "at_least"}
    if framework is not None:
        row["framework"] = framework
    return pd.DataFrame([row])


def dashed_at(ax) -> list[float]:
    return [line.get_ydata()[0] for line in ax.lines if line.get_linestyle() == "--"]


def test_the_target_is_drawn_when_its_metric_is_the_curves_column():
    for metric in ("episode_return_mean", "env_runners/episode_return_mean"):
        target = target_of(trials(metric))
        assert target["column"] == "episode_return_mean"
        ax, _ = plot_learning_curves(CURVES, {0: "a"}, "env_steps", target)
        assert dashed_at(ax) == [150.0]
    assert target_of(trials("episode_return_mean", framework="plain"))["column"] == "episode_return_mean"


def test_no_target_line_for_another_metric_or_an_unknown_framework():
    for target in (target_of(trials("vf_loss")), target_of(trials("episode_return_mean", framework="nonesuch"))):
        assert target["column"] is None
        ax, _ = plot_learning_curves(CURVES, {0: "a"}, "env_steps", target)
        assert dashed_at(ax) == []
    assert target_of(trials("episode_return_mean", framework=None))["column"] == "episode_return_mean"  # the default
