"""report, compare and reproduce on generated result sets in the real on-disk format (no Ray)."""

from __future__ import annotations

import importlib.util
import json

import pandas as pd
import pytest
import yaml
from conftest import REPO

from rlbench.commands import main
from rlbench.planning.plan import read_plan
from rlbench.report.reproduce import reproduce_spec
from rlbench.results.layout import ResultsFolder
from rlbench.spec.load import load_spec

_spec = importlib.util.spec_from_file_location("bench_tables", REPO / "scripts" / "bench_tables.py")
bench_tables = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(bench_tables)

GRID = {"num_env_runners": [0, 1], "num_envs_per_env_runner": [1, 2]}


def _make(path, speed=1.0, seed=0, repeats=3, target=None):
    return bench_tables.generate(
        path, trials=4 * repeats, iterations=8, repeats=repeats, seed=seed, speed=speed, grid=GRID, target=target
    )


@pytest.fixture(scope="module")
def base(tmp_path_factory):
    return _make(tmp_path_factory.mktemp("a") / "a")


def test_report_is_self_contained(base, capsys):
    assert main(["report", str(base)]) == 0
    html = (base / "report.html").read_text()
    # 2 CI plots, time shares, CPU by role, 2 learning curves (no target: no Pareto figure)
    assert html.count("data:image/png;base64,") == 6
    for external in ("src='http", 'src="http', "href='http", 'href="http', "<script", "<link"):
        assert external not in html
    md = (base / "report.md").read_text()
    assert "## Recommendations" in md and "## Scaling" in md and "plots/report_time_shares.png" in md
    assert "Report:" in capsys.readouterr().out


def test_compare_with_itself_reports_no_change(base, tmp_path):
    assert main(["compare", str(base), str(base), "--out", str(tmp_path)]) == 0
    table = pd.read_csv(tmp_path / "compare.csv")
    assert len(table) == 4 and (table["ratio"] == 1.0).all()
    assert (table["verdict"] == "no significant change").all() and (table["basis"] == "repeats").all()
    assert ((table["ci_low"] <= 1.0) & (table["ci_high"] >= 1.0)).all()
    assert json.loads((tmp_path / "compare.json").read_text())["regressed"] == 0


def test_compare_flags_a_significant_regression(base, tmp_path):
    slow = _make(tmp_path / "slow", speed=0.8, seed=1)
    assert main(["compare", str(base), str(slow), "--out", str(tmp_path)]) == 1
    table = pd.read_csv(tmp_path / "compare.csv")
    assert (table["verdict"] == "regressed").all()
    assert table["ratio"].between(0.75, 0.85).all() and (table["ci_high"] < 1.0).all()
    # a 20% drop is within a 25% threshold: significant, but not a failure
    assert main(["compare", str(base), str(slow), "--out", str(tmp_path), "--threshold", "0.25"]) == 0
    assert (pd.read_csv(tmp_path / "compare.csv")["verdict"] == "small change").all()


def test_compare_single_repeats_resamples_iterations_but_gives_no_verdict(tmp_path):
    """30% apart on one run a side: the interval (iterations) is shown, the verdict waits for repeats;
    30% slower on one run a side does not fail the comparison."""
    a, b = _make(tmp_path / "a1", repeats=1), _make(tmp_path / "b1", repeats=1, seed=2, speed=1.3)
    assert main(["compare", str(a), str(b), "--out", str(tmp_path)]) == 0
    table = pd.read_csv(tmp_path / "compare.csv")
    assert (table["basis"] == "iterations").all() and (table["n_a"] == 7).all()  # 8 iterations less 1 warm-up
    assert (table["ci_low"] > 1).all()
    assert (table["verdict"] == "no evidence yet: 1 run a side; 3 repeats a side could show it").all()
    assert main(["compare", str(b), str(a), "--out", str(tmp_path)]) == 0


def test_compare_bad_input(base, tmp_path):
    assert main(["compare", str(base), str(tmp_path / "missing")]) == 2
    assert main(["compare", str(base), str(base), "--threshold", "5"]) == 2


def test_reproduce_spec_resolves_to_the_trials_config(base, tmp_path, capsys):
    assert main(["reproduce", str(base), "t003r1", "--out", str(tmp_path / "rerun")]) == 0
    out = capsys.readouterr().out
    path = ResultsFolder(base).trial("t003r1").reproduce
    assert f"rlbench sweep {path} --out {tmp_path / 'rerun'}" in out
    spec = yaml.safe_load(path.read_text())
    assert spec["repeats"] == 1 and spec["cpus"] == 2 and "grid" not in spec
    assert spec["stop"] == {"iterations": 8} and spec["warmup_iterations"] == 1
    loaded = load_spec(path, check_envs=False)
    plan = read_plan(ResultsFolder(base).trial("t003r1"))
    assert loaded.points[0].config == plan.config.model_copy(update={"cpus": 2})
    assert spec["seed"] == [plan.seed] and plan.seed is not None  # the trial's own seed, not a base to derive from
    assert reproduce_spec(base, "t003r1") == {k: v for k, v in spec.items()}
    assert main(["reproduce", str(base), "t999r0"]) == 2


@pytest.fixture(scope="module")
def targeted(tmp_path_factory):
    """Returns 10 x iteration against a target of 50: every trial stops at iteration 5; B is 20% slower."""
    root = tmp_path_factory.mktemp("t")
    return _make(root / "a", target=50), _make(root / "b", speed=0.8, seed=1, target=50)


def test_report_answers_time_to_target(targeted):
    a, _ = targeted
    assert main(["report", str(a)]) == 0
    md = (a / "report.md").read_text()
    assert "## Learning" in md and "Target: episode_return_mean >= 50." in md
    assert "- Fastest to target (episode_return_mean >= 50):" in md and "3/3 repeats reached it" in md
    assert "plots/report_time_to_target_pareto.png" in md and "plots/report_learning_seconds.png" in md
    trials = pd.read_parquet(a / "trials.parquet")
    assert trials["reached_target"].all() and (trials["iterations_to_target"] == 5).all()
    assert (trials["env_steps_to_target"] == 5 * 256).all()


def test_compare_gives_time_to_target_b_over_a(targeted, tmp_path):
    a, b = targeted
    assert main(["compare", str(a), str(b), "--out", str(tmp_path)]) == 1  # B's throughput regressed too
    table = pd.read_csv(tmp_path / "compare.csv")
    assert (table["a_reached"] == "3/3").all() and (table["b_reached"] == "3/3").all()
    assert table["time_to_target_ratio"].between(1.15, 1.35).all()  # walls / 0.8, with 3% noise per iteration
    assert (table["time_to_target_verdict"] == "later").all()
    assert (table["time_to_target_ci_low"] > 1).all()
