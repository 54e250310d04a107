"""The compatibility seam (rlbench/adapters/rllib/compat.py) on real result dicts of each release family, recorded once
by scripts/record_rllib_results.py (CartPole PPO and APPO, the driver's own env runner and learner, the third
iteration; tests/adapters/fixtures/rllib_results/). No Ray runs here.

The known answer that tells a per-iteration value from a lifetime one: at the third iteration, a lifetime sum is
about three iterations' worth. So every family's rlbench sums must equal what RLlib itself counts for that one
iteration (the env steps its env runners sampled), and PPO's learner must have made exactly one update."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import pytest

from rlbench.adapters.rllib import SUPPORTED_RAY, compat
from rlbench.adapters.rllib.results import iteration_timings

FIXTURES = Path(__file__).parent / "fixtures" / "rllib_results"
RECORDED = sorted(FIXTURES.glob("*.json"))


def load(path: Path) -> dict:
    return json.loads(path.read_text())


def algo_of(body: dict) -> SimpleNamespace:
    """What iteration_timings asks of the algorithm: the env-connector sync it peeks, and two config values."""
    peek = body["sync_connectors_peek"]
    return SimpleNamespace(
        metrics=SimpleNamespace(peek=lambda key, default=0.0: default if peek is None else peek),
        config=SimpleNamespace(num_env_runners=body["num_env_runners"], num_learners=body["num_learners"]),
    )


def test_every_family_is_recorded():
    families = {compat.path(compat.Seam.VALUES, compat.parse_release(load(p)["release"])).since for p in RECORDED}
    batch_paths = {
        compat.path(compat.Seam.BATCH_BUILD, compat.parse_release(load(p)["release"])).since for p in RECORDED
    }
    assert families == {compat.OLDEST, compat.STATS_CLASSES}
    assert batch_paths == {compat.OLDEST, compat.PIPELINE_TIMER}
    assert {load(p)["release"] for p in RECORDED} >= {"2.40.0", "2.41.0", "2.44.1", "2.53.0", "2.60.0"}


@pytest.mark.parametrize("path", RECORDED, ids=[p.stem for p in RECORDED])
def test_the_table_names_the_paths_each_release_reported(path):
    body = load(path)
    assert compat.paths_taken(compat.parse_release(body["release"])) == body["read_paths"]


@pytest.mark.parametrize("path", RECORDED, ids=[p.stem for p in RECORDED])
def test_each_figure_is_one_iterations_on_every_release(path):
    body = load(path)
    at, result = compat.parse_release(body["release"]), body["result"]
    got = iteration_timings(algo_of(body), result, asynchronous=body["algo"] == "APPO", at=at)
    sampled = result["env_runners"]["num_env_steps_sampled"]
    assert got["env_steps_sampled"] == sampled
    assert sum(r["env_steps"] for r in got["runners"]) == sampled  # a lifetime sum would be about 3x
    timers = result["timers"]
    assert got["sample_s"] == pytest.approx(
        (timers.get("env_runner_sampling_timer") or 0.0) + (timers.get("sample") or 0.0)
    )
    assert got["env_step_s"] + got["inference_s"] + got["sample_other_s"] == pytest.approx(got["sample_s"])
    assert 0 < got["env_step_s"] < got["sampler_busy_s"]
    if body["algo"] == "PPO":  # one training step, one learner update, one batch built per iteration
        assert got["learner_updates"] == 1 and got["learn_batches"] == 1 and got["training_steps"] == 1
        assert got["learn_batch_s"] + got["learn_update_s"] < got["learn_s"]
        assert got["learn_other_s"] == pytest.approx(got["learn_s"] - got["learn_batch_s"] - got["learn_update_s"])


@pytest.mark.parametrize("path", RECORDED, ids=[p.stem for p in RECORDED])
def test_rllibs_own_pipeline_timer_is_read_where_the_release_has_one(path):
    body = load(path)
    at, result = compat.parse_release(body["release"]), body["result"]
    got = iteration_timings(algo_of(body), result, asynchronous=body["algo"] == "APPO", at=at)
    key = compat.connector_timer_key(at)
    if key is None:  # 2.41-2.43 time the pipeline's pieces only
        assert got["learner_connector_s"] is None and got["sgd_s"] is None
        return
    node = result.get("learners")
    for part in key:
        node = node.get(part) if isinstance(node, dict) else None
    expected = (node or 0.0) * got["learn_batches"]
    assert got["learner_connector_s"] == pytest.approx(expected)
    if body["algo"] == "PPO":  # RLlib's pipeline runs inside what rlbench times as the batch build (2.40-2.43: the
        # same call, RLlib's timer around rlbench's: a few microseconds more)
        assert 0 < got["learner_connector_s"] <= got["learn_batch_s"] + 1e-3


def test_each_path_holds_over_a_contiguous_range_from_the_oldest_release():
    for what in dict.fromkeys(p.what for p in compat.PATHS):
        mine = sorted((p for p in compat.PATHS if p.what == what), key=lambda p: p.since)
        assert mine[0].since == compat.OLDEST and mine[-1].until is None
        assert all(a.until == b.since for a, b in zip(mine, mine[1:]))
    assert compat.parse_release(SUPPORTED_RAY) == compat.OLDEST


def test_a_release_older_than_the_seam_is_named_in_the_error():
    with pytest.raises(LookupError, match="2.39.0 has no 'build call' path: rlbench drives 2.40.0 and later"):
        compat.path(compat.Seam.BUILD, (2, 39, 0))


def test_release_ranges_read_as_words():
    words = {p.how: p.releases for p in compat.PATHS if p.what is compat.Seam.CONNECTOR_TIMER}
    assert list(words.values()) == ["2.40", "2.41-2.43", "2.44 on"]


def test_parse_release():
    assert compat.parse_release("2.52.1") == (2, 52, 1)
    assert compat.parse_release("3.0.0.dev0") == (3, 0, 0)
    assert compat.parse_release("2.60") == (2, 60, 0)
    assert compat.parse_release("2.53.0rc1") == (2, 53, 0)


def test_per_iteration_arguments_by_family():
    assert compat.per_iteration("sum", (2, 53, 0)) == {"reduce": "sum"}
    assert compat.per_iteration("sum", (2, 52, 1)) == {"reduce": "sum", "clear_on_reduce": True}
    assert compat.per_iteration("mean", (2, 40, 0)) == {
        "reduce": "mean",
        "window": compat.LEGACY_MEAN_WINDOW,
        "clear_on_reduce": True,
    }


class Recorder:
    """A metrics logger that notes how it was asked to register keys."""

    def __init__(self):
        self.calls: list[tuple[str, tuple, dict]] = []

    def log_value(self, key, value, **kwargs):
        self.calls.append(("log_value", key, {"value": value, **kwargs}))

    def log_time(self, key, **kwargs):
        self.calls.append(("log_time", key, kwargs))


def test_registration_by_family():
    legacy, classes = Recorder(), Recorder()
    for logger, at in ((legacy, (2, 44, 1)), (classes, (2, 60, 0))):
        compat.register(logger, ("timers", "x"), "sum", at)
        compat.register(logger, ("timers", "y"), "mean", at)
    assert legacy.calls == [
        ("log_value", ("timers", "x"), {"value": 0.0, "reduce": "sum", "clear_on_reduce": True}),
        ("log_time", ("timers", "y"), compat.per_iteration("mean", (2, 44, 1))),  # created empty: no value pushed
    ]
    assert classes.calls == [("log_value", ("timers", "x"), {"value": 0.0, "reduce": "sum"})]  # the class does y


CALLS = [("learners", {"num_learners": 0, "num_aggregator_actors_per_learner": 0}), ("training", {"lr": 0.1})]


def test_aggregator_keywords_go_where_each_release_takes_them():
    assert compat.builder_calls(CALLS, {}, (2, 60, 0)) == CALLS
    assert compat.builder_calls(CALLS, {}, (2, 41, 0)) == [
        ("learners", {"num_learners": 0}),
        ("training", {"lr": 0.1, "num_aggregator_actors_per_learner": 0}),
    ]
    defaults = {"num_aggregator_actors_per_learner": 0}
    assert compat.builder_calls(CALLS, defaults, (2, 40, 0)) == [("learners", {"num_learners": 0}), CALLS[1]]
    asked = [("learners", {"num_learners": 0, "num_aggregator_actors_per_learner": 2})]
    with pytest.raises(ValueError, match="needs RLlib 2.41 or later"):
        compat.builder_calls(asked, defaults, (2, 40, 0))
