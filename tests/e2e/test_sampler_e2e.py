"""End to end with real Ray and RLlib (issue 49): an inference-bound env runner is told to take more envs.

A cheap env (SyntheticEnv, no step cost: about 20 us a step alone here), a [256, 256] network and one env per
runner: a runner's ``sample()`` is mostly the forward pass and RLlib's per-step work, whatever the load (both
stretch alike), and one minibatch step an iteration keeps the learner well under half of it. The sampler's
verdict names ``num_envs_per_env_runner``, ``advise`` sweeps it around 1, and ``next.yaml`` is written for it.
That following it is faster is a measurement (docs/MEASUREMENT.md, "Why sampling is slow: known answers"), not
asserted here. One trial of 3 iterations: about 25 s quiet on 2 cores (the Ray start and build most of it)."""

from __future__ import annotations

import pandas as pd
import pytest
import yaml
from conftest import sweep_ok, trial_processes_alive

from rlbench.analysis import analyze
from rlbench.analysis.next_step import advise

pytestmark = pytest.mark.slow

SPEC = """\
name: sampler_e2e
algo: PPO
environment:
  env: envs.synthetic:SyntheticEnv
  env_config: {step_cost_us: 0, obs_size: 16, episode_len: 100}
env_runners:
  num_env_runners: 1
  num_envs_per_env_runner: 1
resources:
  num_cpus_for_main_process: 1
training:
  train_batch_size_per_learner: 400
  minibatch_size: 400
  num_epochs: 1
rl_module:
  fcnet_hiddens: [256, 256]
cpus: 2
seed: 3
stop:
  iterations: 3
warmup_iterations: 1
trial_timeout_s: 240
sample_hz: 5
env_ceiling_s: 0.5
"""


@pytest.fixture(scope="module")
def out(tmp_path_factory):
    return sweep_ok(tmp_path_factory.mktemp("sampler"), SPEC)[0]


def test_an_inference_bound_runner_is_told_to_take_more_envs(out):
    trials = pd.read_parquet(out / "trials.parquet")
    (t,) = trials.to_dict("records")
    assert t["status"] == "ok" and t["sample_frac"] >= 0.5
    # the split adds up: a runner's sample() is its env, its forward pass and the rest; the driver waits beyond it
    parts = t["runner_env_s"] + t["runner_inference_s"] + t["runner_other_s"]
    assert parts == pytest.approx(t["runner_sample_s"], rel=0.05) and t["runner_env_s"] < 0.5 * t["runner_sample_s"]
    assert t["runner_env_cpu_s"] <= t["runner_env_s"] and t["runner_sample_cpu_s"] <= t["runner_sample_s"]
    # the ceiling: the env alone was measured, composed with the learner's rate; the trial below both
    assert 0 < t["ceiling_frac"] < 1 and t["ceiling_env_steps_per_s"] < t["env_ceiling_steps_per_s"]
    assert t["ceiling_env_steps_per_s"] < t["learner_steps_per_s"]
    analysis = analyze(out)
    row = analysis.configs.iloc[0].to_dict()
    advice = advise(row)
    assert advice.stop is None and advice.step.knob == "num_envs_per_env_runner"
    assert advice.step.values == (1, 2, 4, 8) and advice.step.verdict.label in (
        "inference-bound",
        "per-step work-bound",
    )
    assert advice.step.verdict.text in row["verdict"]
    next_spec = yaml.safe_load((out / "next.yaml").read_text())
    assert next_spec["grid"] == {"num_envs_per_env_runner": [1, 2, 4, 8]}
    report = (out / "report.md").read_text()
    assert "## What its env and learner allow" in report and "of what its env and learner allow here" in report
    assert (out / "plots" / "report_ceiling.png").exists()
    assert trial_processes_alive(out) == []
