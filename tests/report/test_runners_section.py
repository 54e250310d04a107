"""The report's inside-the-iteration sections on a generated result set with a hostile profile (no Ray)."""

from __future__ import annotations

import base64
import importlib.util
import json

import pandas as pd
from conftest import REPO

from rlbench.commands import main
from rlbench.report.embed import embeddable_svg
from rlbench.results.layout import ResultsFolder

_spec = importlib.util.spec_from_file_location("bench_tables", REPO / "scripts" / "bench_tables.py")
bench_tables = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(bench_tables)

EVIL = "<img src=x onerror=alert(1)>"


def _speedscope(frames: list[dict], samples: list[list[int]]) -> str:
    return json.dumps(
        {
            "shared": {"frames": frames},
            "profiles": [
                {
                    "type": "sampled",
                    "name": "Thread 1",
                    "unit": "seconds",
                    "startValue": 0,
                    "endValue": 1,
                    "samples": samples,
                    "weights": [0.01] * len(samples),
                }
            ],
        }
    )


def test_report_shows_role_profiles_escaped_with_a_safe_flame_graph(tmp_path):
    out = bench_tables.generate(tmp_path / "set", trials=2, iterations=4, repeats=1, grid={"num_env_runners": [1, 2]})
    trial = ResultsFolder(out).trial("t000r0")
    frames = [
        {"name": "main", "file": "/x/app.py", "line": 1},
        {"name": EVIL, "file": "/x/evil.py", "line": 7},
        {"name": "other", "file": "", "line": 0},
    ]
    trial.profile_file("env_runner", 4242).parent.mkdir()
    trial.profile_file("env_runner", 4242).write_text(_speedscope(frames, [[0, 1]] * 7 + [[0, 2]] * 3))
    assert main(["report", str(out), "--rebuild"]) == 0
    profiles = pd.read_parquet(out / "profiles.parquet")
    assert set(profiles["pid"]) == {4242} and profiles["self_samples"].sum() == 10
    flame = trial.flamegraph("env_runner")
    assert flame.is_file() and EVIL not in flame.read_text()  # escaped inside the SVG too
    html = (out / "report.html").read_text()
    assert "<h2 id='where-the-time-goes-inside-each-role'>Where the time goes inside each role</h2>" in html
    assert "<h2 id='inside-the-iteration'>Inside the iteration</h2>" in html
    assert EVIL not in html and "&lt;img src=x onerror=alert(1)&gt;" in html
    assert "the env runner spends 70% of its active time in" in html
    embedded = html.split("data:image/svg+xml;base64,")[1].split("'")[0]
    assert base64.b64decode(embedded) == flame.read_bytes()  # shown as an <img>: an SVG there runs nothing
    assert "href='trials/t000r0/profiles/flame-env_runner.svg'" in html
    md = (out / "report.md").read_text()
    assert "## Where the time goes inside each role" in md and EVIL not in md and "&lt;img src=x" in md
    assert "[`trials/t000r0/profiles/flame-env_runner.svg`](trials/t000r0/profiles/flame-env_runner.svg)" in md
    trials = pd.read_parquet(out / "trials.parquet")
    assert set(trials["profile_status"]) == {"off"}  # generated trials have no profile event


def test_only_a_regular_svg_file_is_embedded(tmp_path):
    """A flame graph replaced by a link (a folder from elsewhere) would embed what it points to."""
    ours, secret, link, other = (
        tmp_path / n for n in ("flame-learner.svg", "secret.svg", "flame-driver.svg", "flame-env_runner.svg")
    )
    ours.write_text('<svg xmlns="http://www.w3.org/2000/svg"></svg>\n')
    secret.write_text('<svg xmlns="http://www.w3.org/2000/svg">secret</svg>\n')
    link.symlink_to(secret)
    other.write_text("not an svg")
    assert [embeddable_svg(p) for p in (ours, link, other, tmp_path / "missing.svg")] == [True, False, False, False]
