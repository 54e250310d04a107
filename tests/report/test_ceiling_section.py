"""The report's ceiling section: a line per configuration and the figure against its ceiling (hand-made rows)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from rlbench.report.blocks import Heading, Verdicts, to_html, to_markdown
from rlbench.report.ceiling_section import ceiling_blocks, plot_ceiling

AXES = ["num_env_runners"]


def _configs() -> pd.DataFrame:
    """Three configurations: two with an env ceiling (one 50% of it, one 90%), one without (env_ceiling_s: 0)."""
    return pd.DataFrame(
        {
            "index": [0, 1, 2],
            "num_env_runners": [1, 2, 4],
            "env_steps_per_s": [400.0, 900.0, 1200.0],
            "asynchronous": False,
            "sample_frac": [0.8, 0.7, 0.6],
            "sync_frac": 0.05,
            "other_frac": 0.05,
            "sample_steps_per_s": [500.0, 1500.0, 2000.0],
            "env_ceiling_steps_per_s": [1600.0, 2000.0, np.nan],
            "sampling_efficiency": [500 / 1600, 1500 / 2000, np.nan],
            "learner_steps_per_s": [1600.0, 2000.0, 3000.0],
            "ceiling_env_steps_per_s": [800.0, 1000.0, np.nan],
        }
    )


def test_a_line_per_configuration_fastest_first_with_its_lever_or_why_there_is_none():
    blocks = ceiling_blocks(_configs(), AXES)
    assert isinstance(blocks[0], Heading) and blocks[0].text == "What its env and learner allow"
    (lines,) = [b for b in blocks if isinstance(b, Verdicts)]
    labels = [label for label, _ in lines.items]
    assert labels == ["num_env_runners=4", "num_env_runners=2", "num_env_runners=1"]
    texts = dict(lines.items)
    assert "no env ceiling measured" in texts["num_env_runners=4"]
    assert texts["num_env_runners=2"].startswith(
        "runs at 90% of what its env and learner allow here (1,000 env steps/s"
    )
    assert "close to it" in texts["num_env_runners=2"]
    assert texts["num_env_runners=1"].endswith("the lever is sampling, at 31% of the env's own rate")
    assert "the lever is sampling" in to_markdown(blocks) and "What its env and learner allow" in to_html(
        blocks, "t", ""
    )
    assert ceiling_blocks(pd.DataFrame(), AXES) == []


def test_the_figure_draws_each_configuration_with_a_ceiling_against_it():
    ax, caption = plot_ceiling(_configs(), AXES)
    pale, measured = ax.containers[0], ax.containers[1]
    assert [b.get_width() for b in pale] == [1000.0, 800.0]  # fastest first; the one without a ceiling left out
    assert [b.get_width() for b in measured] == [900.0, 400.0]
    assert [t.get_text() for t in ax.get_yticklabels()] == ["num_env_runners=2 (90%)", "num_env_runners=1 (50%)"]
    assert "1 measured configuration without an env ceiling left out" in caption and ax.get_xscale() == "linear"
    # an env alone 100x the trial: a log scale, the bars from half the smallest value
    far = _configs().assign(env_ceiling_steps_per_s=[160_000.0, 200_000.0, np.nan])
    ax, _ = plot_ceiling(far, AXES)
    assert ax.get_xscale() == "log" and [b.get_x() for b in ax.containers[0]] == [200.0, 200.0]
    none = _configs().assign(ceiling_env_steps_per_s=np.nan)
    assert plot_ceiling(none, AXES) is None
