"""Results folders and text from elsewhere, through the CLI: nothing is run, overwritten or leaked.

A received folder is generated in the real on-disk format (``scripts/bench_tables.py``), then
made hostile the way someone could: a link in it, a plan naming ``subprocess:Popen``, a trial id
with a path in it, a manifest whose text would break out of a YAML comment, markup and HTML in
values. No Ray starts.
"""

from __future__ import annotations

import importlib.util
import io
import json
import re
import shutil

import pandas as pd
import pytest
import yaml
from conftest import REPO

from rlbench.commands import main
from rlbench.report.embed import embeddable
from rlbench.report.markdown import md_code, md_text
from rlbench.results.layout import ResultsFolder

_spec = importlib.util.spec_from_file_location("bench_tables", REPO / "scripts" / "bench_tables.py")
bench_tables = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(bench_tables)

XSS = "<script>alert(1)</script>"
MD = "a|b [click](http://evil.example) ![x](http://evil.example/p.png) `code` *em*"
FORMULA = '=HYPERLINK("http://evil.example","x")'
MATH = "costs $\\frac{$"  # matplotlib would read "$...$" as mathtext, and this one does not parse


@pytest.fixture(scope="module")
def received(tmp_path_factory):
    """A result set whose axis values carry HTML, Markdown and a spreadsheet formula."""
    return bench_tables.generate(
        tmp_path_factory.mktemp("r") / "received",
        trials=4,
        iterations=4,
        repeats=1,
        grid={"env_config.msg": [XSS, MD, FORMULA, MATH]},
    )


def _copy(received, tmp_path):
    return shutil.copytree(received, tmp_path / "copy")


def _snapshot(root):
    return {str(p.relative_to(root)): p.stat().st_mtime_ns for p in root.rglob("*")} if root.exists() else {}


def test_report_makes_values_inert(received, tmp_path):
    folder = _copy(received, tmp_path)
    manifest = json.loads((folder / "manifest.json").read_text())
    manifest["spec"]["name"] = "<img src=x onerror=alert(1)>"
    (folder / "manifest.json").write_text(json.dumps(manifest))
    assert main(["report", str(folder), "--rebuild"]) == 0
    md = (folder / "report.md").read_text()
    html = (folder / "report.html").read_text()
    outside_code = re.sub(r"(`+).*?\1", "", md)  # a code span shows its text verbatim: HTML there is inert
    for text in (outside_code, html):
        assert "<script>" not in text and "<img src=x" not in text
    assert "&lt;script>alert(1)&lt;/script>" in md and "&lt;img src=x onerror=alert(1)>" in md
    unescaped = md.replace("\\[", "").replace("\\]", "").replace("\\|", "")
    assert "[click](" not in unescaped and "a|b" not in unescaped and "\\[click\\](" in md  # no link, no new cell
    summary = pd.read_csv(folder / "summary.csv")
    assert "'" + FORMULA in set(summary["env_config.msg"])  # the formula cell is shown as text


@pytest.mark.parametrize("mode", ["search", "walk"])
def test_a_hostile_autoconfig_json_is_drawn_inert_never_an_error(received, tmp_path, mode):
    """autoconfig.json is read typed (rlbench/results/autoconfig_file.py): markup is escaped, a value of the wrong
    type is a dash, an entry that is no object is left out, and a NaN where seconds belong fails nothing."""
    folder = _copy(received, tmp_path)
    step = {"step": 1, "axis": XSS, "verdict": MD, "speedup": "fast", "values": [XSS], "passed": [MATH]}
    hostile = {
        "mode": mode,
        "objective": "throughput",
        "best": {"key": XSS, "median": "NaN?", "n": True},
        "baseline": [XSS],
        "speedup": {"ratio": 2.0, "ci_low": 1.0, "ci_high": None},
        "standings": [{"key": MD, "cpus": "2", "steps_to_target": 7}, XSS, None],
        "indistinguishable": [{"key": XSS}, 1, {"key": MD}],
        "eliminations": [{"key": XSS, "rung": "0", "reason": XSS}],
        "plan": {"left_s": float("nan"), "trial_cost_s": 1.0, "words": XSS},
        "path": [step, XSS, None],
        "walk_points": [{"step": 0, "median": 1.0, "verdict": MATH}, {"step": "1", "median": XSS}],
        "stop_text": XSS,
        "evidence": MD,
    }
    (folder / "autoconfig.json").write_text(json.dumps(hostile))
    assert main(["report", str(folder)]) == 0
    md, html = (folder / "report.md").read_text(), (folder / "report.html").read_text()
    assert "## Autoconfig" in md and "<script>" not in html and "&lt;script&gt;" in html
    assert "<script>" not in re.sub(r"(`+).*?\1", "", md)


