"""Making an env from a spec's name, the same way for every adapter (standard library at module level;
gymnasium is imported when an env is made)."""

from __future__ import annotations

import re
from typing import Any

#: A gymnasium id after a module prefix (``module:[namespace/]Name-vN``, gymnasium's own spelling).
_MODULE_ID = re.compile(r"([\w.-]+/)?[\w.-]+-v\d+")


def is_import_path(env: str) -> bool:
    """Whether ``env`` names a class (``package.module:Class``) rather than a gymnasium id, which may carry a
    module to import first (gymnasium's ``module:id``, as RLlib's ``ale_py:ALE/Pong-v5``): an id after the
    colon is ``[namespace/]Name-vN``; anything else after it is taken as a class name (and checked as one)."""
    return ":" in env and _MODULE_ID.fullmatch(env.partition(":")[2]) is None


def env_class(env: str) -> type:
    """The class an import path ``package.module:Class`` names; TypeError unless it is a
    ``gymnasium.Env`` subclass.

    A spec, and a received results folder's plan, name code: only an env class may be created
    from one, never any callable (``subprocess:Popen`` with an ``env_config`` would run a command).
    The module is imported (its top-level code runs: that is what naming code means); nothing
    it holds is called here.
    """
    import importlib

    import gymnasium

    module_name, _, attr = env.partition(":")
    found = getattr(importlib.import_module(module_name), attr)
    if not (isinstance(found, type) and issubclass(found, gymnasium.Env)):
        raise TypeError(
            f"env '{env}' is {_what(found)}, not a gymnasium.Env subclass: rlbench creates envs only "
            "from a gymnasium.Env subclass or a registered gymnasium id"
        )
    return found


def _what(obj: Any) -> str:
    kind = "a class" if isinstance(obj, type) else ("a function" if callable(obj) else "a value")
    return f"{kind} ({type(obj).__name__})" if kind == "a value" else kind


def make_env(env: str, env_config: dict[str, Any]) -> Any:
    """``gymnasium.make(id, **env_config)`` for ids (``module:id`` too: gymnasium imports the module, which
    registers the id), ``Class(env_config)`` for import paths (the class checked by :func:`env_class`)."""
    if is_import_path(env):
        return env_class(env)(dict(env_config))
    import gymnasium

    return gymnasium.make(env, **env_config)
