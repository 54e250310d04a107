"""``rlbench servebench`` refusing before it starts anything: the serve extra missing, bad flags, an --out in use.
Nothing here starts Ray (each refusal comes before the first import of it)."""

from __future__ import annotations

import sys

import pytest

from rlbench.commands import main


def test_without_the_serve_extra_it_names_the_extra_and_exits_2(tmp_path, monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "uvicorn", None)  # as if the extra were not installed: ``import uvicorn`` fails
    out = tmp_path / "sb"
    assert main(["servebench", "--out", str(out)]) == 2
    text = " ".join(capsys.readouterr().out.split())
    assert "needs the serve extra" in text and 'pip install -e ".[serve]"' in text and "uvicorn does not import" in text
    assert not out.exists()


@pytest.mark.parametrize("flags, said", [
    (["--paths", "inprocess,grpc"], "--paths: unknown grpc"),
    (["--inputs", "16,5"], "--inputs: each must be one of 16, 4096, 102400"),
    (["--batches", "0"], "--batches"),
    (["--clients", "a"], "--clients takes comma-separated whole numbers"),
    (["--seconds", "0"], "--seconds"),
])
def test_bad_flags_exit_2_naming_the_flag(flags, said, tmp_path, capsys):
    assert main(["servebench", *flags, "--out", str(tmp_path / "sb")]) == 2
    assert said in " ".join(capsys.readouterr().out.split())
    assert not (tmp_path / "sb").exists()


def test_an_out_folder_in_use_is_refused(tmp_path, capsys):
    (tmp_path / "servebench.json").write_text("{}")
    assert main(["servebench", "--out", str(tmp_path)]) == 2
    assert "is not empty" in capsys.readouterr().out
