"""The flame graph SVG: well formed, boxes as wide as their share, every name escaped."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections import Counter

import pytest

from rlbench.report import flamegraph
from rlbench.report.flamegraph import flamegraph_svg

SVG = "{http://www.w3.org/2000/svg}"


def _boxes(svg: str) -> dict[str, float]:
    root = ET.fromstring(svg)  # well-formed XML, or this raises
    out = {}
    for group in root.iter(f"{SVG}g"):
        name = group.find(f"{SVG}title").text.split(": ")[0]
        out[name] = float(group.find(f"{SVG}rect").get("width"))
    return out


def test_box_widths_are_shares_of_the_samples():
    stacks = Counter({("main", "step"): 3, ("main", "infer"): 1})
    boxes = _boxes(flamegraph_svg(stacks, "t000r0: env_runner", width=1000))
    assert boxes["all (4 samples)"] == 1000.0
    assert boxes["main"] == 1000.0
    assert boxes["step"] == 750.0 and boxes["infer"] == 250.0


def test_hostile_names_are_text_not_markup():
    evil = '<script>alert(1)</script>" onload="x'
    svg = flamegraph_svg(Counter({(evil, "&amp;"): 2}), f"title {evil}")
    assert "<script" not in svg and 'onload="x' not in svg
    root = ET.fromstring(svg)
    assert not [e for e in root.iter() if e.tag.endswith("script")]
    assert evil in {g.find(f"{SVG}title").text.split(": ")[0] for g in root.iter(f"{SVG}g")}


def test_a_frame_torn_as_py_spy_read_it_leaves_the_svg_well_formed():
    """CI, 2026-11-29: py-spy gave a frame named NUL in NUL at line 1,792,822; XML 1.0 has no NUL, and the whole flame
    graph failed to parse. Control characters are shown as escapes."""
    svg = flamegraph_svg(Counter({("main", "\0 (\0:1792822)"): 1, ("main", "step\x1b[31m"): 1}), "t000r0: env_runner")
    root = ET.fromstring(svg)  # well-formed
    titles = {g.find(f"{SVG}title").text.split(": ")[0] for g in root.iter(f"{SVG}g")}
    assert "\\x00 (\\x00:1792822)" in titles and "step\\x1b[31m" in titles


def test_narrow_boxes_and_box_count_are_capped(monkeypatch):
    stacks = Counter({("main", f"f{i}"): 1 for i in range(3000)})
    boxes = _boxes(flamegraph_svg(stacks, "wide", width=1200))
    assert set(boxes) == {"all (3,000 samples)", "main"}  # each f_i is 0.4 px wide: not drawn
    monkeypatch.setattr(flamegraph, "MAX_BOXES", 3)
    many = _boxes(flamegraph_svg(Counter({("main", "a"): 5, ("main", "b"): 4, ("main", "c"): 3}), "capped"))
    assert len(many) == 3


@pytest.mark.parametrize(("stacks", "boxes"), [(Counter(), {}), (Counter({(): 3}), {"all (3 samples)": 1200.0})])
def test_empty_profiles_still_give_a_valid_svg(stacks, boxes):
    assert _boxes(flamegraph_svg(stacks, "empty")) == boxes
