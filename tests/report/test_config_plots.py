"""Per-configuration figures: drawn only when they can compare something (hand-made tables)."""

from __future__ import annotations

import pandas as pd

from rlbench.report.config_plots import plot_throughput_ci


def _configs(runners: list[int], steps: list[float | None]) -> pd.DataFrame:
    return pd.DataFrame({"index": range(len(runners)), "num_env_runners": runners, "num_envs_per_env_runner": 1,
                         "env_steps_per_s": steps, "env_steps_per_s_ci_low": steps, "env_steps_per_s_ci_high": steps,
                         "n": 1, "noisy": False})


AXES = ["num_env_runners", "num_envs_per_env_runner"]


def test_throughput_vs_an_axis_with_two_measured_values_is_drawn():
    ax, caption = plot_throughput_ci(_configs([0, 1], [1000.0, 1500.0]), "num_env_runners", AXES)
    assert list(ax.lines[0].get_xdata()) == [0, 1] and list(ax.lines[0].get_ydata()) == [1000.0, 1500.0]


def test_no_single_point_figure():
    # an axis with one value in the grid
    assert plot_throughput_ci(_configs([0, 1], [1000.0, 1500.0]), "num_envs_per_env_runner", AXES) is None
    # an axis with two values of which one was measured (the other skipped: no throughput)
    assert plot_throughput_ci(_configs([1, 8], [1000.0, None]), "num_env_runners", AXES) is None
    assert plot_throughput_ci(_configs([1, 8], [None, None]), "num_env_runners", AXES) is None
