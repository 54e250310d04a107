"""The tools that keep the house (issue 51): the linter, the formatter and the type checker, run by the README's test
command so CI runs them, with the settings pyproject.toml holds (``[tool.ruff]``, ``[tool.mypy]``: what each covers
and why). Each prints its wall time; measured figures: docs/ARCHITECTURE.md, "Issue 51, item by item"."""

from __future__ import annotations

import subprocess
import sys
import time

from conftest import REPO


def run(*args: str, timeout: float) -> subprocess.CompletedProcess:
    t = time.monotonic()
    done = subprocess.run([sys.executable, "-m", *args], cwd=REPO, capture_output=True, text=True, timeout=timeout)
    print(f"{' '.join(args[:2])}: {time.monotonic() - t:.1f} s")
    return done


def test_ruff_finds_nothing_under_the_chosen_rules():
    done = run("ruff", "check", ".", "--no-cache", timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr


def test_the_tree_is_as_ruff_formats_it():
    done = run("ruff", "format", "--check", ".", "--no-cache", timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr


def test_mypy_finds_nothing_in_any_room():
    done = run("mypy", timeout=600)
    assert done.returncode == 0 and "Success: no issues found" in done.stdout, done.stdout + done.stderr
