"""A spec naming an env whose package is missing is refused at load with the extra that installs it (issue 37),
not by a traceback from inside a trial. The packages are installed here (the test extra holds the three extras),
so each test hides one the way a missing install looks: ``sys.modules[name] = None`` makes its import fail."""

from __future__ import annotations

import sys

import pytest

from rlbench.commands import main
from rlbench.commands.exit_codes import EXIT_BAD_INPUT
from rlbench.spec.envcheck import check_env


def _hide(monkeypatch, missing: str, *loaded_prefixes: str) -> None:
    """Make ``import missing`` fail, and forget the modules that imported it already (so they import again)."""
    for name in list(sys.modules):
        if name == missing or name.startswith(loaded_prefixes or (missing,)):
            monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, missing, None)


@pytest.mark.parametrize(
    "env, missing, loaded, extra",
    [
        ("HalfCheetah-v5", "mujoco", ("mujoco", "gymnasium.envs.mujoco"), "mujoco"),
        ("LunarLander-v3", "Box2D", ("Box2D", "gymnasium.envs.box2d"), "box2d"),
        ("ale_py:ALE/Pong-v5", "ale_py", ("ale_py",), "atari"),
        ("envs.atari:AtariEnv", "ale_py", ("ale_py", "envs.atari"), "atari"),
    ],
)
def test_a_missing_package_names_its_extra(monkeypatch, env, missing, loaded, extra):
    _hide(monkeypatch, missing, *loaded)
    with pytest.raises(ValueError) as e:
        check_env(env)
    assert str(e.value).startswith(
        f"env '{env}' needs the [{extra}] extra, which is not installed: pip install -e \".[{extra}]\""
    )


def test_an_installed_family_passes_and_an_ale_id_needs_its_module():
    for env in ("HalfCheetah-v5", "LunarLander-v3", "ale_py:ALE/Pong-v5", "envs.atari:AtariEnv", "Pendulum-v1"):
        check_env(env)
    with pytest.raises(ValueError, match="name it 'ale_py:ALE/Pong-v5'"):
        check_env("ALE/Pong-v5")  # a fresh env runner has not imported ale_py: gymnasium.make would fail there


def test_the_sweep_refuses_it_before_any_trial(monkeypatch, tmp_path, capsys):
    _hide(monkeypatch, "mujoco", "mujoco", "gymnasium.envs.mujoco")
    spec = tmp_path / "spec.yaml"
    spec.write_text("name: s\nalgo: SAC\nenvironment:\n  env: HalfCheetah-v5\nstop: {iterations: 2}\n")
    out = tmp_path / "out"
    assert main(["sweep", str(spec), "--out", str(out)]) == EXIT_BAD_INPUT
    captured = capsys.readouterr()
    text = " ".join((captured.err + captured.out).split())
    assert "needs the [mujoco] extra" in text and 'pip install -e ".[mujoco]"' in text
    assert not out.exists()


def test_a_sweep_of_a_framework_whose_extra_is_missing_is_refused_before_anything_runs(monkeypatch, tmp_path, capsys):
    """Issue 51: without the [sb3] extra, ``rlbench sweep configs/rllib_vs_sb3.yaml`` ran six RLlib trials (46 s)
    and then failed its SB3 trial with ``ModuleNotFoundError: No module named 'stable_baselines3'``."""
    from conftest import REPO

    _hide(monkeypatch, "stable_baselines3", "stable_baselines3", "rlbench.adapters.sb3.trainer")
    out = tmp_path / "out"
    assert main(["sweep", str(REPO / "configs" / "rllib_vs_sb3.yaml"), "--out", str(out)]) == EXIT_BAD_INPUT
    text = " ".join((lambda c: c.err + c.out)(capsys.readouterr()).split())
    assert "framework 'sb3' needs the [sb3] extra, which is not installed" in text, text
    assert 'pip install -e ".[sb3]"' in text and "no module named 'stable_baselines3'" in text
    assert not out.exists()


def test_the_framework_check_names_only_what_is_missing(monkeypatch):
    from rlbench.spec.envcheck import framework_problem

    assert framework_problem("sb3") is None and framework_problem("rllib") is None  # installed here
    monkeypatch.setitem(sys.modules, "setproctitle", None)
    why = framework_problem("sb3")
    assert why is not None and "no module named 'setproctitle'" in why and "stable_baselines3" not in why
    assert framework_problem("plain") is None  # no extra


def test_check_configs_reports_a_config_that_needs_an_extra_apart_from_one_that_fails(monkeypatch, tmp_path):
    """scripts/check_configs.py: a config refused for an extra this install lacks is not a broken config."""
    import importlib.util
    import os

    from conftest import REPO

    spec = importlib.util.spec_from_file_location("check_configs", REPO / "scripts" / "check_configs.py")
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    hide = tmp_path / "hide"
    hide.mkdir()
    (hide / "sitecustomize.py").write_text("import sys\nsys.modules['stable_baselines3'] = None\n")
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(hide), str(REPO), os.environ.get("PYTHONPATH", "")]))
    status, line = script.check(REPO / "configs" / "rllib_vs_sb3.yaml", tmp_path / "out", 120)
    assert status == "extra", line
    assert line == (
        'configs/rllib_vs_sb3.yaml: needs the [sb3] extra, not installed here: pip install -e ".[sb3]" '
        '(or pip install "rlbench[sb3]")'
    )
