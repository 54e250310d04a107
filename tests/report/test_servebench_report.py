"""servebench.html and servebench.md from a servebench.json written by hand (no Ray): the paper beside the rows,
the figures sane, and text from the file (an error, the command, the machine) drawn inert."""

from __future__ import annotations

import re

import pytest
from conftest import assert_images_sane, parse_report

from rlbench.report.servebench_report import terminal_tables, write_servebench_report

HOSTILE = "<script>alert(1)</script> | `rm -rf` [x](javascript:alert(1)) \x1b[31mred"


def doc() -> dict:
    runs = []
    for size, actor, rest in ((4096, 5000.0, 800.0), (102400, 4500.0, 30.0)):
        for repeat in range(3):
            for path, rate, p50 in (("inprocess", 6000.0, 10.0), ("actor", actor, 12.0), ("rest_json", rest, 80.0)):
                for batch in (8, 64):
                    wobble = 1 + 0.02 * repeat
                    runs.append(
                        {
                            "path": path,
                            "batch": batch,
                            "input_bytes": size,
                            "clients": 1,
                            "repeat": repeat,
                            "position": 0,
                            "model": "m",
                            "states_per_s": rate * wobble * batch / 64,
                            "p50_ms": p50 * wobble,
                            "p99_ms": 2 * p50,
                            "requests": 9,
                            "short": False,
                            "bytes_per_request": 0 if path == "inprocess" else 64 * size,
                            "cpu_s_per_1000_states": {"client": 0.01, "server": 0.02 * (path != "inprocess")},
                            "error": None,
                        }
                    )
    runs.append(
        {
            "path": "serve_json",
            "batch": 64,
            "input_bytes": 4096,
            "clients": 1,
            "repeat": 0,
            "position": 1,
            "model": "m",
            "error": HOSTILE,
        }
    )
    return {
        "command": f"rlbench servebench --out {HOSTILE}",
        "started": "2026-11-25T10:00:00",
        "finished": HOSTILE,
        "machine": {"cpu_model": HOSTILE, "cores": 2},
        "config": {"paths": ["inprocess", HOSTILE]},
        "runs": runs,
        "calibration": [
            {
                "model": HOSTILE,
                "input_bytes": 4096,
                "target_ms": 10.0,
                "depth": 4,
                "residual": True,
                "width": 664,
                "forward_ms": 10.4,
                "parameters": 4214410,
                "probes": [{"width": 384, "forward_ms": 2.9}],
            }
        ],
        "policy": {"model": HOSTILE},
        "setup_s": {"ray_init_s": 5.0},
        "servers": {"rest": 1234},
    }


@pytest.fixture(scope="module")
def written(tmp_path_factory):
    out = tmp_path_factory.mktemp("sb")
    html_path, md_path, rows, comparisons = write_servebench_report(out, doc())
    return html_path, md_path, rows, comparisons


def test_the_html_parses_and_its_figures_are_pictures(written):
    html_path, _, _, _ = written
    parser = parse_report(html_path)
    assert parser.problems == [] and parser.open == []
    assert len(parser.images) == 4
    assert_images_sane(parser)


def test_text_from_the_file_is_inert(written):
    html_path, md_path, _, _ = written
    html, md = html_path.read_text(), md_path.read_text()
    assert "<script>" not in html and "&lt;script&gt;" in html  # (an ESC in HTML is shown, never run)
    assert "\x1b" not in md
    for line in md.splitlines():  # raw only inside a code span (the setup's fields), shown verbatim there
        if "<script>" in line or re.search(r"(?<!\\)\]\(javascript", line):
            assert line.startswith("- ") and ": `" in line, line


def test_the_paper_and_the_verdicts_are_there(written):
    _, md_path, rows, comparisons = written
    md = md_path.read_text()
    assert "4,400" in md and "6,900" in md and "23.8x" in md  # the paper's Table 3
    assert "p3.8xlarge" in md  # a setup difference named
    actor_vs_rest = [c for c in comparisons if (c.path, c.reference, c.batch) == ("actor", "rest_json", 64)]
    assert len(actor_vs_rest) == 2 and all(c.change.differs for c in actor_vs_rest)
    assert "actor is 6.25x as fast as rest_json (3 runs a side; ratio of medians 6.250" in md  # 5000 / 800
    # each repeat's actor/rest_json: 6.25 at 4 KB, 150 at 100 KB (the wobble cancels): 3 against 3, all above
    assert (
        "the gap grows with the state size: each repeat's actor/rest_json at 100 KiB over that at 4 KiB (3 runs "
        "a side; ratio of medians 24.000"
    ) in md
    failed = next(r for r in rows if r.path == "serve_json")
    assert failed.runs == 0 and failed.error.startswith("1 of 1 repeats failed")


def test_the_terminal_tables_print_plain_text(written):
    from rich.console import Console

    _, _, rows, comparisons = written
    console = Console(width=400, record=True, color_system=None)
    for table in terminal_tables(doc()["runs"], rows, comparisons):
        console.print(table)
    text = console.export_text()
    assert "6,200" in text and "\\x1b" in text and "\x1b" not in text
