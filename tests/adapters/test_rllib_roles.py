"""The RLlib adapter's pure parts: process roles from command lines (its rules through the one classifier), and
resource demand."""

from __future__ import annotations

import pytest

from rlbench.adapters.rllib import RLlibAdapter, resource_demand
from rlbench.spec.model import TrialConfig

PY = "/venv/bin/python"
RAY = "/venv/lib/python3.11/site-packages/ray"


@pytest.mark.parametrize(
    ("cmdline", "role"),
    [
        # Ray sets a worker's title as cmdline()[0], often padded with spaces
        (["ray::SingleAgentEnvRunner"], "env_runner"),
        (["ray::SingleAgentEnvRunner.apply", "", ""], "env_runner"),
        (["ray::SingleAgentEnvRunner.sample   "], "env_runner"),
        (["ray::MultiAgentEnvRunner.apply"], "env_runner"),
        (["ray::_WrappedExecutable"], "learner"),
        (["ray::_WrappedExecutable.apply"], "learner"),
        # APPO/IMPALA: aggregator actors and the env runners' state server (titles seen on Ray 2.60)
        (["ray::AggregatorActor"], "aggregator"),
        (["ray::AggregatorActor.get_batch"], "aggregator"),
        (["ray::EnvRunnerStateServer"], "state_server"),
        (["ray::EnvRunnerStateServer.push"], "state_server"),
        (["ray::IDLE"], "ray_system"),  # a pooled Ray worker, no actor yet (read again until it settles)
        ([PY, f"{RAY}/_private/workers/default_worker.py", "--node-ip-address=127.0.0.1"], "ray_system"),
        (["ray::DashboardAgent"], "ray_system"),
        (["ray::RuntimeEnvAgent"], "ray_system"),
        ([f"{RAY}/core/src/ray/raylet/raylet", "--raylet_socket_name=/tmp/ray/sockets/raylet"], "ray_system"),
        ([f"{RAY}/core/src/ray/gcs/gcs_server", "--log_dir=/tmp/ray/logs"], "ray_system"),
        ([PY, "-u", f"{RAY}/_private/log_monitor.py", "--session-dir=/tmp/ray/session"], "ray_system"),
        ([PY, f"{RAY}/dashboard/dashboard.py", "--host=127.0.0.1"], "ray_system"),
        ([PY, "-u", f"{RAY}/autoscaler/_private/monitor.py", "--logs-dir=/tmp"], "ray_system"),
        ([PY, "-u", f"{RAY}/dashboard/agent.py", "--node-ip-address=127.0.0.1"], "ray_system"),
        ([PY, "-u", f"{RAY}/_private/runtime_env/agent/main.py"], "ray_system"),
        ([PY, "train.py"], "other"),
        (["/bin/sh", "-c", "sleep 1"], "other"),
        ([], "other"),
    ],
)
def test_classify_process(cmdline, role):
    assert RLlibAdapter().classify_process(cmdline, is_driver=False).name == role


@pytest.mark.parametrize("cmdline", [[PY, "-m", "rlbench.trial"], ["ray::IDLE"], []])
def test_the_driver_is_the_driver_whatever_its_title(cmdline):
    assert RLlibAdapter().classify_process(cmdline, is_driver=True).name == "driver"


def test_roles_are_the_known_set():
    assert RLlibAdapter().roles == (
        "driver",
        "learner",
        "env_runner",
        "aggregator",
        "state_server",
        "ray_system",
        "other",
    )


def demand(**sections):
    return resource_demand(TrialConfig.model_validate({"environment": {"env": "CartPole-v1"}, **sections}))


def test_default_demand():
    d = demand()
    assert (d.driver_cpus, d.actor_cpus, d.gpus, d.total_cpus) == (1, 1.0, 0.0, 2.0)


def test_no_env_runners():
    d = demand(env_runners={"num_env_runners": 0})
    assert (d.driver_cpus, d.actor_cpus, d.gpus, d.total_cpus) == (1, 0.0, 0.0, 1.0)


def test_runners_and_remote_learners():
    # 4 x 0.5 + 2 x 2 = 6 actor CPUs; GPUs 4 x 0.25 + 2 x 0.5 = 2
    d = demand(
        env_runners={"num_env_runners": 4, "num_cpus_per_env_runner": 0.5, "num_gpus_per_env_runner": 0.25},
        learners={"num_learners": 2, "num_cpus_per_learner": 2, "num_gpus_per_learner": 0.5},
        resources={"num_cpus_for_main_process": 2},
    )
    assert (d.driver_cpus, d.actor_cpus, d.gpus, d.total_cpus) == (2, 6.0, 2.0, 8.0)
    assert d.actor_processes == 6  # 4 env runners + 2 learners, whatever each reserves
    assert demand(env_runners={"num_env_runners": 0}).actor_processes == 0


def test_local_learner_cpus_are_the_drivers():
    # num_learners=0: the learner lives in the driver, its num_cpus_per_learner is not an actor's
    d = demand(env_runners={"num_env_runners": 3}, learners={"num_learners": 0, "num_cpus_per_learner": 3})
    assert (d.actor_cpus, d.total_cpus) == (3.0, 4.0)


@pytest.mark.parametrize(("learner_gpus", "actor_cpus", "gpus"), [(0.5, 1.0, 0.5), (1, 1.0, 1.0), (2, 1.0, 2.0)])
def test_learner_gpus(learner_gpus, actor_cpus, gpus):
    # with a GPU, "auto" CPUs per learner is 0, so remote GPU learners add no actor CPUs
    d = demand(learners={"learner_gpus": learner_gpus})
    assert (d.actor_cpus, d.gpus) == (actor_cpus, gpus)


def test_aggregator_actors_are_one_cpu_each_per_learner():
    # IMPALA, 2 learners x 2 aggregators x 1 CPU; the state server reserves nothing
    d = demand(
        algo="IMPALA",
        env_runners={"num_env_runners": 2},
        learners={"num_learners": 2, "num_aggregator_actors_per_learner": 2},
    )
    assert d.role_cpus(RLlibAdapter().roles)["aggregator"] == 4.0
    assert (d.actor_cpus, d.total_cpus) == (2.0 + 2.0 + 4.0, 9.0)
    assert "4 aggregator actors x 1 CPU" in d.describe_actors()
    # with the learner in the driver there is still one learner to aggregate for
    d = demand(algo="APPO", learners={"num_learners": 0, "num_aggregator_actors_per_learner": 1})
    assert d.role_cpus(RLlibAdapter().roles)["aggregator"] == 1.0 and d.total_cpus == 3.0


def test_async_demand_without_aggregators_is_ppos():
    assert demand(algo="APPO").total_cpus == demand().total_cpus == 2.0
    assert demand(algo="IMPALA").role_cpus(RLlibAdapter().roles)["state_server"] == 0.0


def test_the_adapter_knows_which_algorithms_overlap():
    from rlbench.adapters import get_adapter

    adapter = get_adapter()
    assert adapter.algorithms == ("PPO", "APPO", "IMPALA", "DQN", "SAC")
    assert [adapter.is_asynchronous(a) for a in adapter.algorithms] == [False, True, True, False, False]
    assert adapter.actor_class_roles["AggregatorActor"] == "aggregator"
    assert adapter.actor_class_roles["EnvRunnerStateServer"] == "state_server"
