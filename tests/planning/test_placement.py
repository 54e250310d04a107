"""Placement of a --parallel trial: its bundles, packed onto the fewest nodes of one type (hand-computed)."""

from __future__ import annotations

from rlbench.adapters.demand import ActorDemand, ResourceDemand
from rlbench.measure.machine import NodeInfo, node_type
from rlbench.planning.placement import (
    MIN_DRIVER_CPUS,
    NodeRoom,
    largest_node_set,
    node_set_skip_reason,
    pack,
    placement,
    trial_bundles,
)


def rooms(*cpus: float, kind: str = "a", gpus: float = 0.0) -> list[NodeRoom]:
    return [NodeRoom(f"{kind}{i}", kind, c, gpus) for i, c in enumerate(cpus)]


def test_node_type_names_cpu_cores_memory_and_gpus():
    node = NodeInfo(
        node_id="x",
        node_ip="1",
        is_head=False,
        resources={},
        cpu_model="EPYC 7B13",
        logical_cores=8,
        memory_bytes=32 * 2**30,
        gpus=[{"name": "NVIDIA A10G"}, {"name": "NVIDIA A10G"}],
    )
    assert node_type(node) == "EPYC 7B13 | 8 | 32 | NVIDIA A10G x 2"
    bare = NodeInfo(
        node_id="y",
        node_ip="1",
        is_head=True,
        resources={},
        cpu_model="Xeon",
        logical_cores=2,
        memory_bytes=int(23.6 * 2**30),
    )
    assert node_type(bare) == "Xeon | 2 | 24 | none x 0"


def test_bundles_driver_first_then_one_per_actor_that_reserves_something():
    demand = ResourceDemand(
        1,
        (
            ActorDemand("env_runner", 3, 1.0, 0.0, "env runners"),
            ActorDemand("learner", 1, 0.0, 1.0, "learners"),
            ActorDemand("state_server", 1, 0.0, 0.0, "state servers"),
        ),
    )
    assert trial_bundles(demand) == (
        ("driver", 1.0, 0.0),
        ("env_runner", 1.0, 0.0),
        ("env_runner", 1.0, 0.0),
        ("env_runner", 1.0, 0.0),
        ("learner", 0.0, 1.0),
    )
    # a driver that reserves nothing still needs a bundle: Ray refuses one of zeros
    assert trial_bundles(ResourceDemand(0)) == (("driver", MIN_DRIVER_CPUS, 0.0),)
    assert trial_bundles(ResourceDemand(0, driver_gpus=1.0)) == (("driver", 0.0, 1.0),)


def test_pack_uses_the_fewest_nodes_in_the_given_order():
    three = [("driver", 1.0, 0.0), ("env_runner", 1.0, 0.0), ("env_runner", 1.0, 0.0)]
    # 3 CPUs on 2-CPU nodes: two nodes, the first two given, the first filled first
    assert pack(three, rooms(2, 2, 2)) == ["a0", "a0", "a1"]
    assert pack(three[:2], rooms(2, 2, 2)) == ["a0", "a0"]
    assert pack(three, rooms(4)) == ["a0", "a0", "a0"]
    assert pack(three, rooms(1, 1)) is None  # 3 CPUs, 2 there
    # a node with nothing to give (a head with 0 CPUs) is passed over, not counted
    assert pack(three[:2], rooms(0, 2)) == ["a1", "a1"]
    # GPUs first: the GPU bundle takes the GPU node even though it comes second
    mixed = [NodeRoom("c", "t", 2, 0), NodeRoom("g", "t", 2, 1)]
    assert pack([("driver", 1.0, 0.0), ("learner", 0.0, 1.0)], mixed) == ["c", "g"]


def test_placement_names_its_nodes_and_their_resources():
    found = placement([("driver", 1.0, 0.0), ("env_runner", 1.0, 0.0), ("env_runner", 1.0, 0.0)], rooms(2, 2, 2))
    assert found.node_ids == ["a0", "a1"] and found.node_type == "a"
    assert [b.node_id for b in found.bundles] == ["a0", "a0", "a1"] and found.bundles[0].role == "driver"
    assert found.node_cpus == 4.0 and found.node_gpus == 0.0


def test_largest_node_set_and_the_skip_reason():
    nodes = rooms(2, 2) + rooms(8, kind="b")
    # 5 CPUs fit type b's one 8-CPU node, not type a's two 2-CPU nodes together: never split across types
    five = [("driver", 1.0, 0.0)] + [("env_runner", 1.0, 0.0)] * 4
    assert largest_node_set(five, nodes).node_type == "b"
    assert node_set_skip_reason(five, nodes, "4 env runners x 1 CPU") is None
    nine = [("driver", 1.0, 0.0)] + [("env_runner", 1.0, 0.0)] * 8
    reason = node_set_skip_reason(nine, nodes, "8 env runners x 1 CPU")
    assert reason.startswith("needs 9 CPUs and 0 GPUs (driver 1 CPU + 8 env runners x 1 CPU) on nodes of one type")
    assert "2 nodes of type a with 4 CPUs and 0 GPUs; 1 node of type b with 8 CPUs" in reason
