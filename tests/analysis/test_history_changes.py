"""What else differs between two releases (rlbench/analysis/history/changes.py) and where an iteration's time goes
per release (rlbench/analysis/history/split.py), on hand-made facts and iterations."""

from __future__ import annotations

import pandas as pd
import pytest

from rlbench.analysis.history.changes import api_change, release_facts
from rlbench.analysis.history.split import phase_rates


def facts(paths: dict, **config) -> dict:
    return {"read_paths": paths, "framework_config": config}


def test_only_what_every_trial_of_a_release_agrees_on_is_its_fact():
    paths, config, _ = release_facts([facts({"a": "x"}, lr=0.1, seed=1), facts({"a": "x"}, lr=0.1, seed=2)])
    assert paths == {"a": "x"} and config == {"lr": 0.1}  # the seed is the round's, not the release's


def test_a_changed_default_a_new_key_and_a_new_read_path():
    a = release_facts([facts({"stats": "Stats", "build": "build()"}, lr=0.1, fragment="auto", old=1, mode="SYNC")])
    b = release_facts([facts({"stats": "classes", "build": "build()"}, lr=0.1, fragment=50, new=2, mode="sync")])
    change = api_change("2.52.1", "2.53.0", a, b)
    assert change.defaults == {"fragment": ("auto", 50)} and change.added == ["new"] and change.removed == ["old"]
    assert change.read_paths == {"stats": ("Stats", "classes")}
    assert change.words() == (
        "defaults changed: fragment 'auto' -> 50; read differently: stats: Stats -> classes; "
        "config keys: 1 added, 1 removed"
    )


def test_unknown_facts_are_no_change():
    known = release_facts([facts({"stats": "Stats"}, lr=0.1)])
    assert not api_change("1", "2", known, ({}, {}, {})).any and not api_change("1", "2", ({}, {}, {}), known).any


def test_each_phase_is_milliseconds_per_thousand_steps_over_the_steady_iterations():
    its = pd.DataFrame(
        [
            {"trial_id": "t", "warmup": True, "env_steps_sampled": 500, "sample_s": 9.0, "learn_s": 9.0},
            {"trial_id": "t", "warmup": False, "env_steps_sampled": 500, "sample_s": 0.5, "learn_s": 0.25},
            {"trial_id": "t", "warmup": False, "env_steps_sampled": 1500, "sample_s": 1.5, "learn_s": 0.25},
        ]
    )
    got = phase_rates(its).loc["t"]
    assert got["sample_ms_per_k"] == pytest.approx(1000.0) and got["learn_ms_per_k"] == pytest.approx(250.0)
    assert got["sync_ms_per_k"] is None or pd.isna(got["sync_ms_per_k"])  # never reported: none, not 0


def test_a_dependency_that_came_with_the_release_is_said_but_not_the_package_itself():
    a = release_facts([{"versions": {"ray": "2.48.0", "gymnasium": "1.0.0", "torch": "2.13.0"}}])
    b = release_facts([{"versions": {"ray": "2.49.2", "gymnasium": "1.1.1", "torch": "2.13.0"}}])
    change = api_change("2.48.0", "2.49.2", a, b, package="ray")
    assert change.dependencies == {"gymnasium": ("1.0.0", "1.1.1")}
    assert change.words() == "dependencies: gymnasium 1.0.0 -> 1.1.1"
