"""Per-trial figures (drawn on the axes they are given) and the terminal table, on hand-made tables."""

from __future__ import annotations

import matplotlib.image as mpimg
import pandas as pd
import pytest

from rlbench.report.style import save
from rlbench.report.trial_plots import (
    core_grid,
    plot_cpu_alloc_vs_used,
    plot_cpu_heatmap,
    write_plots_beside,
)


def _collapse() -> tuple[pd.DataFrame, pd.DataFrame]:
    """4 cores over 3 s at 10 Hz: core 0 at 100%, the rest idle (a scaling collapse)."""
    rows = [
        {"trial_id": "t000r0", "kind": "core", "t_s": t / 10, "core": c, "cpu_pct": 100.0 if c == 0 else 0.0}
        for t in range(30)
        for c in range(4)
    ]
    rows.append({"trial_id": "t000r0", "kind": "process", "t_s": 0.5, "core": None, "cpu_pct": 50.0})
    its = pd.DataFrame(
        {
            "trial_id": ["t000r0"] * 3,
            "warmup": [True, False, False],
            "t_start_s": [0.0, 1.0, 2.0],
            "t_end_s": [1.0, 2.0, 3.0],
        }
    )
    return pd.DataFrame(rows), its


def test_core_grid_is_cores_by_time():
    util, _ = _collapse()
    grid = core_grid(util, "t000r0")
    assert grid.shape == (4, 30)
    assert list(grid.index) == [0, 1, 2, 3]
    assert (grid.loc[0] == 100.0).all() and (grid.loc[1:] == 0.0).all().all()


def test_heatmap_shows_one_hot_core(tmp_path):
    util, its = _collapse()
    ax = plot_cpu_heatmap(util, its, "t000r0", "collapse")
    image = ax.images[0].get_array()
    assert image.shape == (4, 30) and (image[0] == 100).all() and (image[1:] == 0).all()
    assert [line.get_xdata()[0] for line in ax.lines] == [1.0, 3.0]  # the steady window
    path = save(ax.figure, tmp_path / "h.png")
    picture = mpimg.imread(path)
    assert picture.shape[0] > 100 and picture.shape[1] > 300


def test_heatmap_draws_on_the_axes_it_is_given():
    import matplotlib.pyplot as plt

    util, its = _collapse()
    fig, (left, right) = plt.subplots(1, 2)
    assert plot_cpu_heatmap(util, its, "t000r0", "collapse", ax=right) is right
    assert right.images and not left.images
    plt.close(fig)


def test_heatmap_without_core_samples_draws_nothing():
    util, its = _collapse()
    assert plot_cpu_heatmap(util[util["kind"] == "process"], its, "t000r0", "none") is None
    assert plot_cpu_heatmap(util, its, "t999r0", "other trial") is None


def _trials(used_driver: float | None) -> pd.DataFrame:
    row = {"trial_id": "t000r0", "status": "ok", "repeat": 0, "num_env_runners": 2}
    for role, alloc, used in (
        ("driver", 13.0, used_driver),
        ("learner", 0.0, 0.0),
        ("env_runner", 2.0, 1.9),
        ("ray_system", 0.0, 0.1),
        ("other", 0.0, 0.0),
    ):
        row[f"{role}_cpus_allocated"], row[f"{role}_cpus_used"] = alloc, used
    return pd.DataFrame([row])


def test_alloc_vs_used_plot(tmp_path):
    panels = plot_cpu_alloc_vs_used(_trials(1.3), ["num_env_runners"])  # "gave the driver 13, it used 1.3"
    assert [ax.get_ylabel() for ax in panels] == ["driver", "env_runner", "ray_system"]  # roles with anything
    driver = panels[0]
    assert [bar.get_height() for bar in driver.patches] == [13.0, 1.3]  # allocated, used
    assert save(panels[0].figure, tmp_path / "a.png").exists()


def test_alloc_vs_used_plot_needs_a_measured_trial():
    frame = _trials(None)
    for role in ("env_runner", "ray_system", "learner", "other"):
        frame[f"{role}_cpus_used"] = None
    assert plot_cpu_alloc_vs_used(frame, ["num_env_runners"]) is None


def test_per_trial_figures_show_first_repeats_first_when_capped():
    import pandas as pd

    from rlbench.report.trial_plots import shown_trials

    trials = pd.DataFrame(
        {
            "trial_id": [f"t{i:03d}r{r}" for i in range(3) for r in range(2)],
            "index": [i for i in range(3) for _ in range(2)],
            "repeat": [0, 1] * 3,
        }
    )
    assert shown_trials(trials, 10).equals(trials)
    assert list(shown_trials(trials, 4)["trial_id"]) == ["t000r0", "t000r1", "t001r0", "t002r0"]
    assert list(shown_trials(trials, 2)["trial_id"]) == ["t000r0", "t001r0"]


