"""Text in report.md that is not ours (labels, values, reasons, names read from a folder),
made inert: it must show as the characters it is, never become HTML, a link or a table cell.

Markdown viewers render raw HTML (a ``<script>`` or ``<img onerror=...>`` in an env's error text
would run in some) and Markdown syntax (a ``](http://...)`` would make a link, a ``|`` a new
cell). :func:`md_text` turns ``&`` and ``<`` into entities (no tag, entity or autolink can start)
and backslash-escapes the inline Markdown punctuation, leaving what cannot act alone as it is, so
the raw file stays readable: ``>`` (a blockquote only at a line's start, and every value follows a
``- `` or ``| ``) and an ``_`` inside a word (``driver_torch_threads``: CommonMark never reads an
intraword ``_`` as emphasis). :func:`md_code` makes a code span no backtick in the value can
close. Both show control characters as escapes and keep the text on one line.
"""

from __future__ import annotations

import re

from rlbench.results.text import plain

#: Inline Markdown punctuation (CommonMark lets any ASCII punctuation be backslash-escaped), and an
#: ``_`` at a word's edge (one inside a word is never emphasis).
_SPECIAL = re.compile(r"([\\`*\[\]|~$]|(?<![A-Za-z0-9])_|_(?![A-Za-z0-9]))")


def md_text(value: object) -> str:
    """``value`` as inert Markdown text on one line."""
    text = plain(value).replace("&", "&amp;").replace("<", "&lt;")
    return _SPECIAL.sub(r"\\\1", text)


def md_code(value: object) -> str:
    """``value`` as a Markdown code span (shown verbatim: HTML and Markdown inside are not read)."""
    text = plain(value)
    fence = "`" * (max((len(run) for run in re.findall(r"`+", text)), default=0) + 1)
    pad = " " if text.startswith("`") or text.endswith("`") or not text.strip() else ""
    return f"{fence}{pad}{text}{pad}{fence}"
