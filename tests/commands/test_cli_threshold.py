"""One grammar of ``--threshold`` for compare, history and bisect: ``5%`` or ``0.05``, strictly between 0 and 1."""

from __future__ import annotations

import shutil

import pytest
from conftest import REPO

from rlbench.commands import main
from rlbench.commands._common import threshold_of
from rlbench.commands.exit_codes import EXIT_BAD_INPUT, EXIT_OK


def test_the_threshold_is_a_share_written_either_way():
    assert threshold_of("5%") == 0.05 and threshold_of("0.1") == 0.1 and threshold_of(" 12.5 % ") == 0.125
    assert threshold_of(None) == 0.05  # findings.CHANGE_THRESHOLD
    for bad in ("0", "0%", "100%", "1", "1.5", "five", "-5%", ""):
        with pytest.raises(ValueError, match="give a share between 0 and 1, e.g. 5% or 0.05"):
            threshold_of(bad)


@pytest.mark.parametrize("verb", ["compare", "history", "bisect"])
def test_every_verb_takes_the_same_threshold_flag(verb):
    from rlbench.commands import parser

    help_text = parser()._subparsers._group_actions[0].choices[verb].format_help()
    assert "--threshold" in help_text and "5%, or 0.05 (default 5%" in " ".join(help_text.split())


def test_compare_takes_a_percentage_and_refuses_zero(tmp_path, capsys):
    folder = tmp_path / "golden"
    shutil.copytree(REPO / "tests" / "data" / "results-format-3", folder)  # a sweep with variants
    assert main(["compare", str(folder), "--threshold", "10%", "--out", str(tmp_path / "a")]) == EXIT_OK
    assert main(["compare", str(folder), "--threshold", "0.1", "--out", str(tmp_path / "b")]) == EXIT_OK
    assert (tmp_path / "a" / "compare.json").read_text().replace(str(tmp_path / "a"), "") == (
        tmp_path / "b" / "compare.json"
    ).read_text().replace(str(tmp_path / "b"), "")
    capsys.readouterr()
    assert main(["compare", str(folder), "--threshold", "0", "--out", str(tmp_path / "c")]) == EXIT_BAD_INPUT
    assert "error: --threshold '0': give a share between 0 and 1, e.g. 5% or 0.05" in capsys.readouterr().out
    assert not (tmp_path / "c").exists()
