"""Inside each role, end to end with real Ray, RLlib and py-spy: profiles, a straggler, weight sync.

One trial of SyntheticEnv with 2 env runners, runner 2 made 3x slower (its envs burn 3x the CPU
per step; they learn which runner they are in from RLlib's EnvContext), profiled at 100 Hz.
Known answers that load cannot move, because each compares quantities measured inside the same
processes: the slow runner's env CPU per step is 3x the other's (thread CPU time); each runner's
profile puts the env's step at the share of its sampling time that its own env_step_s says (both
clocks see a descheduled runner alike); the env's own clock (``self_timing_dir``) matches each
runner's env_step_s. The report must name runner 2. A second, tiny sweep runs py-spy without
ptrace permission (as user nobody) and must run unprofiled and say so.
"""

from __future__ import annotations

import io
import os
import shutil
import xml.etree.ElementTree as ET
from pathlib import Path

import pandas as pd
import pytest
from rich.console import Console

from envs.synthetic import read_self_timing
from rlbench.results.files import read_events  # raw: the trainer's facts, which rlbench does not read back
from rlbench.results.layout import TrialFolder

pytestmark = pytest.mark.slow

SLOW_FACTOR = 3
SPEC = """
name: profiles_e2e
environment:
  env: envs.synthetic:SyntheticEnv
  env_config: {{step_cost_us: 4000, episode_len: 40, obs_size: 8, slow_worker_index: 2,
               slow_factor: {slow}, self_timing_dir: {timing}}}
env_runners:
  num_env_runners: 2
  num_cpus_per_env_runner: 1
resources:
  num_cpus_for_main_process: 0
training:
  train_batch_size_per_learner: 240
  minibatch_size: 60
  num_epochs: 1
rl_module:
  fcnet_hiddens: [32, 32]
cpus: 2
stop:
  iterations: 5
warmup_iterations: 1
trial_timeout_s: 600
sample_hz: 10
profile_hz: 100
profile_roles: [driver, learner, env_runner]
env_ceiling_s: 0
"""


@pytest.fixture(scope="module")
def sweep(tmp_path_factory):
    from rlbench.analysis.tables import build_tables
    from rlbench.report.document import write_report
    from rlbench.run.sweep import run_sweep
    from rlbench.spec.load import load_spec

    root = tmp_path_factory.mktemp("profiles")
    timing = root / "timing"
    timing.mkdir()
    spec = root / "profiles.yaml"
    spec.write_text(SPEC.format(slow=SLOW_FACTOR, timing=timing))
    out = root / "out"
    outcome = run_sweep(load_spec(spec), out, console=Console(file=io.StringIO()))
    assert [r.status for r in outcome.records] == ["ok"], [r.reason for r in outcome.records]
    tables = build_tables(out)
    write_report(out, tables)
    return out, tables, read_self_timing(timing)


def _per_runner(tables) -> pd.DataFrame:
    runners = tables["runner_iterations"]
    return runners[~runners["warmup"]].groupby("env_runner").sum(numeric_only=True)


def test_every_runner_has_its_own_rows_matching_its_process(sweep):
    out, tables, own = sweep
    runners = tables["runner_iterations"]
    assert sorted(runners["env_runner"].unique()) == [1, 2]
    assert len(runners) == 2 * 5
    trial = tables["trials"].iloc[0]
    build = next(e for e in read_events(TrialFolder(out / "trials" / "t000r0").events_file) if e["event"] == "build")
    pids = {int(k): v for k, v in build["env_runner_pids"].items()}
    assert runners.groupby("env_runner")["pid"].unique().map(list).to_dict() == {i: [pids[i]] for i in (1, 2)}
    # each runner's rows against what the envs of that very process timed and counted themselves, every
    # iteration (warm-up included): the count is exact, and env_step_s wraps the env's own step body (the
    # slow runner's own seconds are over twice the fast one's env_step_s, so swapped rows would fail)
    every = runners.groupby("env_runner").sum(numeric_only=True)
    for index, pid in pids.items():
        seconds, steps, _ = own[pid]
        assert steps == every.loc[index, "env_steps"]
        assert seconds <= every.loc[index, "env_step_s"]
    assert own[pids[2]][0] > every.loc[1, "env_step_s"]
    assert trial["num_env_runners"] == 2