def test_per_trial_plots_with_odd_values_and_forged_ids(received, tmp_path):
    from rlbench.analysis.tables import read_tables
    from rlbench.report.trial_plots import write_plots

    folder = _copy(received, tmp_path)
    tables = read_tables(folder)
    old = tables["trials"].loc[0, "trial_id"]
    tables["trials"].loc[0, "trial_id"] = "../../../escaped"
    util = tables["utilization"]
    util.loc[util["trial_id"] == old, "trial_id"] = "../../../escaped"
    written = write_plots(folder, tables, ["env_config.msg"])
    assert folder / "plots" / ("cpu_heatmap_" + "_" * 9 + "escaped.png") in written  # ../../../ -> 9 x _
    assert all(p.parent == folder / "plots" for p in written)  # every file inside plots/
    assert not (tmp_path / "escaped.png").exists() and not list(tmp_path.glob("*escaped*"))


def test_md_helpers():
    assert md_text("<b>x</b> & y") == "&lt;b>x&lt;/b> &amp; y"  # no tag can open: ">" alone is text
    assert md_text("driver_torch_threads 1 -> 2") == "driver_torch_threads 1 -> 2"  # readable raw
    assert md_text("_em_ *b* ~s~ $m$") == "\\_em\\_ \\*b\\* \\~s\\~ \\$m\\$"
    assert md_text("a\nb|c") == "a\\\\x0ab\\|c"
    assert md_code("x ``y`` z") == "```x ``y`` z```"
    assert md_code("`") == "`` ` ``"


def test_report_refuses_a_folder_with_a_planted_link(received, tmp_path, capsys):
    folder = _copy(received, tmp_path)
    secret = tmp_path / "secret.png"
    secret.write_bytes(b"\x89PNG\r\n\x1a\nmy private picture")
    (folder / "plots").mkdir(exist_ok=True)
    (folder / "plots" / "time_breakdown.png").symlink_to(secret)
    before = _snapshot(folder)
    assert main(["report", str(folder)]) == 2
    assert "plots/time_breakdown.png" in capsys.readouterr().out
    assert _snapshot(folder) == before and secret.read_bytes().endswith(b"my private picture")


def test_only_regular_pngs_named_as_rlbench_names_them_are_embedded(tmp_path):
    png = b"\x89PNG\r\n\x1a\n" + b"\0" * 16
    (tmp_path / "cpu_heatmap_t000r0.png").write_bytes(png)
    (tmp_path / "link.png").symlink_to(tmp_path / "cpu_heatmap_t000r0.png")
    (tmp_path / "odd name.png").write_bytes(png)
    (tmp_path / "fake.png").write_bytes(b"<svg onload=alert(1)>")
    assert [p.name for p in sorted(tmp_path.iterdir()) if embeddable(p)] == ["cpu_heatmap_t000r0.png"]


def test_reproduce_run_of_a_hostile_plan_runs_nothing(received, tmp_path, capsys, monkeypatch):
    folder = _copy(received, tmp_path)
    marker = tmp_path / "pwned"
    plan_path = ResultsFolder(folder).trial("t000r0").plan
    plan = json.loads(plan_path.read_text())
    plan["config"]["environment"] = {"env": "subprocess:Popen", "env_config": {"args": ["touch", str(marker)]}}
    plan_path.write_text(json.dumps(plan))
    monkeypatch.chdir(tmp_path)
    rerun = tmp_path / "rerun"
    assert main(["reproduce", str(folder), "t000r0", "--run", "--out", str(rerun)]) == 2
    assert "not a gymnasium.Env subclass" in capsys.readouterr().out
    assert not marker.exists() and not rerun.exists()


