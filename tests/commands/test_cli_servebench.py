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


@pytest.mark.parametrize(
    "flags, said",
    [
        (["--paths", "inprocess,grpc"], "--paths: unknown grpc"),
        (["--inputs", "16,5"], "--inputs: each must be one of 16, 4096, 102400"),
        (["--batches", "0"], "--batches"),
        (["--clients", "a"], "--clients takes comma-separated whole numbers"),
        (["--seconds", "0"], "--seconds"),
    ],
)
def test_bad_flags_exit_2_naming_the_flag(flags, said, tmp_path, capsys):
    assert main(["servebench", *flags, "--out", str(tmp_path / "sb")]) == 2
    assert said in " ".join(capsys.readouterr().out.split())
    assert not (tmp_path / "sb").exists()


def test_an_out_folder_in_use_is_refused(tmp_path, capsys):
    """The results session's checks, as every command's: someone else's files, a run's results, another run's lock."""
    (tmp_path / "servebench.json").write_text("{}")
    assert main(["servebench", "--out", str(tmp_path)]) == 2
    assert "already holds files (servebench.json) and is not an rlbench sweep" in " ".join(
        capsys.readouterr().out.split()
    )
    done = tmp_path / "done"
    done.mkdir()
    (done / "manifest.json").write_text('{"software": {"schema_version": "3"}}')  # what a servebench run leaves
    assert main(["servebench", "--out", str(done)]) == 2
    assert f"{done} already holds results; choose another --out" in " ".join(capsys.readouterr().out.split())


def test_a_folder_another_run_holds_is_refused(tmp_path, capsys, monkeypatch):
    from rlbench.commands import servebench
    from rlbench.results.lock import SweepLock

    monkeypatch.setattr(servebench, "missing_extra", lambda: None)  # the lock is taken before anything imports Ray
    held = SweepLock(tmp_path / "sb").acquire()
    try:
        assert main(["servebench", "--out", str(tmp_path / "sb")]) == 2
    finally:
        held.release()
    assert "another rlbench sweep (pid" in capsys.readouterr().out and not (tmp_path / "sb" / "manifest.json").exists()
