"""The house's rules (docs/ARCHITECTURE.md), checked on the source: rooms import one way, no cycle,
no module over 460 lines, one module per class name, RLlib only behind the adapter, the worker room on the
standard library."""

from __future__ import annotations

import ast
import dataclasses
import inspect
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from conftest import REPO

PACKAGE = REPO / "rlbench"
#: 400 lines before the formatter (ruff format, issue 51): the same code is about 14% longer in its style (28,021 ->
#: 32,077 lines over rlbench/ on e9c689c), so the same size of module is 460 of its lines.
MAX_LINES = 460

#: Room -> the rooms its modules may import (at module level, or inside a function), its own included.
#: Bottom to top: ray_facts and results, adapters, worker, measure, spec, planning, studies, analysis, autoconfig,
#: run, report, commands. The spec (the user's words) reads no machine; the planning (what they become here) does.
#: ``ray_facts`` (Ray's process facts and the one seam to its private API) is the floor every room that
#: meets Ray may stand on.
MAY_IMPORT: dict[str, set[str]] = {
    "ray_facts": {"ray_facts"},
    "results": {"results"},
    "adapters": {"adapters", "ray_facts"},
    "worker": {"worker", "results", "ray_facts"},
    "measure": {"measure", "worker", "adapters", "results", "ray_facts"},
    "spec": {"spec", "adapters", "results"},
    "planning": {"planning", "spec", "adapters", "measure", "results"},
    "studies": {"studies", "adapters", "ray_facts"},
    "run": {
        "run",
        "spec",
        "planning",
        "results",
        "measure",
        "worker",
        "adapters",
        "studies",
        "autoconfig",
        "ray_facts",
    },
    "analysis": {"analysis", "results", "spec", "planning", "adapters", "studies"},
    "autoconfig": {"autoconfig", "analysis", "spec", "results"},
    "report": {"report", "analysis", "results", "spec", "planning", "measure"},
    "commands": {
        "commands",
        "ray_facts",
        "run",
        "spec",
        "planning",
        "results",
        "measure",
        "worker",
        "adapters",
        "studies",
        "analysis",
        "report",
        "autoconfig",
    },
}
#: Modules of a room below its own that a room may import beyond its row of :data:`MAY_IMPORT`: room -> modules.
#: The studies derive servebench's cell seeds with the one derivation (``spec/seeds.py``, standard library only); the
#: autoconfig driver reads a walk's point through the configuration rows the report would give (``walk_rows``).
ALSO_MAY_IMPORT: dict[str, set[str]] = {"studies": {"rlbench.spec.seeds"}, "run": {"rlbench.analysis.walk_rows"}}
#: The only imports a module may make of a room above its own, each inside a function: the trial
#: process is where the worker meets the plan and the training system (module -> rlbench modules).
UPWARD_EXCEPTIONS: dict[str, set[str]] = {
    "rlbench.worker.trial": {"rlbench.planning.plan", "rlbench.adapters"},
}
#: What a worker module may import beyond the standard library, inside a function only (it runs in
#: the trial process or a Ray worker, which have these): module -> top-level package names.
WORKER_LAZY_THIRD_PARTY: dict[str, set[str]] = {
    "rlbench.worker.threads": {"threadpoolctl"},
    "rlbench.worker.node_set": {"ray"},
    "rlbench.worker.trial_actor": {"ray"},
    "rlbench.worker.runtime": {"ray"},
    "rlbench.worker.cluster_trial": {"ray"},
    "rlbench.worker.node_sampler": {"ray"},
    "rlbench.worker.nvml": {"pynvml"},
    "rlbench.worker.ray_auth": {"ray"},
}
#: rlbench modules a worker module may import at module level (standard library only themselves).
WORKER_TOP_LEVEL_RLBENCH = (
    "rlbench.worker",
    "rlbench.ray_facts",
    "rlbench.results.layout",
    "rlbench.results.files",
    "rlbench.results.events",
)


def module_name(path: Path) -> str:
    parts = path.relative_to(REPO).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def _resolve(base: str, name: str | None) -> str:
    """``from base import name``: the module it names (a submodule, else ``base`` itself)."""
    if name and f"{base}.{name}" in MODULES:
        return f"{base}.{name}"
    return base


def imports(module: str, *, type_checking: bool = False) -> list[tuple[str, bool]]:
    """(imported module, inside a function) for every import of ``module`` outside ``if TYPE_CHECKING``
    (inside it too with ``type_checking``)."""
    return imports_in(MODULES[module].read_text(), type_checking=type_checking)


def imports_in(source: str, *, type_checking: bool = False) -> list[tuple[str, bool]]:
    """:func:`imports` of a module's text."""
    tree = ast.parse(source)
    out: list[tuple[str, bool]] = []

    def visit(node: ast.AST, lazy: bool) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and "TYPE_CHECKING" in ast.unparse(child.test) and not type_checking:
                continue  # for type checkers only: never executed
            if isinstance(child, ast.Import):
                out.extend((a.name, lazy) for a in child.names)
            elif isinstance(child, ast.ImportFrom) and child.module and child.level == 0:
                out.extend((_resolve(child.module, a.name), lazy) for a in child.names)
            inner = lazy or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
            visit(child, inner)

    visit(tree, False)
    return out


def room(module: str) -> str | None:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 and parts[1] in MAY_IMPORT else None


def ours(name: str) -> str | None:
    """The rlbench module an import names (the longest known prefix), or None for other packages."""
    parts = name.split(".")
    for n in range(len(parts), 0, -1):
        candidate = ".".join(parts[:n])
        if candidate in MODULES:
            return candidate
    return None


def test_the_checker_sees_imports_at_both_levels():
    assert ("rlbench.worker.nvml", False) in imports("rlbench.measure.machine")  # module level
    assert ("rlbench.adapters", True) in imports("rlbench.worker.trial")  # inside a function
    assert ours("rlbench.worker.trial.main") == "rlbench.worker.trial" and ours("numpy") is None


#: Imports for type checkers only (``if TYPE_CHECKING``) that cross the rooms the wrong way, each listed with why
#: (issue 51: four were there unlisted). A type named, never imported at run time: each names the type of a value
#: the room below is handed by the room above, where importing its module would pull that room in.
TYPE_ONLY_EXCEPTIONS: dict[str, set[str]] = {
    # the decision core is handed each candidate's resources and train batch by the driver, which asks the adapter
    "rlbench.autoconfig.model": {"rlbench.adapters.demand"},
    # ... and the answer's snippet, which the driver asks of the adapter
    "rlbench.autoconfig.outputs": {"rlbench.adapters.base"},
    # the trial process and a --parallel trial's driver meet the plan and the trainer (their run-time imports are in
    # functions: UPWARD_EXCEPTIONS); the runtime reads a plan's runtime fields
    "rlbench.worker.trial": {"rlbench.adapters.base", "rlbench.adapters.timings", "rlbench.planning.plan"},
    "rlbench.worker.node_set": {"rlbench.adapters.timings", "rlbench.planning.plan"},
    "rlbench.worker.runtime": {"rlbench.planning.plan"},
}


def one_way_violations(module: str, source: str) -> list[str]:
    """Where ``module`` imports a room its row of :data:`MAY_IMPORT` does not name: at module level, in a function
    (unless :data:`UPWARD_EXCEPTIONS` lists it), or for type checkers (unless :data:`TYPE_ONLY_EXCEPTIONS` does)."""
    mine = room(module)
    if mine is None:
        return []
    run_time = set(imports_in(source))
    wrong = []
    for name, lazy in imports_in(source, type_checking=True):
        target = ours(name)
        if target is None or room(target) is None or room(target) in MAY_IMPORT[mine]:
            continue
        if target in ALSO_MAY_IMPORT.get(mine, ()):
            continue
        if (name, lazy) not in run_time:  # for type checkers only
            if target in TYPE_ONLY_EXCEPTIONS.get(module, ()):
                continue
            wrong.append(f"{module} imports {target} (for type checkers)")
            continue
        if lazy and any(target == e or target.startswith(e + ".") for e in UPWARD_EXCEPTIONS.get(module, ())):
            continue
        wrong.append(f"{module} imports {target} ({'in a function' if lazy else 'at module level'})")
    return wrong


