"""The output files: autoconfig.json's fields, the adapter's snippet (rllib_config.py) inert whatever the spec
holds and none for a framework without code, best.yaml."""

from __future__ import annotations

import ast
import dataclasses
import json

import pytest
import yaml
from helpers import cand

from rlbench.adapters import get_adapter
from rlbench.adapters.base import ConfigSnippet
from rlbench.autoconfig.ask_tell import Standing
from rlbench.autoconfig.decide import Answer
from rlbench.autoconfig.model import PredictionRow
from rlbench.autoconfig.outputs import AutoconfigResult, autoconfig_json, best_yaml, in_units, write_outputs
from rlbench.autoconfig.search import Elimination
from rlbench.autoconfig.section import AutoconfigSection
from rlbench.spec.model import TrialConfig

HOSTILE = "x'); import os; #"
BEST, BASE, FAST, OUT = cand(2, 4), cand(1, 1), cand(4, 4), cand(1, 2)
SPEC = {
    "name": "demo",
    "algo": "PPO",
    "environment": {"env": HOSTILE, "env_config": {"k": "v'); os.system('x"}},
    "grid": {"num_env_runners": [1, 2, 4], "num_envs_per_env_runner": [1, 2, 4]},
    "autoconfig": {"budget_s": 1200},
    "stop": {"seconds": 30},
}


def config(env: str = HOSTILE, framework: str = "rllib") -> TrialConfig:
    return TrialConfig.model_validate(
        {
            "framework": framework,
            "environment": {"env": env, "env_config": {"k": "v'); os.system('x", "n": [1, 2.5, None, True]}},
            "env_runners": {"num_env_runners": 2, "num_envs_per_env_runner": 4},
            "training": {"lr": 0.0003, "lambda": 0.95, "train_batch_size_per_learner": 2000},
            "rl_module": {"fcnet_hiddens": [32, 32]},
        }
    )


def rllib_config_py(c: TrialConfig, key: str) -> str:
    """What autoconfig writes for an RLlib answer: the adapter's snippet."""
    snippet = get_adapter("rllib").config_snippet(c, key)
    assert (snippet.file_name, snippet.language) == ("rllib_config.py", "python")
    return snippet.text


def result(objective="throughput") -> AutoconfigResult:
    standings = (
        Standing(FAST.key, FAST.cpus, 0, 2000.0, 1900.0, 2100.0, 5),
        Standing(BEST.key, BEST.cpus, 0, 1950.0, 1850.0, 2050.0, 5),
        Standing(BASE.key, BASE.cpus, 0, 500.0, 480.0, 520.0, 5, censored=0),
    )
    answer = Answer(BEST.key, FAST.key, BASE.key, (FAST.key, BEST.key), standings, 3.9, 3.6, 4.2, 5, "settled")
    elim = Elimination(OUT.key, 0, "separated", "below", 400.0, 380.0, 420.0, FAST.key)
    return AutoconfigResult(
        objective,
        answer,
        {c.key: c for c in (BEST, BASE, FAST, OUT)},
        [elim],
        44,
        1180.5,
        1200.0,
        "3 left",
        [PredictionRow(FAST.key, 2.0, 2.2, -9.09)],
    )


def test_rllib_config_is_inert_whatever_the_spec_holds():
    source = rllib_config_py(config(), key=HOSTILE)
    tree = ast.parse(source)
    assert [type(n).__name__ for n in tree.body] == ["Expr", "ImportFrom", "Assign"]
    imp = tree.body[1]
    assert (imp.module, [a.name for a in imp.names]) == ("ray.rllib.algorithms.ppo", ["PPOConfig"])
    calls = [n for n in ast.walk(tree) if isinstance(n, ast.Call)]
    names = [c.func.attr if isinstance(c.func, ast.Attribute) else c.func.id for c in calls]
    assert sorted(names) == sorted(
        ["PPOConfig", "environment", "env_runners", "learners", "resources", "training", "rl_module"]
    )
    for c in calls:  # every argument is a literal: evaluating it runs nothing
        for kw in c.keywords:
            ast.literal_eval(kw.value)
    env = next(c for c in calls if getattr(c.func, "attr", "") == "environment")
    kwargs = {kw.arg: ast.literal_eval(kw.value) for kw in env.keywords}
    assert kwargs == {"env": HOSTILE, "env_config": {"k": "v'); os.system('x", "n": [1, 2.5, None, True]}}
    runners = next(c for c in calls if getattr(c.func, "attr", "") == "env_runners")
    assert {kw.arg: ast.literal_eval(kw.value) for kw in runners.keywords}["num_envs_per_env_runner"] == 4
    training = next(c for c in calls if getattr(c.func, "attr", "") == "training")
    assert {kw.arg for kw in training.keywords} == {"lr", "lambda_", "train_batch_size_per_learner"}


