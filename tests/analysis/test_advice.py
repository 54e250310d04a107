"""The forum question in words: what more driver CPUs bought, on hand-made tables."""

from __future__ import annotations

import pandas as pd

from rlbench.analysis.advice import learner_cpu_findings, recommendations


def _tables(learn_s: tuple[float, float], sample_s: float):
    # two grid points: num_cpus_for_main_process 1 and 4 (threads follow), learner in the driver
    trials = pd.DataFrame(
        {
            "trial_id": ["t000r0", "t001r0"],
            "index": [0, 1],
            "repeat": [0, 0],
            "status": ["ok", "ok"],
            "num_learners": [0, 0],
            "driver_torch_threads": [1, 4],
        }
    )
    rows = []
    for trial, learn in zip(trials["trial_id"], learn_s):
        rows.append({"trial_id": trial, "warmup": True, "wall_s": 9.0, "sample_s": 9.0, "learn_s": 9.0})
        for _ in range(2):
            rows.append(
                {"trial_id": trial, "warmup": False, "wall_s": sample_s + learn, "sample_s": sample_s, "learn_s": learn}
            )
    iterations = pd.DataFrame(rows)
    steps = 1000.0
    configs = pd.DataFrame(
        {
            "index": [0, 1],
            "num_cpus_for_main_process": [1, 4],
            "env_steps_per_s": [steps / (sample_s + learn_s[0]), steps / (sample_s + learn_s[1])],
            "driver_cpus_used": [0.9, 1.3],
        }
    )
    trials["env_steps_per_s"] = configs["env_steps_per_s"]
    return configs, trials, iterations


def test_sublinear_learning_is_called_out_with_the_numbers():
    # learning 2.0 s -> 1.6 s with 4x the threads: 1.25x, far below linear
    configs, trials, iterations = _tables((2.0, 1.6), sample_s=1.0)
    (text,) = learner_cpu_findings(configs, trials, iterations, ["num_cpus_for_main_process"])
    assert "num_cpus_for_main_process 1 -> 4" in text
    # 1000/3.0 and 1000/2.6, one run each: no evidence the throughput moved
    assert "333 -> 385 env steps/s (1.15x; no evidence yet: 1 run a side; 3 repeats a side could show it)" in text
    assert "learning 2.00 -> 1.60 s (speed-up 1.25x)" in text
    assert "torch threads in the driver, which holds the learner: 1 -> 4" in text
    assert "0.90 -> 1.30 cores busy" in text
    assert "scaled sub-linearly (1.25x for 4x the threads)" in text


def test_sampling_bound_after_the_change_says_to_move_cpus_to_env_runners():
    configs, trials, iterations = _tables((1.0, 0.5), sample_s=2.0)  # 2.0 / 2.5 = 80% sampling at 4 CPUs
    (text,) = learner_cpu_findings(configs, trials, iterations, ["num_cpus_for_main_process"])
    assert "Sampling now takes 80% of an iteration" in text and "env runners" in text


def test_no_learner_axis_no_finding():
    configs, trials, iterations = _tables((2.0, 1.6), sample_s=1.0)
    configs = configs.rename(columns={"num_cpus_for_main_process": "num_env_runners"})
    assert learner_cpu_findings(configs, trials, iterations, ["num_env_runners"]) == []


def test_a_best_setting_in_between_is_named():
    configs, trials, iterations = _tables((2.0, 1.6), sample_s=1.0)
    # a third point, num_cpus_for_main_process=2, faster than both ends
    trials = pd.concat(
        [
            trials,
            pd.DataFrame(
                {
                    "trial_id": ["t002r0"],
                    "index": [2],
                    "repeat": [0],
                    "status": ["ok"],
                    "num_learners": [0],
                    "driver_torch_threads": [2],
                }
            ),
        ]
    )
    iterations = pd.concat(
        [
            iterations,
            pd.DataFrame(
                {"trial_id": ["t002r0"], "warmup": [False], "wall_s": [2.0], "sample_s": [1.0], "learn_s": [1.0]}
            ),
        ]
    )
    configs = pd.concat(
        [
            configs,
            pd.DataFrame(
                {"index": [2], "num_cpus_for_main_process": [2], "env_steps_per_s": [500.0], "driver_cpus_used": [1.1]}
            ),
        ]
    )
    (text,) = learner_cpu_findings(configs, trials, iterations, ["num_cpus_for_main_process"])
    assert "num_cpus_for_main_process 1 -> 4" in text
    assert (
        "The fastest setting was in between: num_cpus_for_main_process=2 at 500 env steps/s (1.50x the lowest)" in text
    )