def test_the_rooms_checker_sees_each_wrong_way():
    """The spec reads no machine and no plan since issue 51 (the plan is planning/'s); a type-only import is a
    crossing too unless listed."""
    planted = (
        "from typing import TYPE_CHECKING\n"
        "from rlbench.measure.machine import MachineInfo\n"
        "def f():\n    from rlbench.planning.plan import TrialPlan\n"
        "if TYPE_CHECKING:\n    from rlbench.run.sweep import SweepOutcome\n"
        "from rlbench.adapters import get_adapter\n"
    )
    assert one_way_violations("rlbench.spec.load", planted) == [
        "rlbench.spec.load imports rlbench.measure.machine (at module level)",
        "rlbench.spec.load imports rlbench.planning.plan (in a function)",
        "rlbench.spec.load imports rlbench.run.sweep (for type checkers)",
    ]
    listed = "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from rlbench.planning.plan import TrialPlan\n"
    assert one_way_violations("rlbench.worker.runtime", listed) == []
    assert one_way_violations("rlbench.worker.events", listed) == [
        "rlbench.worker.events imports rlbench.planning.plan (for type checkers)"
    ]


def test_rooms_import_one_way():
    assert [w for m, p in MODULES.items() for w in one_way_violations(m, p.read_text())] == []


def test_every_listed_crossing_is_still_there():
    """The lists only shrink: an entry whose import is gone is taken off."""
    stale = [
        f"{m}: {t}"
        for table, type_checking in ((TYPE_ONLY_EXCEPTIONS, True), (UPWARD_EXCEPTIONS, False))
        for m, targets in table.items()
        for t in targets
        if not any(
            ours(n) == t or (ours(n) or "").startswith(t + ".") for n, _ in imports(m, type_checking=type_checking)
        )
    ]
    assert stale == []


def import_cycles(sources: dict[str, str]) -> list[str]:
    """Every cycle of imports among ``sources`` (module -> its text), through imports inside functions and
    ``if TYPE_CHECKING`` blocks too: a type checker's import is still one module leaning on another, and two
    modules that each need the other's names are one thing in two files (issue 44 found evidence <-> change and
    evidence <-> advice hidden that way)."""
    known = set(sources)

    def target(name: str) -> str | None:
        parts = name.split(".")
        return next((".".join(parts[:n]) for n in range(len(parts), 0, -1) if ".".join(parts[:n]) in known), None)

    graph = {
        m: sorted({t for n, _ in imports_in(text, type_checking=True) if (t := target(n)) and t != m})
        for m, text in sources.items()
    }
    cycles: list[str] = []
    state: dict[str, str] = {}

    def walk(node: str, stack: list[str]) -> None:
        state[node] = "open"
        for nxt in graph[node]:
            if state.get(nxt) == "open":
                cycles.append(" -> ".join(stack[stack.index(nxt) :] + [nxt]))
            elif nxt not in state:
                walk(nxt, stack + [nxt])
        state[node] = "done"

    for m in graph:
        if m not in state:
            walk(m, [m])
    return cycles


def test_the_cycle_checker_sees_a_cycle_through_type_checking_imports():
    planted = {
        "rlbench.analysis.change": "from rlbench.analysis import evidence\n",
        "rlbench.analysis.evidence": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
        "    from rlbench.analysis.change import Change\n",
        "rlbench.analysis.stats": "import numpy\n",
        "rlbench.analysis.advice": "def f():\n    from rlbench.analysis.stats import num\n",
    }
    assert import_cycles(planted) == ["rlbench.analysis.change -> rlbench.analysis.evidence -> rlbench.analysis.change"]
    planted["rlbench.analysis.change"] = "from rlbench.analysis import stats\n"
    assert import_cycles(planted) == []


def test_no_import_cycle_even_through_imports_inside_functions_or_for_type_checkers():
    assert import_cycles({m: p.read_text() for m, p in MODULES.items()}) == []


def test_no_module_over_460_lines():
    long = {m: n for m, p in MODULES.items() if (n := len(p.read_text().splitlines())) > MAX_LINES}
    assert long == {}


#: Class names two modules define, each with the modules, and why it is allowed for now. Each entry must still
#: be true (the test says when one is not), so the list only shrinks.
SAME_CLASS_NAME_EXCEPTIONS: dict[str, tuple[str, ...]] = {
    # Empty since issue 51: the last one, ``Figure`` (report/blocks.py and report/config_plots.py, one thing twice),
    # is report/blocks.py's alone.
}


def class_names_defined_twice(sources: dict[str, str]) -> dict[str, tuple[str, ...]]:
    """Class name -> the modules that define it (sorted), for every name more than one module defines
    (``sources``: module -> its text; classes inside functions and classes count too)."""
    where: dict[str, set[str]] = {}
    for module, source in sources.items():
        for node in ast.walk(ast.parse(source)):
            if isinstance(node, ast.ClassDef):
                where.setdefault(node.name, set()).add(module)
    return {name: tuple(sorted(modules)) for name, modules in sorted(where.items()) if len(modules) > 1}


def test_the_class_name_checker_sees_a_name_in_two_modules():
    planted = {
        "rlbench.spec.model": "class GridPoint:\n    pass\n",
        "rlbench.analysis.variants": "def f():\n    class GridPoint:\n        pass\n",
        "rlbench.analysis.comparison": "class Comparison:\n    pass\n",
        "rlbench.analysis.servebench_rows": "class PathComparison:\n    pass\n",
    }
    assert class_names_defined_twice(planted) == {"GridPoint": ("rlbench.analysis.variants", "rlbench.spec.model")}


def test_a_class_name_means_one_thing():
    """A reader who meets ``Probe`` or ``Comparison`` knows which one without the import (issue 44 renamed three
    ``Probe``, two ``Comparison`` and two ``GridPoint`` that held different things in different modules)."""
    found = class_names_defined_twice({m: p.read_text() for m, p in MODULES.items()})
    assert {n: ms for n, ms in found.items() if SAME_CLASS_NAME_EXCEPTIONS.get(n) != ms} == {}
    assert {n: ms for n, ms in SAME_CLASS_NAME_EXCEPTIONS.items() if found.get(n) != ms} == {}, "stale exception"


#: The adapters' shared modules, no framework's: the protocol and types, the base class, the spec's key vocabulary,
#: the one role classifier, env making, inert Python source, the seam to a GPU's own clock.
NEUTRAL_ADAPTER_MODULES = (
    "rlbench.adapters",
    "rlbench.adapters.base",
    "rlbench.adapters.demand",
    "rlbench.adapters.timings",
    "rlbench.adapters.vocabulary",
    "rlbench.adapters.roles",
    "rlbench.adapters.envs",
    "rlbench.adapters.pysource",
    "rlbench.adapters.cuda_clock",
)


def framework_of(module: str) -> str | None:
    """The framework package a module belongs to (``rllib`` for ``rlbench.adapters.rllib.config``), or None."""
    parts = module.split(".")
    return (
        parts[2]
        if len(parts) > 2 and parts[:2] == ["rlbench", "adapters"] and module not in NEUTRAL_ADAPTER_MODULES
        else None
    )


def adapters_leaning_on_another(sources: dict[str, str]) -> list[str]:
    """Where an adapter imports another adapter's modules, or a neutral module imports a framework's (type
    checkers included): a framework's tables are its own; what two share is in a neutral module. The registry
    (``rlbench.adapters``) is the one module that names them all."""
    wrong = []
    for module, source in sources.items():
        mine = framework_of(module)
        for name, _ in imports_in(source, type_checking=True):
            theirs = framework_of(name)
            if theirs is not None and theirs != mine and module != "rlbench.adapters":
                wrong.append(f"{module} imports {name}")
    return wrong


