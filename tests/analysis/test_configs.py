"""Per-configuration figures, verdicts, scaling and recommendations on hand-made tables."""

from __future__ import annotations

import pandas as pd
import pytest

from rlbench.analysis.advice import recommendations
from rlbench.analysis.configs import configurations
from rlbench.analysis.findings import verdict
from rlbench.analysis.scaling import scaling_curves
from rlbench.analysis.stats import amdahl_speedup


def _trials(points: list[dict], throughputs: list[list[float]]) -> pd.DataFrame:
    rows = []
    for index, (axes, values) in enumerate(zip(points, throughputs)):
        for repeat, tp in enumerate(values):
            row = {
                "trial_id": f"t{index:03d}r{repeat}",
                "status": "ok",
                "reason": None,
                "index": index,
                "repeat": repeat,
                "cpus": 2,
                "num_learners": 0,
                "num_gpus_per_learner": 0.0,
                "env_steps_per_s": tp,
                "sample_frac": 0.7,
                "learn_frac": 0.2,
                "sync_frac": 0.05,
                "other_frac": 0.05,
            }
            for role in ("driver", "learner", "env_runner", "ray_system", "other"):
                row[f"{role}_cpus_allocated"] = 1.0 if role in ("driver", "env_runner") else 0.0
                row[f"{role}_cpus_used"] = 0.5 if role in ("driver", "env_runner") else 0.0
            row.update(axes)
            rows.append(row)
    return pd.DataFrame(rows)


def test_configurations_median_cv_noisy_rank():
    trials = _trials([{"x": 1}, {"x": 2}], [[100, 110, 90], [200, 260, 140]])
    c = configurations(trials, ["x"])
    first, second = c.iloc[0], c.iloc[1]
    assert first["env_steps_per_s"] == 100 and first["n"] == 3
    assert first["env_steps_per_s_cv"] == pytest.approx(0.1)  # std 10 / mean 100
    assert first["env_steps_per_s_ci_low"] <= 100 <= first["env_steps_per_s_ci_high"]
    assert 90 <= first["env_steps_per_s_ci_low"] and first["env_steps_per_s_ci_high"] <= 110
    assert not first["noisy"] and first["rank"] == 1
    assert second["env_steps_per_s_cv"] == pytest.approx(0.3)  # std 60 / mean 200
    assert second["noisy"] and pd.isna(second["rank"])
    assert first["env_steps_per_s_per_cpu"] == 50  # 100 steps/s on cpus=2
    assert first["cpus_used"] == 1.0


def test_single_repeat_has_no_interval_and_is_ranked():
    c = configurations(_trials([{"x": 1}, {"x": 2}], [[100], [150]]), ["x"])
    assert c["env_steps_per_s_ci_low"].isna().all() and c["env_steps_per_s_cv"].isna().all()
    assert list(c["rank"]) == [2, 1]


def test_failed_repeat_is_left_out_of_the_figures():
    trials = _trials([{"x": 1}], [[100, 120, 5]])
    trials.loc[2, ["status", "reason"]] = ["failed", "boom"]
    c = configurations(trials, ["x"]).iloc[0]
    assert c["n"] == 2 and c["env_steps_per_s"] == 110 and c["statuses"] == "2 ok, 1 failed"


def _row(**kw) -> dict:
    base = {
        "env_steps_per_s": 100.0,
        "sample_frac": 0.3,
        "learn_frac": 0.3,
        "sync_frac": 0.05,
        "cpus": 8,
        "cpus_used": 2.0,
        "learner_gpus": 0.0,
        "noisy": False,
    }
    base.update(kw)
    return base


def test_verdict_rules():
    label, words = verdict(_row(sample_frac=0.7, env_runner_cpus_allocated=4.0, env_runner_cpus_used=3.6))
    assert label == "sampling-bound, CPU-starved"
    assert any("env runners keep 3.60 of their 4 allocated cores busy" in w for w in words)
    label, words = verdict(_row(learn_frac=0.8, driver_cpus_allocated=4.0, driver_cpus_used=0.5))
    assert label == "learning-bound"
    assert any("idle allocation: the driver was given 4 CPUs and uses 0.50" in w for w in words)
    label, words = verdict(_row(cpus=2, cpus_used=1.9))
    assert label == "mixed" and any("all cores busy" in w for w in words)
    label, words = verdict(_row(learn_frac=0.6, learner_gpus=1.0, gpu_util_pct=5.0))
    assert label == "learning-bound, GPU idle" and any("GPU idle: 5% mean utilization" in w for w in words)
    label, words = verdict(_row(sync_frac=0.3))
    assert any("weight sync takes 30%" in w for w in words)
    label, words = verdict(_row(env_steps_per_s=None, statuses="1 failed", reason="boom"))
    assert label == "no data" and "boom" in words[0]
    # the host's steal: named from 5% of the machine's CPU time on, never below
    label, words = verdict(_row(host_steal_pct=13.0))
    assert any("host busy: the hypervisor took 13% of this machine's CPU time" in w for w in words)
    assert not any("host busy" in w for w in verdict(_row(host_steal_pct=4.9))[1] + verdict(_row())[1])