def test_slow_runner_costs_its_factor_per_env_step(sweep):
    _, tables, _ = sweep
    r = _per_runner(tables)
    cpu_per_step = r["env_step_cpu_s"] / r["env_steps"]
    # CPU time of each runner's sampling thread inside its env, per step: a busy machine cannot stretch it
    assert cpu_per_step[2] / cpu_per_step[1] == pytest.approx(SLOW_FACTOR, rel=0.15)
    assert r.loc[1, "env_steps"] == r.loc[2, "env_steps"]  # both sample the same fragment per iteration


def test_report_names_the_straggler(sweep):
    out, tables, _ = sweep
    trial = tables["trials"].iloc[0]
    assert trial["straggler_env_runner"] == 2
    assert trial["straggler_cpu_ratio"] >= 1.5 and trial["straggler_wait_s"] > 0
    md = (out / "report.md").read_text()
    assert "straggler: env runner 2 takes" in md
    assert "| env runner 2 |" in md  # the inside-the-iteration table


def test_each_runner_profile_puts_the_env_where_its_timer_does(sweep):
    """The env's spin is most of each runner's sampling by its timer, and so in its profile.

    Not the exact share: py-spy competes for the same cores as the runners it samples, so which
    moments it catches depends on the load. With one busy process beside the suite one runner's
    profile put the env at 0.62 of sampling where its timer said 0.76 (quiet: within 0.10). The
    agreement on a quiet machine is a figure for configs/bench_profile.yaml, not a test verdict.
    The timer's side is read from the CPU clocks (env_step_cpu_s / sample_cpu_s), which load
    cannot stretch. "Most" holds by design, not by machine speed: RLlib's own work per step took
    1.6-2.0 ms of CPU on a slow VM (CI at 2ed3900), where a 2 ms spin was 0.58 of the fast
    runner's sampling and failed this test (then > 0.6); the spin is 4 ms (fast) and 12 ms (slow)
    a step: 0.78 and 0.89 of sampling by CPU quietly, 0.85 and 0.90 by the profile.
    """
    _, tables, _ = sweep
    profiles = tables["profiles"]
    runners = tables["runner_iterations"]
    steady = runners[~runners["warmup"]]
    for pid, rows in profiles[profiles["role"] == "env_runner"].groupby("pid"):
        env = rows[rows["function"].isin(["SyntheticEnv.step", "SyntheticEnv.reset"])]["total_samples"].sum()
        sampling = rows[rows["function"] == "SingleAgentEnvRunner.sample"]["total_samples"].sum()
        mine = steady[steady["pid"] == pid]
        timer_share = mine["env_step_cpu_s"].sum() / mine["sample_cpu_s"].sum()
        assert sampling > 100
        assert timer_share > 0.5, (pid, timer_share)  # most: 4 ms of CPU a step or more against RLlib's 1.2-2.0 ms
        assert env / sampling > 0.5, (pid, env / sampling, timer_share)
        own = rows.sort_values("self_samples", ascending=False)["function"].iloc[0]
        assert own == "burn_cpu", (pid, own)  # the env's spin (envs/synthetic.py) is where the runner spends most


