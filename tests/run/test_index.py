"""The versions an index lists (rlbench.run.index): a local folder read from its file names, ordered as
PEP 440 orders versions, and the versions a bisect searches between its ends."""

from __future__ import annotations

from wheels import write_wheel

from rlbench.run.index import available_versions, between, folder_versions, unknown_versions


def test_a_folder_lists_the_versions_of_its_archives(tmp_path):
    for version in ("1.10.0", "1.2.0", "1.9.0rc1"):
        write_wheel(tmp_path, "my-pkg", version, {"my_pkg/__init__.py": ""})
    (tmp_path / "my_pkg-0.9.tar.gz").write_bytes(b"")  # a source archive counts
    (tmp_path / "other-1.0-py3-none-any.whl").write_bytes(b"")  # another distribution does not
    (tmp_path / "my_pkg-notaversion-py3-none-any.whl").write_bytes(b"")
    (tmp_path / "README").write_text("")
    assert folder_versions("my-pkg", tmp_path) == ["0.9", "1.2.0", "1.9.0rc1", "1.10.0"]  # 1.10 after 1.9
    assert available_versions("My_Pkg", str(tmp_path)) == ["0.9", "1.2.0", "1.9.0rc1", "1.10.0"]


def test_unknown_versions_are_compared_as_versions():
    assert unknown_versions(["2.60", "2.61.0", "2.59.0"], ["2.59.0", "2.60.0"]) == ["2.61.0"]


def test_between_lists_the_ends_and_what_lies_between_them_good_first():
    listed = ["2.50.0", "2.51.0", "2.52.0", "2.53.0", "2.54.0"]
    assert between(listed, "2.51.0", "2.54.0") == ["2.51.0", "2.52.0", "2.53.0", "2.54.0"]
    assert between(listed, "2.54.0", "2.52.0") == ["2.54.0", "2.53.0", "2.52.0"]  # good is the newer: walked down
    assert between(listed, "2.52.0", "2.53.0") == ["2.52.0", "2.53.0"]
