"""A Python environment per package set (rlbench.run.envs), with no network: the packages are wheels
written by the test in two versions, installed from a local folder."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pandas as pd
import pytest
from conftest import run_cli
from wheels import write_wheel

from rlbench.run import envs
from rlbench.run.envs import EnvError, ensure_env, env_key, find_uv, source_root
from rlbench.worker.versions import imported_versions, mismatches


def wheel(folder: Path, version: str) -> Path:
    """A pure-Python wheel of the distribution ``rlbench-probe`` (module ``rlbench_probe``) at ``version``."""
    return write_wheel(folder, "rlbench-probe", version, {"rlbench_probe/__init__.py": f'__version__ = "{version}"\n'})


@pytest.fixture(scope="module")
def wheels(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("wheels")
    for version in ("1.0", "2.0"):
        wheel(folder, version)
    return folder


def test_uv_is_installed_with_the_test_extras():
    # the test extras install uv, so both installers below are real; a missing uv must fail here, loudly
    assert find_uv() is not None


@pytest.mark.parametrize("installer", ["uv", "pip"])
def test_a_release_gets_what_it_requires_and_the_sweep_lacks_and_nothing_the_sweep_has(tmp_path, installer):
    # rlbench-probe 3.0 requires a package this Python lacks, and pyyaml, which it has: only the first is installed
    folder = tmp_path / "wheels"
    write_wheel(folder, "rlbench-dep", "1.0", {"rlbench_dep/__init__.py": "X = 1\n"})
    write_wheel(folder, "rlbench-probe", "3.0", {"rlbench_probe/__init__.py": ""}, ("rlbench-dep==1.0", "pyyaml"))
    python = ensure_env({"rlbench-probe": "3.0"}, str(folder), cache=tmp_path / "envs", installer=installer)
    record = json.loads((python.parent.parent / "rlbench-env.json").read_text())
    assert record["needed"] == [{"requirement": "rlbench-dep==1.0", "sweep_version": None}]
    assert record["constrained"] is True and record["added"] == {"rlbench-dep": "1.0"}
    subprocess.run([str(python), "-c", "import rlbench_dep, rlbench_probe, yaml"], check=True, cwd=tmp_path)


@pytest.mark.parametrize("installer", ["uv", "pip"])
def test_an_environment_holds_its_pins_over_this_rlbench_and_is_made_once(wheels, tmp_path, installer):
    python = ensure_env({"rlbench-probe": "1.0"}, str(wheels), cache=tmp_path, installer=installer)
    assert python.parent.parent.name == env_key({"rlbench-probe": "1.0"}, str(wheels))
    got = subprocess.run(
        [
            str(python),
            "-c",
            "import json, rlbench, rlbench_probe, pydantic; "
            "print(json.dumps([rlbench.__file__, rlbench_probe.__version__]))",
        ],
        capture_output=True,
        text=True,
        check=True,
        cwd=tmp_path,
    )
    rlbench_file, probe = json.loads(got.stdout)
    assert probe == "1.0" and Path(rlbench_file).parent.parent == source_root()  # this rlbench, not another
    marker = python.parent.parent / "rlbench-env.json"
    assert json.loads(marker.read_text())["installer"].startswith(f"{installer} ")  # e.g. "uv 0.13.9 (...)", "pip 26.3"
    made = marker.stat().st_mtime_ns
    assert ensure_env({"rlbench-probe": "1.0"}, str(wheels), cache=tmp_path, installer=installer) == python
    assert marker.stat().st_mtime_ns == made  # cached: not made again
    other = ensure_env({"rlbench-probe": "2.0"}, str(wheels), cache=tmp_path, installer=installer)
    assert other != python  # keyed by the pins
    assert len([p for p in tmp_path.iterdir() if not p.name.startswith(".")]) == 2


@pytest.mark.parametrize("installer", ["uv", "pip"])
def test_a_version_the_index_lacks_is_an_error_in_the_installers_words(wheels, tmp_path, installer):
    with pytest.raises(EnvError) as e:
        ensure_env({"rlbench-probe": "3.0"}, str(wheels), cache=tmp_path, installer=installer)
    command = "uv pip install" if installer == "uv" else "pip install"
    assert str(e.value).startswith(f"{command} rlbench-probe==3.0 failed: ")
    assert "3.0" in str(e.value).split("failed: ", 1)[1]  # pip's own message names what it could not find
    assert list(tmp_path.iterdir()) == []  # nothing half-made is left to be taken for an environment


def test_uv_asked_for_but_missing_is_an_error_and_auto_falls_back_to_pip(wheels, tmp_path, monkeypatch):
    monkeypatch.setattr(envs, "find_uv", lambda: None)
    with pytest.raises(EnvError, match="uv was asked for but is not installed"):
        ensure_env({"rlbench-probe": "1.0"}, str(wheels), cache=tmp_path, installer="uv")
    assert list(tmp_path.iterdir()) == []
    python = ensure_env({"rlbench-probe": "1.0"}, str(wheels), cache=tmp_path)
    assert json.loads((python.parent.parent / "rlbench-env.json").read_text())["installer"].startswith("pip ")


def test_versions_are_checked_against_the_pins():
    versions = {"python": "3.11.7", "numpy": "2.1.0", "ray": None}
    assert mismatches({"numpy": "2.1.0"}, versions) == []
    assert mismatches({"numpy": "2.0.2", "ray": "2.59.0"}, versions) == [
        "numpy 2.1.0 where the variant pins 2.0.2",
        "ray not installed where the variant pins 2.59.0",
    ]
    mine = imported_versions({"pydantic": "0"})
    assert set(mine) == {"python", "ray", "torch", "gymnasium", "numpy", "pydantic"} and mine["pydantic"]


SPEC = """\
name: pins
framework: plain
environment:
  env: envs.synthetic:SyntheticEnv
  env_config: {{step_cost_us: 10}}
