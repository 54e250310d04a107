"""Every repository path and module the docs name exists (README.md and docs/*.md), and the results format
they state is the one this rlbench writes.

Files move (``adapters/rllib_timing.py`` became ``rlbench/adapters/rllib/timing.py``) and the docs
kept the old names for weeks. What counts as a named path:

- a word starting with a top-level folder of the repository (``rlbench/``, ``scripts/``,
  ``configs/``, ``docs/``, ``tests/``, ``envs/``, ``.ci/``), resolved from the repository root:
  in backticks always; elsewhere (prose, code blocks) when it ends with a file extension or ``/``,
  so that "rlbench/Tune" (a ratio) or a table header "envs/r" is not taken for a path. A glob
  (``configs/*.yaml``) must match something.
- in backticks, a path inside the package written from its room (``analysis/tables.py``,
  ``adapters/rllib/``): resolved under ``rlbench/``.
- a relative Markdown link target (``[SCHEMA.md](SCHEMA.md)``): resolved from the doc's folder.
- a dotted module (``python -m rlbench.run.cluster``, ``rlbench.planning.plan.plan_cluster_trials``,
  ``envs.tiny:TinyEnv``): the longest prefix that is a module file must exist, and the next name,
  if any, must be defined at the top of that module (a def, class, assignment or import).

Ignored: URLs, and anything with a placeholder (``<id>``, ``{x}``, ``...``): results folders such
as ``results/<name>/<timestamp>/`` and ``trials/<id>/plan.json`` have one or start with no
repository folder.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from conftest import REPO

TOP_FOLDERS = ("rlbench", "scripts", "configs", "docs", "tests", "envs", ".ci")
#: Rooms of the package (``rlbench/<room>/``), which ARCHITECTURE.md names without ``rlbench/``.
ROOMS = tuple(sorted(p.parent.name for p in (REPO / "rlbench").glob("*/__init__.py")))

_URL = re.compile(r"[a-z][a-z0-9+.-]*://\S+", re.I)
_BACKTICKED = re.compile(r"`([^`\n]+)`")
_LINK = re.compile(r"\]\(([^)\s]+)\)")
_WORD_END = r"(?=[\s`'\"),;:]|\.(?:\s|$)|$)"
_TOP_PATH = re.compile(r"(?<![\w./~-])((?:%s)/[\w./*-]*)" % "|".join(re.escape(f) for f in TOP_FOLDERS))
_ROOM_PATH = re.compile(r"^(?:%s)/(?:[\w/-]*\.py|[\w/-]*/)?$" % "|".join(ROOMS))
_MODULE = re.compile(r"(?<![\w./~-])((?:rlbench|envs)(?:\.[A-Za-z_]\w*)+)(?::([A-Za-z_]\w*))?" + _WORD_END)
_FILE_OR_FOLDER = re.compile(r"(?:\.\w+|/)$")
_PLACEHOLDER = re.compile(r"[<>{}]|\.\.\.")


@dataclass(frozen=True)
class Named:
    """One path or module a doc names: ``kind`` is ``path`` (relative to ``base``) or ``module``."""

    text: str
    line: int
    kind: str
    base: str = ""


def _line_of(text: str, offset: int) -> int:
    return text.count("\n", 0, offset) + 1


def extract(text: str) -> list[Named]:
    """The repository paths and modules named in Markdown ``text``, each with its 1-based line.

    Args:
        text: a Markdown document.
    Returns:
        Named entries; ``base`` is ``""`` for the repository root, ``"rlbench"`` for a room-relative
        path, ``"."`` for a link target (relative to the document's folder).
    """
    blanked = _URL.sub(lambda m: " " * len(m.group(0)), text)  # keep offsets, so lines stay right
    found: list[Named] = []
    ticked = [m.span(1) for m in _BACKTICKED.finditer(blanked)]
    for m in _TOP_PATH.finditer(blanked):
        token = m.group(1).rstrip(".")
        end = m.end(1)
        if end < len(blanked) and blanked[end] in "<>{":
            continue  # the word goes on as a placeholder: results/<name>/...
        in_ticks = any(a <= m.start(1) < b for a, b in ticked)
        if not in_ticks and not _FILE_OR_FOLDER.search(token):
            continue
        if not _PLACEHOLDER.search(token) and token.rstrip("/") not in TOP_FOLDERS:
            found.append(Named(token, _line_of(blanked, m.start(1)), "path"))
    for m in _BACKTICKED.finditer(blanked):
        token = m.group(1).strip()
        if _ROOM_PATH.match(token):
            found.append(Named(token, _line_of(blanked, m.start(1)), "path", "rlbench"))
    for m in _LINK.finditer(blanked):
        target = m.group(1).split("#", 1)[0]
        if target and not target.startswith(("mailto:", "/")) and not _PLACEHOLDER.search(target):
            found.append(Named(target, _line_of(blanked, m.start(1)), "path", "."))
    for m in _MODULE.finditer(blanked):
        name = m.group(1) + (":" + m.group(2) if m.group(2) else "")
        found.append(Named(name, _line_of(blanked, m.start(1)), "module"))
    return found


def _module_file(root: Path, parts: list[str]) -> Path | None:
    base = root.joinpath(*parts)
    for candidate in (base.with_suffix(".py"), base / "__init__.py"):
        if candidate.is_file():
            return candidate
    return None


def _defines(source: str, name: str) -> bool:
    n = re.escape(name)
    return bool(
        re.search(
            rf"^(?:async\s+)?(?:def|class)\s+{n}\b|^{n}\s*[:=]|^(?:from\s+\S+\s+)?import\s.*\b{n}\b", source, re.M
        )
    )


def exists(named: Named, doc: Path, root: Path = REPO) -> bool:
    """Whether what ``named`` names exists under ``root`` (``doc``: the document naming it)."""
    if named.kind == "path":
        folder = doc.parent if named.base == "." else root / named.base
        if any(c in named.text for c in "*?["):
            return any(folder.glob(named.text))
        return (folder / named.text).exists()
    dotted, _, attr = named.text.partition(":")
    parts = dotted.split(".")
    for i in range(len(parts), 0, -1):
        module = _module_file(root, parts[:i])
        if module is None:
            continue
        rest = parts[i:] + ([attr] if attr else [])
        return not rest or _defines(module.read_text(), rest[0])
    return False


def missing(docs: list[Path], root: Path = REPO) -> list[str]:
    """``doc:line: name`` for every path or module named in ``docs`` that does not exist."""
    out = []
    for doc in docs:
        for named in sorted(extract(doc.read_text()), key=lambda n: n.line):
            if not exists(named, doc, root):
                out.append(f"{doc.relative_to(root)}:{named.line}: {named.text}")
    return out


def test_extract_finds_paths_and_modules_and_ignores_urls_and_placeholders():
    sample = (
        "See `rlbench/spec/model.py` and docs/SCHEMA.md, then run\n"
        "`python -m rlbench.run.cluster probe`; the room `analysis/stats.py`; [schema](SCHEMA.md#top).\n"
        "Not these: https://github.com/ray-project/ray/tree/master/rlbench/x.py, `results/smoke/<timestamp>/`,\n"
        "`trials/<id>/plan.json`, `plots/cpu.png`, `profiles/flame-<role>.svg`, rlbench/Tune 0.98x, "
        "`envs.tiny:TinyEnv`.\n"
    )
    got = {(n.text, n.line, n.kind, n.base) for n in extract(sample)}
    assert got == {
        ("rlbench/spec/model.py", 1, "path", ""),
        ("docs/SCHEMA.md", 1, "path", ""),
        ("rlbench.run.cluster", 2, "module", ""),
        ("analysis/stats.py", 2, "path", "rlbench"),
        ("SCHEMA.md", 2, "path", "."),
        ("envs.tiny:TinyEnv", 4, "module", ""),
    }


def test_missing_names_the_doc_and_line_of_a_moved_file(tmp_path):
    (tmp_path / "rlbench" / "run").mkdir(parents=True)
    (tmp_path / "rlbench" / "__init__.py").write_text("")
    (tmp_path / "rlbench" / "run" / "__init__.py").write_text("")
    (tmp_path / "rlbench" / "run" / "cluster.py").write_text("def probe_cluster():\n    pass\n")
    doc = tmp_path / "README.md"
    doc.write_text(
        "`rlbench/run/cluster.py` exists.\n"
        "`rlbench/adapters/rllib_timing.py` moved; so did `python -m rlbench.cluster probe`.\n"
        "rlbench.run.cluster.probe_cluster is there, rlbench.run.cluster.gone is not.\n"
    )
    assert missing([doc], tmp_path) == [
        "README.md:2: rlbench/adapters/rllib_timing.py",
        "README.md:2: rlbench.cluster",
        "README.md:3: rlbench.run.cluster.gone",
    ]


def test_every_path_the_docs_name_exists():
    docs = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
    gone = missing(docs)
    assert not gone, "paths named in the docs that are not in the repository (fix the doc):\n" + "\n".join(gone)


#: How a doc states the results format it describes: "format 3", "schema version 3", "schema 3".
_FORMAT_STATED = re.compile(r"(?:results format|schema version|result schema \(format)\s+(\d+)", re.I)


def test_the_docs_state_the_results_format_this_rlbench_writes():
    """The README said "schema version 1" for weeks after format 3 (issue 39). SCHEMA.md's title and the last
    row of its format history name the current format; the README states none (it links to SCHEMA.md), or
    the current one."""
    from rlbench import SCHEMA_VERSION

    schema = (REPO / "docs" / "SCHEMA.md").read_text()
    assert schema.splitlines()[0] == f"# Result schema (format {SCHEMA_VERSION})"
    history = re.findall(r"^\| (\d+) \| rlbench", schema, re.M)
    assert history and int(history[-1]) == SCHEMA_VERSION, history
    stated = [int(n) for n in _FORMAT_STATED.findall((REPO / "README.md").read_text())]
    assert all(n == SCHEMA_VERSION for n in stated), f"README.md states results format {stated}, not {SCHEMA_VERSION}"


def test_a_stated_format_is_found():
    assert _FORMAT_STATED.findall("docs/SCHEMA.md (schema version 1). # Result schema (format 3)") == ["1", "3"]
