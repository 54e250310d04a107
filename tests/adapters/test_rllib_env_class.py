"""The env field names code: only a gymnasium.Env subclass (or a registered id) is ever created.

``subprocess:Popen`` with ``env_config: {args: [touch, MARKER]}`` used to run that command in the
env-ceiling step (``Class(env_config)``); every path that creates an env now refuses it, and the
marker file shows nothing ran.
"""

from __future__ import annotations

import pytest
from conftest import REPO

from rlbench.adapters import get_adapter
from rlbench.adapters.rllib.config import env_class, resolve_env
from rlbench.commands import main
from rlbench.studies.envbench import measure_ceiling


@pytest.mark.parametrize("env", ["subprocess:Popen", "os:system", "builtins:eval", "os:sep"])
def test_only_env_classes_resolve(env):
    with pytest.raises(TypeError, match="not a gymnasium.Env subclass"):
        resolve_env(env)


def test_env_classes_and_ids_resolve():
    from envs.tiny import TinyEnv

    assert env_class("envs.tiny:TinyEnv") is TinyEnv and resolve_env("CartPole-v1") == "CartPole-v1"


@pytest.mark.parametrize("framework", ["rllib", "plain"])
def test_make_env_runs_nothing_else(tmp_path, framework):
    marker = tmp_path / "pwned"
    with pytest.raises(TypeError):
        get_adapter(framework).make_env("subprocess:Popen", {"args": ["touch", str(marker)]})
    with pytest.raises(RuntimeError, match="not a gymnasium.Env subclass"):  # the env-ceiling step
        measure_ceiling("subprocess:Popen", {"args": ["touch", str(marker)]}, seconds=0.1, warmup_s=0)
    assert not marker.exists()


def test_sweep_refuses_it_before_anything_runs(tmp_path, monkeypatch, capsys):
    marker = tmp_path / "pwned"
    spec = tmp_path / "spec.yaml"
    spec.write_text(
        f"name: x\nenvironment:\n  env: subprocess:Popen\n  env_config: {{args: [touch, {marker}]}}\n"
        "stop: {iterations: 3}\nenv_ceiling_s: 1\n"
    )
    monkeypatch.chdir(REPO)
    for extra in (["--dry-run"], []):
        assert main(["sweep", str(spec), "--out", str(tmp_path / "out"), *extra]) == 2
    out = capsys.readouterr().out
    assert "spec.yaml:3: environment.env: env 'subprocess:Popen' is a class, not a gymnasium.Env subclass" in out
    assert not marker.exists() and not (tmp_path / "out").exists()
