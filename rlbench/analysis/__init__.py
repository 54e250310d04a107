"""From the per-trial files to answers: tables, per-trial and per-configuration figures, statistics,
findings in words, advice. One entry: :func:`analyze` (a results folder in, an
:class:`~rlbench.analysis.result_set.Analysis` out)."""

from __future__ import annotations

from typing import Any

__all__ = ["Analysis", "analyze"]


def __getattr__(name: str) -> Any:
    # imported on first use: ``import rlbench.analysis.stats`` (or a CLI verb's module) must not pull
    # pandas and every analysis module in through the package
    if name in __all__:
        from rlbench.analysis import result_set

        return getattr(result_set, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