def test_the_adapter_checker_sees_one_adapter_lean_on_another():
    planted = {
        "rlbench.adapters.sb3.mapping": "from rlbench.adapters.rllib.training import ALGO_TRAINING_KEYS\n",
        "rlbench.adapters.plain": "from rlbench.adapters.vocabulary import ALGORITHMS\n",
        "rlbench.adapters.common": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
        "    from rlbench.adapters.rllib import RLlibAdapter\n",
        "rlbench.adapters": "from rlbench.adapters.rllib import RLlibAdapter\n",
    }
    assert adapters_leaning_on_another(planted) == [
        "rlbench.adapters.sb3.mapping imports rlbench.adapters.rllib.training",
        "rlbench.adapters.common imports rlbench.adapters.rllib",
    ]


def test_no_adapter_imports_another():
    """sb3 and plain imported RLlib's key tables until issue 44: the spec's vocabulary is now adapters/vocabulary.py."""
    assert adapters_leaning_on_another({m: p.read_text() for m, p in MODULES.items()}) == []


def test_no_module_outside_the_adapters_names_a_concrete_adapter():
    """Outside ``adapters/`` only the registry and the neutral modules are imported (type checkers included):
    another framework is a new adapter package, not a change across the house."""
    wrong = [
        f"{m}: {n}"
        for m in MODULES
        if not m.startswith("rlbench.adapters")
        for n, _ in imports(m, type_checking=True)
        if (t := ours(n)) and t.startswith("rlbench.adapters") and t not in NEUTRAL_ADAPTER_MODULES
    ]
    assert wrong == []


def test_adapters_never_import_the_spec_even_for_type_checkers():
    """The spec imports the adapters' registry; an adapter reaching back up to the spec would be a
    cycle of meaning even where it is not one at run time. (The floor, Ray's facts, is below them.)"""
    wrong = [
        f"{m}: {n}"
        for m in MODULES
        if m.startswith("rlbench.adapters")
        for n, _ in imports(m, type_checking=True)
        if (t := ours(n)) and room(t) not in (None, "adapters", "ray_facts")
    ]
    assert wrong == []


def algorithm_literals(source: str, algorithms: tuple[str, ...]) -> list[str]:
    """Strings in ``source`` that are an algorithm's name (the form its knowledge takes: a tuple of names,
    a table's key, a comparison, a Literal), other than the default of a field named ``algo``. Prose that
    mentions one (a docstring, a measured figure's conditions) is not knowledge of what it accepts."""
    tree = ast.parse(source)
    default = {
        id(n.value)
        for n in ast.walk(tree)
        if isinstance(n, ast.AnnAssign) and ast.unparse(n.target) == "algo" and n.value is not None
    }
    return [
        f"line {n.lineno}: {n.value!r}"
        for n in ast.walk(tree)
        if isinstance(n, ast.Constant) and n.value in algorithms and id(n) not in default
    ]


def test_the_algorithm_checker_sees_names_but_not_prose_or_the_default():
    named = 'X = ("PPO", "APPO")\nif algo == "IMPALA":\n    pass\nd = {"APPO": 1}\nA = Literal["PPO"]\n'
    fine = '"""PPO docstring."""\nclass C:\n    algo: Algo = "PPO"\n    """APPO too."""\n    x = "a PPO run"\n'
    assert len(algorithm_literals(named, ("PPO", "APPO", "IMPALA"))) == 5
    assert algorithm_literals(fine, ("PPO", "APPO", "IMPALA")) == []


def test_the_spec_names_no_algorithm_but_the_default():
    """Which algorithms exist and what each accepts is the adapters' knowledge (``Adapter.algorithms``,
    ``training_keys``, ``algo_only_keys``, ``removed_keys``): the spec names none but ``algo``'s default."""
    from rlbench.adapters import ALL_ALGORITHMS

    wrong = {
        m: found
        for m, p in MODULES.items()
        if m.startswith("rlbench.spec") and (found := algorithm_literals(p.read_text(), ALL_ALGORITHMS))
    }
    assert wrong == {}


@dataclasses.dataclass(frozen=True)
class FrameworkWords:
    """What only a framework's adapter may say, taken from that adapter's own tables (the list grows with it)."""

    algorithms: tuple[str, ...]
    """Its algorithms' names (as string literals: a table's key, a comparison, a default)."""
    classes: frozenset[str]
    """Its class names (config classes, actor classes) and module path, as names or inside any string."""
    methods: frozenset[str]
    """Its config's builder methods, as calls (``x.env_runners(...)``): as names they are the spec's sections."""
    result_keys: frozenset[str]
    """Its result dict's keys and ``/`` paths, as string literals."""
    result_prefixes: tuple[str, ...]
    """A string literal starting with one of these is a path into its result dict."""


def rllib_words() -> FrameworkWords:
    """RLlib's words, from the RLlib adapter: its algorithms, config and actor classes, the builder methods its
    build calls, its result paths, and of their keys those that are not rlbench's own vocabulary (the spec's
    field names, the tables' columns, the stop metrics' short names)."""
    from rlbench.adapters.rllib import config as rllib_config
    from rlbench.adapters.rllib import results
    from rlbench.adapters.rllib.roles import RAY_TITLE_ROLES
    from rlbench.adapters.timings import IterationTimings
    from rlbench.adapters.vocabulary import ALGORITHMS
    from rlbench.results.tables import ITERATION_SCHEMA, RUNNER_ITERATION_SCHEMA
    from rlbench.spec.model import TrialConfig

    classes = {cls for _, cls in rllib_config.ALGO_CONFIG_CLASSES.values()} | {"AlgorithmConfig", "ray.rllib"}
    classes |= {t.removeprefix("ray::") for t, role in RAY_TITLE_ROLES.items() if role != "ray_system"}
    build = ast.parse(inspect.getsource(rllib_config.build_config))
    methods = {
        node.func.attr
        for node in ast.walk(build)
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and ast.unparse(node.func.value).startswith("algo_config")
    }
    example = TrialConfig.model_validate(
        {"environment": {"env": "E"}, "training": {"lr": 0.1}, "rl_module": {"fcnet_hiddens": [8]}}
    )
    methods |= {method for method, _ in rllib_config.spec_calls(example)}
    paths = [
        v
        for k, v in vars(results).items()
        if k.isupper() and isinstance(v, tuple) and v and all(isinstance(x, str) for x in v)
    ] + list(results.RESULT_METRICS.values())

    def fields(model: Any, out: set[str]) -> set[str]:
        for name, f in model.model_fields.items():
            out |= {name, f.alias or name}
            if isinstance(f.annotation, type) and hasattr(f.annotation, "model_fields"):
                fields(f.annotation, out)
        return out

    ours = (
        fields(TrialConfig, set())
        | set(ITERATION_SCHEMA.names)
        | set(RUNNER_ITERATION_SCHEMA.names)
        | {f.name for f in dataclasses.fields(IterationTimings)}
        | set(results.RESULT_METRICS)
        | {"rlbench", "sample", "runner", "updates", "busy_s"}
    )  # the last four: rlbench's own words too
    keys = {key for path in paths for key in path} - ours | {"/".join(path) for path in paths if len(path) > 1}
    prefixes = tuple(sorted({f"{path[0]}/" for path in paths if len(path) > 1}))
    return FrameworkWords(ALGORITHMS, frozenset(classes), frozenset(methods), frozenset(keys), prefixes)


def framework_words_in(source: str, words: FrameworkWords) -> list[str]:
    """Where ``source`` says a framework's words: an algorithm's name as a literal (:func:`algorithm_literals`),
    one of its class names as a name or inside a string, a call of its config's builder methods, a result key
    or path as a literal. Docstrings (a string standing alone as a statement) and comments are prose, not
    knowledge, and are not read."""
    tree = ast.parse(source)
    found = algorithm_literals(source, words.algorithms)
    prose = {id(n.value) for n in ast.walk(tree) if isinstance(n, ast.Expr) and isinstance(n.value, ast.Constant)}
    for n in ast.walk(tree):
        names: list[str] = []
        if isinstance(n, ast.Name):
            names = [n.id]
        elif isinstance(n, ast.Attribute):
            names = [n.attr]
        elif isinstance(n, ast.alias):
            names = [n.name, n.asname or ""]
        elif isinstance(n, (ast.FunctionDef, ast.ClassDef)):
            names = [n.name]
        elif isinstance(n, ast.ImportFrom):
            names = [n.module or ""]
        found += [
            f"line {getattr(n, 'lineno', '?')}: name {x}"
            for x in names
            if any(x == c or x.startswith(c + ".") for c in words.classes)
        ]
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr in words.methods:
            found.append(f"line {n.lineno}: call .{n.func.attr}(...)")
        if isinstance(n, ast.Constant) and isinstance(n.value, str) and id(n) not in prose:
            text = n.value
            if any(c in text for c in words.classes):
                found.append(f"line {n.lineno}: {text[:60]!r} names a class")
            if text in words.result_keys or text.startswith(words.result_prefixes):
                found.append(f"line {n.lineno}: {text!r} is a result key")
    return found


