"""report.html of a generated result set in the real on-disk format (no Ray): the HTML parses with
every tag closed, every embedded figure decodes to a picture of sane size, and no figure shows a
single point."""

from __future__ import annotations

import importlib.util

import pytest
from conftest import REPO, assert_images_sane, parse_report

from rlbench.analysis.tables import build_tables
from rlbench.report.document import write_report
from rlbench.report.trial_plots import write_plots_beside

_spec = importlib.util.spec_from_file_location("bench_tables", REPO / "scripts" / "bench_tables.py")
bench_tables = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(bench_tables)


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    out = bench_tables.generate(
        tmp_path_factory.mktemp("r") / "r",
        trials=4,
        iterations=6,
        repeats=2,
        grid={"num_env_runners": [0, 1], "num_envs_per_env_runner": [2]},
    )
    tables = build_tables(out)
    # the sweep's way: per-trial figures drawn in a forked child while the report draws its own
    plots_written = write_plots_beside(out, tables, ["num_env_runners", "num_envs_per_env_runner"])
    html_path, _, _ = write_report(out, tables, plots_written)
    return out, parse_report(html_path)


def test_html_parses_with_every_tag_closed(report):
    _, parser = report
    assert parser.problems == [] and parser.open == []


def test_every_embedded_image_decodes_with_a_sane_size(report):
    _, parser = report
    assert len(parser.images) >= 6  # CI plot, time shares, CPU by config, per-trial bars and heat maps
    assert_images_sane(parser)


def test_no_single_point_figure_in_the_report(report):
    out, parser = report
    titles = " | ".join(parser.titles)
    assert "Throughput vs num_env_runners with 95% CI" in titles
    assert "num_envs_per_env_runner" not in titles  # one value in the grid: nothing to compare
    assert not list((out / "plots").glob("*throughput*num_envs_per_env_runner*"))
    assert "Throughput vs num env runners" not in titles  # per-trial twin of the CI figure: in plots/ only
    assert (out / "plots" / "throughput_vs_num_env_runners.png").exists()
