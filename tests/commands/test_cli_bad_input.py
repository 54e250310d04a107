"""Bad input through the CLI: exit code 2, one clear message, nothing written. No Ray starts."""

from __future__ import annotations

import fcntl
import json
import textwrap
from pathlib import Path

import pytest
import yaml
from conftest import REPO

from rlbench import SCHEMA_VERSION
from rlbench.commands import main
from rlbench.commands.exit_codes import EXIT_BAD_INPUT
from rlbench.spec.load import spec_from_dict

GOOD = """\
name: bad
environment:
  env: envs.tiny:TinyEnv
cpus: 2
grid:
  num_env_runners: [0, 1]
stop: {iterations: 3}
"""


def _snapshot(root: Path) -> dict[str, float]:
    return {str(p.relative_to(root)): p.stat().st_mtime_ns for p in root.rglob("*")} if root.exists() else {}


def _sweep(capsys, monkeypatch, spec_text: str, tmp_path: Path, *extra: str, out: Path | None = None):
    """Run ``rlbench sweep`` in-process from the repo folder; returns (exit code, output, out dir)."""
    monkeypatch.chdir(REPO)
    spec = tmp_path / "spec.yaml"
    spec.write_text(spec_text)
    out = out or tmp_path / "out"
    code = main(["sweep", str(spec), "--out", str(out), *extra])
    captured = capsys.readouterr()
    return code, captured.out + captured.err, out


def _one_error(text: str) -> str:
    errors = [line for line in text.splitlines() if line.startswith("error:")]
    assert len(errors) == 1, text
    return " ".join(text[text.index("error:") :].split())  # the message, unwrapped


@pytest.mark.parametrize(
    "spec_text, expected",
    [
        (GOOD.replace("cpus: 2", "cpus: [2"), "spec.yaml:5:5: YAML syntax error"),
        (GOOD.replace("cpus: 2", "cpuz: 2"), "cpuz: unknown key 'cpuz'; did you mean 'cpus'?"),
        (
            GOOD + "ray: {include_dashbord: true}\n",
            "ray.include_dashbord: unknown key 'include_dashbord'; did you mean 'include_dashboard'?",
        ),
        (GOOD.replace("cpus: 2", "cpus: two"), "spec.yaml:4: cpus: Input should be a valid integer"),
        (GOOD.replace("[0, 1]", "[]"), "spec.yaml:6: grid.num_env_runners: empty list"),
        (
            GOOD.replace("grid:", "env_runners: {num_workers: 1}\ngrid:"),
            "old name 'num_workers' and new name 'num_env_runners' (at grid.num_env_runners) are both in this file",
        ),
        (
            GOOD.replace("envs.tiny:TinyEnv", "CartPoel-v1"),
            "spec.yaml:3: environment.env: env 'CartPoel-v1' is neither a registered gymnasium id nor an import path",
        ),
        (
            GOOD.replace("envs.tiny:TinyEnv", "envs.nosuch:Env"),
            "env 'envs.nosuch:Env': cannot import module 'envs.nosuch'",
        ),
    ],
)
def test_bad_spec(capsys, monkeypatch, tmp_path, spec_text, expected):
    code, text, out = _sweep(capsys, monkeypatch, spec_text, tmp_path)
    assert code == EXIT_BAD_INPUT
    message = _one_error(text)
    assert expected.replace("spec.yaml", "") in message.replace(str(tmp_path / "spec.yaml"), ""), message
    assert not out.exists()


