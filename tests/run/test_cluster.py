"""Cluster mode, the parts without Ray: address, token, code shipping, planning against a cluster."""

from __future__ import annotations

from pathlib import Path

import pytest

from rlbench.measure.machine import (
    ClusterInfo,
    NodeInfo,
    cluster_dict,
    cluster_from_dict,
)
from rlbench.planning.plan import check_spec_for_cluster, plan_cluster_trials
from rlbench.planning.skips import cluster_skip_reason
from rlbench.run.cluster import ClusterError, resolve_address
from rlbench.spec.load import spec_from_dict
from rlbench.spec.model import TrialConfig
from rlbench.worker.ray_auth import enable_token_auth, runtime_env_for, token_available

REPO = Path(__file__).resolve().parents[2]


def cluster(*node_cpus: float, gpus: float = 0) -> ClusterInfo:
    nodes = [
        NodeInfo(node_id=f"n{i}", node_ip="10.0.0.1", is_head=i == 0, resources={"CPU": c})
        for i, c in enumerate(node_cpus)
    ]
    total = {"CPU": float(sum(node_cpus)), **({"GPU": gpus} if gpus else {})}
    return ClusterInfo(
        address="auto", gcs_address="10.0.0.1:6379", nodes=nodes, total_resources=total, available_resources=total
    )


def config(**sections) -> TrialConfig:
    return TrialConfig.model_validate({"environment": {"env": "CartPole-v1"}, **sections})


def test_resolve_address():
    assert resolve_address("10.0.0.1:6379", {}) == "10.0.0.1:6379"
    assert resolve_address(None, {"RAY_ADDRESS": "auto"}) == "auto"
    assert resolve_address("h:1", {"RAY_ADDRESS": "auto"}) == "h:1"  # the flag wins
    assert resolve_address(None, {}) is None
    assert resolve_address(None, {"RAY_ADDRESS": ""}) is None
    with pytest.raises(ClusterError, match="ray://"):
        resolve_address("ray://head:10001", {})


def test_token_mode_turned_on_only_when_unset_and_a_token_exists(tmp_path):
    token = tmp_path / "token"
    token.write_text("ab" * 32)
    env = {"RAY_AUTH_TOKEN_PATH": str(token)}
    assert token_available(env) and enable_token_auth(env) == "token" and env["RAY_AUTH_MODE"] == "token"
    assert enable_token_auth({"RAY_AUTH_TOKEN": "x"}) == "token"
    missing = {"RAY_AUTH_TOKEN_PATH": str(tmp_path / "none")}
    assert not token_available(missing) and enable_token_auth(missing) is None and "RAY_AUTH_MODE" not in missing
    chosen = {"RAY_AUTH_MODE": "disabled", "RAY_AUTH_TOKEN": "x"}  # the user's choice is left alone
    assert enable_token_auth(chosen) == "disabled"


def test_runtime_env_ships_rlbench_and_a_local_env_package(monkeypatch):
    monkeypatch.chdir(REPO)
    monkeypatch.syspath_prepend(str(REPO))
    shipped = runtime_env_for("envs.tiny:TinyEnv")["py_modules"]
    assert shipped == [str(REPO / "rlbench"), str(REPO / "envs")]
    assert runtime_env_for("CartPole-v1")["py_modules"] == [str(REPO / "rlbench")]
    # an installed package (here gymnasium's) is the nodes' business, not shipped
    assert runtime_env_for("gymnasium.envs.classic_control:CartPoleEnv")["py_modules"] == [str(REPO / "rlbench")]


def test_skip_reasons_against_cluster_totals_and_node_sizes():
    two_nodes = cluster(1, 2)
    # 3 runners x 1 CPU fit 1 + 2 CPUs; the driver's CPU is not the cluster's
    assert cluster_skip_reason(config(env_runners={"num_env_runners": 3}), two_nodes) is None
    assert cluster_skip_reason(config(env_runners={"num_env_runners": 4}), two_nodes) == (
        "needs 4 CPUs for actors but the cluster has 3"
    )
    # one actor of 3 CPUs fits the total (3) but no node
    assert (
        cluster_skip_reason(config(env_runners={"num_env_runners": 1, "num_cpus_per_env_runner": 3}), two_nodes)
        == "one actor needs 3 CPUs but the largest node has 2"
    )
    assert cluster_skip_reason(config(learners={"num_learners": 1, "num_gpus_per_learner": 1}), two_nodes) == (
        "needs 1 GPUs (learners and env runners) but the cluster has 0"
    )
    assert (
        cluster_skip_reason(config(learners={"num_learners": 1, "num_gpus_per_learner": 1}), cluster(4, gpus=1)) is None
    )


