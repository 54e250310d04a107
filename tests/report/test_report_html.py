"""report.html of a generated result set in the real on-disk format (no Ray): the HTML parses with
every tag closed, every embedded figure decodes to a picture of sane size, and no figure shows a
single point."""

from __future__ import annotations

import base64
import html.parser
import importlib.util
import io

import matplotlib.image as mpimg
import pytest
from conftest import REPO

from rlbench.analysis.tables import build_tables
from rlbench.report.document import write_report
from rlbench.report.trial_plots import write_plots

_spec = importlib.util.spec_from_file_location("bench_tables", REPO / "scripts" / "bench_tables.py")
bench_tables = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(bench_tables)

VOID = {"meta", "img", "br", "hr", "link", "input", "col", "area", "base", "source", "wbr"}


class StrictParser(html.parser.HTMLParser):
    """Collects the images and the h3 titles; records any end tag that does not close the open one."""

    def __init__(self) -> None:
        super().__init__()
        self.open: list[str] = []
        self.problems: list[str] = []
        self.images: list[tuple[str, str]] = []
        self.titles: list[str] = []
        self._in_h3 = False

    def handle_starttag(self, tag, attrs):
        if tag == "img":
            self.images.append((dict(attrs).get("alt", ""), dict(attrs).get("src", "")))
        if tag not in VOID:
            self.open.append(tag)
        self._in_h3 = tag == "h3"

    def handle_endtag(self, tag):
        if not self.open or self.open[-1] != tag:
            self.problems.append(f"</{tag}> closes {self.open[-1:] or 'nothing'}")
        else:
            self.open.pop()
        self._in_h3 = False

    def handle_data(self, data):
        if self._in_h3:
            self.titles.append(data)


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    out = bench_tables.generate(tmp_path_factory.mktemp("r") / "r", trials=4, iterations=6, repeats=2,
                                grid={"num_env_runners": [0, 1], "num_envs_per_env_runner": [2]})
    tables = build_tables(out)
    write_plots(out, tables, ["num_env_runners", "num_envs_per_env_runner"])
    html_path, _, _ = write_report(out, tables)
    parser = StrictParser()
    parser.feed(html_path.read_text())
    parser.close()
    return out, parser


def test_html_parses_with_every_tag_closed(report):
    _, parser = report
    assert parser.problems == [] and parser.open == []


def test_every_embedded_image_decodes_with_a_sane_size(report):
    _, parser = report
    assert len(parser.images) >= 6  # CI plot, time shares, CPU by config, per-trial bars and heat maps
    for alt, src in parser.images:
        assert src.startswith("data:image/png;base64,"), alt
        picture = mpimg.imread(io.BytesIO(base64.b64decode(src.split(",", 1)[1])), format="png")
        height, width = picture.shape[:2]
        assert 150 <= height <= 4000 and 300 <= width <= 4000, (alt, picture.shape)
        assert picture[..., :3].std() > 0.01, alt  # not blank


def test_no_single_point_figure_in_the_report(report):
    out, parser = report
    titles = " | ".join(parser.titles)
    assert "Throughput vs num_env_runners with 95% CI" in titles
    assert "num_envs_per_env_runner" not in titles  # one value in the grid: nothing to compare
    assert not list((out / "plots").glob("*throughput*num_envs_per_env_runner*"))
    assert "Throughput vs num env runners" not in titles  # per-trial twin of the CI figure: in plots/ only
    assert (out / "plots" / "throughput_vs_num_env_runners.png").exists()