def test_env_module_that_raises_on_import(capsys, monkeypatch, tmp_path):
    package = tmp_path / "brokenenvs"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "env.py").write_text("raise ImportError('libsim.so: cannot open shared object file')\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    code, text, out = _sweep(capsys, monkeypatch, GOOD.replace("envs.tiny:TinyEnv", "brokenenvs.env:Sim"), tmp_path)
    assert code == EXIT_BAD_INPUT
    assert "cannot import module 'brokenenvs.env' (libsim.so: cannot open shared object file)" in _one_error(text)
    assert not out.exists()


def test_output_folder_that_cannot_be_created(capsys, monkeypatch, tmp_path):
    (tmp_path / "a-file").write_text("not a folder")
    code, text, out = _sweep(capsys, monkeypatch, GOOD, tmp_path, out=tmp_path / "a-file" / "out")
    assert code == EXIT_BAD_INPUT
    assert "cannot write to output folder" in _one_error(text) and "is not a folder" in text
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a-file", "spec.yaml"]


def test_output_folder_on_a_read_only_filesystem(capsys, monkeypatch, tmp_path):
    target = Path("/proc/rlbench-out")  # /proc refuses new entries, even to root
    code, text, _ = _sweep(capsys, monkeypatch, GOOD, tmp_path, out=target)
    assert code == EXIT_BAD_INPUT
    assert "cannot write to output folder /proc/rlbench-out" in _one_error(text)
    assert not target.exists()


def test_folder_locked_by_another_sweep(capsys, monkeypatch, tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    lock = open(out / ".rlbench.lock", "w")
    lock.write("4242\n")
    lock.flush()
    fcntl.flock(lock, fcntl.LOCK_EX)  # another open file: conflicts like another process would
    before = _snapshot(out)
    try:
        code, text, _ = _sweep(capsys, monkeypatch, GOOD, tmp_path, out=out)
    finally:
        lock.close()
    assert code == EXIT_BAD_INPUT
    assert "another rlbench sweep (pid 4242) is writing to" in _one_error(text)
    assert _snapshot(out) == before


def test_folder_with_a_sweep_needs_resume(capsys, monkeypatch, tmp_path):
    out = tmp_path / "out"
    (out / "trials").mkdir(parents=True)
    (out / "manifest.json").write_text("{}")
    before = _snapshot(out)
    code, text, _ = _sweep(capsys, monkeypatch, GOOD, tmp_path, out=out)
    assert code == EXIT_BAD_INPUT
    message = _one_error(text)
    assert f"{out} already holds results" in message  # the one message of results/session.py
    assert f"rlbench sweep {tmp_path / 'spec.yaml'} --out {out} --resume" in message
    assert _snapshot(out) == before


def test_retry_failed_needs_resume(capsys, monkeypatch, tmp_path):
    code, text, out = _sweep(capsys, monkeypatch, GOOD, tmp_path, "--retry-failed")
    assert code == EXIT_BAD_INPUT
    assert "--retry-failed only makes sense with --resume" in _one_error(text)
    assert not out.exists()


@pytest.mark.parametrize("verb, flag", [("sweep", "auto"), ("sweep", "0"), ("autoconfig", "2")])
def test_parallel_without_a_cluster(capsys, monkeypatch, tmp_path, verb, flag):
    """--parallel runs trials at once on a cluster's nodes: without --address (or RAY_ADDRESS), or with a value
    that is no count, one line says why and nothing runs."""
    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    monkeypatch.chdir(REPO)
    spec = tmp_path / "spec.yaml"
    spec.write_text(GOOD.replace("cpus: 2\n", ""))
    extra = ["--budget", "5m"] if verb == "autoconfig" else []
    code = main([verb, str(spec), "--out", str(tmp_path / "out"), "--parallel", flag, *extra])
    captured = capsys.readouterr()
    assert code == EXIT_BAD_INPUT
    line = _one_error(captured.out + captured.err)
    assert (
        "give how many trials may run at once" in line
        if flag == "0"
        else f"--parallel {flag} runs trials at once, each on nodes of its own, on a Ray cluster: give --address"
        in line
    )
    assert not (tmp_path / "out").exists()


def test_resume_of_an_incomparable_folder(capsys, monkeypatch, tmp_path):
    out = tmp_path / "out"
    (out / "trials").mkdir(parents=True)
    old = GOOD.replace("iterations: 3", "iterations: 5")
    spec = spec_from_dict(yaml.safe_load(old), check_envs=False).spec.model_dump(mode="json", by_alias=True)
    (out / "manifest.json").write_text(json.dumps({"spec": spec, "software": {"schema_version": str(SCHEMA_VERSION)}}))
    before = _snapshot(out)
    code, text, _ = _sweep(capsys, monkeypatch, GOOD, tmp_path, "--resume", out=out)
    assert code == EXIT_BAD_INPUT
    assert "cannot resume" in _one_error(text)
    assert "the spec changed (spec.stop.iterations: 5 -> 3)" in _one_error(text)
    assert _snapshot(out) == before


def test_yaml_is_loaded_safely(capsys, monkeypatch, tmp_path):
    marker = tmp_path / "pwned"
    spec = GOOD + f"seed: !!python/object/apply:os.system ['touch {marker}']\n"
    code, text, out = _sweep(capsys, monkeypatch, textwrap.dedent(spec), tmp_path)
    assert code == EXIT_BAD_INPUT
    assert "YAML" in _one_error(text)
    assert not marker.exists() and not out.exists()