def test_plan_on_a_cluster_has_no_pinning_and_the_address():
    loaded = spec_from_dict(
        {
            "name": "c",
            "environment": {"env": "CartPole-v1"},
            "stop": {"iterations": 3},
            "grid": {"num_env_runners": [1, 4]},
        },
        check_envs=False,
    )
    plans = plan_cluster_trials(loaded, cluster(1, 2))
    assert [p.trial_id for p in plans] == ["t000r0", "t001r0"]
    for p in plans:
        assert (p.cores, p.driver_cores, p.cpus, p.ray_cpus, p.gpus) == ([], [], 3, 3, 0)
        assert p.ray_address == "10.0.0.1:6379"
    assert plans[0].skip_reason is None
    assert plans[1].skip_reason == "needs 4 CPUs for actors but the cluster has 3"


def test_cpus_is_rejected_on_a_cluster():
    with_cpus = spec_from_dict(
        {"name": "c", "environment": {"env": "CartPole-v1"}, "stop": {"iterations": 3}, "cpus": 2}, check_envs=False
    )
    assert "'cpus' emulates a smaller machine" in check_spec_for_cluster(with_cpus)
    axis = spec_from_dict(
        {"name": "c", "environment": {"env": "CartPole-v1"}, "stop": {"iterations": 3}, "grid": {"cpus": [1, 2]}},
        check_envs=False,
    )
    assert check_spec_for_cluster(axis) is not None
    plain = spec_from_dict(
        {"name": "c", "environment": {"env": "CartPole-v1"}, "stop": {"iterations": 3}}, check_envs=False
    )
    assert check_spec_for_cluster(plain) is None


def test_cluster_info_round_trips_through_the_manifest():
    info = cluster(1, 2, gpus=1)
    data = cluster_dict(info)
    assert (data["total_cpus"], data["total_gpus"]) == (3.0, 1.0)
    back = cluster_from_dict(data)
    assert back == info and back.max_node_cpus == 2.0


def test_tcp_unreachable():
    import socket

    from rlbench.run.cluster import tcp_unreachable

    with socket.socket() as listening:
        listening.bind(("127.0.0.1", 0))
        listening.listen()
        port = listening.getsockname()[1]
        assert tcp_unreachable(f"127.0.0.1:{port}") is None
    assert tcp_unreachable(f"127.0.0.1:{port}") == "Connection refused"  # closed now
    assert tcp_unreachable("auto") is None  # left to Ray


def test_cli_refuses_cpus_and_unreachable_clusters_before_running_anything(tmp_path):
    from conftest import run_cli

    done = run_cli("sweep", "configs/smoke.yaml", "--address", "127.0.0.1:1", "--out", str(tmp_path / "a"))
    assert done.returncode == 2 and "'cpus' emulates a smaller machine" in done.stdout
    done = run_cli(
        "sweep", "configs/cluster_smoke.yaml", "--out", str(tmp_path / "b"), env={"RAY_ADDRESS": "127.0.0.1:1"}
    )
    assert done.returncode == 2 and "cannot reach the Ray cluster at 127.0.0.1:1" in done.stdout
    assert not (tmp_path / "a").exists() and not (tmp_path / "b").exists()


def test_relative_values_resolve_against_the_clusters_cpus():
    from rlbench.planning.skip_summary import skip_group, skip_summary
    from rlbench.planning.skips import DUPLICATE

    loaded = spec_from_dict(
        {
            "name": "c",
            "environment": {"env": "CartPole-v1"},
            "stop": {"iterations": 3},
            "grid": {"num_env_runners": [1, "cpus", "cpus-2"]},
        },
        check_envs=False,
    )
    plans = plan_cluster_trials(loaded, cluster(1, 2))  # 3 CPUs: cpus is 3, cpus-2 is 1 (the first point again)
    assert [p.axes["num_env_runners"] for p in plans] == [1, 3, 1]
    assert [p.skip_reason is None for p in plans] == [True, True, False]  # the driver takes no cluster CPU
    assert plans[2].skip_reason.startswith(DUPLICATE)
    assert skip_group(plans[2]).startswith("resolve to the same configuration")
    assert skip_summary(plans) == [
        "1 of 3 trials resolve to the same configuration as an earlier grid point on this machine: it will be skipped"
    ]
