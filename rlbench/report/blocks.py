"""The report's content as typed blocks, and the three backends that draw them: Markdown, HTML, terminal.

Every section is built once as a list of blocks (:class:`Heading`, :class:`Paragraph`,
:class:`Bullets`, :class:`Verdicts`, :class:`Table`, :class:`Figure`, :class:`FlameGraph`,
:class:`Fields`, :class:`Links`); :func:`to_markdown`, :func:`to_html` and :func:`to_rich` draw them. Rendering is
where escaping happens, once per backend: every text a block holds is plain text (much of it not
ours: env names, error messages, spec strings), made inert here by :func:`~rlbench.report.markdown.md_text`
and :func:`~rlbench.report.markdown.md_code` in Markdown, :func:`html.escape` in HTML, and
:class:`rich.text.Text` of :func:`~rlbench.results.text.plain` in a terminal (never markup).
"""

from __future__ import annotations

import base64
import html
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from rlbench.report.markdown import md_code, md_text
from rlbench.results.text import plain


@dataclass(frozen=True)
class Heading:
    text: str
    level: int
    """1 (the title) to 4."""


@dataclass(frozen=True)
class Paragraph:
    text: str
    muted: bool = False
    """A note in small grey type in HTML (the same paragraph in Markdown)."""
    lead: str = ""
    """A bold word before the text (``Verdict``: ...)."""


@dataclass(frozen=True)
class Bullets:
    items: list[str]
    boxed: bool = False
    """Set apart in HTML (the recommendations)."""


@dataclass(frozen=True)
class Verdicts:
    """One line per configuration: its label in bold, then the words."""

    items: list[tuple[str, str]]


@dataclass(frozen=True)
class Cell:
    """A table cell with a terminal style (``green``, ``red``); the other backends show the text."""

    text: str
    style: str = ""

    def __str__(self) -> str:
        return self.text


@dataclass(frozen=True)
class Table:
    header: list[str]
    rows: Sequence[Sequence[str | Cell]]
    left: frozenset[int] = frozenset()
    """Columns aligned left (text); the others are numbers, aligned right."""
    title: str = ""
    """Terminal only: the table's title."""
    caption: str = ""
    """Terminal only: a line under the table."""
    md_max_rows: int | None = None
    """Rows shown in Markdown (the rest are counted); HTML shows every row."""
    md_more: str = "{n} more rows."
    """What Markdown says of the rows left out (``{n}``: how many)."""
    collapsed: str = ""
    """HTML: the table folded under this summary (``<details>``)."""


@dataclass(frozen=True)
class Figure:
    """A PNG of ours in ``plots/``: linked from report.md, embedded in report.html (the report's one figure type:
    the figure modules return it, the document lays it out)."""

    path: Path
    """The PNG file."""
    title: str
    """Heading above it."""
    caption: str = ""
    """What it shows, caps included."""


@dataclass(frozen=True)
class FlameGraph:
    """A flame graph SVG of ours: linked from report.md; in report.html as ``html`` says."""

    path: Path
    link: str
    """Its path relative to the sweep folder (a name rlbench writes)."""
    alt: str
    html: str
    """``embed`` (as an ``<img>``: an SVG shown that way runs nothing), ``link``, or ``none``."""


@dataclass(frozen=True)
class Fields:
    """(name, value) pairs; the values shown verbatim (code)."""

    pairs: list[tuple[str, str]]


@dataclass(frozen=True)
class Links:
    """A line of links to the page's sections (level-2 headings, by :func:`anchor`), after a bold lead word."""

    lead: str
    headings: list[str]


@dataclass(frozen=True)
class Break:
    """An empty line in Markdown, nothing elsewhere: keeps report.md's spacing as it always was."""


Block = Heading | Paragraph | Bullets | Verdicts | Table | Figure | FlameGraph | Fields | Links | Break


def anchor(heading: str) -> str:
    """A level-2 heading's anchor, as GitHub makes it for Markdown (lower case, spaces to ``-``, other punctuation
    dropped) and the HTML backend gives its ``id``."""
    return re.sub(r"[^\w\- ]", "", plain(heading).lower()).replace(" ", "-")


def _md_table(table: Table) -> list[str]:
    rows = table.rows if table.md_max_rows is None else table.rows[: table.md_max_rows]
    lines = ["| " + " | ".join(md_text(c) for c in table.header) + " |", "|" + "---|" * len(table.header)]
    lines += ["| " + " | ".join(md_text(str(c)) for c in r) + " |" for r in rows]
    if len(rows) < len(table.rows):
        lines += ["", md_text(table.md_more.format(n=len(table.rows) - len(rows)))]
    return lines


def _md(block: Block) -> list[str]:
    if isinstance(block, Heading):
        return ["#" * block.level + " " + md_text(block.text)]
    if isinstance(block, Paragraph):
        return [(f"{md_text(block.lead)}: " if block.lead else "") + md_text(block.text)]
    if isinstance(block, Bullets):
        return [f"- {md_text(item)}" for item in block.items]
    if isinstance(block, Verdicts):
        return [f"- **{md_text(label)}**: {md_text(text)}" for label, text in block.items]
    if isinstance(block, Table):
        return _md_table(block)
    if isinstance(block, Figure):
        return [f"### {md_text(block.title)}", "", f"![{md_text(block.title)}](plots/{block.path.name})"] + (
            ["", md_text(block.caption)] if block.caption else []
        )
    if isinstance(block, FlameGraph):
        return [f"Flame graph: [{md_code(block.link)}]({block.link})"]
    if isinstance(block, Fields):
        return [f"- {md_text(k)}: {md_code(v)}" for k, v in block.pairs]
    if isinstance(block, Links):
        return [f"**{md_text(block.lead)}**: " + " · ".join(f"[{md_text(h)}](#{anchor(h)})" for h in block.headings)]
    return []


