"""Python source that evaluates to plain data and can execute nothing: how an adapter writes a spec's values
into its :class:`~rlbench.adapters.base.ConfigSnippet` (standard library only).

A snippet is code a user will run, built from a spec that may hold any text (an env name, an env_config):
every value is rendered by :func:`literal` (``repr`` of plain data, anything else as the ``repr`` of its
text) and every keyword must be a plain identifier (:func:`method_call`), so nothing foreign is executable.
"""

from __future__ import annotations

import keyword
import math
from collections.abc import Mapping
from typing import Any


def literal(value: Any) -> str:
    """Python source for ``value`` that evaluates to plain data and can execute nothing.

    str, int, bool and None as ``repr`` (of the base type, so a subclass's ``__repr__`` is not
    used); finite floats as ``repr``, others as ``float('inf')``; lists, tuples and mappings
    element by element; anything else as the ``repr`` of its text.
    """
    if value is None or isinstance(value, bool):
        return repr(value)
    if isinstance(value, int):
        return repr(int(value))
    if isinstance(value, float):
        return repr(float(value)) if math.isfinite(value) else f"float({str(float(value))!r})"
    if isinstance(value, str):
        return repr(str(value))
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(literal(v) for v in value) + "]"
    if isinstance(value, Mapping):
        return "{" + ", ".join(f"{literal(k)}: {literal(v)}" for k, v in value.items()) + "}"
    return repr(str(value))


def method_call(method: str, kwargs: Mapping[str, Any]) -> str:
    """``    .method(k=literal, ...)``: one chained call; ValueError for a name that is not a plain identifier
    (every name comes from the adapter's code or the spec model's fields; checked all the same)."""
    for name in (method, *kwargs):
        if not (isinstance(name, str) and name.isidentifier() and not keyword.iskeyword(name)):
            raise ValueError(f"not a plain identifier: {name!r}")
    return f"    .{method}(" + ", ".join(f"{k}={literal(v)}" for k, v in kwargs.items()) + ")"
