"""Reading a spec's YAML safely and quickly, whatever the file holds.

``yaml.safe_load`` builds no Python object a tag names, but it still lets a small file describe a
huge one: aliases share nodes, so ten levels of ten aliases ("billion laughs") are a few hundred
bytes that expand to 10^10 values as soon as anything walks them (the grid expansion, the JSON
copy of each trial's config). Before any value is built, the node graph is measured: its
expanded size (memoised, so counting is linear in the file), its depth and any alias that
contains itself. YAML's own timestamps, binary and sets are refused where a spec has values
(they are not JSON). Every refusal is a :class:`~rlbench.spec.model.SpecError` with the file and
line, raised before anything is run or written.
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

import yaml

from rlbench.results.text import plain
from rlbench.spec.model import SpecError

#: Largest spec file read (bytes). The biggest shipped config is under 2 KiB.
MAX_SPEC_BYTES = 1 << 20
#: Most values a spec may expand to, aliases expanded (a shipped config has under 100).
MAX_EXPANDED_NODES = 100_000
#: Deepest nesting of mappings and lists (a spec uses 4: section, knob, list, env_config value).
MAX_DEPTH = 32


class LineMap:
    """Key path (tuple of keys) -> 1-based line in the YAML file (a node reached again through an
    alias keeps the line of its first path)."""

    def __init__(self, root: yaml.Node | None = None):
        self.lines: dict[tuple, int] = {}
        seen: set[int] = set()
        todo: list[tuple[Any, tuple]] = [(root, ())] if root is not None else []
        while todo:
            node, path = todo.pop()
            if id(node) in seen:
                continue
            seen.add(id(node))
            if isinstance(node, yaml.MappingNode):
                for key_node, value_node in node.value:
                    p = path + (getattr(key_node, "value", None),)
                    self.lines.setdefault(p, key_node.start_mark.line + 1)
                    todo.append((value_node, p))
            elif isinstance(node, yaml.SequenceNode):
                for i, item in enumerate(node.value):
                    self.lines.setdefault(path + (i,), item.start_mark.line + 1)
                    todo.append((item, path + (i,)))

    def line(self, path: tuple) -> int | None:
        while path:
            if path in self.lines:
                return self.lines[path]
            path = path[:-1]
        return None

    def at(self, source: str | Path, *paths: tuple) -> str:
        """Where a message points: ``source:line`` of the first of ``paths`` with a line, else ``source`` alone."""
        line = next((n for n in map(self.line, paths) if n), None)
        return f"{source}:{line}" if line else str(source)


def _at(path: Path, node: yaml.Node) -> str:
    return f"{path}:{node.start_mark.line + 1}"


def check_graph(root: yaml.Node, path: Path) -> None:
    """SpecError if the node graph expands past :data:`MAX_EXPANDED_NODES`, nests deeper than
    :data:`MAX_DEPTH` or holds an alias to a node that contains it."""
    sizes: dict[int, int] = {}
    open_nodes: set[int] = set()

    def size(node: yaml.Node, depth: int) -> int:
        key = id(node)
        if key in sizes:
            return sizes[key]
        if depth > MAX_DEPTH:
            raise SpecError(
                f"{_at(path, node)}: nested more than {MAX_DEPTH} levels deep; a spec needs a few "
                "(section, key, list, value)"
            )
        if key in open_nodes:
            raise SpecError(
                f"{_at(path, node)}: an alias (*name) refers to a mapping or list that contains it; "
                "a spec cannot be infinite"
            )
        open_nodes.add(key)
        total = 1
        if isinstance(node, yaml.MappingNode):
            for k, v in node.value:
                total += size(k, depth + 1) + size(v, depth + 1)
        elif isinstance(node, yaml.SequenceNode):
            for item in node.value:
                total += size(item, depth + 1)
        open_nodes.discard(key)
        sizes[key] = total
        if total > MAX_EXPANDED_NODES:
            raise SpecError(
                f"{_at(path, node)}: with its aliases (*name) expanded this holds more than "
                f"{MAX_EXPANDED_NODES:,} values; write the values out, or use fewer aliases"
            )
        return total

    size(root, 0)


_NOT_JSON = {
    dt.date: "a date/timestamp",
    dt.datetime: "a date/timestamp",
    bytes: "binary (!!binary)",
    set: "a set (!!set)",
}


def check_values(data: Any, path: Path, lines: LineMap) -> None:
    """SpecError for a YAML-only value (timestamp, binary, set) anywhere: a spec's values must be
    text, numbers, booleans, null, lists and mappings (they are stored as JSON)."""
    todo: list[tuple[Any, tuple]] = [(data, ())]
    while todo:
        value, where = todo.pop()
        kind = next((name for t, name in _NOT_JSON.items() if isinstance(value, t)), None)
        if kind is not None:
            key = ".".join(map(str, where)) or "(top level)"
            raise SpecError(
                f"{lines.at(path, where)}: {key}: YAML reads this value as {kind}, which "
                "a spec cannot hold; quote it to make it text"
            )
        if isinstance(value, dict):
            todo += [(v, where + (k,)) for k, v in value.items()]
            todo += [(k, where + (k,)) for k in value if isinstance(k, tuple(_NOT_JSON))]
        elif isinstance(value, list):
            todo += [(v, where + (i,)) for i, v in enumerate(value)]


def read_yaml(path: Path) -> tuple[Any, LineMap]:
    """The spec file's data and line map; SpecError for anything unreadable, too big, too deep,
    expanding too far, or not valid YAML."""
    try:
        with open(path, "rb") as f:
            raw = f.read(MAX_SPEC_BYTES + 1)
    except FileNotFoundError:
        raise SpecError(f"{path}: no such file") from None
    except IsADirectoryError:
        raise SpecError(f"{path}: is a folder, not a spec file") from None
    except OSError as e:
        raise SpecError(f"{path}: cannot read: {e.strerror}") from None
    if len(raw) > MAX_SPEC_BYTES:
        raise SpecError(
            f"{path}: larger than {MAX_SPEC_BYTES // 1024} KiB; a spec is a few KiB (use grid axes "
            "rather than writing trials out)"
        )
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        raise SpecError(f"{path}: not UTF-8 text (byte {e.start}); save the spec as UTF-8") from None
    loader = None
    try:
        loader = yaml.SafeLoader(text)  # its reader refuses some characters (NUL, other controls) already
        root = loader.get_single_node()
        if root is None:
            return None, LineMap()
        check_graph(root, path)
        data = loader.construct_document(root)
    except yaml.MarkedYAMLError as e:
        mark = e.problem_mark
        where = f"{path}:{mark.line + 1}:{mark.column + 1}" if mark else str(path)
        raise SpecError(f"{where}: YAML syntax error: {e.problem or e}") from None
    except yaml.YAMLError as e:
        raise SpecError(f"{path}: YAML error: {plain(e, keep_newlines=True)}") from None
    except RecursionError:  # the parser itself recurses per level: a file nested hundreds deep
        raise SpecError(f"{path}: nested more than {MAX_DEPTH} levels deep; a spec needs a few") from None
    except (ValueError, TypeError, OverflowError) as e:  # e.g. a timestamp with month 13
        raise SpecError(f"{path}: YAML value error: {e}; quote the value to make it text") from None
    finally:
        if loader is not None:
            loader.dispose()
    lines = LineMap(root)
    check_values(data, path, lines)
    return data, lines