def test_autoconfig_json_fields():
    data = json.loads(json.dumps(autoconfig_json(result()), allow_nan=False))
    assert data["best"]["key"] == BEST.key and data["best"]["axes"] == {
        "num_env_runners": 2,
        "num_envs_per_env_runner": 4,
    }
    assert data["best"]["cpus"] == 3.0 and data["fastest_key"] == FAST.key and data["baseline"]["median"] == 500.0
    assert data["speedup"] == {"ratio": 3.9, "ci_low": 3.6, "ci_high": 4.2}
    assert [s["key"] for s in data["indistinguishable"]] == [FAST.key, BEST.key]
    assert (data["trials_run"], data["wall_s"], data["budget_s"]) == (44, 1180.5, 1200.0)
    assert data["eliminations"][0]["reason"] == "separated" and data["eliminations"][0]["key"] == OUT.key
    assert data["predicted_vs_measured"][0]["error_pct"] == -9.09 and data["unit"] == "env_steps_per_s"


def test_time_to_target_is_written_in_seconds():
    assert in_units("time_to_target", 0.05, 0.04, 0.1) == (20.0, 10.0, 25.0)
    assert in_units("time_to_target", 0.0, 0.0, 0.1) == (None, 10.0, None)  # beyond the cap
    data = autoconfig_json(result("time_to_target"))
    assert data["unit"] == "time_to_target_s" and data["baseline"]["median"] == pytest.approx(1 / 500)


def test_best_yaml_re_measures_the_chosen_against_the_baseline():
    data = yaml.safe_load(best_yaml(SPEC, BEST, BASE))
    assert data["name"] == "demo_best" and "autoconfig" not in data and data["repeats"] == 5
    assert data["grid"] == {"num_env_runners": [1, 2], "num_envs_per_env_runner": [1, 4]}
    assert data["environment"]["env"] == HOSTILE and data["stop"] == {"seconds": 30}
    one_axis = yaml.safe_load(best_yaml(SPEC, cand(2, 1), BASE))
    assert one_axis["grid"] == {"num_env_runners": [1, 2], "num_envs_per_env_runner": [1]}  # exactly the two


def test_write_outputs_writes_three_files(tmp_path):
    snippet = get_adapter("rllib").config_snippet(config(), BEST.key)
    paths = write_outputs(tmp_path / "out", result(), snippet=snippet, spec_data=SPEC)
    assert sorted(p.name for p in paths.values()) == ["autoconfig.json", "best.yaml", "rllib_config.py"]
    assert json.loads(paths["autoconfig.json"].read_text())["best"]["key"] == BEST.key
    assert paths["rllib_config.py"].read_text() == rllib_config_py(config(), BEST.key)
    ast.parse(paths["rllib_config.py"].read_text())
    assert not list((tmp_path / "out").glob(".*.tmp"))


def test_a_framework_without_code_gets_no_snippet_and_a_snippet_name_is_a_plain_name(tmp_path):
    assert get_adapter("plain").config_snippet(config(framework="plain"), BEST.key) is None
    paths = write_outputs(tmp_path / "plain", result(), snippet=None, spec_data=SPEC)
    assert sorted(p.name for p in (tmp_path / "plain").iterdir()) == sorted(paths) == ["autoconfig.json", "best.yaml"]
    for name in ("../x.py", "sub/x.py", ".x.py", "best.yaml", "x"):
        with pytest.raises(ValueError, match="plain name"):
            write_outputs(tmp_path / "bad", result(), snippet=ConfigSnippet(name, "python", ""), spec_data=SPEC)
    assert not (tmp_path / "x.py").exists()


