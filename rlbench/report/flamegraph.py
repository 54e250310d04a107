"""A flame graph as a self-contained SVG, drawn from sampled stacks (no scripts, no external links).

Drawn root at the top (an "icicle"): each box is a function on the stack, as wide as the share of
samples it was on, its callees below it. The text inside the boxes and in each box's tooltip
(``<title>``) comes from the profiled code (function and file names) and is escaped: a name
cannot open an element. The report embeds the file as an ``<img>`` (which never runs anything
inside an SVG) and links it; opened on its own, a browser shows the tooltips.
"""

from __future__ import annotations

import hashlib
from collections import Counter
from html import escape

from rlbench.results.text import plain

#: Boxes narrower than this many pixels are not drawn (their samples still count in their parents).
MIN_WIDTH_PX = 1.0
#: At most this many boxes (the widest first), and this many levels: a readable, small file.
MAX_BOXES = 1500
MAX_DEPTH = 60
ROW_PX = 17
FONT_PX = 11
CHAR_PX = 6.6


class _Node:
    __slots__ = ("name", "count", "children")

    def __init__(self, name: str):
        self.name = name
        self.count = 0
        self.children: dict[str, _Node] = {}


def _tree(stacks: Counter) -> _Node:
    root = _Node("all")
    for stack, n in stacks.items():
        root.count += n
        node = root
        for name in stack[:MAX_DEPTH]:
            node = node.children.setdefault(name, _Node(name))
            node.count += n
    return root


def _color(name: str) -> str:
    """A warm colour fixed by the function's name (the same function looks the same everywhere)."""
    h = hashlib.blake2b(name.split(" (")[0].encode(), digest_size=2).digest()
    return f"rgb({205 + h[0] % 50},{90 + h[1] % 110},{40 + (h[0] ^ h[1]) % 40})"


def flamegraph_svg(stacks: Counter, title: str, *, width: int = 1200) -> str:
    """The SVG text of a flame graph of ``stacks`` (stack of frame labels, root first -> samples)."""
    root = _tree(stacks)
    total = max(1, root.count)
    boxes: list[tuple[float, int, float, _Node]] = []  # x, depth, width, node
    level = [(0.0, root)]
    depth = 0
    while level and len(boxes) < MAX_BOXES:
        nxt = []
        for x, node in level:
            w = width * node.count / total
            if w < MIN_WIDTH_PX or len(boxes) >= MAX_BOXES:
                continue
            boxes.append((x, depth, w, node))
            cx = x
            for child in sorted(node.children.values(), key=lambda c: (-c.count, c.name)):
                nxt.append((cx, child))
                cx += width * child.count / total
        level, depth = nxt, depth + 1
    height = (max((d for _, d, _, _ in boxes), default=0) + 1) * ROW_PX + 40
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" font-family="monospace" font-size="{FONT_PX}">',
        f'<rect x="0" y="0" width="{width}" height="{height}" fill="#fdfaf5"/>',
        f'<text x="4" y="16" font-size="13">{_xml(title)}</text>',
        f'<text x="4" y="{height - 6}" fill="#555">{total:,} samples; box width = share of samples '
        f"with that function on the stack; callees below their caller</text>",
    ]
    for x, d, w, node in boxes:
        y = 24 + d * ROW_PX
        label = node.name if d else f"all ({total:,} samples)"
        tip = f"{label}: {node.count:,} samples, {node.count / total:.1%}"
        out.append(
            f'<g><title>{_xml(tip)}</title><rect x="{x:.1f}" y="{y}" width="{w:.1f}" '
            f'height="{ROW_PX - 1}" fill="{_color(node.name) if d else "#ccc"}" rx="2"/>'
        )
        fits = int((w - 4) / CHAR_PX)
        if fits >= 3:
            text = label if len(label) <= fits else label[: max(1, fits - 2)] + ".."
            out.append(f'<text x="{x + 2:.1f}" y="{y + ROW_PX - 5}">{_xml(text)}</text>')
        out.append("</g>")
    out.append("</svg>")
    return "\n".join(out) + "\n"


def _xml(text: str) -> str:
    """``text`` escaped for the SVG, its control characters shown as escapes (:func:`~rlbench.results.text.plain`):
    XML 1.0 has no NUL, and py-spy once read a frame named ``"\0"`` in ``"\0"`` at line 1,792,822 (a frame torn as it
    was read; CI, 2026-11-29), which made the whole flame graph unreadable."""
    return escape(plain(text))
