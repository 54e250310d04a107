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