def to_markdown(blocks: list[Block]) -> str:
    """report.md: each block, then an empty line."""
    out: list[str] = []
    for block in blocks:
        out += _md(block) + [""]
    while out and out[-1] == "":
        out.pop()
    return "\n".join(out) + "\n"


def _html_table(table: Table) -> str:
    e = html.escape
    cls = lambda i: "l" if i in table.left else ""  # noqa: E731
    head = "".join(f"<th class='{cls(i)}'>{e(c)}</th>" for i, c in enumerate(table.header))
    body = []
    for r in table.rows:
        noisy = " class='noisy'" if r and str(r[0]) == "noisy" else ""
        body.append(
            f"<tr{noisy}>" + "".join(f"<td class='{cls(i)}'>{e(str(c))}</td>" for i, c in enumerate(r)) + "</tr>"
        )
    text = f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>"
    return f"<details><summary>{e(table.collapsed)}</summary>\n{text}\n</details>" if table.collapsed else text


def _html(block: Block) -> str:
    e = html.escape
    if isinstance(block, Heading):
        ident = f" id='{e(anchor(block.text), quote=True)}'" if block.level == 2 else ""
        return f"<h{block.level}{ident}>{e(block.text)}</h{block.level}>"
    if isinstance(block, Paragraph):
        lead = f"<b>{e(block.lead)}</b>: " if block.lead else ""
        return f"<p class='muted'>{lead}{e(block.text)}</p>" if block.muted else f"<p>{lead}{e(block.text)}</p>"
    if isinstance(block, Bullets):
        items = "<ul>" + "".join(f"<li>{e(item)}</li>" for item in block.items) + "</ul>"
        return f"<div class='rec'>{items}</div>" if block.boxed else items
    if isinstance(block, Verdicts):
        return "<ul>" + "".join(f"<li><b>{e(label)}</b>: {e(text)}</li>" for label, text in block.items) + "</ul>"
    if isinstance(block, Table):
        return _html_table(block)
    if isinstance(block, Figure):
        data = base64.b64encode(block.path.read_bytes()).decode()
        return (
            f"<figure><h3>{e(block.title)}</h3><img alt='{e(block.title)}' src='data:image/png;base64,{data}'>"
            f"<figcaption>{e(block.caption)}</figcaption></figure>"
        )
    if isinstance(block, FlameGraph):
        link = e(block.link, quote=True)
        if block.html == "none":
            return ""
        if block.html == "link":
            return f"<p>Flame graph: <a href='{link}'>{link}</a></p>"
        data = base64.b64encode(block.path.read_bytes()).decode()
        return (
            f"<figure><img alt='{e(block.alt)}' src='data:image/svg+xml;base64,{data}'><figcaption>Flame graph "
            f"(root at the top; open <a href='{link}'>{link}</a> for the tooltips).</figcaption></figure>"
        )
    if isinstance(block, Links):
        links = " · ".join(f"<a href='#{e(anchor(h), quote=True)}'>{e(h)}</a>" for h in block.headings)
        return f"<p><b>{e(block.lead)}</b>: {links}</p>"
    if isinstance(block, Fields):
        return (
            "<table>"
            + "".join(
                f"<tr><th class='l'>{e(k)}</th><td class='l'><code>{e(v)}</code></td></tr>" for k, v in block.pairs
            )
            + "</table>"
        )
    return ""


def to_html(blocks: list[Block], title: str, css: str) -> str:
    """report.html: one file, no external CSS or scripts; every text escaped."""
    head = (
        f"<!doctype html><html lang='en'><head><meta charset='utf-8'><title>{html.escape(title)}</title>"
        f"<style>{css}</style></head><body>"
    )
    return "\n".join([head, *(part for part in map(_html, blocks) if part), "</body></html>"])


def to_rich(table: Table, **options):
    """A terminal table (rich): every cell a :class:`rich.text.Text` of plain text, never markup."""
    from rich.table import Table as RichTable
    from rich.text import Text

    out = RichTable(title=Text(plain(table.title), style="table.title") if table.title else None, **options)
    if table.caption:
        out.caption = table.caption
    for i, column in enumerate(table.header):
        out.add_column(Text(plain(column)), justify="left" if i in table.left else "right", overflow="fold")
    for row in table.rows:
        out.add_row(*(Text(plain(str(c)), style=c.style if isinstance(c, Cell) else "") for c in row))
    return out


__all__ = [
    "Block",
    "Break",
    "Bullets",
    "Cell",
    "Fields",
    "Figure",
    "FlameGraph",
    "Heading",
    "Links",
    "Paragraph",
    "Table",
    "Verdicts",
    "anchor",
    "to_html",
    "to_markdown",
    "to_rich",
]
