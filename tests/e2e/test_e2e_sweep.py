"""End to end: the smoke sweep with real Ray, RLlib and gymnasium, through the real CLI."""

from __future__ import annotations

import json

import pandas as pd
import pytest
from conftest import assert_images_sane, parse_report, run_cli, trial_processes_alive

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def smoke(tmp_path_factory):
    out = tmp_path_factory.mktemp("smoke")
    done = run_cli("sweep", "configs/smoke.yaml", "--out", str(out))
    assert done.returncode == 0, done.stdout + done.stderr
    return out, done


def test_writes_every_output(smoke):
    out, done = smoke
    for name in ("trials.parquet", "iterations.parquet", "utilization.parquet", "summary.csv", "manifest.json"):
        assert (out / name).is_file(), name
    plots = sorted(p.name for p in (out / "plots").glob("*.png") if not p.name.startswith("report_"))
    assert plots == [
        "cpu_alloc_vs_used.png",
        "cpu_by_role.png",
        "cpu_heatmap_t000r0.png",
        "cpu_heatmap_t001r0.png",
        "cpu_heatmap_t002r0.png",
        "cpu_heatmap_t003r0.png",
        "throughput_vs_num_env_runners.png",
        "throughput_vs_num_envs_per_env_runner.png",
        "time_breakdown.png",
    ]
    assert "4 ok, 0 skipped, 0 failed" in done.stdout


def test_report_written_and_trial_reproducible(smoke):
    """The sweep ends with report.html/report.md; reproduce gives a spec that resolves to the trial's own config."""
    out, done = smoke
    html = (out / "report.html").read_text()
    assert "data:image/png;base64," in html and "src='http" not in html and "<script" not in html
    assert "For highest throughput:" in html and "For highest throughput:" in (out / "report.md").read_text()
    assert sorted(p.name for p in (out / "plots").glob("report_*.png")) == [
        "report_ceiling.png",  # its env ceilings measured: what its env and learner allow (issue 49)
        "report_cpu_alloc_by_config.png",
        "report_learning_env_steps.png",
        "report_learning_seconds.png",
        "report_throughput_ci_num_env_runners.png",
        "report_throughput_ci_num_envs_per_env_runner.png",
        "report_time_shares.png",
    ]  # no stop target: no Pareto figure
    assert "## Learning" in (out / "report.md").read_text()
    assert "Fastest: " in done.stdout and "recommendation:" not in done.stdout  # the first screen, once (issue 59)
    rep = run_cli("reproduce", str(out), "t002r0")
    assert rep.returncode == 0, rep.stdout + rep.stderr
    spec = out / "trials" / "t002r0" / "reproduce.yaml"
    assert f"rlbench sweep {spec} --out" in rep.stdout
    dry = run_cli("sweep", str(spec), "--dry-run")
    assert dry.returncode == 0 and "1 trials planned, 1 to run" in dry.stdout, dry.stdout + dry.stderr


def test_log_without_a_terminal_reads_well(smoke):
    """stdout is a pipe here, as in CI: one plain line per trial, no bar redraws, no wrapped cell."""
    _, done = smoke
    lines = done.stdout.splitlines()
    progress = [line for line in lines if line.startswith("[")]
    assert [line.split()[:2] for line in progress] == [
        ["[1/4]", "t000r0"],
        ["[2/4]", "t001r0"],
        ["[3/4]", "t002r0"],
        ["[4/4]", "t003r0"],
    ]
    assert all(": ok, 4 iterations in " in line and " ETA " in line for line in progress)
    assert "\r" not in done.stdout and "\x1b[" not in done.stdout
    rows = [line for line in lines if line.startswith("│")]
    assert [row.split("│")[1].strip() for row in rows] == ["t000r0", "t001r0", "t002r0", "t003r0"]


def test_report_html_parses_and_every_figure_decodes(smoke):
    out, _ = smoke
    report = parse_report(out / "report.html")
    assert report.problems == [] and report.open == []
    assert len(report.images) >= 8  # 2 CI plots, time shares, CPU by config, 3 per-trial bars, 4 heat maps
    assert_images_sane(report)


def test_trials_table(smoke):
    out, _ = smoke
    trials = pd.read_parquet(out / "trials.parquet")
    for column in (
        "trial_id",
        "status",
        "reason",
        "repeat",
        "num_env_runners",
        "num_envs_per_env_runner",
        "cpus",
        "ray_init_s",
        "build_s",
        "first_iteration_s",
        "env_steps_per_s",
        "sample_frac",
        "learn_frac",
        "driver_torch_threads",
        "env_runner_cpus_used",
        "env_runner_cpus_allocated",
    ):
        assert column in trials.columns, column
    assert list(trials["trial_id"]) == ["t000r0", "t001r0", "t002r0", "t003r0"]
    assert (trials["status"] == "ok").all()
    assert sorted(zip(trials["num_env_runners"], trials["num_envs_per_env_runner"])) == [(0, 1), (0, 2), (1, 1), (1, 2)]
    assert (trials["env_steps_per_s"] > 0).all()
    assert ((trials["sample_frac"] > 0) & (trials["sample_frac"] < 1)).all()
    assert ((trials["learn_frac"] > 0) & (trials["learn_frac"] < 1)).all()
    assert (trials["cpus"] == 2).all()
    # the env ceiling was measured once (same env, one sampling process, 2 cpus) and every trial is below it
    assert trials["env_ceiling_steps_per_s"].nunique() == 1
    assert ((trials["sampling_efficiency"] > 0) & (trials["sampling_efficiency"] < 1)).all()
    assert trials["cpu_threads_per_gpu_sm"].isna().all()  # no GPU
    csv = pd.read_csv(out / "summary.csv")
    assert list(csv["trial_id"]) == list(trials["trial_id"])