def test_the_section_reads_and_caps_the_search():
    s = AutoconfigSection.model_validate({"objective": "time_to_target", "baseline": {"num_env_runners": 2}})
    assert s.search_cap_s(1200) == 720.0 and s.first_rung_readings == 3
    assert (s.trial_s, s.cold_start_s) == (None, None)  # the spec's stop and the adapter's figure
    with pytest.raises(ValueError):
        AutoconfigSection.model_validate({"budget": 10})


def test_time_to_target_writes_steps_to_target_per_standing_and_the_findings():
    from rlbench.autoconfig.steps import StepsComparison, StepsStanding

    base = result("time_to_target")
    steps = (StepsStanding(BEST.key, 1100.0, 1000.0, 1200.0, 3, 0), StepsStanding(BASE.key, None, 2000.0, None, 3, 2))
    found = (StepsComparison(BASE.key, BEST.key, None, None, None, 0.05, True, "needs more"),)
    r = dataclasses.replace(base, answer=dataclasses.replace(base.answer, steps=steps, steps_comparisons=found))
    data = json.loads(json.dumps(autoconfig_json(r), allow_nan=False))
    assert data["best"]["steps_to_target"] == {
        "median": 1100.0,
        "ci_low": 1000.0,
        "ci_high": 1200.0,
        "n": 3,
        "censored": 0,
    }
    assert (
        data["baseline"]["steps_to_target"]["median"] is None and data["baseline"]["steps_to_target"]["censored"] == 2
    )
    assert next(s for s in data["standings"] if s["key"] == FAST.key)["steps_to_target"] is None  # not raced here
    assert data["steps_to_target"] == [
        {
            "key": BASE.key,
            "chosen_key": BEST.key,
            "ratio": None,
            "ci_low": None,
            "ci_high": None,
            "p_value": 0.05,
            "differ": True,
            "text": "needs more",
        }
    ]
    assert autoconfig_json(result())["steps_to_target"] == [] and data["schema_version"] == 6


def test_the_runs_tolerance_is_written_and_the_reasons_said_in_the_reports_words():
    """Issue 51: a run with ``tolerance_pct: 10`` wrote nothing of it and its report said "within 5%"; the evidence
    sentence and the report's search path said the same reason two ways."""
    from rlbench.analysis.autoconfig_run import REASON_WORDS, Reason
    from rlbench.autoconfig.outputs import evidence

    r = result()
    assert autoconfig_json(r)["tolerance_pct"] == 5.0  # the default: the change threshold
    ten = dataclasses.replace(r, answer=dataclasses.replace(r.answer, threshold=0.10))
    assert autoconfig_json(ten)["tolerance_pct"] == pytest.approx(10.0)
    model = Elimination(BASE.key, -1, Reason.MODEL, "predicted below")
    said = evidence(dataclasses.replace(r, eliminations=[*r.eliminations, model]))
    assert f"1 {REASON_WORDS[Reason.SEPARATED]}; 1 {REASON_WORDS[Reason.MODEL]}." in said
    assert json.loads(json.dumps(autoconfig_json(r)))["eliminations"][0]["reason"] == "separated"


def test_the_section_defaults_are_the_search_and_race_constants():
    from rlbench.analysis.findings import CHANGE_THRESHOLD, REPEATS_FOR_EVIDENCE
    from rlbench.autoconfig import decide, search

    s = AutoconfigSection()
    assert (s.eta, s.first_rung_readings, s.finalists) == (search.ETA, search.FIRST_RUNG_READINGS, search.FINALISTS)
    assert (s.min_rounds, s.max_rounds) == (decide.MIN_ROUNDS, decide.MAX_ROUNDS)
    assert search.FIRST_RUNG_READINGS == REPEATS_FOR_EVIDENCE and s.tolerance_pct == 100 * CHANGE_THRESHOLD