def test_the_framework_checker_sees_each_kind_of_word_but_not_prose():
    words = FrameworkWords(
        ("PPO",),
        frozenset({"PPOConfig", "ray.rllib"}),
        frozenset({"env_runners"}),
        frozenset({"timers/sample", "__all_modules__"}),
        ("env_runners/", "timers/"),
    )
    said = """
from ray.rllib.algorithms.ppo import PPOConfig
ALGO = {"PPO": ("ray.rllib.algorithms.ppo", "PPOConfig")}
c = PPOConfig().env_runners(num_env_runners=1)
x = r["__all_modules__"]
if metric in ("episode_return_mean", "env_runners/episode_return_mean"):
    pass
t = "timers/sample"
"""
    fine = '''"""PPOConfig().env_runners(...) reads env_runners/episode_return_mean (PPO)."""
x = config.env_runners.num_env_runners  # PPOConfig, timers/sample
def f():
    """ray.rllib's __all_modules__."""
    return {"env_runners": 1, "episode_return_mean": 2, "note": "a PPO run on RLlib"}
'''
    kinds = " ".join(framework_words_in(said, words))
    assert framework_words_in(fine, words) == []
    for kind in (
        "'PPO'",
        "name ray.rllib",
        "name PPOConfig",
        "names a class",
        "call .env_runners",
        "'__all_modules__' is a result key",
        "'env_runners/episode_return_mean' is a result key",
        "'timers/sample' is a result key",
    ):
        assert kind in kinds, kind


def test_rllib_words_are_taken_from_its_adapter():
    words = rllib_words()
    assert {"PPO", "APPO", "IMPALA"} <= set(words.algorithms)
    assert {"PPOConfig", "AlgorithmConfig", "SingleAgentEnvRunner", "ray.rllib"} <= words.classes
    assert {
        "environment",
        "env_runners",
        "learners",
        "training",
        "rl_module",
        "reporting",
        "callbacks",
    } <= words.methods
    assert {
        "env_runners/episode_return_mean",
        "timers/synch_weights",
        "__all_modules__",
        "default_policy",
    } <= words.result_keys
    assert not words.result_keys & {"env_runners", "learners", "episode_return_mean", "num_env_runners", "sample_s"}


def test_rllib_words_only_in_its_adapter():
    """Outside ``adapters/`` (everywhere, not only in the spec) no RLlib algorithm name but ``algo``'s default,
    no RLlib config or actor class, no call of its config's builder methods, no key of its result dict: the
    rest of rlbench asks the adapter (docs/ARCHITECTURE.md, "adding an algorithm", "adding a framework")."""
    words = rllib_words()
    wrong = {
        m: found
        for m, p in MODULES.items()
        if not m.startswith("rlbench.adapters") and (found := framework_words_in(p.read_text(), words))
    }
    assert wrong == {}


def test_the_spec_names_the_frameworks_the_registry_has():
    import typing

    from rlbench.adapters import FRAMEWORKS
    from rlbench.spec.model import Framework

    assert typing.get_args(Framework) == FRAMEWORKS


def test_rllib_is_imported_under_the_adapter_only():
    outside = [
        f"{m}: {n}"
        for m in MODULES
        for n, _ in imports(m)
        if n.startswith("ray.rllib") and not m.startswith("rlbench.adapters")
    ]
    assert outside == []


def test_worker_modules_import_the_standard_library_only():
    """Module level: the standard library and the stdlib-only bottom of rlbench. Inside functions:
    also the few packages the process they run in is known to have (listed above)."""
    stdlib = set(sys.stdlib_module_names) | {"__future__"}
    wrong = []
    for module in [m for m in MODULES if m.startswith("rlbench.worker")]:
        allowed_lazy = WORKER_LAZY_THIRD_PARTY.get(module, set())
        for name, lazy in imports(module):
            top = name.split(".")[0]
            if top in stdlib:
                continue
            if top == "rlbench":
                if lazy or any(name == p or name.startswith(p + ".") for p in WORKER_TOP_LEVEL_RLBENCH):
                    continue
            elif lazy and top in allowed_lazy:
                continue
            wrong.append(f"{module}: {name} ({'in a function' if lazy else 'at module level'})")
    assert wrong == []


@pytest.mark.parametrize(
    "module",
    [m for m in MODULES if m.startswith(("rlbench.worker", "rlbench.ray_facts"))]
    + ["rlbench.results.layout", "rlbench.results.files", "rlbench.results.events"],
)
def test_worker_modules_import_with_no_site_packages(module):
    """For real: ``python -S`` (no site-packages: no pydantic, psutil, numpy, Ray) imports each one."""
    done = subprocess.run([sys.executable, "-S", "-c", f"import {module}"], cwd=REPO, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


def test_the_reaper_runs_as_isolated_script():
    """The reaper starts as ``python -I -S reaper.py``: standard library only, no rlbench import at all."""
    reaper = PACKAGE / "worker" / "reaper.py"
    assert not [n for n, _ in imports("rlbench.worker.reaper") if n.startswith("rlbench")]
    done = subprocess.run([sys.executable, "-I", "-S", str(reaper)], capture_output=True, text=True)
    assert "IndexError" in done.stderr  # it got as far as reading its arguments: every import worked


#: What the autoconfig room may import of the rooms below it: the one bootstrap engine and rank test (stats), the
#: one rule of "did it change?" (change), the evidence rules (findings: a rank test's significance; evidence: what
#: too few repeats lack), the steady window and a trial's
#: throughput (windows, trial_rows: a reading is what the report shows for the trial), a probe's learn windows
#: (learner: the learner GPU's busy share splits its update time), how a label shows an axis (configs), what a
#: point's verdicts ask for next, the knobs' facts and the row the verdicts read (next_step, knobs, config_row),
#: the spec's model types, the seeds' one derivation, the
#: safe write and the file names (docs/AUTOCONFIG.md); never the sweep, the report or the adapter.
AUTOCONFIG_MAY_IMPORT = (
    "rlbench.autoconfig",
    "rlbench.analysis.stats",
    "rlbench.analysis.findings",
    "rlbench.analysis.evidence",
    "rlbench.analysis.autoconfig_run",
    "rlbench.analysis.change",
    "rlbench.analysis.windows",
    "rlbench.analysis.trial_rows",
    "rlbench.analysis.configs",
    "rlbench.analysis.learner",
    "rlbench.analysis.next_step",
    "rlbench.analysis.knobs",
    "rlbench.analysis.config_row",
    "rlbench.spec.model",
    "rlbench.spec.training",
    "rlbench.spec.limits",
    "rlbench.spec.seeds",
    "rlbench.results.files",
    "rlbench.results.layout",
)


def test_autoconfig_imports_stats_spec_models_and_the_safe_write_only():
    wrong = [
        f"{m}: {t}"
        for m in MODULES
        if m.startswith("rlbench.autoconfig")
        for n, _ in imports(m)
        if (t := ours(n)) and not any(t == p or t.startswith(p + ".") for p in AUTOCONFIG_MAY_IMPORT)
    ]
    assert wrong == []


def bare_event_names(source: str) -> list[str]:
    """Where ``source`` names an event by a string literal instead of through ``Event``: written
    (``events.write("x", ...)``, ``{"event": "x"}``), compared (``e.event == "x"``, ``e["event"] == "x"``,
    ``e.get("event") != "x"``) or looked up (``trial.event("x")``, ``_event(events, "x")``)."""

    def text(node: ast.AST) -> bool:
        return isinstance(node, ast.Constant) and isinstance(node.value, str)

    def names_the_event(node: ast.AST) -> bool:
        if isinstance(node, ast.Attribute):
            return node.attr == "event"
        if isinstance(node, ast.Subscript):
            return isinstance(node.slice, ast.Constant) and node.slice.value == "event"
        return (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "get"
            and bool(node.args)
            and isinstance(node.args[0], ast.Constant)
            and node.args[0].value == "event"
        )

    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Compare):
            sides = [node.left, *node.comparators]
            if any(names_the_event(n) for n in sides) and any(text(n) for n in sides):
                found.append(ast.unparse(node))
        elif isinstance(node, ast.Dict):
            if any(text(k) and k.value == "event" and text(v) for k, v in zip(node.keys, node.values)):
                found.append(ast.unparse(node))
        elif isinstance(node, ast.Call) and any(text(a) for a in node.args):
            func = node.func
            name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
            writes = name == "write" and ast.unparse(getattr(func, "value", func)).endswith("events")
            if writes and text(node.args[0]) or name in ("event", "_event"):
                found.append(ast.unparse(node))
    return found