def test_terminal_table_is_capped_and_says_so():
    import pandas as pd

    from rlbench.report.style import MAX_TABLE_ROWS
    from rlbench.report.terminal import results_table

    n = MAX_TABLE_ROWS + 5
    trials = pd.DataFrame(
        {
            "trial_id": [f"t{i:03d}r0" for i in range(n)],
            "status": ["ok"] * n,
            "reason": [None] * n,
            "num_env_runners": list(range(n)),
            "env_steps_per_s": [100.0] * n,
        }
    )
    table = results_table(trials, ["num_env_runners"])
    assert table.row_count == MAX_TABLE_ROWS
    assert table.caption == f"first {MAX_TABLE_ROWS} of {n} trials; all are in summary.csv and report.html"
    assert results_table(trials.head(3), ["num_env_runners"]).row_count == 3


def _ok_trials(runners: list[int], steps: list[float | None]) -> pd.DataFrame:
    n = len(runners)
    frame = pd.DataFrame(
        {
            "trial_id": [f"t{i:03d}r0" for i in range(n)],
            "status": ["ok"] * n,
            "repeat": [0] * n,
            "index": list(range(n)),
            "num_env_runners": runners,
            "num_envs_per_env_runner": [1] * n,
            "env_steps_per_s": steps,
            "cpus": [2] * n,
        }
    )
    for role in ("driver", "learner", "env_runner", "ray_system", "other"):
        frame[f"{role}_cpus_used"] = 0.5
        frame[f"{role}_cpus_allocated"] = 1.0
    return frame


def test_no_single_point_throughput_figure():
    from rlbench.report.trial_plots import plot_throughput

    axes = ["num_env_runners", "num_envs_per_env_runner"]
    trials = _ok_trials([0, 1], [1000.0, 1500.0])
    assert plot_throughput(trials, "num_env_runners", axes) is not None
    assert plot_throughput(trials, "num_envs_per_env_runner", axes) is None  # one value in the grid
    skipped = _ok_trials([1, 8], [1000.0, None])
    skipped.loc[1, "status"] = "skipped"
    assert plot_throughput(skipped, "num_env_runners", axes) is None  # one value measured


def test_legends_do_not_cover_the_titles():
    """The 'CPU used per role' legend sat on its title; now it sits right of the axes."""
    from rlbench.report.trial_plots import plot_cpu_by_role, plot_time_breakdown

    trials = _ok_trials([0, 1, 2], [1000.0, 1500.0, 1700.0])
    iterations = pd.DataFrame(
        {
            "trial_id": [t for t in trials["trial_id"] for _ in range(3)],
            "warmup": [True, False, False] * 3,
            "sample_s": 0.1,
            "learn_s": 0.05,
            "sync_s": 0.01,
            "other_s": 0.01,
        }
    )
    for ax in (
        plot_cpu_by_role(trials, ["num_env_runners"]),
        plot_time_breakdown(trials, iterations, ["num_env_runners"]),
    ):
        renderer = ax.figure.canvas.get_renderer()
        ax.figure.tight_layout()
        title = ax.title.get_window_extent(renderer)
        legend = ax.get_legend().get_window_extent(renderer)
        xlabel = ax.xaxis.label.get_window_extent(renderer)
        assert not title.overlaps(legend) and not xlabel.overlaps(legend)
        assert legend.x0 > ax.get_window_extent(renderer).x1  # right of the axes, off the bars


def test_plots_drawn_beside_fail_here_when_the_child_failed(tmp_path):
    """The child's error is not lost: the wait draws them in this process, which raises it."""
    tables = {"trials": pd.DataFrame({"env_steps_per_s": [1.0]}), "iterations": pd.DataFrame()}
    with pytest.raises(FileNotFoundError):  # no such folder: the child fails (one CPU: drawn here at once)
        write_plots_beside(tmp_path / "missing", tables, [])()


def test_a_ctrl_c_in_the_plots_child_ends_it_quietly_and_the_wait_draws_them(tmp_path, monkeypatch, capfd):
    """A KeyboardInterrupt inside the forked child (count-triggered: raised in it on purpose) ends it with 130 and
    nothing on stderr (the interrupts e2e, 2026-11-30, printed its traceback); the wait then draws the plots here."""
    import os

    from rlbench.report import trial_plots

    assert len(os.sched_getaffinity(0)) >= 2  # a child is forked (CI and this machine have 2 cores)
    parent, drawn = os.getpid(), []

    def write(out_dir, tables, axes):
        if os.getpid() != parent:
            raise KeyboardInterrupt
        drawn.append(out_dir)
        return []

    monkeypatch.setattr(trial_plots, "write_plots", write)
    tables = {"trials": pd.DataFrame({"env_steps_per_s": [1.0]}), "iterations": pd.DataFrame()}
    trial_plots.write_plots_beside(tmp_path, tables, [])()
    assert drawn == [tmp_path] and "Traceback" not in capfd.readouterr().err
