"""servebench's definitions: the schedule's rotation, the flags' checks, process roles, the servers' request
handling (hostile bodies included) and the bytes a Ray call moves. Nothing here starts Ray."""

from __future__ import annotations

import collections
import json

import numpy as np
import pytest

from rlbench.studies.serve_clients import pickled_bytes
from rlbench.studies.serve_policies import BadRequest, PolicyBook, act_in_groups, route
from rlbench.studies.servebench import PATH_SERVER, PATHS, ServebenchConfig, ServeRoles, cell_seed, schedule


def test_every_path_takes_every_position_alike_over_as_many_repeats_as_paths():
    config = ServebenchConfig(
        paths=("inprocess", "actor", "rest_json"), batches=(1, 64), inputs=(16,), clients=(1,), repeats=3
    )
    slots = schedule(config)
    assert len(slots) == 3 * 2 * 3
    positions = collections.Counter((s.path, s.position) for s in slots)
    assert set(positions.values()) == {2}  # each (path, position) once per cell (2 cells)
    first = [s.path for s in slots if s.position == 0 and s.batch == 1]
    assert first == ["inprocess", "actor", "rest_json"]  # repeat r starts at path r


def test_the_default_grid_and_its_servers():
    config = ServebenchConfig()
    assert len(schedule(config)) == len(PATHS) * 4 * 3 * 2 * 3
    assert config.servers() == ["actor", "serve", "rest"]
    assert ServebenchConfig(paths=("inprocess", "rest_bytes")).servers() == ["rest"]
    assert set(PATH_SERVER) == set(PATHS)


def test_bad_flags_are_named():
    problems = ServebenchConfig(
        paths=("actor", "grpc"), inputs=(16, 5), batches=(0,), seconds=0.0, repeats=0, in_flight=0
    ).problems()
    text = " ".join(problems)
    for flag in ("--paths: unknown grpc", "--inputs", "--batches", "--seconds", "--repeats", "--in-flight"):
        assert flag in text
    assert "--max-run-s" in " ".join(ServebenchConfig(seconds=2.0, max_run_s=1.0).problems())
    assert ServebenchConfig().problems() == []


def test_a_cells_states_are_the_same_for_every_path_and_repeat():
    config = ServebenchConfig(seed=3)
    assert cell_seed(config, 64, 4096) == cell_seed(config, 64, 4096)
    assert cell_seed(config, 64, 4096) != cell_seed(config, 8, 4096) != cell_seed(ServebenchConfig(seed=4), 8, 4096)


@pytest.mark.parametrize(
    "cmdline, driver, role",
    [
        (["ray::ServebenchClient.run"], False, "client"),
        (["ray::ServebenchPolicyActor"], False, "server"),
        (["ray::ServeReplica:servebench:ServebenchPolicy"], False, "server"),
        (["ray::ProxyActor"], False, "proxy"),
        (["ray::ServeController.listen_for_change"], False, "controller"),
        (["/venv/bin/python", "-m", "rlbench.studies.serve_rest", "--fd", "5"], False, "server"),
        (["/venv/lib/python3.11/site-packages/ray/core/src/ray/raylet/raylet", "--x"], False, "ray_system"),
        (["ray::DashboardAgent"], False, "ray_system"),
        (["ray::IDLE"], False, "ray_system"),  # a pooled worker, read again until it becomes an actor
        (["ray::SomeoneElsesActor"], False, "other"),  # an actor no rule names: other, with why
        (["python", "-m", "rlbench", "servebench"], True, "driver"),
    ],
)
def test_process_roles(cmdline, driver, role):
    assert ServeRoles().classify_process(cmdline, is_driver=driver).name == role


class Policy:
    """Action = 1 where the state's first float is positive: a known answer per state."""

    def __init__(self, n: int):
        self.input_floats = n

    def act(self, states):
        return (states[:, 0] > 0).astype(np.int64)


def book(**models: int) -> PolicyBook:
    b = PolicyBook.__new__(PolicyBook)  # the adapter's loading left out: the handlers are what is tested
    b.policies = {name: Policy(n) for name, n in models.items()}
    return b


def test_the_servers_answer_both_formats_alike():
    b = book(cartpole=4)
    states = np.array([[1, 0, 0, 0], [-1, 0, 0, 0], [0.5, 0, 0, 0]], np.float32)
    body, media = b.answer_http("json", "cartpole", json.dumps({"observation": states.tolist()}).encode())
    assert json.loads(body) == {"action": [1, 0, 1]} and media == "application/json"
    raw, media = b.answer_http("bytes", "cartpole", states.tobytes())
    assert np.frombuffer(raw, np.int64).tolist() == [1, 0, 1] and media == "application/octet-stream"


@pytest.mark.parametrize(
    "fmt, body",
    [
        ("bytes", b"\x00" * 15),  # not whole states
        ("bytes", b""),
        ("json", b'{"observation": [[1, 2]]}'),  # wrong state size
        ("json", b"<script>alert(1)</script>"),  # not JSON
        ("json", b'{"observation": "__import__(\'os\')"}'),  # text, never evaluated
        ("json", b"[1, 2, 3]"),
    ],
)
def test_a_bad_body_is_refused_with_a_reason(fmt, body):
    with pytest.raises(BadRequest):
        book(cartpole=4).answer_http(fmt, "cartpole", body)


def test_routes_and_unknown_models():
    assert route("/servebench/json/cartpole") == ("json", "cartpole")
    assert route("/bytes/fc") == ("bytes", "fc")
    for bad in ("/", "/servebench", "/evil/../cartpole", "/grpc/cartpole"):
        with pytest.raises(BadRequest):
            route(bad)
    with pytest.raises(BadRequest, match="unknown model"):
        book(cartpole=4).answer_http("bytes", "x" * 1000, b"\x00" * 16)


def test_batched_requests_are_answered_in_their_order_from_one_forward_per_model():
    b = book(a=2, b=3)
    items = [
        ("a", np.array([[1, 0], [-1, 0]], np.float32)),
        ("b", np.array([[-1, 0, 0]], np.float32)),
        ("a", np.array([[2, 0]], np.float32)),
    ]
    out = act_in_groups(b, items)
    assert [x.tolist() for x in out] == [[1, 0], [0], [1]]


def test_pickled_bytes_count_a_ray_calls_arrays_out_of_band():
    states = np.zeros((64, 1024), np.float32)
    size = pickled_bytes(states)
    assert states.nbytes < size < states.nbytes + 400  # the buffer plus a small header