def test_the_event_checker_sees_each_way_of_naming_an_event():
    bare = """
events.write("trained")
self.events.write("ray_init", ray_init_s=1.0)
{"event": "profile", "t_s": 0.0}
e["event"] == "end"
e.get("event") != "iteration"
e.event == "trained"
trial.event("build")
_event(events, "shutdown")
"""
    named = """
events.write(Event.TRAINED)
{"event": Event.PROFILE, "t_s": 0.0}
e.get("event") == Event.END
e.event == Event.TRAINED
trial.event(Event.BUILD)
e.get("status") == "skipped"
self._file.write("text")
"""
    assert len(bare_event_names(bare)) == 8
    assert bare_event_names(named) == []


def test_events_are_named_through_the_results_events_module_only():
    """One list of events (rlbench/results/events.py): writers and readers cannot drift apart on a name."""
    wrong = {
        m: found
        for m, p in MODULES.items()
        if m != "rlbench.results.events" and (found := bare_event_names(p.read_text()))
    }
    assert wrong == {}


def test_the_schema_names_every_event():
    from rlbench.results.events import Event

    schema = (REPO / "docs" / "SCHEMA.md").read_text()
    assert [e.value for e in Event if f"`{e.value}`" not in schema] == []


#: Names of a module-level constant that states a threshold of its own (a significance, a tolerance, a confidence
#: level): every one is analysis/findings.py's, where the analysis and every command read it.
THRESHOLD_NAME = re.compile(r"THRESHOLD|TOLERANCE|CONFIDENCE|SIGNIFICANCE|(^|_)ALPHA($|_)")
#: A confidence level typed by hand in text (``95% CI``): the text is made from ``findings.CONFIDENCE``.
TYPED_LEVEL = re.compile(r"\b\d{2}(\.\d+)?%\s*(CI|confidence|bootstrap|interval|percentile)", re.I)
#: A count of readings, repeats or rounds typed in text (``fewer than 3 readings``, ``3 or more readings a side``): the
#: text is made from ``findings.REPEATS_FOR_EVIDENCE``, ``ROUNDS_FOR_EVIDENCE`` or the constant the count is of
#: (issue 51: "fewer than 3 readings" was typed in five places, one rule's count in words).
TYPED_COUNT = re.compile(
    r"\b\d+\s+(or more\s+|or fewer\s+)?(readings?|repeats?|rounds?)\b|\b(fewer|more|less) than \d+\b", re.I
)
#: A threshold or significance level typed in text (``within 5%``, ``agrees at 0.05``, ``p < 0.05``): the text is
#: made from the threshold it states (issue 51: a run with ``tolerance_pct: 10`` reported "within 5%").
TYPED_THRESHOLD = re.compile(
    r"\b(at|within|below|above|under|over)\s+(0\.\d+\b|\d+(\.\d+)?\s*%)|\bp\s*(<=|<|=)\s*0\.\d+", re.I
)
#: Statistics packages: their tests and intervals are called in analysis/stats.py only (one bootstrap engine, one
#: rank test of each design), which every other module calls.
#: ruptures (issue 60): the change-point fit of a history's series, called there as one function like the others.
STATS_IMPORTS = ("scipy.stats", "statsmodels", "arch.bootstrap", "ruptures", "signal_processing_algorithms", "otava")


def own_statistics(module: str, source: str) -> list[str]:
    """Where ``module`` defines a "did it change?" of its own: a statistics package imported outside
    analysis/stats.py (``from scipy import stats`` included), a percentile or quantile taken outside analysis/ (an
    interval's ends; a bootstrap by hand), a module-level constant named as a threshold outside analysis/findings.py,
    a confidence level, a count of readings, repeats or rounds, or a threshold typed in text (docstrings and
    comments are prose and not read)."""
    tree = ast.parse(source)
    found = []
    if module != "rlbench.analysis.stats":
        for node in ast.walk(tree):
            names = (
                [a.name for a in node.names]
                if isinstance(node, ast.Import)
                else [f"{node.module}.{a.name}" for a in node.names] + [node.module or ""]
                if isinstance(node, ast.ImportFrom) and node.level == 0
                else []
            )
            found += [
                f"line {node.lineno}: imports {n}"
                for n in names
                if any(n == s or n.startswith(s + ".") for s in STATS_IMPORTS)
            ]
    if not module.startswith("rlbench.analysis"):
        found += [
            f"line {n.lineno}: .{n.func.attr}(...)"
            for n in ast.walk(tree)
            if isinstance(n, ast.Call)
            and isinstance(n.func, ast.Attribute)
            and n.func.attr in ("percentile", "quantile", "nanpercentile", "nanquantile", "bootstrap")
        ]
    if module != "rlbench.analysis.findings":
        for node in tree.body:
            targets = (
                node.targets
                if isinstance(node, ast.Assign)
                else [node.target]
                if isinstance(node, ast.AnnAssign)
                else []
            )
            found += [
                f"line {node.lineno}: constant {t.id}"
                for t in targets
                if isinstance(t, ast.Name) and THRESHOLD_NAME.search(t.id)
            ]
    prose = {id(n.value) for n in ast.walk(tree) if isinstance(n, ast.Expr) and isinstance(n.value, ast.Constant)}
    for n in ast.walk(tree):
        if isinstance(n, ast.Constant) and isinstance(n.value, str) and id(n) not in prose:
            for pattern, what in (
                (TYPED_LEVEL, "a confidence level"),
                (TYPED_COUNT, "a count"),
                (TYPED_THRESHOLD, "a threshold"),
            ):
                if pattern.search(n.value):
                    found.append(f"line {n.lineno}: {n.value[:40]!r} types {what}")
    return found


def test_the_statistics_checker_sees_each_way_of_deciding_on_its_own():
    planted = {
        "rlbench.autoconfig.decide": "from scipy import stats\nTOLERANCE_PCT = 5.0\n",
        "rlbench.report.servebench_report": "import numpy as np\ndef f(x):\n    return np.percentile(x, [2.5, 97.5])\n",
        "rlbench.commands.compare": 'DEFAULT_THRESHOLD = 0.05\nHELP = f"bars: 95% CI"\n',
        "rlbench.analysis.curves": "import scipy.stats\nALPHA = 0.05\n",
        "rlbench.analysis.history.points": "def fit(x):\n    import ruptures\n",  # a change-point fit of its own
    }
    found = {m: own_statistics(m, s) for m, s in planted.items()}
    assert found == {
        "rlbench.autoconfig.decide": ["line 1: imports scipy.stats", "line 2: constant TOLERANCE_PCT"],
        "rlbench.report.servebench_report": ["line 3: .percentile(...)"],
        "rlbench.commands.compare": [
            "line 1: constant DEFAULT_THRESHOLD",
            "line 2: 'bars: 95% CI' types a confidence level",
        ],
        "rlbench.analysis.curves": ["line 1: imports scipy.stats", "line 2: constant ALPHA"],
        "rlbench.analysis.history.points": ["line 2: imports ruptures"],
    }
    fine = {
        "rlbench.analysis.stats": (
            "from scipy import stats\nimport numpy as np\nx = np.percentile([1], 50)\ndef f():\n    import ruptures\n"
        ),
        "rlbench.analysis.findings": "CHANGE_THRESHOLD = 0.05\nCONFIDENCE = 0.95\n",
        "rlbench.autoconfig.model": (
            '"""95% CI in prose."""\nfrom scipy import optimize\ndef f(threshold=0.05):\n    pass\n'
        ),
        "rlbench.report.document": 'from rlbench.analysis.findings import CONFIDENCE\nt = f"{CONFIDENCE:.0%} CI"\n',
    }
    assert {m: own_statistics(m, s) for m, s in fine.items()} == {m: [] for m in fine}


