"""Per-configuration figures: drawn only when they can compare something (hand-made tables)."""

from __future__ import annotations

import pandas as pd

from rlbench.report.config_plots import plot_throughput_ci


def _configs(runners: list[int], steps: list[float | None]) -> pd.DataFrame:
    return pd.DataFrame(
        {
            "index": range(len(runners)),
            "num_env_runners": runners,
            "num_envs_per_env_runner": 1,
            "env_steps_per_s": steps,
            "env_steps_per_s_ci_low": steps,
            "env_steps_per_s_ci_high": steps,
            "n": 1,
            "noisy": False,
        }
    )


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


def test_an_asynchronous_row_without_busy_figures_gets_no_marker_and_the_figure_saves(tmp_path):
    """A --quick APPO trial whose iteration sampled nothing has no sampler-busy share (NaN): its marker is left
    out; drawn, the NaN was masked and the masked position could not go on the label axis (ConversionError at
    save: configs/autoconfig_algos.yaml --quick ended with exit 1 on it)."""
    from rlbench.report.config_plots import plot_time_shares

    configs = _configs([0, 1], [300.0, 0.0]).assign(
        algo=["PPO", "APPO"],
        asynchronous=[False, True],
        sampler_busy_frac=[0.5, float("nan")],
        learner_busy_frac=[0.3, 0.0],
    )
    for phase in ("sample", "learn", "sync", "other"):
        configs[f"{phase}_frac"] = 0.25
    ax, _ = plot_time_shares(configs, ["algo"])
    ax.figure.savefig(tmp_path / "shares.png")
    markers = [c for c in ax.collections if c.get_label() in ("sampler busy", "learner busy")]
    assert [c.get_label() for c in markers] == ["learner busy"]  # the NaN one left out, the 0 one drawn
    assert (tmp_path / "shares.png").stat().st_size > 0