@pytest.mark.parametrize("trial_id", ["../../../tmp/x", "t000r0/../../x", "t000r0\x1b[2J", "T0"])
def test_reproduce_refuses_odd_trial_ids(received, tmp_path, trial_id, capsys):
    folder = _copy(received, tmp_path)
    before = _snapshot(tmp_path)
    assert main(["reproduce", str(folder), trial_id]) == 2
    out = capsys.readouterr().out
    assert "is not a trial id" in out and "\x1b" not in out
    assert _snapshot(tmp_path) == before


def test_reproduce_keeps_the_manifests_text_inside_the_comment(received, tmp_path):
    folder = _copy(received, tmp_path)
    manifest = json.loads((folder / "manifest.json").read_text())
    manifest["git_commit"] = "abc\ngrid: {env: ['evil_module:Env']}\nenv_ceiling_s: 99"
    (folder / "manifest.json").write_text(json.dumps(manifest))
    assert main(["reproduce", str(folder), "t001r0"]) == 0
    spec = yaml.safe_load(ResultsFolder(folder).trial("t001r0").reproduce.read_text())
    assert "grid" not in spec and "env_ceiling_s" not in spec


def test_reproduce_only_trials_the_manifest_planned(received, tmp_path):
    folder = _copy(received, tmp_path)
    shutil.copytree(ResultsFolder(folder).trial("t000r0").path, folder / "trials" / "t099r0")
    assert main(["reproduce", str(folder), "t099r0"]) == 2


def test_sweep_out_into_a_folder_of_someone_elses_files(tmp_path, capsys, monkeypatch):
    spec = tmp_path / "spec.yaml"
    spec.write_text("name: x\nenvironment: {env: CartPole-v1}\nstop: {iterations: 3}\n")
    out = tmp_path / "home"
    out.mkdir()
    (out / "notes.txt").write_text("mine")
    (out / "summary.csv").write_text("mine too")
    monkeypatch.chdir(REPO)
    before = _snapshot(out)
    assert main(["sweep", str(spec), "--out", str(out)]) == 2
    assert "already holds files (notes.txt, summary.csv) and is not an rlbench sweep" in capsys.readouterr().out
    assert _snapshot(out) == before


def test_errors_quoting_hostile_text_print_it_plainly(tmp_path, capsys, monkeypatch):
    spec = tmp_path / "spec.yaml"
    spec.write_text('name: x\nenvironment: {env: "envs.tiny:[/]x\\e[2J\\e]0;pwned\\a"}\nstop: {iterations: 3}\n')
    monkeypatch.chdir(REPO)
    assert main(["sweep", str(spec), "--dry-run"]) == 2
    out = capsys.readouterr().out
    assert "has no '[/]x\\x1b[2J\\x1b]0;pwned\\x07'" in out and "\x1b" not in out


def test_error_output_is_plain_on_a_real_terminal(tmp_path, monkeypatch):
    """Through a console that does write escape sequences: still none of the text's own."""
    from rich.console import Console

    from rlbench.commands._common import bad_input

    out = io.StringIO()
    bad_input(Console(file=out, force_terminal=True), "env said [/] \x1b[2J")
    text = out.getvalue()
    assert "[/] \\x1b[2J" in text and "\x1b[2J" not in text


@pytest.mark.parametrize("damage", ["manifest", "manifest_list", "table"])
def test_damaged_folders_are_bad_input_not_tracebacks(received, tmp_path, capsys, damage):
    folder = _copy(received, tmp_path)
    if damage == "manifest":
        (folder / "manifest.json").write_text("{")
    elif damage == "manifest_list":
        (folder / "manifest.json").write_text("[1, 2]")
    else:
        (folder / "trials" / "t000r0" / "utilization.parquet").write_bytes(b"PAR1 not really parquet PAR1")
    assert main(["report", str(folder)]) == 2
    assert main(["compare", str(received), str(folder), "--out", str(tmp_path / "cmp")]) == 2
    assert "damaged" in capsys.readouterr().out