def test_scaling_recovers_amdahl_and_knee():
    n = [1, 2, 4, 8]
    tp = [1000 * amdahl_speedup(k, 0.2) for k in n]
    c = configurations(_trials([{"w": k} for k in n], [[t] for t in tp]), ["w"])
    (curve,) = scaling_curves(c, ["w"])
    assert curve.values == n and curve.serial_frac == pytest.approx(0.2, abs=1e-6) and curve.r2 == pytest.approx(1)
    assert curve.speedup[2] == pytest.approx(2.5)  # 1/(0.2 + 0.8/4)
    assert curve.efficiency[2] == pytest.approx(2.5 / 4)
    # throughputs 1000, 1667, 2500, 3333: only 8 is within 5% of the best
    assert curve.knee == 8 and curve.best == 8


def test_scaling_from_zero_and_per_group():
    points = [{"runners": r, "envs": e} for e in (1, 2) for r in (0, 1, 2)]
    tps = [[100], [156], [160], [200], [300], [310]]
    c = configurations(_trials(points, tps), ["runners", "envs"])
    curves = {(cu.axis, cu.fixed): cu for cu in scaling_curves(c, ["runners", "envs"])}
    r1 = curves[("runners", "envs=1")]
    assert r1.speedup == pytest.approx([1.0, 1.56, 1.6])  # against runners=0
    assert r1.efficiency[0] is None and r1.efficiency[2] == pytest.approx((160 / 156) / 2)  # against runners=1
    assert r1.knee == 1  # 156 >= 0.95 * 160 = 152
    assert curves[("envs", "runners=2")].speedup == pytest.approx([1.0, 310 / 160])


def test_recommendations_for_throughput_and_per_cpu():
    trials = _trials([{"x": 1}, {"x": 2}], [[100, 101], [150, 151]])
    trials.loc[trials["index"] == 1, "cpus"] = 4
    recs = {r.column: r for r in recommendations(configurations(trials, ["x"]), ["x"])}
    assert recs["env_steps_per_s"].label == "x=2" and recs["env_steps_per_s"].value == 150.5
    assert recs["env_steps_per_s_per_cpu"].label == "x=1" and recs["env_steps_per_s_per_cpu"].value == 50.25
    assert "env_steps_per_s_per_w" not in recs  # not measured


def test_recommendation_notes_ties_and_noise():
    recs = recommendations(
        configurations(_trials([{"x": 1}, {"x": 2}, {"x": 3}], [[100, 104], [101, 103], [100, 300]]), ["x"]), ["x"]
    )
    note = recs[0].note
    assert "tied within the 95% CIs" in note and "1 noisy configuration not ranked" in note


def test_cpu_threads_per_gpu_sm_and_its_figure(tmp_path):
    from rlbench.report.config_plots import plot_cpu_gpu_ratio
    from rlbench.report.style import save

    trials = _trials([{"cpus_axis": c} for c in (4, 8, 16)], [[1000.0, 1010.0], [1800.0, 1790.0], [2000.0, 2020.0]])
    trials["cpus"] = trials["cpus_axis"]
    trials["num_gpus_per_learner"] = trials["learner_gpus_allocated"] = (
        1.0  # the driver's learner on 1 GPU (its demand)
    )
    c = configurations(trials, ["cpus_axis"], sm_count=132)
    assert list(c["learner_gpus"]) == [1.0, 1.0, 1.0]
    assert c["cpu_threads_per_gpu_sm"].tolist() == pytest.approx([4 / 132, 8 / 132, 16 / 132])
    assert "GPU utilization not measured" in c.iloc[0]["verdict"]
    ax, caption = plot_cpu_gpu_ratio(c, ["cpus_axis"])
    points = ax.lines[0].get_xydata() if ax.lines else ax.collections[0].get_offsets()
    assert sorted(points[:, 0].tolist()) == pytest.approx([4 / 132, 8 / 132, 16 / 132]) and "CPU-only" in caption
    assert save(ax.figure, tmp_path / "ratio.png").stat().st_size > 0


def test_a_point_skipped_as_a_duplicate_is_not_a_configuration_of_its_own():
    """num_env_runners: [0, 1, cpus-1] on 2 cores: the third point is the second again."""
    from rlbench.planning.skips import DUPLICATE

    trials = _trials(
        [{"num_env_runners": 0}, {"num_env_runners": 1}, {"num_env_runners": 1}], [[100.0], [150.0], [None]]
    )
    trials.loc[2, ["status", "reason"]] = ["skipped", f"{DUPLICATE} t001 on this machine (num_env_runners=cpus-1 is 1)"]
    c = configurations(trials, ["num_env_runners"])
    assert list(c["index"]) == [0, 1] and list(c["num_env_runners"]) == [0, 1]


def test_a_label_shows_an_unset_axis_as_the_spec_default_never_nan():
    from rlbench.analysis.configs import config_label

    row = {"env_config.step_ms": float("nan"), "num_env_runners": 2, "index": 4}
    assert (
        config_label(row, ["env_config.step_ms", "num_env_runners"])
        == "env_config.step_ms=(the spec's default), num_env_runners=2"
    )
    assert (
        config_label({"fcnet_hiddens": [64, 64], "x": None}, ["fcnet_hiddens", "x"])
        == "fcnet_hiddens=[64, 64], x=(the spec's default)"
    )
