"""Spec stage: parsing, aliases, learner_gpus, grid expansion, and every user error's message.

Fixtures are inline YAML. Every ``BASE``-derived file has the same first five lines, so line
numbers in the expected messages can be counted by hand: appended keys start at line 6.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rlbench.spec.load import load_spec
from rlbench.spec.model import ALIASES, KNOB_SECTION, LoadedSpec, SpecError

BASE = """\
name: t
environment:
  env: envs.tiny:TinyEnv
stop:
  iterations: 3
"""

#: A valid value for every alias target (so each old name can be loaded).
KNOB_VALUES = {
    "num_env_runners": 2,
    "num_cpus_for_main_process": 2,
    "num_envs_per_env_runner": 3,
    "num_cpus_per_env_runner": 2.5,
    "num_gpus_per_env_runner": 0.5,
    "minibatch_size": 32,
    "num_epochs": 4,
    "train_batch_size_per_learner": 512,
    "learner_gpus": 0.5,
    "max_requests_in_flight_per_aggregator_actor": 2,
}

#: Knobs only some algorithms take: the algorithm their alias tests run (a top-level key appended
#: last, so the line numbers the messages are checked against do not move).
ALGO_OF = {"max_requests_in_flight_per_aggregator_actor": "IMPALA"}


def tail(new: str) -> str:
    return f"algo: {ALGO_OF[new]}\n" if new in ALGO_OF else ""


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "spec.yaml"
    path.write_text(text)
    return path


def load(tmp_path: Path, text: str, **kwargs) -> LoadedSpec:
    return load_spec(write(tmp_path, text), **kwargs)


def error(tmp_path: Path, text: str, **kwargs) -> str:
    """The SpecError message loading ``text`` gives (fails the test if it loads)."""
    with pytest.raises(SpecError) as info:
        load(tmp_path, text, **kwargs)
    return str(info.value)


def where(tmp_path: Path, line: int | None = None) -> str:
    """The ``file:line`` prefix of a message about spec.yaml."""
    path = tmp_path / "spec.yaml"
    return f"{path}:{line}" if line else f"{path}"


# ---------------------------------------------------------------------------------------------
# Parsing


def test_minimal_spec_defaults(tmp_path):
    loaded = load(tmp_path, BASE)
    spec = loaded.spec
    assert spec.name == "t"
    assert spec.environment.env == "envs.tiny:TinyEnv"
    assert spec.stop.iterations == 3 and spec.stop.seconds is None
    assert spec.repeats == 1
    assert spec.warmup_iterations == 1
    assert loaded.alias_notes == []
    assert len(loaded.points) == 1
    point = loaded.points[0]
    assert point.axes == {}
    assert point.config.env_runners.num_env_runners == 1
    assert point.config.learners.num_learners == 0
    assert point.config.learners.num_cpus_per_learner == 1.0  # "auto" without a GPU
    assert point.config.cpus is None


def test_smoke_config_loads():
    loaded = load_spec(Path(__file__).resolve().parents[2] / "configs" / "smoke.yaml")
    assert [p.axes for p in loaded.points] == [
        {"num_env_runners": 0, "num_envs_per_env_runner": 1},
        {"num_env_runners": 0, "num_envs_per_env_runner": 2},
        {"num_env_runners": 1, "num_envs_per_env_runner": 1},
        {"num_env_runners": 1, "num_envs_per_env_runner": 2},
    ]
    assert all(p.config.cpus == 2 for p in loaded.points)


def test_an_autoconfig_section_says_which_command_reads_it(tmp_path):
    with pytest.raises(
        SpecError, match=r"autoconfig: this section is read by `rlbench autoconfig .* remove the section"
    ):
        load(tmp_path, BASE + "autoconfig:\n  trial_s: 5\n")


def test_training_lambda_key(tmp_path):
    loaded = load(tmp_path, BASE + "training:\n  lambda: 0.9\n  lr: 0.001\n")
    assert loaded.points[0].config.training.lambda_ == 0.9
    assert loaded.points[0].config.training.lr == 0.001


def test_repeats(tmp_path):
    assert load(tmp_path, BASE + "repeats: 3\n").spec.repeats == 3


# ---------------------------------------------------------------------------------------------
# Aliases


def test_every_alias_has_a_test_value():
    assert set(ALIASES.values()) == set(KNOB_VALUES)


@pytest.mark.parametrize("old", sorted(ALIASES))
def test_alias_in_its_section(tmp_path, old):
    new = ALIASES[old]
    section = KNOB_SECTION[new]
    value = KNOB_VALUES[new]
    loaded = load(tmp_path, BASE + f"{section}:\n  {old}: {value}\n" + tail(new))
    assert getattr(getattr(loaded.points[0].config, section), new) == value
    assert getattr(getattr(loaded.spec, section), new) == value
    assert loaded.alias_notes == [f"{old} -> {new}  (first at {section}.{old})"]


@pytest.mark.parametrize("old", sorted(ALIASES))
def test_alias_as_grid_axis(tmp_path, old):
    new = ALIASES[old]
    section = KNOB_SECTION[new]
    value = KNOB_VALUES[new]
    loaded = load(tmp_path, BASE + f"grid:\n  {old}: [{value}]\n" + tail(new))
    assert [p.axes for p in loaded.points] == [{new: value}]
    assert getattr(getattr(loaded.points[0].config, section), new) == value
    assert loaded.alias_notes == [f"{old} -> {new}  (first at grid.{old})"]


def test_alias_as_section_dot_knob_axis(tmp_path):
    loaded = load(tmp_path, BASE + "grid:\n  env_runners.num_workers: [2, 3]\n")
    assert [p.axes for p in loaded.points] == [{"num_env_runners": 2}, {"num_env_runners": 3}]
    assert [p.config.env_runners.num_env_runners for p in loaded.points] == [2, 3]
    assert loaded.alias_notes == [
        "env_runners.num_workers -> env_runners.num_env_runners  (first at grid.env_runners.num_workers)"
    ]


def test_alias_note_recorded_once_per_rename(tmp_path):
    loaded = load(tmp_path, BASE + "env_runners:\n  num_workers: 2\ngrid:\n  num_sgd_iter: [1, 2]\n")
    assert loaded.alias_notes == [
        "num_workers -> num_env_runners  (first at env_runners.num_workers)",
        "num_sgd_iter -> num_epochs  (first at grid.num_sgd_iter)",
    ]


@pytest.mark.parametrize("old", sorted(ALIASES))
def test_old_and_new_name_in_one_section(tmp_path, old):
    new = ALIASES[old]
    section = KNOB_SECTION[new]
    value = KNOB_VALUES[new]
    # line 6: section, 7: new name, 8: old name
    msg = error(tmp_path, BASE + f"{section}:\n  {new}: {value}\n  {old}: {value}\n" + tail(new))
    assert f"{where(tmp_path, 8)}: {section}.{old}: both '{old}' and its new name '{new}' are set: keep one" in msg


@pytest.mark.parametrize("old", sorted(ALIASES))
def test_old_name_in_section_new_name_in_grid(tmp_path, old):
    new = ALIASES[old]
    section = KNOB_SECTION[new]
    value = KNOB_VALUES[new]
    msg = error(tmp_path, BASE + f"{section}:\n  {old}: {value}\ngrid:\n  {new}: [{value}]\n" + tail(new))
    assert msg.startswith(f"{where(tmp_path, 7)}: {section}.{old}: old name '{old}' and new name '{new}'")
    assert f"(at grid.{new})" in msg


@pytest.mark.parametrize("old", sorted(ALIASES))
def test_new_name_in_section_old_name_in_grid(tmp_path, old):
    new = ALIASES[old]
    section = KNOB_SECTION[new]
    value = KNOB_VALUES[new]
    # line 6: section, 7: new name, 8: grid, 9: old-name axis
    msg = error(tmp_path, BASE + f"{section}:\n  {new}: {value}\ngrid:\n  {old}: [{value}]\n" + tail(new))
    assert msg.startswith(f"{where(tmp_path, 9)}: grid.{old}: old name '{old}' and new name '{new}'")
    assert f"(at {section}.{new})" in msg


def test_old_name_at_top_level_names_its_section(tmp_path):
    msg = error(tmp_path, BASE + "num_workers: 2\n")
    assert msg == (
        f"{where(tmp_path, 6)}: num_workers: unknown key 'num_workers'; 'num_workers' "
        "(old name of 'num_env_runners') belongs under 'env_runners:'"
    )


# ---------------------------------------------------------------------------------------------
# learner_gpus (old num_gpus)


@pytest.mark.parametrize("key", ["num_gpus", "learner_gpus"])
@pytest.mark.parametrize(
    ("gpus", "num_learners", "per_learner", "cpus_per_learner", "total"),
    [
        (0, 0, 0.0, 1.0, 0.0),
        (0.5, 0, 0.5, 0.0, 0.5),
        (1, 0, 1.0, 0.0, 1.0),
        (2, 2, 1.0, 0.0, 2.0),
    ],
)
def test_learner_gpus_mapping(tmp_path, key, gpus, num_learners, per_learner, cpus_per_learner, total):
    learners = load(tmp_path, BASE + f"learners:\n  {key}: {gpus}\n").points[0].config.learners
    assert learners.num_learners == num_learners
    assert learners.num_gpus_per_learner == per_learner
    assert learners.num_cpus_per_learner == cpus_per_learner
    assert learners.total_gpus == total


def test_learner_gpus_zero_keeps_explicit_num_learners(tmp_path):
    learners = load(tmp_path, BASE + "learners:\n  num_gpus: 0\n  num_learners: 2\n").points[0].config.learners
    assert (learners.num_learners, learners.num_gpus_per_learner, learners.total_gpus) == (2, 0.0, 0.0)


def test_learner_gpus_fraction_above_one(tmp_path):
    msg = error(tmp_path, BASE + "learners:\n  num_gpus: 1.5\n")
    assert msg == f"{where(tmp_path, 6)}: learners: learner_gpus=1.5: above 1 it must be a whole number of GPUs"


def test_learner_gpus_with_a_different_num_gpus_per_learner(tmp_path):
    msg = error(tmp_path, BASE + "learners:\n  num_gpus: 1\n  num_gpus_per_learner: 0.5\n")
    assert msg == (
        f"{where(tmp_path, 6)}: learners: learner_gpus=1 (old name num_gpus) means num_gpus_per_learner=1, "
        "but num_gpus_per_learner=0.5 is set too: keep one"
    )


@pytest.mark.parametrize("num_learners", [1, 2])
def test_learner_gpus_with_a_different_num_learners(tmp_path, num_learners):
    msg = error(tmp_path, BASE + f"learners:\n  num_gpus: 1\n  num_learners: {num_learners}\n")
    assert msg.startswith(
        f"{where(tmp_path, 6)}: learners: learner_gpus=1 (old name num_gpus) decides num_learners=0, "
        f"but num_learners={num_learners} is set too"
    )


@pytest.mark.parametrize(
    ("gpus", "num_learners", "per_learner"), [(0, 3, 0.0), (0.5, 0, 0.5), (1, 0, 1.0), (2, 2, 1.0)]
)
def test_learner_gpus_beside_the_values_it_resolves_to(tmp_path, gpus, num_learners, per_learner):
    """A plan.json holds learner_gpus and the pair it resolved to: agreeing values read back as the same section."""
    text = f"learners:\n  learner_gpus: {gpus}\n  num_learners: {num_learners}\n  num_gpus_per_learner: {per_learner}\n"
    learners = load(tmp_path, BASE + text).points[0].config.learners
    assert (learners.learner_gpus, learners.num_learners, learners.num_gpus_per_learner) == (
        gpus,
        num_learners,
        per_learner,
    )


def test_learner_gpus_conflict_reached_through_grid(tmp_path):
    msg = error(tmp_path, BASE + "learners:\n  num_learners: 1\ngrid:\n  num_gpus: [0, 1]\n")
    assert "learners: learner_gpus=1 (old name num_gpus) decides num_learners=0, but num_learners=1 is set too" in msg
    assert msg.endswith("[grid point learner_gpus=1]")


# ---------------------------------------------------------------------------------------------
# Grid expansion


def test_grid_cartesian_product_last_axis_fastest(tmp_path):
    loaded = load(tmp_path, BASE + "grid:\n  num_env_runners: [0, 1]\n  cpus: [2, 4, 8]\n")
    assert [(p.axes["num_env_runners"], p.axes["cpus"]) for p in loaded.points] == [
        (0, 2),
        (0, 4),
        (0, 8),
        (1, 2),
        (1, 4),
        (1, 8),
    ]
    assert [(p.config.env_runners.num_env_runners, p.config.cpus) for p in loaded.points] == [
        (0, 2),
        (0, 4),
        (0, 8),
        (1, 2),
        (1, 4),
        (1, 8),
    ]
    assert list(loaded.points[0].axes) == ["num_env_runners", "cpus"]


def test_grid_overrides_base_value(tmp_path):
    loaded = load(tmp_path, BASE + "cpus: 16\nenv_runners:\n  num_env_runners: 5\ngrid:\n  num_env_runners: [1]\n")
    config = loaded.points[0].config
    assert (config.env_runners.num_env_runners, config.cpus) == (1, 16)
    assert loaded.spec.env_runners.num_env_runners == 5


def test_grid_whole_env_config_is_a_json_column_and_replaces_the_base(tmp_path):
    text = """\