def test_the_statistics_checker_sees_a_count_or_a_threshold_typed_in_words():
    """Issue 51's planted copies: the words of autoconfig's old rule and of variants' method, typed."""
    planted = (
        'A = "Not measured enough (fewer than 3 readings a side)"\n'
        'B = f"indistinguishable ({n} keys, 3 or more readings a side)"\n'
        'C = f"the cheapest of them within 5% of the fastest\'s median"\n'
        'D = "the Wilcoxon test agrees at 0.05"\n'
        'E = f"needs 6 rounds; p < 0.05"\n'
    )
    assert sorted(own_statistics("rlbench.report.autoconfig_section", planted)) == [
        "line 1: 'Not measured enough (fewer than 3 readin' types a count",
        "line 2: ' keys, 3 or more readings a side)' types a count",
        "line 3: 'the cheapest of them within 5% of the fa' types a threshold",
        "line 4: 'the Wilcoxon test agrees at 0.05' types a threshold",
        "line 5: 'needs 6 rounds; p < 0.05' types a count",
        "line 5: 'needs 6 rounds; p < 0.05' types a threshold",
    ]
    fine = (
        '"""Fewer than 3 readings a side, within 5%: prose."""\n'
        'A = f"({too_few_readings_text()}), within {tolerance_pct:g}% of it"\n'
        'B = f"agrees at {SIGNIFICANCE:g}; {REPEATS_FOR_EVIDENCE} or more readings a side"\n'
        'C = "rlbench simbench --repeats 1 --cpus 2"  # 3 rounds in a comment\n'
    )
    assert own_statistics("rlbench.report.autoconfig_section", fine) == []


def test_no_module_decides_did_it_change_on_its_own():
    """Outside analysis/ a module calls the analysis' rule (issue 44: autoconfig had four rules of its own and
    servebench a re-worded one); inside it, stats.py holds the engines and findings.py every threshold."""
    found = {m: hits for m, p in MODULES.items() if (hits := own_statistics(m, p.read_text()))}
    assert found == {}


#: The folder checks and the lock (results/lock.py): called by the results session only, the one way to open a folder.
FOLDER_CHECKS = ("SweepLock", "check_new_sweep_folder", "check_plain_folder", "check_writable")


def folder_opened_by_hand(module: str, source: str) -> list[str]:
    """Where a module other than the session (and the lock's own module) calls a folder check or takes the lock."""
    if module in ("rlbench.results.session", "rlbench.results.lock"):
        return []
    return [
        f"line {n.lineno}: {ast.unparse(n.func)}(...)"
        for n in ast.walk(ast.parse(source))
        if isinstance(n, ast.Call) and (getattr(n.func, "id", None) or getattr(n.func, "attr", None)) in FOLDER_CHECKS
    ]


def test_the_folder_checker_sees_a_check_by_hand():
    planted = (
        "from rlbench.results.lock import SweepLock, check_new_sweep_folder\ncheck_new_sweep_folder(out)\n"
        "lock = lock_module.SweepLock(out).acquire()\n"
    )
    assert folder_opened_by_hand("rlbench.commands.servebench", planted) == [
        "line 2: check_new_sweep_folder(...)",
        "line 3: lock_module.SweepLock(...)",
    ]
    assert folder_opened_by_hand("rlbench.results.session", planted) == []


def test_every_folder_is_opened_through_the_results_session():
    """docs/ARCHITECTURE.md: every command, the sweep, autoconfig's batches, history, bisect and servebench open
    their folders with ``open_for_read`` or ``open_for_write`` (issue 44: servebench checked its own by hand)."""
    assert {m: f for m, p in MODULES.items() if (f := folder_opened_by_hand(m, p.read_text()))} == {}


def test_every_rule_names_a_test_that_exists():
    """docs/ARCHITECTURE.md's rules table: every row names a test function or a test file, and each exists, so a rule
    the document states is one a test checks (issue 44)."""
    doc = (REPO / "docs" / "ARCHITECTURE.md").read_text()
    table = doc.split("## The rules, and the test that checks each", 1)[1].split("\n## ", 1)[0]
    rows = [line for line in table.splitlines() if line.startswith("| ") and not line.startswith("| rule")]
    tests_text = "\n".join(p.read_text() for p in (REPO / "tests").rglob("test_*.py"))
    missing = []
    for row in rows:
        checks = row.rsplit("|", 2)[1]
        names = re.findall(r"`(test_\w+)`", checks)
        files = re.findall(r"`(tests/[\w/]+\.py)`", checks)
        source = re.findall(r"`(rlbench/[\w/]+\.py)`", checks)
        if not (names or files or source):
            missing.append(f"no test named: {row[:80]}")
        missing += [n for n in names if f"def {n}(" not in tests_text]
        missing += [f for f in files + source if not (REPO / f).is_file()]
    assert len(rows) >= 15 and missing == []


#: What only the analysis does: read a results folder's files and compute the figures a report shows (the one
#: Pareto front, the one CPUs-given rule). The report draws what :func:`rlbench.analysis.analyze` returns.
ANALYSIS_ONLY_CALLS = frozenset(
    {
        "read_json",
        "read_events",
        "read_record",
        "read_manifest",
        "read_parquet",
        "read_csv",
        "read_autoconfig_file",
        "read_env_ceilings",
        "pareto_front",
        "cpus_given",
    }
)
#: Report modules that write a spec from one trial's plan (``rlbench reproduce``, ``next.yaml``): they read the plan
#: and the manifest, and draw nothing.
REPORT_MODULES_THAT_READ = ("rlbench.report.reproduce", "rlbench.report.next_spec")


def report_derivations(module: str, source: str) -> list[str]:
    """Where a report module reads a results file or computes what the analysis computes (issue 51: the autoconfig
    section read autoconfig.json and summed CPUs by a rule of its own)."""
    if not module.startswith("rlbench.report") or module in REPORT_MODULES_THAT_READ:
        return []
    return [
        f"line {n.lineno}: {ast.unparse(n.func)}(...)"
        for n in sorted((n for n in ast.walk(ast.parse(source)) if isinstance(n, ast.Call)), key=lambda n: n.lineno)
        if (getattr(n.func, "id", None) or getattr(n.func, "attr", None)) in ANALYSIS_ONLY_CALLS
    ]


def test_the_report_checker_sees_a_file_read_or_a_front_computed():
    planted = (
        "data = read_json(ResultsFolder(out_dir).autoconfig, None)\n"
        "front = per[pareto_front(per, ['cpus'], ['rate'])]\n"
        "m = folder.read_manifest()\n"
        "ok['c'] = targets.cpus_given(ok)\n"
        "x = run.front.itertuples()\n"
        "data = read_autoconfig_file(ResultsFolder(out_dir).autoconfig)\n"
    )
    assert report_derivations("rlbench.report.autoconfig_section", planted) == [
        "line 1: read_json(...)",
        "line 2: pareto_front(...)",
        "line 3: folder.read_manifest(...)",
        "line 4: targets.cpus_given(...)",
        "line 6: read_autoconfig_file(...)",
    ]
    assert report_derivations("rlbench.report.reproduce", planted) == []
    assert report_derivations("rlbench.analysis.autoconfig_run", planted) == []


