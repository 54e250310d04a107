"""Text in report.md that is not ours (labels, values, reasons, names read from a folder),
made inert: it must show as the characters it is, never become HTML, a link or a table cell.

Markdown viewers render raw HTML (a ``<script>`` or ``<img onerror=...>`` in an env's error text
would run in some) and Markdown syntax (a ``](http://...)`` would make a link, a ``|`` a new
cell). :func:`md_text` turns ``& < >`` into entities and backslash-escapes the inline Markdown
punctuation; :func:`md_code` makes a code span no backtick in the value can close. Both show
control characters as escapes and keep the text on one line.
"""

from __future__ import annotations

import html
import re

from rlbench.results.text import plain

#: Inline Markdown punctuation (CommonMark lets any ASCII punctuation be backslash-escaped).
_SPECIAL = re.compile(r"([\\`*_\[\]|~$])")


def md_text(value: object) -> str:
    """``value`` as inert Markdown text on one line."""
    return _SPECIAL.sub(r"\\\1", html.escape(plain(value), quote=False))


def md_code(value: object) -> str:
    """``value`` as a Markdown code span (shown verbatim: HTML and Markdown inside are not read)."""
    text = plain(value)
    fence = "`" * (max((len(run) for run in re.findall(r"`+", text)), default=0) + 1)
    pad = " " if text.startswith("`") or text.endswith("`") or not text.strip() else ""
    return f"{fence}{pad}{text}{pad}{fence}"