env_runners: {{num_env_runners: 0}}
training: {{train_batch_size_per_learner: 100}}
stop: {{iterations: 2}}
env_ceiling_s: 0
variants:
  - {{name: v1, packages: {{rlbench-probe: "1.0"}}, index: {wheels}}}
  - {{name: v2, packages: {{rlbench-probe: "2.0"}}, index: {wheels}}}
  - {{name: v3, packages: {{rlbench-probe: "3.0"}}, index: {wheels}}}
"""


@pytest.mark.slow
def test_each_variant_runs_in_its_environment_and_records_what_it_imported(wheels, tmp_path):
    (tmp_path / "pins.yaml").write_text(SPEC.format(wheels=wheels))
    out = tmp_path / "out"
    done = run_cli(
        "sweep", str(tmp_path / "pins.yaml"), "--out", str(out), env={"RLBENCH_ENV_CACHE": str(tmp_path / "envs")}
    )
    assert done.returncode == 1, done.stdout + done.stderr  # 1: a variant never ran
    trials = pd.read_parquet(out / "trials.parquet").set_index("variant")
    assert list(trials["status"]) == ["ok", "ok", "failed"]
    for variant, version in (("v1", "1.0"), ("v2", "2.0")):
        assert json.loads(trials.loc[variant, "versions"])["rlbench-probe"] == version
    # the package that cannot be installed fails its variant's trials with pip's words; the rest ran
    command = "uv pip install" if find_uv() else "pip install"  # the sweep's installer: uv when installed
    assert trials.loc["v3", "reason"].startswith(
        f"its variant's packages could not be installed: {command} rlbench-probe==3.0 failed: "
    )
    plan = json.loads((out / "trials" / trials.loc["v2", "trial_id"] / "plan.json").read_text())
    assert plan["packages"]["pins"] == {"rlbench-probe": "2.0"} and plan["packages"]["python"].endswith("bin/python")
    assert "could not be made" in done.stdout