def test_the_report_draws_what_the_analysis_computes():
    """docs/ARCHITECTURE.md: no report module but the two spec writers reads a results file or computes the
    analysis' figures (autoconfig.json is read by ``analyze``, its CPU front computed in analysis/)."""
    assert {m: f for m, p in MODULES.items() if (f := report_derivations(m, p.read_text()))} == {}


#: The places that read a results file as raw JSON, each with why (issue 58: a record is typed where it is written
#: and read back through its schema, a pydantic model, as ``record.json``, ``plan.json``, ``manifest.json`` and
#: ``autoconfig.json`` are). The list shrinks: :func:`test_every_listed_raw_read_is_still_there`.
RAW_READ_PLACES: dict[str, str] = {
    "rlbench.results.files": "read_json itself, the one raw reader, for the places below",
    "rlbench.analysis.profiles": "py-spy's speedscope files: a foreign format, not rlbench's, read field by field",
    "rlbench.run.ceilings": "env_ceilings.json read by its writer, which adds the settings not yet measured and "
    "writes back what it found as it found it (its readers read it typed: results/ceilings_file.py)",
    "rlbench.run.autoconfig_driver.trial_files": "autoconfig_state.json, a resume's state, written and read by the "
    "driver alone (not yet typed)",
}
#: Calls that read a file's text.
FILE_READS = frozenset({"read_text", "read_bytes"})


def raw_results_reads(module: str, source: str) -> list[str]:
    """Where ``module`` reads a file as raw JSON rather than through its schema: ``read_json(...)``, ``json.load(f)``,
    ``json.loads(path.read_text())``, or ``json.loads(text)`` of a name assigned from such a read (JSON text that is
    no file's, a table's cell or an HTTP body, is not a results file)."""
    if module in RAW_READ_PLACES:
        return []
    tree = ast.parse(source)

    def file_read(node: ast.AST) -> bool:
        return isinstance(node, ast.Call) and getattr(node.func, "attr", None) in FILE_READS

    read_into = {
        t.id
        for n in ast.walk(tree)
        if isinstance(n, ast.Assign) and file_read(n.value)
        for t in n.targets
        if isinstance(t, ast.Name)
    }
    from_json = {  # ``from json import loads as parse``: parse -> loads
        a.asname or a.name: a.name
        for n in ast.walk(tree)
        if isinstance(n, ast.ImportFrom) and n.module == "json"
        for a in n.names
    }
    found = []
    for n in sorted((n for n in ast.walk(tree) if isinstance(n, ast.Call)), key=lambda n: n.lineno):
        func = n.func
        if isinstance(func, ast.Name):
            of_json, name = func.id in from_json, from_json.get(func.id, func.id)
        elif isinstance(func, ast.Attribute):
            of_json, name = getattr(func.value, "id", None) == "json", func.attr
        else:
            continue
        arg = n.args[0] if n.args else None
        of_a_file = arg is not None and (file_read(arg) or (isinstance(arg, ast.Name) and arg.id in read_into))
        if name == "read_json" or (of_json and name == "load") or (of_json and name == "loads" and of_a_file):
            found.append(f"line {n.lineno}: {ast.unparse(n.func)}(...)")
    return found


def test_the_raw_read_checker_sees_each_way_of_reading_a_file_untyped():
    planted = (
        "data = read_json(ResultsFolder(folder).autoconfig, None)\n"
        "data = files.read_json(path)\n"
        "data = json.loads(path.read_text())\n"
        "text = folder.compare.read_bytes()\n"
        "data = json.loads(text)\n"
        "with open(path) as f:\n"
        "    data = json.load(f)\n"
        "from json import loads as parse\n"
        "data = parse(Path(p).read_text())\n"
        "nodes = json.loads(cell)\n"  # a table cell's JSON text: no file
        "plan = TrialPlan.model_validate_json(path.read_text())\n"  # through its schema
    )
    assert raw_results_reads("rlbench.analysis.somewhere", planted) == [
        "line 1: read_json(...)",
        "line 2: files.read_json(...)",
        "line 3: json.loads(...)",
        "line 5: json.loads(...)",
        "line 7: json.load(...)",
        "line 9: parse(...)",
    ]
    assert raw_results_reads("rlbench.results.files", planted) == []


def test_a_results_file_is_read_through_its_schema_only():
    """docs/ARCHITECTURE.md: a results file is read back through its schema (a typed model); the raw reads left are
    listed with why (:data:`RAW_READ_PLACES`)."""
    assert {m: f for m, p in MODULES.items() if (f := raw_results_reads(m, p.read_text()))} == {}


def test_every_listed_raw_read_is_still_there():
    """A place typed since is taken off the list, so the list says what is left."""
    gone = [m for m in RAW_READ_PLACES if m not in MODULES or not raw_results_reads("-", MODULES[m].read_text())]
    assert gone == []


#: The one module that reads ``events.jsonl``'s lines into typed events (issue 58): every other reads their attributes.
EVENTS_READER = "rlbench.results.events_file"


def raw_event_reads(module: str, source: str) -> list[str]:
    """Where ``module`` (not :data:`EVENTS_READER`) reads an event as a raw dict: its name as ``e.get("event")`` or
    ``e["event"]``, or the events through the raw line reader, ``files.read_events``."""
    if module == EVENTS_READER:
        return []
    found: list[tuple[int, str]] = []
    for n in ast.walk(ast.parse(source)):
        by_key = (
            isinstance(n, ast.Call)
            and getattr(n.func, "attr", None) == "get"
            and bool(n.args)
            and isinstance(n.args[0], ast.Constant)
            and n.args[0].value == "event"
        ) or (isinstance(n, ast.Subscript) and isinstance(n.slice, ast.Constant) and n.slice.value == "event")
        raw_reader = (isinstance(n, ast.ImportFrom) and n.module == "rlbench.results.files") and any(
            a.name == "read_events" for a in n.names
        )
        raw_reader |= isinstance(n, ast.Attribute) and n.attr == "read_events" and ast.unparse(n.value) == "files"
        if by_key or raw_reader:
            found.append((n.lineno, f"line {n.lineno}: {ast.unparse(n)}"))
    return [f for _, f in sorted(found)]


def test_the_raw_event_checker_sees_each_way_of_reading_an_event_untyped():
    planted = (
        'ends = [e for e in events if e.get("event") == Event.END]\n'
        'name = e["event"]\n'
        "from rlbench.results.files import read_events, write_json\n"
        "events = files.read_events(path)\n"
        "end = first(trial.events(), EndEvent)\n"  # typed
        'record = {"event": Event.PROFILE, "t_s": 0.0}\n'  # a writer's
    )
    assert [f.split(":")[0] for f in raw_event_reads("rlbench.run.somewhere", planted)] == [
        "line 1",
        "line 2",
        "line 3",
        "line 4",
    ]
    assert raw_event_reads(EVENTS_READER, planted) == []


def test_events_are_read_back_typed_only():
    """docs/ARCHITECTURE.md: events.jsonl is read back through its schema too, one model a kind
    (``results/events_file.py``); a consumer reads an event's attributes, never a raw dict's keys."""
    assert {m: f for m, p in MODULES.items() if (f := raw_event_reads(m, p.read_text()))} == {}


#: The one module that reaches Ray's private API (``ray._private``, ``ray._raylet``, Serve's ``_private``).
RAY_PRIVATE_SEAM = "rlbench.ray_facts.private"
#: What a private Ray name looks like in an import or an attribute chain.
RAY_PRIVATE = re.compile(r"(^|\.)(_private|_raylet|_global_node)(\.|$)")


def ray_private_reaches(module: str, source: str) -> list[str]:
    """Where ``module`` (not the seam) imports or reads a private Ray name: ``from ray._private import state``,
    ``import ray._private.utils``, ``ray._private.worker._global_node``. A name handed to the seam as a string
    (``private.owner("ray._private.utils...")``) is the seam's to check, against its ``PRIVATE_NAMES``."""
    if module == RAY_PRIVATE_SEAM:
        return []
    found = []
    for n in ast.walk(ast.parse(source)):
        names = (
            [a.name for a in n.names]
            if isinstance(n, ast.Import)
            else [n.module or ""]
            if isinstance(n, ast.ImportFrom) and n.level == 0
            else [ast.unparse(n)]
            if isinstance(n, ast.Attribute) and not isinstance(getattr(n, "ctx", None), ast.Del)
            else []
        )
        found += [
            f"line {n.lineno}: {name}" for name in names if name.split(".")[0] == "ray" and RAY_PRIVATE.search(name)
        ]
    return sorted(set(found), key=lambda s: int(s.split(":")[0].split()[1]))


