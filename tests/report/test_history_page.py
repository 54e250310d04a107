"""The history page and history.json built from a golden history folder (tests/report/fixtures/history_golden/, made
by make_history_golden.py beside it, which states its known answers): two runs, a confirmed regression, an API
change said as such, twins with no evidence of a change, a failed trial whose reason holds markup."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest
from rich.console import Console

from rlbench.analysis.history.points import read_change_points
from rlbench.analysis.history.runs import history_trends_of, read_run, with_bisect
from rlbench.commands.history import write_history
from rlbench.report.history_page import change_point_line
from rlbench.results.manifest import read_manifest

GOLDEN = Path(__file__).parent / "fixtures" / "history_golden"


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    out = tmp_path_factory.mktemp("history") / "h"
    shutil.copytree(GOLDEN, out)
    console = Console(width=300, record=True)
    slower = write_history(out, 0.05, console)
    return out, slower, console.export_text()


def test_the_confirmed_regression_fails_and_the_api_change_does_not(built):
    out, slower, text = built
    assert slower == 1  # num_env_runners=0's 1.1 -> 2.0; num_env_runners=1's is an API change
    assert "num_env_runners=0: regressed: pkg-2.0 is 50.0% slower than pkg-1.1 (6 rounds;" in text
    assert "num_env_runners=1: API change: pkg-2.0 is 50.0% slower than pkg-1.1" in text


def test_history_json_holds_each_steps_standing(built):
    out, _, _ = built
    body = json.loads((out / "history.json").read_text())
    assert body["versions"] == ["1.0", "1.1", "2.0"] and [r["name"] for r in body["runs"]] == [
        "01-history",
        "02-confirm-1.1-2.0-c1",
    ]
    zero, one = body["configurations"]
    for config in (zero, one):  # the throughput's steps, then the CPU cost's (a check beside them, never called)
        assert [s["metric"] for s in config["steps"]] == ["throughput"] * 2 + ["cpu_cost"] * 2
        config["steps"], config["cpu_steps"] = config["steps"][:2], config["steps"][2:]
    assert [s["outcome"] for s in zero["steps"]] == ["", "confirmed"]
    assert [s["verdict"] for s in zero["cpu_steps"]] == [
        "no evidence yet: 5 rounds; 6 rounds could show it",
        "regressed",
    ]
    assert [s["outcome"] for s in zero["cpu_steps"]] == ["", ""]
    # one core busy throughout: the CPU per step doubles with the halved throughput (1e6 / (0.5 x 1,000) on round 0)
    assert zero["points"][2]["cpu_ms_per_k"] == pytest.approx(2 * zero["points"][1]["cpu_ms_per_k"], rel=0.01)
    assert zero["steps"][1]["confirmation"]["runs_a"] == 6 and zero["steps"][1]["confirmation_run"] == (
        "02-confirm-1.1-2.0-c1"
    )
    assert [s["outcome"] for s in one["steps"]] == ["", "API change"]
    api = one["steps"][1]["api"]
    # the seed differs by round: not a default; rollout_fragment_length is a knob of the spec, log_gradients is not
    assert api["defaults"] == {"log_gradients": [True, False], "rollout_fragment_length": ["auto", 50]}
    assert zero["steps"][1]["api"]["defaults"] == {"log_gradients": [True, False]}
    assert api["read_paths"] == {"per-iteration values": ["old way", "new way"]}
    assert zero["steps"][0]["change"]["runs_a"] == 5  # round 5 of 1.0 failed: five pairs, no verdict
    assert zero["points"][0]["failed"] == 1 and zero["points"][0]["ok_rounds"] == 5
    sample = next(p for p in zero["points"][2]["phases"] if p["phase"] == "sample_s")
    # each round: 1,000 steps at (1000 + 10 r) x 0.5 steps/s, 0.3 s of it not sampling; the median of the six rounds
    per_round = sorted(1000 * (1000 / ((1000 + 10 * r) * 0.5) - 0.3) for r in range(6))
    assert sample["ms_per_k"] == pytest.approx((per_round[2] + per_round[3]) / 2)


def test_the_page_says_each_step_with_its_evidence(built):
    out, _, _ = built
    page = (out / "history.html").read_text()
    assert "<title>pkg 1.0 to 2.0: performance history</title>" in page
    items = re.findall(r"<li>(.*?)</li>", page)
    assert any(i.startswith("num_env_runners=0, 1.1 -&gt; 2.0: regressed: pkg-2.0 is 50.0% slower") for i in items)
    assert any(i.startswith("num_env_runners=1, 1.1 -&gt; 2.0: API change: pkg-2.0 is 50.0% slower") for i in items)
    assert "1.0 -&gt; 1.1: no evidence of a change (6 rounds; paired ratio 1.000" in page  # the twins
    assert "1.0 -&gt; 1.1: no evidence yet: 5 rounds; 6 rounds could show it" in page
    assert "confirmation (02-confirm-1.1-2.0-c1, 6 rounds of the two releases alone): paired ratio 0.500" in page
    assert (
        "API: workload defaults changed: rollout_fragment_length &#x27;auto&#x27; -&gt; 50; defaults changed: log"
        in page
    )
    assert "API: defaults changed: log_gradients True -&gt; False; read differently" in page  # num_env_runners=0
    assert "read differently: per-iteration values: old way -&gt; new way" in page
    assert "phases that moved (paired, with evidence): sample x" in page
    assert "CPU per 1,000 env steps x2.000 (1.998-2.002: a change with evidence)" in page


def test_the_page_is_one_inert_file(built):
    out, _, _ = built
    page = (out / "history.html").read_text()
    assert page.count("data:image/png;base64,") == 2  # one figure per configuration, embedded
    assert "<script" not in page and "src='http" not in page and "href=" not in page
    assert "ValueError: &lt;script&gt;alert(1)&lt;/script&gt; refused" in page  # text from elsewhere, as text
    assert (out / "plots" / "history-num_env_runners_0.png").stat().st_size > 0


def test_a_run_finished_by_a_resume_ended_when_the_resume_did(tmp_path):
    """A history run interrupted and finished by ``--resume``: the first run's own end is None, its resume's is the
    run's end (the page's Runs table said "None" for a run that had finished)."""
    run = tmp_path / "01-history"
    shutil.copytree(GOLDEN / "runs" / "01-history", run)
    manifest = read_manifest(run / "manifest.json")
    manifest.ended_at = None
    manifest.begin_resume(["rlbench", "history", "--resume"], "2026-11-28T09:30:00+00:00")
    manifest.end("2026-11-28T10:11:00+00:00", interrupted=False, statuses={})
    manifest.write(run / "manifest.json")
    info, *_ = read_run(run, 1, "history")
    assert info.ended == "2026-11-28T10:11:00+00:00"


def test_the_page_leads_with_the_change_points_the_phases_folded_into_the_throughputs(built):
    out, _, text = built
    page = (out / "history.html").read_text()
    assert page.index("Change points over the whole history") < page.index("What changed") < page.index("Cumulative")
    items = re.findall(r"<li>(.*?)</li>", page)
    lead = [i for i in items if " steps between " in i]
    # one per configuration: the throughput's, the sample phases' points between the same releases folded into it
    assert sorted(i.split(":")[0] for i in lead) == ["num_env_runners=0", "num_env_runners=1"]
    zero = next(i for i in lead if i.startswith("num_env_runners=0"))
    assert zero.startswith(
        "num_env_runners=0: throughput steps between 1.1 and 2.0 (1.0..1.1 against 2.0: 1,025 -&gt; 512 env steps/s): "
        "regressed: 2.0 is 50.0% slower than 1.0..1.1 (6 rounds; paired ratio 0.500"
    )
    assert "the phases that moved (paired, with evidence): sample " in zero and "ms per 1,000 env steps (x2.44)" in zero
    # its release pair changed log_gradients: said as a trade; no index was given, so no bisect line
    assert "a trade, not only a regression: slower, but it changed defaults (defaults changed: log_gradients" in zero
    assert "rlbench bisect" not in page
    assert "num_env_runners=0: change point: throughput steps between 1.1 and 2.0" in text  # the terminal too


def test_history_json_holds_the_change_points_read_back_through_their_schema(built):
    out, _, _ = built
    body = json.loads((out / "history.json").read_text())
    assert body["change_points"] == 10  # per configuration: the throughput and four phases of sampling
    zero = body["configurations"][0]
    points = read_change_points(zero["change_points"])
    assert [(p.metric, p.before, p.after, p.verdict) for p in points][0] == ("sample_s", "1.1", "2.0", "regressed")
    assert {p.metric for p in points} == {"throughput", "sample_s", "env_step_s", "inference_s", "sample_other_s"}
    cumulative = [(s["before"], s["after"], s["verdict"]) for s in zero["cumulative"] if s["metric"] == "throughput"]
    assert cumulative == [("1.0", "2.0", "no evidence yet: 5 rounds; 6 rounds could show it")]  # the others: steps
    one = read_change_points(body["configurations"][1]["change_points"])
    assert next(p for p in one if p.metric == "throughput").trade.startswith(
        "an API change, not a regression: a knob a spec can set changed its default (workload defaults changed: "
        "rollout_fragment_length 'auto' -> 50"
    )


def test_a_change_point_gets_its_bisect_command_where_the_index_lists_releases_between(built):
    out, _, _ = built
    _, trends = history_trends_of(out, 0.05)

    def throughput_point(listed, index=None):
        [trend] = [t for t in with_bisect(trends, "pkg", (Path("h.yaml"), index, listed)) if t.label.endswith("0")]
        return next(p for p in trend.change_points if p.metric == "throughput")

    point = throughput_point(["1.0", "1.1", "1.5", "1.7", "2.0"], "./wheels")
    assert point.between == 2
    assert point.bisect == "rlbench bisect h.yaml --package pkg --good 1.1 --bad 2.0 --index ./wheels"
    assert (throughput_point(["1.0", "1.1", "2.0"]).between, throughput_point(["1.0", "1.1", "2.0"]).bisect) == (
        0,
        None,
    )
    unknown = throughput_point(None)  # the index not read: the command is printed, and bisect says what lies between
    assert unknown.between is None and unknown.bisect == "rlbench bisect h.yaml --package pkg --good 1.1 --bad 2.0"
    line = change_point_line(point)
    assert line.endswith(
        "; to find the release (2 releases between them in the index): rlbench bisect h.yaml --package pkg "
        "--good 1.1 --bad 2.0 --index ./wheels"
    )
    assert with_bisect(trends, "pkg", None) is trends  # rebuilt without the spec: nothing to add