name: t
environment:
  env: envs.tiny:TinyEnv
  env_config: {episode_len: 20, obs_size: 2}
stop:
  iterations: 3
grid:
  env_config: [{episode_len: 5}, {obs_size: 3, episode_len: 9}]
"""
    loaded = load(tmp_path, text)
    assert [p.axes for p in loaded.points] == [
        {"env_config": '{"episode_len": 5}'},
        {"env_config": '{"episode_len": 9, "obs_size": 3}'},
    ]
    assert json.loads(loaded.points[1].axes["env_config"]) == {"episode_len": 9, "obs_size": 3}
    assert [p.config.environment.env_config for p in loaded.points] == [
        {"episode_len": 5},
        {"episode_len": 9, "obs_size": 3},
    ]


def test_grid_env_config_key_merges_into_base(tmp_path):
    text = BASE.replace("  env: envs.tiny:TinyEnv\n", "  env: envs.tiny:TinyEnv\n  env_config: {episode_len: 20}\n")
    loaded = load(tmp_path, text + "grid:\n  env_config.obs_size: [2, 8]\n")
    assert [p.axes for p in loaded.points] == [{"env_config.obs_size": 2}, {"env_config.obs_size": 8}]
    # each point gets its own copy: the first point's value does not leak into the second
    assert [p.config.environment.env_config for p in loaded.points] == [
        {"episode_len": 20, "obs_size": 2},
        {"episode_len": 20, "obs_size": 8},
    ]
    assert loaded.spec.environment.env_config == {"episode_len": 20}


def test_grid_env_config_key_without_base_env_config(tmp_path):
    loaded = load(tmp_path, BASE + "grid:\n  environment.env_config.episode_len: [7]\n")
    assert loaded.points[0].axes == {"env_config.episode_len": 7}
    assert loaded.points[0].config.environment.env_config == {"episode_len": 7}


def test_grid_list_value_is_json_column(tmp_path):
    loaded = load(tmp_path, BASE + "grid:\n  fcnet_hiddens: [[32], [64, 64]]\n")
    assert [p.axes for p in loaded.points] == [{"fcnet_hiddens": "[32]"}, {"fcnet_hiddens": "[64, 64]"}]
    assert loaded.points[1].config.rl_module.fcnet_hiddens == [64, 64]


def test_grid_section_dot_knob_and_bare_knob(tmp_path):
    loaded = load(tmp_path, BASE + "grid:\n  training.num_epochs: [1, 3]\n  lambda: [0.9]\n")
    assert [p.axes for p in loaded.points] == [
        {"num_epochs": 1, "lambda": 0.9},
        {"num_epochs": 3, "lambda": 0.9},
    ]
    assert [(p.config.training.num_epochs, p.config.training.lambda_) for p in loaded.points] == [(1, 0.9), (3, 0.9)]


def test_grid_env_axis(tmp_path):
    loaded = load(tmp_path, BASE + "grid:\n  env: [CartPole-v1, envs.tiny:TinyEnv]\n")
    assert [p.config.environment.env for p in loaded.points] == ["CartPole-v1", "envs.tiny:TinyEnv"]
    assert [p.axes for p in loaded.points] == [{"env": "CartPole-v1"}, {"env": "envs.tiny:TinyEnv"}]


# ---------------------------------------------------------------------------------------------
# Errors: file level


def test_yaml_syntax_error_gives_line_and_column(tmp_path):
    msg = error(tmp_path, "name: t\nenvironment:\n  env: CartPole-v1\n bad: 1\n")
    assert msg.startswith(f"{where(tmp_path)}:4:2: YAML syntax error:")


def test_missing_file(tmp_path):
    with pytest.raises(SpecError, match="no such file"):
        load_spec(tmp_path / "nope.yaml")


@pytest.mark.parametrize("text", ["", "# only a comment\n"])
def test_empty_file(tmp_path, text):
    assert error(tmp_path, text).startswith(f"{where(tmp_path)}: the file is empty")


@pytest.mark.parametrize("text", ["- a\n- b\n", "just a string\n"])
def test_top_level_not_a_mapping(tmp_path, text):
    assert error(tmp_path, text).startswith(f"{where(tmp_path)}: the top level must be a mapping")


# ---------------------------------------------------------------------------------------------
# Errors: keys


def test_unknown_key_in_section_suggests(tmp_path):
    msg = error(tmp_path, BASE + "env_runners:\n  num_env_runner: 2\n")
    assert msg == (
        f"{where(tmp_path, 7)}: env_runners.num_env_runner: unknown key 'num_env_runner'; "
        "did you mean 'num_env_runners'?"
    )


def test_unknown_key_in_stop_suggests(tmp_path):
    msg = error(tmp_path, BASE + "  secs: 4\n")  # continues the stop mapping at line 6
    assert msg == f"{where(tmp_path, 6)}: stop.secs: unknown key 'secs'; did you mean 'seconds'?"


def test_knob_at_top_level_names_its_section(tmp_path):
    msg = error(tmp_path, BASE + "num_env_runners: 2\n")
    assert msg == (
        f"{where(tmp_path, 6)}: num_env_runners: unknown key 'num_env_runners'; "
        "'num_env_runners' belongs under 'env_runners:'"
    )


def test_unknown_top_level_key_suggests(tmp_path):
    msg = error(tmp_path, BASE + "gird:\n  cpus: [1]\n")
    assert msg == f"{where(tmp_path, 6)}: gird: unknown key 'gird'; did you mean 'grid'?"


def test_missing_environment(tmp_path):
    msg = error(tmp_path, "name: t\nstop:\n  iterations: 3\n")
    assert msg == f"{where(tmp_path)}: environment: required key is missing"


# ---------------------------------------------------------------------------------------------
# Errors: grid


def test_unknown_grid_axis_suggests(tmp_path):
    msg = error(tmp_path, BASE + "grid:\n  num_env_runer: [1]\n")
    assert msg == (
        f"{where(tmp_path, 7)}: grid.num_env_runer: unknown key 'num_env_runer'; did you mean 'num_env_runners'?"
    )


def test_unknown_section_dot_knob_axis(tmp_path):
    msg = error(tmp_path, BASE + "grid:\n  training.num_epoch: [1]\n")
    assert msg.startswith(f"{where(tmp_path, 7)}: grid.training.num_epoch: unknown key 'training.num_epoch'")


def test_grid_axis_empty_list(tmp_path):
    msg = error(tmp_path, BASE + "grid:\n  cpus: [2]\n  num_env_runners: []\n")
    assert msg == (
        f"{where(tmp_path, 8)}: grid.num_env_runners: empty list: give at least one value, or remove the axis"
    )


def test_grid_axis_not_a_list(tmp_path):
    msg = error(tmp_path, BASE + "grid:\n  num_env_runners: 2\n")
    assert msg == f"{where(tmp_path, 7)}: grid.num_env_runners: must be a list of values, e.g. [1, 2, 4] (got 2)"


def test_grid_not_a_mapping(tmp_path):
    msg = error(tmp_path, BASE + "grid: [1, 2]\n")
    assert msg.startswith(f"{where(tmp_path)}: grid: must be a mapping")


def test_bad_grid_value_points_at_the_grid_line(tmp_path):
    # line 6: env_runners, 7: base value, 8: grid, 9: the axis holding the bad value
    msg = error(tmp_path, BASE + "env_runners:\n  num_env_runners: 1\ngrid:\n  num_env_runners: [1, -1]\n")
    assert msg == (
        f"{where(tmp_path, 9)}: env_runners.num_env_runners: Input should be greater than or equal "
        "to 0 (got -1)  [grid point num_env_runners=-1]"
    )


# ---------------------------------------------------------------------------------------------
# Errors: values


@pytest.mark.parametrize(
    ("extra", "line", "key_path", "fragment"),
    [
        (
            "env_runners:\n  num_env_runners: two\n",
            7,
            "env_runners.num_env_runners",
            "Input should be a valid integer, unable to parse string as an integer (got 'two')",
        ),
        (
            "env_runners:\n  num_env_runners: -1\n",
            7,
            "env_runners.num_env_runners",
            "Input should be greater than or equal to 0 (got -1)",
        ),
        (
            "env_runners:\n  num_cpus_per_env_runner: 0\n",
            7,
            "env_runners.num_cpus_per_env_runner",
            "Input should be greater than 0 (got 0)",
        ),
        (
            "resources:\n  num_cpus_for_main_process: -1\n",
            7,
            "resources.num_cpus_for_main_process",
            "Input should be greater than or equal to 0 (got -1)",
        ),
        ("training:\n  lr: -0.1\n", 7, "training.lr", "Input should be greater than 0 (got -0.1)"),
        ("training:\n  lambda: 2\n", 7, "training.lambda", "Input should be less than or equal to 1 (got 2)"),
        ("rl_module:\n  fcnet_activation: gelu\n", 7, "rl_module.fcnet_activation", "(got 'gelu')"),
        ("cpus: -2\n", 6, "cpus", "Input should be greater than or equal to 1 (got -2)"),
        ("cpus: 0\n", 6, "cpus", "Input should be greater than or equal to 1 (got 0)"),
        ("repeats: 0\n", 6, "repeats", "Input should be greater than or equal to 1 (got 0)"),
        ("warmup_iterations: -1\n", 6, "warmup_iterations", "Input should be greater than or equal to 0 (got -1)"),
        ("sample_hz: 0\n", 6, "sample_hz", "Input should be greater than or equal to 0.1 (got 0)"),
        ("profile_hz: -1\n", 6, "profile_hz", "Input should be greater than or equal to 0 (got -1)"),
        ("profile_hz: 5000\n", 6, "profile_hz", "Input should be less than or equal to 1000 (got 5000)"),
        ("profile_roles: [harness]\n", 6, "profile_roles.0", "(got 'harness')"),
        ("trial_timeout_s: -5\n", 6, "trial_timeout_s", "Input should be greater than 0 (got -5)"),
    ],
)
def test_bad_value(tmp_path, extra, line, key_path, fragment):
    msg = error(tmp_path, BASE + extra)
    assert msg.startswith(f"{where(tmp_path, line)}: {key_path}: ")
    assert fragment in msg


def test_bad_name(tmp_path):
    msg = error(tmp_path, BASE.replace("name: t", "name: 'a b'"))
    assert msg.startswith(f"{where(tmp_path, 1)}: name: String should match pattern")


def test_stop_missing(tmp_path):
    msg = error(tmp_path, "name: t\nenvironment:\n  env: envs.tiny:TinyEnv\n")
    assert msg == f"{where(tmp_path)}: stop: required key is missing"


def test_stop_empty(tmp_path):
    msg = error(tmp_path, "name: t\nenvironment:\n  env: envs.tiny:TinyEnv\nstop: {}\n")
    assert msg == f"{where(tmp_path, 4)}: stop: give stop.iterations, stop.seconds or both"


def test_stop_iterations_zero(tmp_path):
    msg = error(tmp_path, BASE.replace("iterations: 3", "iterations: 0"))
    assert msg.startswith(f"{where(tmp_path, 5)}: stop.iterations: Input should be greater than or equal to 1")


@pytest.mark.parametrize("warmup", [3, 4])
def test_stop_iterations_not_above_warmup(tmp_path, warmup):
    msg = error(tmp_path, BASE + f"warmup_iterations: {warmup}\n")
    assert msg == (
        f"{where(tmp_path, 5)}: stop.iterations: stop.iterations=3 leaves no steady-state iteration "
        f"after warmup_iterations={warmup}: raise stop.iterations"
    )


def test_stop_seconds_lifts_the_warmup_check(tmp_path):
    loaded = load(tmp_path, BASE + "  seconds: 30\nwarmup_iterations: 5\n")
    assert (loaded.spec.stop.iterations, loaded.spec.stop.seconds, loaded.spec.warmup_iterations) == (3, 30.0, 5)


def test_minibatch_larger_than_train_batch(tmp_path):
    # line 6: training, 7: train batch, 8: minibatch
    msg = error(tmp_path, BASE + "training:\n  train_batch_size_per_learner: 64\n  minibatch_size: 128\n")
    assert msg == (
        f"{where(tmp_path, 8)}: training.minibatch_size: training.minibatch_size=128 is larger than "
        "training.train_batch_size_per_learner=64"
    )


def test_minibatch_larger_than_train_batch_only_at_one_grid_point(tmp_path):
    msg = error(tmp_path, BASE + "training:\n  minibatch_size: 128\ngrid:\n  train_batch_size_per_learner: [256, 64]\n")
    assert msg == (
        f"{where(tmp_path, 7)}: training.minibatch_size: training.minibatch_size=128 is larger than "
        "training.train_batch_size_per_learner=64  [grid point train_batch_size_per_learner=64]"
    )


def test_minibatch_equal_to_train_batch_is_fine(tmp_path):
    loaded = load(tmp_path, BASE + "training:\n  train_batch_size_per_learner: 64\n  minibatch_size: 64\n")
    assert loaded.points[0].config.training.minibatch_size == 64


# ---------------------------------------------------------------------------------------------
# Environments


@pytest.mark.parametrize("env", ["envs.tiny:TinyEnv", "CartPole-v1"])
def test_valid_env(tmp_path, env):
    loaded = load(tmp_path, BASE.replace("envs.tiny:TinyEnv", env))
    assert loaded.points[0].config.environment.env == env


def test_env_module_not_importable(tmp_path):
    msg = error(tmp_path, BASE.replace("envs.tiny:TinyEnv", "envs.nope:TinyEnv"))
    assert msg.startswith(
        f"{where(tmp_path, 3)}: environment.env: env 'envs.nope:TinyEnv': cannot import module 'envs.nope'"
    )
    assert "PYTHONPATH" in msg


def test_env_module_that_raises_on_import(tmp_path, monkeypatch):
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "rlbench_test_broken_env.py").write_text("raise RuntimeError('boom')\n")
    monkeypatch.syspath_prepend(str(pkg))
    msg = error(tmp_path, BASE.replace("envs.tiny:TinyEnv", "rlbench_test_broken_env:Env"))
    assert msg == (
        f"{where(tmp_path, 3)}: environment.env: env 'rlbench_test_broken_env:Env': importing "
        "'rlbench_test_broken_env' raised RuntimeError: boom"
    )


def test_env_class_missing_suggests(tmp_path):
    msg = error(tmp_path, BASE.replace("envs.tiny:TinyEnv", "envs.tiny:TinyEnvv"))
    assert msg == (
        f"{where(tmp_path, 3)}: environment.env: env 'envs.tiny:TinyEnvv': module 'envs.tiny' has no "
        "'TinyEnvv'; did you mean 'envs.tiny:TinyEnv'?"
    )


def test_unknown_gymnasium_id_suggests(tmp_path):
    msg = error(tmp_path, BASE.replace("envs.tiny:TinyEnv", "CartPol-v1"))
    assert msg.startswith(
        f"{where(tmp_path, 3)}: environment.env: env 'CartPol-v1' is neither a registered "
        "gymnasium id nor an import path"
    )
    assert msg.endswith("did you mean 'CartPole-v1'?")


def test_bad_env_from_grid_points_at_the_grid_line(tmp_path):
    msg = error(tmp_path, BASE + "grid:\n  env: [CartPole-v1, CartPol-v1]\n")
    assert msg.startswith(f"{where(tmp_path, 7)}: environment.env: env 'CartPol-v1'")


def test_check_envs_false_skips_env_checks(tmp_path):
    loaded = load(tmp_path, BASE.replace("envs.tiny:TinyEnv", "no_such_pkg:Nope"), check_envs=False)
    assert loaded.points[0].config.environment.env == "no_such_pkg:Nope"


def test_seed_list_shorter_than_repeats_is_refused(tmp_path):
    msg = error(tmp_path, BASE + "repeats: 3\nseed: [1, 2]\n")
    assert "seed: seed lists 2 seeds but repeats=3" in msg


def test_unknown_stop_metric_suggests_and_lists_the_adapter_metrics(tmp_path):
    msg = error(tmp_path, BASE + "  episode_retrun_mean: 150\n")
    assert (
        msg == f"{where(tmp_path, 6)}: stop.episode_retrun_mean: unknown key 'episode_retrun_mean'; did you mean "
        "'episode_return_mean'?"
    )
    msg = error(tmp_path, BASE + "  reward: 150\n")
    assert "unknown key or result metric 'reward': stop takes iterations, seconds and one result metric" in msg
    assert "episode_return_mean" in msg and "env_runners/episode_return_mean" in msg


def test_stop_target_value_must_be_a_number_or_at_most(tmp_path):
    msg = error(tmp_path, BASE + "  vf_loss: {below: 1}\n")
    assert f"{where(tmp_path, 6)}: stop.vf_loss: give a number" in msg and "{at_most: X}" in msg