def test_the_ray_private_checker_sees_each_way_of_reaching_it():
    planted = (
        "def f():\n"
        "    from ray._private import state\n"
        "    import ray._private.utils as ray_utils\n"
        "    return ray._private.worker._global_node\n"
        "from ray._raylet import Config\n"
        "from ray.serve._private import replica\n"
    )
    fine = (
        'held = private.owner("ray._private.utils.get_dashboard_dependency_error")\n'
        "import ray\nray.util.get_node_ip_address()\nfrom ray.util.scheduling_strategies import X\n"
        "self._private = 1\n"
    )
    found = ray_private_reaches("rlbench.worker.node_sampler", planted)
    assert found[:2] == ["line 2: ray._private", "line 3: ray._private.utils"]
    assert {"line 4: ray._private.worker._global_node", "line 5: ray._raylet", "line 6: ray.serve._private"} <= set(
        found
    )
    assert ray_private_reaches("rlbench.worker.node_sampler", fine) == []
    assert ray_private_reaches(RAY_PRIVATE_SEAM, planted) == []


def test_ray_private_api_only_through_its_seam():
    """docs/ARCHITECTURE.md: worker/node_sampler.py and studies/servebench_run.py reached it directly (issue 51)."""
    assert {m: f for m, p in MODULES.items() if (f := ray_private_reaches(m, p.read_text()))} == {}


def ray_fact_copies(source: str) -> list[str]:
    """Where ``source`` types one of Ray's process facts again (a string equal to one of
    rlbench/ray_facts/processes.py's: the idle title, a worker script, a system marker or title, the node-id
    pattern, the title prefix)."""
    from rlbench.ray_facts import processes

    facts = [v for k, v in vars(processes).items() if k.isupper()]
    texts = {x for v in facts for x in (v if isinstance(v, tuple) else [v]) if isinstance(x, str)}
    texts |= {processes.NODE_ID.pattern}
    return [
        f"line {n.lineno}: {n.value!r}"
        for n in sorted(ast.walk(ast.parse(source)), key=lambda n: getattr(n, "lineno", 0))
        if isinstance(n, ast.Constant) and isinstance(n.value, str) and n.value in texts
    ]


def test_the_ray_facts_checker_sees_a_copy():
    """e9c689c's worker/foreign.py, as it was: the node-id pattern, the starting scripts' marks and the idle title."""
    planted = (
        '_NODE_ID = re.compile(r"--node[-_]id=([0-9a-fA-F]+)")\n'
        'IDLE_TITLE = "ray::IDLE"\n'
        'ok = title.startswith("ray::SingleAgentEnvRunner")\n'
    )
    assert ray_fact_copies(planted) == ["line 1: '--node[-_]id=([0-9a-fA-F]+)'", "line 2: 'ray::IDLE'"]


def test_rays_process_facts_are_written_once():
    """The idle title, the worker scripts, the node-id pattern and the system markers: rlbench/ray_facts/processes.py
    alone types them (worker/foreign.py and worker/node_sampler.py had copies of adapters/roles.py's)."""
    wrong = {
        m: hits
        for m, p in MODULES.items()
        if m != "rlbench.ray_facts.processes" and (hits := ray_fact_copies(p.read_text()))
    }
    assert wrong == {}


#: The one place a verb's parsed flags (an ``argparse.Namespace``) become its typed options.
OPTIONS_PLACE = "rlbench.commands._common"


def made_up_options(module: str, source: str) -> list[str]:
    """Where ``module`` (not :data:`OPTIONS_PLACE`) builds a ``Namespace`` (a verb re-entering another with made-up
    flags) or reads a flag it is not sure of, ``getattr(args, ...)``."""
    if module == OPTIONS_PLACE:
        return []
    found = []
    for n in ast.walk(ast.parse(source)):
        if not isinstance(n, ast.Call):
            continue
        name = ast.unparse(n.func)
        if name.split(".")[-1] == "Namespace":
            found.append(f"line {n.lineno}: {name}(...)")
        elif name == "getattr" and n.args and isinstance(n.args[0], ast.Name) and n.args[0].id in ("args", "opts"):
            found.append(f"line {n.lineno}: getattr({n.args[0].id}, ...)")
    return sorted(found, key=lambda s: int(s.split(":")[0].split()[1]))


def test_the_options_checker_sees_a_made_up_namespace_and_a_guessed_flag():
    """e.g. dc78c22's commands/history.py line 185 and commands/sweep.py's ``getattr(args, "parallel", None)``."""
    planted = (
        "import argparse\nfrom argparse import Namespace\n"
        "def f(args):\n"
        "    sweep_loaded(loaded, argparse.Namespace(config=c, dry_run=True), console)\n"
        "    parallel = getattr(args, 'parallel', None)\n"
        "    return Namespace(out=None)\n"
    )
    fine = "def f(opts, args):\n    sweep_loaded(loaded, SweepOptions(c, dry_run=True), console)\n    getattr(a, 'x')\n"
    assert made_up_options("rlbench.commands.history", planted) == [
        "line 4: argparse.Namespace(...)",
        "line 5: getattr(args, ...)",
        "line 6: Namespace(...)",
    ]
    assert made_up_options("rlbench.commands.history", fine) == []
    assert made_up_options(OPTIONS_PLACE, planted) == []


def test_verbs_call_each_other_with_typed_options():
    """docs/ARCHITECTURE.md: a verb's options are a dataclass made from its flags in one place
    (``_common.options_from``); no module makes up a Namespace or guesses a flag (issue 58, item 4)."""
    assert {m: f for m, p in MODULES.items() if (f := made_up_options(m, p.read_text()))} == {}


#: A call of this many positional arguments or more names them (issue 58): a field's name beside its value, so two
#: neighbours of one type swapped read wrong at a glance (``Change``'s fifteen, ``Answer``'s nineteen were positional).
MAX_POSITIONAL_ARGS = 8


def long_positional_calls(name: str, source: str) -> list[str]:
    """``name:line: callee(...)`` of each call that passes :data:`MAX_POSITIONAL_ARGS` or more positional arguments
    (a ``*args`` not counted)."""
    calls = [
        n
        for n in ast.walk(ast.parse(source))
        if isinstance(n, ast.Call) and sum(not isinstance(a, ast.Starred) for a in n.args) >= MAX_POSITIONAL_ARGS
    ]
    return [f"{name}:{n.lineno}: {ast.unparse(n.func)}(...)" for n in sorted(calls, key=lambda n: n.lineno)]


def test_the_positional_checker_sees_a_call_of_eight_positional_arguments():
    planted = (
        "x = [Change(\n    'paired', a, b, c, d, e, f, g)]\n"
        "f(1, 2, 3, 4, 5, 6, 7)\n"  # seven
        "g(*rows, 1, 2, 3, 4, 5, 6, 7)\n"  # a star is not counted
        "h(a, b, c, d, e, f, g, h=h)\n"
        "PointRead(1, 2, 3, 4, 5, 6, 7, 8, 9)\n"
        "out.append(walk.Standing(1, 2, 3, 4, 5, 6, 7, 8))\n"
    )
    assert long_positional_calls("rlbench/m.py", planted) == [
        "rlbench/m.py:1: Change(...)",
        "rlbench/m.py:6: PointRead(...)",
        "rlbench/m.py:7: walk.Standing(...)",
    ]


def test_no_call_passes_eight_positional_arguments():
    """docs/ARCHITECTURE.md: a call of 8 or more arguments passes them by keyword (issue 58: 28 calls did not)."""
    found = [c for p in MODULES.values() for c in long_positional_calls(str(p.relative_to(REPO)), p.read_text())]
    assert found == []
