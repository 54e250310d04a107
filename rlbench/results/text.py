"""Text that is not rlbench's own, made harmless for a terminal and a spreadsheet (standard library only).

An env's error message, a skip reason, a value or path read from a results folder someone else
wrote: all of it is data, never formatting. :func:`plain` makes every control character visible
(an escape sequence could recolour, retitle or clear a terminal; a bidi override could reorder
what is shown), and the printers hand the result to rich as plain text (``rich.text.Text``),
never as markup. :func:`csv_cell` neutralises a CSV cell a spreadsheet would run as a formula.
"""

from __future__ import annotations

import unicodedata
from typing import Any

#: Invisible format characters that reorder or hide text (bidi controls, "trojan source").
_BIDI = frozenset("\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")
#: The first characters a spreadsheet reads as a formula (OWASP's list: = + - @, tab, carriage return).
FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def _visible(char: str) -> str:
    code = ord(char)
    if code < 0x100:
        return f"\\x{code:02x}"
    return f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"


def plain(text: Any, *, keep_newlines: bool = False) -> str:
    """``text`` as a string with every control character shown as an escape (``\\x1b``, ``\\u202e``).

    Controls are Unicode category Cc (C0, DEL, C1: ESC, BEL, CR, backspace, ...) and the bidi
    format characters. A newline stays a newline only with ``keep_newlines`` (multi-line
    messages of our own that quote foreign text); a tab is always shown as ``\\t``.
    """
    text = str(text)
    out = []
    for char in text:
        if char == "\n" and keep_newlines:
            out.append(char)
        elif char in _BIDI or unicodedata.category(char) == "Cc":
            out.append(_visible(char))
        else:
            out.append(char)
    return "".join(out)


def csv_cell(value: Any) -> Any:
    """A text cell that would start a spreadsheet formula, prefixed with ``'`` (shown as text).

    Only strings are touched: numbers (a negative number starts with ``-``) stay numbers.
    """
    return "'" + value if isinstance(value, str) and value.startswith(FORMULA_START) else value
