"""plain(): control characters made visible; csv_cell(): formulas neutralised."""

from __future__ import annotations

from rlbench.results.text import csv_cell, plain


def test_escape_sequences_and_bidi_controls_become_visible():
    hostile = "\x1b]0;pwned\x07\x1b[2J[red]x[/red]\u202eevil\r\n\tend\x9b"
    shown = plain(hostile)
    assert shown == "\\x1b]0;pwned\\x07\\x1b[2J[red]x[/red]\\u202eevil\\x0d\\x0a\\x09end\\x9b"
    assert all(c.isprintable() for c in shown)
    assert plain("a\nb", keep_newlines=True) == "a\nb"
    assert plain("ünïcode ✓ [1, 2]") == "ünïcode ✓ [1, 2]"  # ordinary text untouched


def test_csv_cells_that_start_a_formula_are_neutralised():
    assert [csv_cell(v) for v in ["=1+1", "+cmd", "-2+3", "@SUM(A1)", "\t=x", "\rx"]] == [
        "'=1+1",
        "'+cmd",
        "'-2+3",
        "'@SUM(A1)",
        "'\t=x",
        "'\rx",
    ]
    assert [csv_cell(v) for v in ["ok", -1.5, 3, None, ""]] == ["ok", -1.5, 3, None, ""]
