"""The command line imports nothing heavy before a verb needs it: a sweep imports pandas and matplotlib only
while its fork server imports Ray, RLlib and torch (rlbench/run/sweep.py), and scipy only when a statistic is
computed (rlbench/analysis/stats.py)."""

from __future__ import annotations

import json
import subprocess
import sys

HEAVY = ("pandas", "scipy", "matplotlib", "pyarrow", "ray", "torch")


def _loaded_after(code: str) -> set[str]:
    probe = f"import json, sys\n{code}\nprint(json.dumps([m for m in {HEAVY!r} if m in sys.modules]))"
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    return set(json.loads(out.stdout.splitlines()[-1]))


def test_the_cli_and_every_verb_module_import_nothing_heavy():
    assert _loaded_after("import rlbench.commands; rlbench.commands.parser()") == set()


def test_the_sweeps_results_modules_are_what_brings_them_in():
    loaded = _loaded_after("from rlbench.commands.sweep import import_results_modules; import_results_modules()")
    assert {"pandas", "matplotlib", "pyarrow"} <= loaded
    assert "scipy" not in loaded  # scipy.stats' import alone was 1.2 s of a core: only a statistic brings it in
    assert not {"ray", "torch"} & loaded  # those are the fork server's, never the sweep process's


def test_a_statistic_brings_scipy_in_when_it_is_computed():
    code = "from rlbench.analysis import stats; import sys; assert 'scipy' not in sys.modules; stats.rank_p([1], [2])"
    assert "scipy" in _loaded_after(code)


def test_a_dry_runs_table_imports_nothing_heavy():
    """``sweep --dry-run`` prints its plan from :mod:`rlbench.report.plan_table`: through the results tables' module
    it imported pandas and matplotlib (0.54 s here) for a table of plans."""
    assert _loaded_after("from rlbench.report.plan_table import plan_table") == set()