def test_nothing_bought_is_said_only_with_evidence():
    configs, trials, iterations = _tables((2.0, 1.99), sample_s=0.4)  # 41.7% -> 41.8% sampling; 1.00x
    (text,) = learner_cpu_findings(configs, trials, iterations, ["num_cpus_for_main_process"])
    assert "no evidence yet: 1 run a side" in text and "bought nothing" not in text
    assert "No gain worth having showed (1.00x the throughput), but that is not yet evidence of none." in text
    # three repeats a side, 0.98-1.02x of the lowest: an interval below 1.1 says nothing was bought
    repeats = pd.concat(
        [
            trials.assign(
                repeat=r,
                trial_id=trials["trial_id"].str.replace("r0", f"r{r}"),
                env_steps_per_s=trials["env_steps_per_s"] * f,
            )
            for r, f in enumerate((1, 0.98, 1.02))
        ]
    )
    (text,) = learner_cpu_findings(configs, repeats, iterations, ["num_cpus_for_main_process"])
    assert "(1.00x; 95% CI 0.9" in text and "The extra CPUs bought nothing worth having (1.00x the throughput)" in text


def test_no_measured_configuration_no_finding():
    """Every trial interrupted before a steady iteration (a --parallel sweep stopped early): nothing to say, no
    KeyError (a filter over no rows once selected the frame's columns instead)."""
    configs, trials, iterations = _tables((2.0, 1.6), sample_s=1.0)
    configs["env_steps_per_s"] = float("nan")
    assert learner_cpu_findings(configs, trials, iterations, ["num_cpus_for_main_process"]) == []


def _envs_table() -> pd.DataFrame:
    """issue 59's next.yaml folder: num_envs_per_env_runner over 1, 2, 4, 8, 2 repeats each; 4 and 8 too noisy to
    rank (CV 15% and 13%), yet every repeat of each beat every repeat of 2."""
    medians, lows, highs = (
        [300.0, 579.0, 1156.0, 1452.0],
        [290.0, 552.0, 1034.0, 1315.0],
        [310.0, 607.0, 1278.0, 1590.0],
    )
    cv = [0.03, 0.07, 0.15, 0.13]
    return pd.DataFrame(
        {
            "index": [0, 1, 2, 3],
            "num_envs_per_env_runner": [1, 2, 4, 8],
            "env_steps_per_s": medians,
            "env_steps_per_s_ci_low": lows,
            "env_steps_per_s_ci_high": highs,
            "env_steps_per_s_min": lows,  # two repeats: the interval spans them
            "env_steps_per_s_max": highs,
            "env_steps_per_s_cv": cv,
            "noisy": [c > 0.10 for c in cv],
            "n": [2, 2, 2, 2],
            "cpus": [2, 2, 2, 2],
            "env_steps_per_s_per_cpu": [m / 2 for m in medians],
        }
    )


def test_a_noisy_configuration_that_beat_the_pick_on_every_repeat_is_the_recommendation():
    rec, per_cpu = recommendations(_envs_table(), ["num_envs_per_env_runner"])
    assert rec.label == "num_envs_per_env_runner=8" and rec.value == 1452.0
    assert rec.note.startswith(
        "too noisy to rank (CV 13%, over 10%), but its 95% CI lies wholly above that of num_envs_per_env_runner=2 "
        "(579 env steps/s), the fastest ranked: more repeats, a quieter machine"
    )
    # the top two, 8 and 4, both named: the evidence cannot yet separate them
    assert "no evidence yet that it beats num_envs_per_env_runner=4 (1,156 env steps/s): 2 runs a side" in rec.note
    assert "not ranked" not in rec.note  # every noisy configuration competed
    assert per_cpu.label == "num_envs_per_env_runner=8"


def test_every_repeat_above_every_repeat_is_enough_without_intervals():
    table = _envs_table()
    table.loc[:, ["env_steps_per_s_ci_low", "env_steps_per_s_ci_high"]] = float("nan")
    (rec, _) = recommendations(table, ["num_envs_per_env_runner"])
    assert rec.label == "num_envs_per_env_runner=8"
    assert "every repeat of it beat every repeat of num_envs_per_env_runner=2 (579 env steps/s)" in rec.note


def test_a_noisy_configuration_that_did_not_beat_the_pick_outright_stays_unranked():
    table = _envs_table()
    table.loc[3, ["env_steps_per_s", "env_steps_per_s_ci_low", "env_steps_per_s_min"]] = [650.0, 500.0, 500.0]
    table.loc[2, ["env_steps_per_s", "env_steps_per_s_ci_low", "env_steps_per_s_min"]] = [640.0, 560.0, 560.0]
    (rec, _) = recommendations(table, ["num_envs_per_env_runner"])
    assert rec.label == "num_envs_per_env_runner=2"
    assert "2 noisy configurations not ranked" in rec.note
