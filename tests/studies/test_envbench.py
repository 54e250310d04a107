"""The env ceiling, measured for real on tiny envs (no Ray)."""

from __future__ import annotations

import json

import pytest
from conftest import run_cli

from rlbench.studies.envbench import default_proc_counts, make_env, measure_ceiling


def test_default_proc_counts():
    assert default_proc_counts(1) == [1]
    assert default_proc_counts(2) == [1, 2]
    assert default_proc_counts(6) == [1, 2, 4, 6]
    assert default_proc_counts(8) == [1, 2, 4, 8]


def test_make_env_like_rllib():
    assert make_env("envs.tiny:TinyEnv", {"episode_len": 3}).episode_len == 3  # Class(env_config)
    assert make_env("CartPole-v1", {"max_episode_steps": 7}).spec.max_episode_steps == 7  # gym.make(**config)


def test_known_step_cost_gives_known_ceiling():
    # 2000 us of CPU work per step and per reset: one process can take at most 500 steps per wall second
    result = measure_ceiling(
        "envs.synthetic:SyntheticEnv", {"step_cost_us": 2000, "episode_len": 50}, procs=1, seconds=0.6, warmup_s=0.05
    )
    assert result.procs == 1 and result.steps > 0
    assert result.steps_per_s <= 500 * 1.01
    assert result.steps_per_s_per_proc == result.steps_per_s
    # per CPU second it takes at most what its cost allows, however busy the machine (a reset per 50
    # steps costs one more step's work; the spin holds each for 2 ms of the thread's own CPU clock).
    # Python's own work per step comes on top: 2-5% on a quiet machine, 5.4% once with two sweeps
    # beside it (cache and TLB pressure); wall time counted as CPU would read far lower.
    per_cpu_s = result.steps / result.cpu_s
    assert 0.8 * 500 * 50 / 51 <= per_cpu_s <= 1.01 * 500 * 50 / 51, per_cpu_s
    assert result.peak_rss_bytes > 0


def test_a_process_given_no_core_until_past_its_window_still_measures_a_whole_window(monkeypatch):
    """Under load (load average 11) a ceiling process got no core for its whole warm-up and window and measured
    0 steps in 0 s, which the cost model read as an env it could not predict and had dropped the best configuration
    untried (issue 44): the window is ``seconds`` from when counting starts. A clock that jumps 10 s between the
    first two readings (descheduled), then ticks 1 ms a reading, is that machine, in the test's own process."""
    import itertools
    import time

    from rlbench.studies import envbench

    ticks = itertools.chain([0.0], (10.0 + 0.001 * i for i in itertools.count()))
    monkeypatch.setattr(time, "perf_counter", lambda: next(ticks))
    steps, elapsed_s, _, _ = envbench._steps_in("envs.tiny:TinyEnv", {}, 0.5, 0.3, None)
    # counting starts at 10.0 (the first reading past the warm-up) and lasts 0.5 s: 500 readings of 1 ms, a step each
    assert steps == 500 and elapsed_s == pytest.approx(0.5, abs=0.0015)


def test_parallel_processes_sum_their_rates():
    result = measure_ceiling("envs.tiny:TinyEnv", {}, procs=2, seconds=0.3, warmup_s=0.05)
    assert result.procs == 2
    assert result.steps_per_s == pytest.approx(2 * result.steps_per_s_per_proc)
    assert result.steps > 1000


def test_cli_writes_json(tmp_path):
    out = tmp_path / "ceiling.json"
    done = run_cli(
        "envbench",
        "envs.tiny:TinyEnv",
        "--env-config",
        "episode_len=5",
        "--procs",
        "1",
        "--seconds",
        "0.3",
        "--out",
        str(out),
    )
    assert done.returncode == 0, done.stderr
    rows = json.loads(out.read_text())
    assert [r["procs"] for r in rows] == [1]
    assert rows[0]["env_config"] == {"episode_len": 5} and rows[0]["steps_per_s"] > 0


@pytest.mark.parametrize(
    "args, message",
    [
        (["NoSuchEnv-v9"], "neither a registered gymnasium id"),
        (["envs.tiny:TinyEnv", "--procs", "0"], "--procs takes whole numbers >= 1"),
        (["envs.tiny:TinyEnv", "--procs", "999"], "usable cores"),
        (["envs.tiny:TinyEnv", "--env-config", "nokey"], "--env-config takes KEY=VALUE"),
    ],
)
def test_cli_bad_input_exits_2(args, message):
    done = run_cli("envbench", *args)
    assert done.returncode == 2
    assert message in " ".join(done.stdout.split())


@pytest.mark.parametrize(
    "fault, kwargs, message",
    [
        ("raise", {}, "the env raised while stepping alone: RuntimeError: FaultyEnv: injected failure"),
        ("hang", {"grace_s": 1.0}, "no result within"),
        ("memory", {"max_rss_bytes": 300 * 2**20}, "over the limit of 300 MiB"),
    ],
)
def test_a_faulty_env_fails_and_leaves_no_process(fault, kwargs, message):
    import psutil

    before = {p.pid for p in psutil.Process().children(recursive=True)}
    with pytest.raises(RuntimeError, match=message):
        measure_ceiling(
            "envs.faulty:FaultyEnv",
            {"fault": fault, "at_step": 50, "memory_max_bytes": 512 * 2**20},
            procs=2,
            seconds=0.5,
            warmup_s=0.05,
            **kwargs,
        )
    alive = [
        p
        for p in psutil.Process().children(recursive=True)
        if p.pid not in before and p.is_running() and p.status() != psutil.STATUS_ZOMBIE
    ]
    assert alive == []
