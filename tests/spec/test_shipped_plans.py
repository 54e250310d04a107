"""Every planned trial of every shipped config is written and read back as the same plan (issue 42).

On 1923cec configs/ppo_gpu.yaml failed all 6 of its trials on every machine: its plan.json held
``learner_gpus`` beside the ``num_learners``/``num_gpus_per_learner`` it resolved to, and every reader refused
that ("both set: keep one"); the test fixtures all carried ``learner_gpus: null``, so no test saw it. Here
every file under configs/ (configs/workloads/ too; an ``autoconfig:`` spec's search space and its baseline) is
planned as a sweep plans it, on four machines: 2 cores without a GPU, this machine with a GPU through the fake
NVML, a 16-core machine with 2 GPUs, and a Ray cluster probe (2 nodes, 2 GPUs; a spec that sets ``cpus`` is
refused there by ``check_spec_for_cluster``, as the CLI does). Every plan goes through ``write_plan`` and
``read_plan``, the one way the trial, the tables, ``--resume`` and ``reproduce`` read it. Specs whose envs
need an optional extra load here: the test extra installs them all.
"""

from __future__ import annotations

import copy
import dataclasses

import pytest
from conftest import REPO
from fakes import FakeNvml, h100

from rlbench.measure.machine import ClusterInfo, MachineInfo, NodeInfo, probe_machine
from rlbench.planning.plan import check_spec_for_cluster, plan_cluster_trials, plan_trials, read_plan, write_plan
from rlbench.results.layout import ResultsFolder
from rlbench.spec.load import load_spec, spec_from_dict
from rlbench.spec.model import LoadedSpec
from rlbench.spec.yamlfile import read_yaml

CONFIGS = sorted(REPO.glob("configs/**/*.yaml"))
TWO_CORES = MachineInfo(
    hostname="small",
    cpu_model="fake",
    logical_cores=2,
    physical_cores=2,
    usable_cores=[0, 1],
    memory_bytes=2**34,
    gpus=[],
)
BIG = MachineInfo(
    hostname="big",
    cpu_model="fake",
    logical_cores=16,
    physical_cores=16,
    usable_cores=list(range(16)),
    memory_bytes=2**37,
    gpus=[{"index": i, "name": "Fake GPU", "memory_bytes": 2**34} for i in range(2)],
)
CLUSTER = ClusterInfo(
    address="auto",
    gcs_address="10.0.0.1:6379",
    nodes=[
        NodeInfo("n0", "10.0.0.1", True, {"CPU": 8.0, "GPU": 1.0}),
        NodeInfo("n1", "10.0.0.2", False, {"CPU": 8.0, "GPU": 1.0}),
    ],
    total_resources={"CPU": 16.0, "GPU": 2.0},
    available_resources={"CPU": 16.0, "GPU": 2.0},
)


def specs(config) -> list[LoadedSpec]:
    """The sweeps a config plans: itself, or for an ``autoconfig:`` spec its search space and its baseline (the
    spec's base config with ``autoconfig.baseline``'s grid values, planned as ``rlbench autoconfig`` plans it)."""
    data, lines = read_yaml(config)
    if "autoconfig" not in data:
        return [load_spec(config)]
    section = data.pop("autoconfig") or {}
    baseline = copy.deepcopy(data)
    baseline.update(grid={a: [v] for a, v in (section.get("baseline") or {}).items()}, repeats=1)
    return [spec_from_dict(data, source=config, lines=lines), spec_from_dict(baseline, source=config, lines=lines)]


def round_trip(plans, tmp_path) -> int:
    folder = ResultsFolder(tmp_path)
    for plan in plans:
        assert read_plan(write_plan(folder, plan)) == plan, plan.trial_id
    return len(plans)


@pytest.fixture(scope="module")
def gpu_machine():
    """This machine as the sweep probes it, with one H100 reported by the fake NVML."""
    machine = probe_machine(FakeNvml([h100()]))
    assert machine.gpu_count == 1
    return machine


def test_every_config_is_found():
    assert len(CONFIGS) >= 29 and any(c.parent.name == "workloads" for c in CONFIGS)
    assert REPO / "configs" / "ppo_gpu.yaml" in CONFIGS


@pytest.mark.parametrize("config", CONFIGS, ids=[str(c.relative_to(REPO / "configs")) for c in CONFIGS])
def test_every_planned_trial_reads_back_as_written(config, tmp_path, gpu_machine):
    written = 0
    for n, loaded in enumerate(specs(config)):
        for name, machine in (("small", TWO_CORES), ("gpu", gpu_machine), ("big", BIG)):
            plans = plan_trials(loaded, machine)
            assert plans
            written += round_trip(plans, tmp_path / f"{n}-{name}")
        if check_spec_for_cluster(loaded) is None:
            written += round_trip(plan_cluster_trials(loaded, CLUSTER), tmp_path / f"{n}-cluster")
    assert written > 0


def test_the_gpu_grid_plans_its_gpu_points_on_a_gpu_and_skips_them_without():
    """ppo_gpu.yaml, the mission's GPU axis: learner_gpus 0 and 1 x 3 env-runner counts. Without a GPU the
    learner_gpus=1 points are skipped with the reason; with one they are planned to run, and both read back."""
    loaded = load_spec(REPO / "configs" / "ppo_gpu.yaml")
    without = {p.trial_id: p for p in plan_trials(loaded, dataclasses.replace(BIG, gpus=[]))}
    gpu_points = [p for p in without.values() if p.axes["learner_gpus"] == 1]
    assert len(without) == 6 and len(gpu_points) == 3
    assert all(p.skip_reason and "GPU" in p.skip_reason for p in gpu_points)
    assert all(p.skip_reason is None for p in without.values() if p.axes["learner_gpus"] == 0)
    with_gpu = plan_trials(loaded, BIG)
    assert all(p.skip_reason is None for p in with_gpu)
    assert {
        (p.config.learners.num_learners, p.config.learners.num_gpus_per_learner)
        for p in with_gpu
        if p.axes["learner_gpus"] == 1
    } == {(0, 1.0)}
