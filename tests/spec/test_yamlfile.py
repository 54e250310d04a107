"""Hostile and odd spec files: each is refused with exit-2's message (file:line, key, fix) before
any value is built, the grid expanded or anything written."""

from __future__ import annotations

import pytest
import yaml

from rlbench.spec.limits import MAX_TRIALS
from rlbench.spec.load import load_spec
from rlbench.spec.model import SpecError
from rlbench.spec.yamlfile import MAX_DEPTH, MAX_EXPANDED_NODES, MAX_SPEC_BYTES

BASE = "name: x\nenvironment:\n  env: CartPole-v1\nstop: {iterations: 3}\n"
#: Ten levels of ten aliases: 10^10 values from ~400 bytes.
LAUGHS = "a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n" + "".join(
    f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 10)}]\n" for i in range(1, 10)
)


def error(tmp_path, text: str | bytes) -> str:
    path = tmp_path / "spec.yaml"
    path.write_bytes(text if isinstance(text, bytes) else text.encode())
    with pytest.raises(SpecError) as e:
        load_spec(path, check_envs=False)
    return str(e.value)


def test_billion_laughs_is_refused_before_any_value_is_built(tmp_path, monkeypatch):
    def never(*args, **kwargs):
        raise AssertionError("a value was built")

    monkeypatch.setattr(yaml.SafeLoader, "construct_document", never)
    msg = error(
        tmp_path,
        BASE
        + "environment:\n  env: CartPole-v1\n  env_config:\n"
        + "".join("    " + line for line in LAUGHS.splitlines(True)),
    )
    assert f"more than {MAX_EXPANDED_NODES:,} values" in msg and "spec.yaml:" in msg


def test_a_few_aliases_are_fine(tmp_path):
    path = tmp_path / "spec.yaml"
    path.write_text(
        "name: x\nenvironment: &e {env: CartPole-v1, env_config: {}}\nstop: {iterations: 3}\n"
        "grid:\n  env_config: [&c {a: 1}, *c]\n"
    )
    assert len(load_spec(path, check_envs=False).points) == 2


def test_an_alias_that_contains_itself(tmp_path):
    assert "refers to a mapping or list that contains it" in error(
        tmp_path, BASE + "grid:\n  env_config.x: &r [1, *r]\n"
    )


@pytest.mark.parametrize("depth", [MAX_DEPTH + 1, 5000])
def test_deep_nesting(tmp_path, depth):
    msg = error(
        tmp_path,
        BASE.replace("env: CartPole-v1", "env: CartPole-v1\n  env_config: {x: " + "[" * depth + "]" * depth + "}"),
    )
    assert f"nested more than {MAX_DEPTH} levels deep" in msg


@pytest.mark.parametrize(
    "value, kind", [("2020-01-01", "a date/timestamp"), ("!!binary aGk=", "binary"), ("!!set {a, b}", "a set")]
)
def test_yaml_only_values(tmp_path, value, kind):
    msg = error(tmp_path, BASE.replace("env: CartPole-v1", f"env: CartPole-v1\n  env_config: {{d: {value}}}"))
    assert "spec.yaml:4: environment.env_config.d: YAML reads this value as " + kind in msg and "quote it" in msg


def test_yaml_only_keys_and_impossible_dates(tmp_path):
    assert "binary" in error(
        tmp_path, BASE.replace("env: CartPole-v1", "env: CartPole-v1\n  env_config: {? !!binary aGk= : 1}")
    )
    assert "month must be in 1..12" in error(tmp_path, BASE + "seed: 2020-13-45\n")


def test_size_and_encoding(tmp_path):
    assert f"larger than {MAX_SPEC_BYTES // 1024} KiB" in error(tmp_path, BASE + "#" * MAX_SPEC_BYTES)
    assert "not UTF-8 text" in error(tmp_path, BASE.encode() + b"# \xff\xfe\n")
    assert "is a folder" in str(pytest.raises(SpecError, load_spec, tmp_path).value)


def test_trial_count_is_bounded_before_the_grid_is_expanded(tmp_path, monkeypatch):
    import rlbench.spec.load as load

    monkeypatch.setattr(load.itertools, "product", lambda *a: pytest.fail("the grid was expanded"))
    axes = "".join(f"  env_config.k{i}: [{', '.join(map(str, range(10)))}]\n" for i in range(12))
    msg = error(tmp_path, BASE + "grid:\n" + axes)
    assert f"1,000,000,000,000 trials, more than {MAX_TRIALS:,}" in msg and "spec.yaml:5: grid:" in msg
    msg = error(tmp_path, BASE + "repeats: 11\ngrid:\n  env_config.k: [" + ", ".join(map(str, range(1000))) + "]\n")
    assert "11,000 trials" in msg


@pytest.mark.parametrize(
    "extra, fragment",
    [
        ("stop: {seconds: .inf}\n", "stop.seconds: Input should be a finite number"),
        ("training: {lr: .nan}\n", "training.lr: Input should be a finite number"),
        ("trial_timeout_s: 1.0e+300\n", "trial_timeout_s: Input should be less than or equal to 2592000"),
        ("sample_hz: 1.0e-300\n", "sample_hz: Input should be greater than or equal to 0.1"),
        ("env_ceiling_s: .inf\n", "env_ceiling_s: Input should be a finite number"),
        ("cpus: " + "9" * 400 + "\n", "cpus: Input should be less than or equal to 100000"),
        ("env_runners: {num_cpus_per_env_runner: 1.0e+308}\n", "num_cpus_per_env_runner: Input should be less than"),
        ("learners: {num_cpus_per_learner: -1}\n", "num_cpus_per_learner"),
        ("env_runners: {rollout_fragment_length: 0}\n", "rollout_fragment_length"),
        ("seed: -1\n", "seed: seed -1 is out of range: seeds must be 0 to 2147483647"),
        ("seed: 4294967295\n", "seed: seed 4294967295 is out of range: seeds must be 0 to 2147483647"),
        ("repeats: 100000\n", "repeats: Input should be less than or equal to 1000"),
        ("trial_memory_limit_bytes: 1\n", "trial_memory_limit_bytes: Input should be greater than or equal to 1048576"),
    ],
)
def test_absurd_values(tmp_path, extra, fragment):
    msg = error(
        tmp_path,
        BASE.replace("stop: {iterations: 3}\n", "") + ("" if "stop:" in extra else "stop: {iterations: 3}\n") + extra,
    )
    assert fragment in msg and msg.startswith(str(tmp_path / "spec.yaml") + ":")