def test_iterations_add_up(smoke):
    out, _ = smoke
    its = pd.read_parquet(out / "iterations.parquet")
    assert len(its) == 4 * 4  # 4 trials x stop.iterations
    total = its["sample_s"] + its["learn_s"] + its["sync_s"] + its["other_s"]
    assert (total - its["wall_s"]).abs().max() < 1e-9
    assert (its["other_s"] > -1e-3).all()
    assert (its[["sample_s", "learn_s"]] > 0).all().all()
    assert list(its.groupby("trial_id")["warmup"].sum()) == [1, 1, 1, 1]
    assert (its["env_steps_sampled"] == 256).all()
    assert (its["env_steps_per_s"] > 0).all()
    # the phase times are this iteration's, not a running average: they differ between iterations
    assert its.groupby("trial_id")["sample_s"].nunique().min() > 1


def test_the_learners_split_adds_up(smoke):
    """The learner's split (issue 43), measured inside RLlib's learner: its parts are disjoint and nested in the
    driver's learn_s (the probe's intervals lie inside RLlib's learner_update_timer), so the rest is never negative;
    PPO builds one train batch an iteration; a CPU learner has no copy or device time."""
    out, _ = smoke
    its = pd.read_parquet(out / "iterations.parquet")
    parts = its["learn_batch_s"] + its["learn_update_s"] + its["learn_other_s"]
    assert (parts - its["learn_s"]).abs().max() < 1e-9
    assert (its["learn_other_s"] > -1e-6).all() and (its[["learn_batch_s", "learn_update_s"]] > 0).all().all()
    assert (its["learn_batch_s"] + its["learn_update_s"] - its["learner_busy_s"]).abs().max() < 1e-9
    assert (its["learn_batches"] == 1).all()
    assert its[["learn_copy_s", "learn_device_s", "gpu_busy_pct"]].isna().all().all()
    trials = pd.read_parquet(out / "trials.parquet")
    assert (trials["learn_update_s"] > 0).all() and (trials["sgd_step_s"] > 0).all()
    assert list(trials["minibatch_size"]) == [64] * 4 and list(trials["num_epochs"]) == [1] * 4


def test_utilization_has_env_runner_rows(smoke):
    out, _ = smoke
    util = pd.read_parquet(out / "utilization.parquet")
    trials = pd.read_parquet(out / "trials.parquet")
    with_runners = trials[trials["num_env_runners"] > 0]["trial_id"]
    runner_rows = util[(util["role"] == "env_runner") & util["trial_id"].isin(with_runners)]
    assert set(runner_rows["trial_id"]) == set(with_runners)
    assert set(util[util["kind"] == "process"]["role"]) >= {"driver", "env_runner", "ray_system"}
    assert (util[util["kind"] == "core"]["core"].notna()).all()
    assert (runner_rows["rss_bytes"] > 0).all()


def test_manifest(smoke):
    out, _ = smoke
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["spec"]["name"] == "smoke"
    for key in ("ray", "torch", "gymnasium", "python", "rlbench"):
        assert manifest["software"][key]
    assert manifest["machine"]["logical_cores"] >= 1
    assert manifest["ended_at"] and manifest["started_at"] <= manifest["ended_at"]


def test_no_ray_process_left(smoke):
    out, _ = smoke
    assert trial_processes_alive(out) == []


@pytest.mark.no_ray
def test_dry_run_runs_and_writes_nothing(tmp_path):
    out = tmp_path / "dry"
    done = run_cli("sweep", "configs/smoke.yaml", "--out", str(out), "--dry-run")
    assert done.returncode == 0, done.stderr
    assert "t003r0" in done.stdout and "4 trials planned" in done.stdout
    assert not out.exists()


def test_next_trial_builds_only_once_the_previous_one_is_gone(smoke):
    """overlap_trial_start (the default): each trial after the first was launched while the previous
    one shut down, and built nothing before the previous trial's processes were gone (an ordering
    of recorded times, not a timing figure)."""
    out, _ = smoke
    records = [
        json.loads((out / "trials" / t / "record.json").read_text()) for t in ("t000r0", "t001r0", "t002r0", "t003r0")
    ]
    assert records[0]["overlap_s"] == 0
    for prev, rec in zip(records, records[1:]):
        events = [
            json.loads(line) for line in (out / "trials" / rec["trial_id"] / "events.jsonl").read_text().splitlines()
        ]
        names = [e["event"] for e in events]
        assert names.index("ray_init") < names.index("gate") < names.index("build"), names
        previous_gone = prev["started_epoch"] + prev["trial_wall_s"]
        assert rec["started_epoch"] < previous_gone and rec["overlap_s"] > 0  # it did overlap
        assert rec["started_epoch"] + events[names.index("gate")]["t_s"] >= previous_gone
    trials = pd.read_parquet(out / "trials.parquet")
    assert (trials["overlap_s"] > 0).sum() == 3
