"""The steady state of a trial run once and of a warm trial read in windows (issue 56), on hand-made rows."""

from __future__ import annotations

import pandas as pd

from rlbench.analysis.windows import in_steady_window, steady_window, steady_windows


def _its(rows):
    return pd.DataFrame(rows, columns=["trial_id", "iteration", "warmup", "window", "t_start_s", "t_end_s"])


ONCE = [("t0", 1, True, None, 0.0, 1.0), ("t0", 2, False, None, 1.0, 2.0), ("t0", 3, False, None, 2.0, 3.5)]
# a warm trial: warm-up and window 0 from 10 s to 12 s, paused, window 1 from 20 s to 21 s
WARM = [
    ("t1", 1, True, 0, 9.0, 10.0),
    ("t1", 2, False, 0, 10.0, 11.0),
    ("t1", 3, False, 0, 11.0, 12.0),
    ("t1", 4, False, 1, 20.0, 21.0),
]


def test_a_trial_run_once_has_one_window_from_its_first_steady_iteration_to_its_last():
    assert steady_window(_its(ONCE)) == (1.0, 3.5)
    spans = steady_windows(_its(ONCE))
    assert list(spans.index) == ["t0"] and spans.loc["t0", "t0"] == 1.0 and spans.loc["t0", "t1"] == 3.5


def test_a_warm_trial_has_one_window_a_measured_window_and_no_single_span():
    spans = steady_windows(_its(ONCE + WARM))
    warm = spans.loc[["t1"]]
    assert warm["t0"].tolist() == [10.0, 20.0] and warm["t1"].tolist() == [12.0, 21.0]
    assert steady_window(_its(WARM)) is None  # its pauses would be in one span: no energy over it


def test_samples_in_a_pause_are_outside_the_steady_state():
    samples = pd.DataFrame({"trial_id": ["t1", "t1", "t1", "t1", "t0", "t0"], "t_s": [9.5, 11.0, 15.0, 20.5, 0.5, 3.0]})
    inside = in_steady_window(samples, steady_windows(_its(ONCE + WARM)))
    assert inside.tolist() == [False, True, False, True, False, True]


def test_rows_without_a_window_column_read_as_before():
    its = _its(ONCE).drop(columns="window")
    assert steady_window(its) == (1.0, 3.5) and steady_windows(its)["t1"].tolist() == [3.5]


def test_a_warm_trials_windows_are_its_rounds_each_with_its_own_throughput_and_split():
    """rounds_per_process (issue 56): trial t0r0 read rounds 0-2 as windows 0-2 (one steady iteration each, 100 env
    steps in 0.1, 0.2 and 0.25 s of env step), after one warm-up; t0r3 is a cold trial. Window k becomes round k, its
    throughput that window's median and its split its own; the per-process CPU figure stays on window 0 alone."""
    from rlbench.analysis.history.split import phase_rates
    from rlbench.analysis.window_rounds import windows_as_rounds

    trials = pd.DataFrame(
        [
            {"trial_id": "t0r0", "round": 0, "status": "ok", "env_steps_per_s": 500.0, "cpu_ms_per_k": 9.0},
            {"trial_id": "t0r3", "round": 3, "status": "ok", "env_steps_per_s": 700.0, "cpu_ms_per_k": 8.0},
        ]
    )
    rows = [
        ("t0r0", 0, None, True, 50.0, 0.5),
        ("t0r3", 0, None, True, 50.0, 0.5),
        ("t0r3", 1, None, False, 700.0, 0.1),
    ]
    rows += [("t0r0", 1 + k, k, False, rate, 100 / rate) for k, rate in enumerate((1000.0, 500.0, 400.0))]
    iterations = pd.DataFrame(
        [
            {
                "trial_id": t,
                "iteration": i,
                "window": w,
                "warmup": warm,
                "env_steps_per_s": rate,
                "env_steps_sampled": 100,
                "env_step_s": env_s,
                "wall_s": 100 / rate,
            }
            for t, i, w, warm, rate, env_s in rows
        ]
    )
    got, its, process_of = windows_as_rounds(trials, iterations)
    assert list(got["trial_id"]) == ["t0r0", "t0r0#w1", "t0r0#w2", "t0r3"]
    assert list(got["round"]) == [0, 1, 2, 3]
    assert list(got["env_steps_per_s"]) == [1000.0, 500.0, 400.0, 700.0]
    assert got["cpu_ms_per_k"].isna().tolist() == [False, True, True, False] and got["cpu_ms_per_k"].iloc[0] == 9.0
    assert process_of == {"t0r0": "t0r0", "t0r0#w1": "t0r0", "t0r0#w2": "t0r0"}
    split = phase_rates(its)["env_step_ms_per_k"]
    assert split.to_dict() == {"t0r0": 1000.0, "t0r0#w1": 2000.0, "t0r0#w2": 2500.0, "t0r3": 1000.0}


def test_trials_read_cold_are_left_as_they_are():
    from rlbench.analysis.window_rounds import windows_as_rounds

    frame = pd.DataFrame([{"trial_id": "t0r0", "round": 0, "status": "ok", "env_steps_per_s": 1.0}])
    its = pd.DataFrame([{"trial_id": "t0r0", "iteration": 0, "warmup": False, "env_steps_per_s": 1.0}])
    got, same, process_of = windows_as_rounds(frame, its)
    assert got is frame and same is its and process_of == {}
