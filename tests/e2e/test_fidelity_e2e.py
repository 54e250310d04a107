"""End to end: pinning as Tune does it (none) by default, pin_driver on request, and the fidelity
diagnosis switches, judged by what the kernel held for the trial's processes (known answers)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pandas as pd
import pytest
from conftest import run_cli

pytestmark = pytest.mark.slow

SPEC = """\
name: fidelity
environment: {{env: CartPole-v1}}
cpus: {cpus}
env_runners: {{num_env_runners: {runners}}}
training: {{train_batch_size_per_learner: 200, minibatch_size: 100, num_epochs: 1}}
rl_module: {{fcnet_hiddens: [16]}}
{grid}
stop: {{iterations: 2}}
warmup_iterations: 1
env_ceiling_s: 0
"""


def _event(out, trial_id, name):
    lines = (out / "trials" / trial_id / "events.jsonl").read_text().splitlines()
    return next(e for e in map(json.loads, lines) if e["event"] == name)


def _plan(out, trial_id):
    return json.loads((out / "trials" / trial_id / "plan.json").read_text())


def test_driver_pinned_only_with_pin_driver(tmp_path):
    spec = tmp_path / "pin.yaml"
    spec.write_text(SPEC.format(cpus=2, runners=1, grid="grid: {pin_driver: [false, true]}"))
    home = tmp_path / "home"
    home.mkdir()
    done = run_cli("sweep", str(spec), "--out", str(tmp_path / "out"), env={"HOME": str(home)})
    assert done.returncode == 0, done.stdout + done.stderr
    # RLlib's Trainable makes an empty log folder in ~/ray_results for each algorithm outside Tune:
    # rlbench removes it after stopping the algorithm, so two trials leave none
    assert [p.name for p in (home / "ray_results").iterdir()] == []
    out = tmp_path / "out"
    free, pinned = _plan(out, "t000r0"), _plan(out, "t001r0")
    # torch's deterministic mode off everywhere, as in a Tune trial (whose config sets no seed): RLlib's seeding of
    # a CPU torch had switched it on in the driver and every env runner (3% of an env runner's CPU a step)
    assert _event(out, "t000r0", "build")["torch_deterministic"] == {"driver": False, "env_runners": {"1": False}}
    # Ray's dashboard head and agent started minimal in the private runtime (the venv has ray[default]'s packages:
    # full, each ray.init waited about 3 s more), and the plan says so
    ray_init = _event(out, "t000r0", "ray_init")
    assert ray_init["ray_agents"] == "minimal" and ray_init["ray_monitors"] == "off"
    # and neither the log monitor nor the autoscaler monitor started (Ray writes each one's log as it starts it)
    logs = Path(ray_init["session_dir"]) / "logs"
    assert logs.is_dir() and not [p.name for p in logs.iterdir() if "monitor" in p.name]
    assert any("start minimal" in line for line in free["differs_from_tune"])
    # default: the whole tree may use the trial's cores, the driver included (Tune pins nothing)
    assert _event(out, "t000r0", "build")["affinity"] == {"driver": free["cores"], "others": [free["cores"]]}
    assert _event(out, "t000r0", "start")["forked_by_server"] is True
    # the driver's BLAS and OpenMP pools hold its threads, as OMP_NUM_THREADS makes Tune's actor's
    # (the fork server loaded numpy's OpenBLAS with a thread per core)
    pools = _event(out, "t000r0", "build")["thread_pools"]
    assert any(k.startswith("openblas") for k in pools) and set(pools.values()) == {free["torch_threads"]["driver"]}
    # the driver's main thread as nice as the env runner's: Ray's worker niceness, as Tune's trial actor has it
    niced = min(os.getpriority(os.PRIO_PROCESS, 0) + 15, 19)
    assert _event(out, "t000r0", "build")["niceness"] == {"driver": niced, "env_runners": {"1": niced}}
    # the host's steal over each trial's wall, in the record and the trials table alike
    record = json.loads((out / "trials" / "t000r0" / "record.json").read_text())
    assert 0.0 <= record["host_steal_pct"] <= 100.0
    trials = pd.read_parquet(out / "trials.parquet").set_index("trial_id")
    assert trials.loc["t000r0", "host_steal_pct"] == record["host_steal_pct"]
    rest = [c for c in pinned["cores"] if c not in pinned["driver_cores"]]
    assert _event(out, "t001r0", "build")["affinity"] == {"driver": pinned["driver_cores"], "others": [rest]}
    assert any(d.startswith("pin_driver:") for d in pinned["differs_from_tune"])
    assert not any(d.startswith("pin_driver:") for d in free["differs_from_tune"])
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["differs_from_tune"][:2] == free["differs_from_tune"][:2] and "switched_off" not in manifest


def test_every_switch_off_is_recorded_and_takes_effect(tmp_path):
    spec = tmp_path / "off.yaml"
    spec.write_text(SPEC.format(cpus=1, runners=0, grid=""))
    names = "affinity,threads,callback,stats,forkserver,sampler,niceness"
    done = run_cli("sweep", str(spec), "--out", str(tmp_path / "out"), env={"RLBENCH_SWITCH_OFF": names})
    assert done.returncode == 0, done.stdout + done.stderr
    assert "switched off (a fidelity diagnosis" in done.stdout
    out = tmp_path / "out"
    assert json.loads((out / "manifest.json").read_text())["switched_off"] == names.split(",")
    assert _plan(out, "t000r0")["switched_off"] == names.split(",")
    # affinity off: cpus=1 pinned nothing, the driver may run wherever this test may
    assert _event(out, "t000r0", "build")["affinity"]["driver"] == sorted(os.sched_getaffinity(0))
    # forkserver off: a fresh interpreter, not a child of multiprocessing's fork server
    assert _event(out, "t000r0", "start")["forked_by_server"] is False
    # niceness off: the driver as nice as the sweep that started it
    assert _event(out, "t000r0", "build")["niceness"]["driver"] == os.getpriority(os.PRIO_PROCESS, 0)
    iters = pd.read_parquet(out / "iterations.parquet")
    assert len(iters) == 2 and (iters["env_step_s"] == 0).all()  # callback off: nothing timed the env
    util = pd.read_parquet(out / "utilization.parquet")
    assert len(util) == 0  # sampler off
    trials = pd.read_parquet(out / "trials.parquet")
    assert trials["status"].tolist() == ["ok"]


@pytest.mark.no_ray
def test_unknown_switch_is_bad_input(tmp_path):
    spec = tmp_path / "off.yaml"
    spec.write_text(SPEC.format(cpus=1, runners=0, grid=""))
    done = run_cli("sweep", str(spec), "--out", str(tmp_path / "out"), env={"RLBENCH_SWITCH_OFF": "pinning"})
    assert done.returncode == 2 and "unknown 'pinning'" in done.stdout + done.stderr
    assert not (tmp_path / "out").exists()


@pytest.mark.no_ray
def test_a_switch_off_variant_switches_off_in_its_own_trials_only(tmp_path):
    """switch_off as a variant key (plain adapter, no Ray: a second a trial): the forkserver and sampler
    switches hold in the variant's trials, and the base variant's trials still fork from the server."""
    spec = tmp_path / "variants.yaml"
    spec.write_text(
        "name: switches\nframework: plain\nenvironment: {env: envs.tiny:TinyEnv}\n"
        "training: {train_batch_size_per_learner: 100}\nstop: {iterations: 2}\nenv_ceiling_s: 0\n"
        "variants:\n  - name: base\n  - {name: fresh, set: {switch_off: [forkserver, sampler]}}\n"
    )
    done = run_cli("sweep", str(spec), "--out", str(tmp_path / "out"))
    assert done.returncode == 0, done.stdout + done.stderr
    out = tmp_path / "out"
    assert [_plan(out, t)["switched_off"] for t in ("t000r0", "t001r0")] == [[], ["forkserver", "sampler"]]
    assert json.loads((out / "manifest.json").read_text())["switched_off"] == ["forkserver", "sampler"]
    assert [_event(out, t, "start")["forked_by_server"] for t in ("t000r0", "t001r0")] == [True, False]
    util = pd.read_parquet(out / "utilization.parquet")
    assert set(util["trial_id"]) == {"t000r0"}  # the sampler sampled the base variant only
