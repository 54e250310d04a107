"""The --parallel scheduler's choices on hand-made clusters (the same function the simulation replays)."""

from __future__ import annotations

from rlbench.planning.placement import NodeRoom
from rlbench.run.schedule import NodeHistory, Waiting, choose

ONE = (("driver", 1.0, 0.0), ("env_runner", 1.0, 0.0))  # fits one 2-CPU node
TWO = ONE + (("env_runner", 1.0, 0.0),)  # needs two


def nodes(n: int, kind: str = "a", cpus: float = 2.0) -> list[NodeRoom]:
    return [NodeRoom(f"{kind}{i}", kind, cpus, 0.0) for i in range(n)]


def waiting(*specs: tuple[str, str, tuple]) -> list[Waiting]:
    return [Waiting(t, c, b) for t, c, b in specs]


def test_disjoint_nodes_in_plan_order_up_to_the_room():
    w = waiting(("t0", "c0", ONE), ("t1", "c1", ONE), ("t2", "c2", ONE))
    got = choose(w, nodes(2), NodeHistory(), room=None)
    assert [(t.trial_id, p.node_ids) for t, p in got] == [("t0", ["a0"]), ("t1", ["a1"])]
    assert [t.trial_id for t, _ in choose(w, nodes(3), NodeHistory(), room=1)] == ["t0"]
    assert choose(w, [], NodeHistory(), room=None) == []


def test_a_trial_that_does_not_fit_now_lets_the_next_one_go_first():
    w = waiting(("big", "c0", TWO), ("small", "c1", ONE))
    got = choose(w, nodes(1), NodeHistory(), room=None)
    assert [(t.trial_id, p.node_ids) for t, p in got] == [("small", ["a0"])]
    got = choose(w, nodes(3), NodeHistory(), room=None)
    assert [(t.trial_id, p.node_ids) for t, p in got] == [("big", ["a0", "a1"]), ("small", ["a2"])]


def test_repeats_rotate_over_nodes():
    history = NodeHistory()
    free = nodes(3)
    ran = []
    for repeat in range(3):  # one repeat at a time, all nodes free each time: a different node each repeat
        ((trial, where),) = choose(waiting((f"t0r{repeat}", "c0", ONE)), free, history, room=1)
        history.add(trial.config, where)
        ran.append(where.node_ids[0])
    assert ran == ["a0", "a1", "a2"]
    # another configuration starts from the node the sweep used least, then its own least-used
    history.add("c0", choose(waiting(("t0r3", "c0", ONE)), free, history, room=1)[0][1])  # a0 again: 2 trials
    ((_, where),) = choose(waiting(("t1r0", "c1", ONE)), free, history, room=1)
    assert where.node_ids == ["a1"]


def test_repeats_prefer_the_type_they_ran_on():
    free = nodes(2, "a") + nodes(2, "b")
    history = NodeHistory()
    ((_, first),) = choose(waiting(("t0r0", "c0", ONE)), free, history, room=1)
    assert first.node_type == "a"  # no history: types by name
    history.add("c0", first)
    history.add("c1", choose(waiting(("x", "c1", ONE)), nodes(1, "b"), NodeHistory(), room=1)[0][1])
    ((_, again),) = choose(waiting(("t0r1", "c0", ONE)), free, history, room=1)
    assert again.node_type == "a" and again.node_ids == ["a1"]
    ((_, other),) = choose(waiting(("t1r1", "c1", ONE)), free, history, room=1)
    assert other.node_type == "b" and other.node_ids == ["b1"]  # b0 ran it once already
    # when its type has no free node, it takes another type rather than wait
    ((_, moved),) = choose(waiting(("t0r2", "c0", ONE)), nodes(1, "b"), history, room=1)
    assert moved.node_type == "b"


def test_choose_leaves_the_history_alone():
    history = NodeHistory()
    choose(waiting(("t0", "c0", ONE), ("t1", "c0", ONE)), nodes(2), history, room=None)
    assert history.total == {} and history.by_config == {}