def test_profiles_files_tables_and_flame_graphs(sweep):
    out, tables, _ = sweep
    trial = tables["trials"].iloc[0]
    assert (trial["profile_status"], trial["profile_processes"]) == ("ok", 3)
    assert trial["profile_cpu_pct"] > 0
    folder = out / "trials" / "t000r0" / "profiles"
    profiled = sorted(p.name.split("-")[0] for p in folder.glob("*.speedscope.json"))
    assert profiled == ["driver", "env_runner", "env_runner"]  # profile_roles: Ray's agents left out
    for role in ("driver", "env_runner"):
        ET.parse(folder / f"flame-{role}.svg")  # well-formed
    p = tables["profiles"]
    assert set(p["role"]) == {"driver", "env_runner"}
    assert (p.groupby("pid")["self_frac"].sum().round(9) == 1.0).all()
    util = tables["utilization"]
    harness = util[(util["kind"] == "process") & (util["role"] == "harness")]
    assert harness["pid"].nunique() >= 4  # the reaper and the three py-spy processes: never the trial's
    assert not set(harness["pid"]) & set(util[util["role"] == "env_runner"]["pid"])
    html = (out / "report.html").read_text()
    assert "data:image/svg+xml;base64," in html and "burn_cpu" in html


def test_weight_sync_bytes_and_driver_idle(sweep):
    _, tables, _ = sweep
    trial = tables["trials"].iloc[0]
    params = 8 * 32 + 32 + 32 * 32 + 32 + 32 * 4 + 4  # the policy net the env runners hold: obs 8, 32x32, 4 actions
    assert trial["weight_params"] == params
    assert trial["weight_bytes"] >= params * 4  # float32, plus any buffers the state carries
    assert trial["weight_receivers"] == 2
    its = tables["iterations"]
    assert (its["sync_bytes"] == trial["weight_bytes"] * 2).all()
    steady = its[~its["warmup"]]
    assert steady["driver_idle_frac"].between(0.5, 1.0).all()  # it waits on the runners; learning is tiny


@pytest.fixture(scope="module")
def no_ptrace(tmp_path_factory):
    """py-spy run as user nobody: the kernel refuses it ptrace on the trial's root-owned processes."""
    from rlbench.measure.profiler import find_pyspy

    setpriv = shutil.which("setpriv")
    if os.geteuid() != 0 or setpriv is None:
        pytest.skip("needs root and setpriv to run py-spy without permission (tests/measure covers the logic)")
    root = tmp_path_factory.mktemp("noptrace")
    binary = root / "py-spy"
    shutil.copy(find_pyspy(), binary)
    root.chmod(0o755)
    wrapper = root / "py-spy-as-nobody"
    wrapper.write_text(f'#!/bin/sh\nexec {setpriv} --reuid=65534 --regid=65534 --clear-groups {binary} "$@"\n')
    wrapper.chmod(0o755)
    return wrapper


@pytest.mark.no_ray
def test_without_ptrace_the_trial_runs_unprofiled_and_says_why(no_ptrace, tmp_path):
    """On the plain adapter (no Ray: RLlib is not what this checks, and the suite's Ray worker is its
    critical path): the profiler is started from outside the trial whatever the framework."""
    from rlbench.analysis.tables import build_tables
    from rlbench.run.sweep import run_sweep
    from rlbench.spec.load import spec_from_dict

    # 30 iterations of 64 steps at 1 ms: a steady window of about 2 s, long enough for py-spy to try
    data = {
        "name": "noptrace",
        "framework": "plain",
        "environment": {"env": "envs.synthetic:SyntheticEnv", "env_config": {"step_cost_us": 1000}},
        "env_runners": {"num_env_runners": 0},
        "training": {"train_batch_size_per_learner": 64},
        "cpus": 2,
        "stop": {"iterations": 30},
        "profile_hz": 50,
        "env_ceiling_s": 0,
    }
    console = io.StringIO()
    outcome = run_sweep(
        spec_from_dict(data, source="test"), tmp_path / "out", console=Console(file=console), pyspy=str(no_ptrace)
    )
    assert [r.status for r in outcome.records] == ["ok"]
    trial = build_tables(tmp_path / "out")["trials"].iloc[0]
    assert trial["profile_status"] == "unavailable"
    assert "no ptrace permission" in trial["profile_note"]
    assert "profile unavailable" in console.getvalue()
    assert not list(Path(tmp_path / "out" / "trials" / "t000r0").glob("profiles/*.speedscope.json"))
