"""Stack profiles to per-function shares: self and total counts on a hand-made speedscope file."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rlbench.analysis.findings import DOMINANT_SELF_FRAC
from rlbench.analysis.profiles import (
    add_profile_columns,
    profiles_frame,
    read_speedscope,
    role_profiles,
    role_stacks,
    short_file,
)
from rlbench.results.events_file import parse_event
from rlbench.results.layout import TrialFolder

FRAMES = [
    {"name": "main", "file": "app.py", "line": 1},
    {"name": "step", "file": "env.py", "line": 10},
    {"name": "infer", "file": "torch/nn.py", "line": 5},
    {"name": "recurse", "file": "app.py", "line": 20},
]


def _write(path: Path, threads: list[list[list[int]]]) -> None:
    profiles = [
        {
            "type": "sampled",
            "name": f"Thread {i}",
            "unit": "seconds",
            "startValue": 0,
            "endValue": 1,
            "samples": samples,
            "weights": [0.01] * len(samples),
        }
        for i, samples in enumerate(threads)
    ]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(
        json.dumps(
            {
                "$schema": "https://www.speedscope.app/file-format-schema.json",
                "shared": {"frames": FRAMES},
                "profiles": profiles,
            }
        )
    )


def _trial(tmp_path: Path, trial_id: str = "t000r0") -> TrialFolder:
    trial = TrialFolder(tmp_path / trial_id)
    # runner 11: 6 samples in step, 2 in infer (one thread each); a recursion counts once in total
    _write(trial.profile_file("env_runner", 11), [[[0, 1]] * 5 + [[0, 3, 3, 1]], [[0, 2], [0, 2]]])
    _write(trial.profile_file("env_runner", 12), [[[0, 1]] * 2])
    _write(trial.profile_file("driver", 10), [[[0, 2]] * 3 + [[0]] + [[]]])  # [] : no Python frame
    return trial


def test_self_and_total_per_function_are_shares_of_the_process_samples(tmp_path):
    trial = _trial(tmp_path)
    assert read_speedscope(trial.profile_file("env_runner", 11)).samples == 8  # both threads
    frame = profiles_frame([trial])
    row = lambda pid, fn: frame[(frame["pid"] == pid) & (frame["function"] == fn)].iloc[0]  # noqa: E731
    step = row(11, "step")
    assert (step["self_samples"], step["total_samples"], step["self_frac"], step["total_frac"]) == (6, 6, 0.75, 0.75)
    recurse = row(11, "recurse")
    assert (recurse["self_samples"], recurse["total_samples"]) == (0, 1)  # twice on one stack, counted once
    main = row(11, "main")
    assert (main["self_samples"], main["total_frac"]) == (0, 1.0)
    assert (row(10, "main")["self_samples"], row(10, "main")["self_frac"]) == (1, 0.2)
    assert row(10, "<no Python frame>")["self_samples"] == 1  # every sample is some row's: the shares add to 1
    assert frame.groupby("pid")["self_frac"].sum().round(12).eq(1.0).all()
    assert (row(11, "infer")["file"], row(11, "infer")["line"], row(11, "infer")["role"]) == (
        "torch/nn.py",
        5,
        "env_runner",
    )
    assert set(frame["trial_id"]) == {"t000r0"}


def test_role_profile_sums_processes_and_names_a_dominant_function(tmp_path):
    frame = profiles_frame([_trial(tmp_path)])
    by_role = {r.role: r for r in role_profiles(frame, ["t000r0"])}
    runners = by_role["env_runner"]
    assert (runners.samples, runners.processes) == (10, 2)
    top = runners.top_self.iloc[0]
    assert (top["function"], top["self_frac"]) == ("step", pytest.approx(0.8))  # (6 + 2) of 10 samples
    assert "main" not in set(runners.top_total["function"])  # on every stack, no time of its own: the trunk
    assert runners.top_total.iloc[0]["function"] == "step"
    assert runners.verdict == "the env runners spend 80% of their active time in step (env.py:10) itself"
    driver = by_role["driver"]
    assert driver.top_self.iloc[0]["self_frac"] == pytest.approx(0.6)
    assert driver.verdict == "the driver spends 60% of its active time in infer (torch/nn.py:5) itself"
    assert "learner" not in by_role  # no learner processes were profiled
    assert role_profiles(frame, ["another trial"]) == []


def test_no_verdict_when_no_function_dominates(tmp_path):
    trial = TrialFolder(tmp_path / "t")
    _write(trial.profile_file("driver", 1), [[[0, 1], [0, 2], [0, 3], [0]]])  # 25% each
    (driver,) = role_profiles(profiles_frame([trial]), ["t"])
    assert driver.top_self.iloc[0]["self_frac"] < DOMINANT_SELF_FRAC
    assert driver.verdict is None


def test_role_stacks_merge_processes_for_the_flame_graph(tmp_path):
    stacks = role_stacks(_trial(tmp_path), "env_runner")
    assert stacks[("main (app.py:1)", "step (env.py:10)")] == 7  # 5 + 2 from two processes
    assert sum(stacks.values()) == 10


def test_unreadable_profile_is_skipped_and_links_are_not_read(tmp_path):
    trial = _trial(tmp_path)
    trial.profile_file("learner", 13).write_text("{not json")
    (tmp_path / "elsewhere.json").write_text("{}")
    trial.profile_file("learner", 14).symlink_to(tmp_path / "elsewhere.json")
    frame = profiles_frame([trial])
    assert set(frame["pid"]) == {10, 11, 12}


def test_profile_columns_from_the_profile_event():
    import pandas as pd

    trials = pd.DataFrame({"trial_id": ["a", "b"]})
    events = {
        "a": [
            parse_event(
                {
                    "event": "profile",
                    "status": "ok",
                    "note": None,
                    "t_start_s": 10.0,
                    "t_stop_s": 14.0,
                    "cpu_s": 1.0,
                    "processes": [{"status": "ok"}, {"status": "not python"}],
                }
            )
        ]
    }
    add_profile_columns(trials, events)
    assert trials["profile_status"].tolist() == ["ok", "off"]
    assert trials["profile_cpu_pct"].iloc[0] == pytest.approx(25.0)  # 1 s of py-spy CPU in a 4 s window
    assert trials["profile_processes"].tolist() == [1, 0]


@pytest.mark.parametrize(
    ("path", "short"),
    [
        ("/work/x/.venv/lib/python3.11/site-packages/torch/optim/adam.py", "torch/optim/adam.py"),
        ("/root/.pyenv/versions/3.11.7/lib/python3.11/multiprocessing/process.py", "multiprocessing/process.py"),
        ("/work/wt/envs/synthetic.py", "envs/synthetic.py"),
        ("<string>", "<string>"),
    ],
)
def test_short_file_names(path, short):
    assert short_file(path) == short
