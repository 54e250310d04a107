"""Whether a spec's env can be made: a registered gymnasium id, or an import path to a gymnasium.Env
subclass (checked when a spec is loaded and by ``rlbench envbench``, before anything runs)."""

from __future__ import annotations

import difflib
import importlib


def check_env(env: str) -> None:
    """Raise ValueError unless ``env`` is a registered gymnasium id or an import path
    ``module:Class`` naming a ``gymnasium.Env`` subclass.

    The module is imported (a spec names code: see docs/SECURITY.md); nothing in it is called.
    """
    if ":" in env and not env.startswith(("ale_py:",)):
        module_name, _, attr = env.partition(":")
        try:
            module = importlib.import_module(module_name)
        except ImportError as e:
            raise ValueError(
                f"env '{env}': cannot import module '{module_name}' ({e}); is its folder on PYTHONPATH "
                "(run rlbench from the folder that holds it)?"
            ) from None
        except Exception as e:  # the module itself is broken: say so, with its error
            raise ValueError(f"env '{env}': importing '{module_name}' raised {type(e).__name__}: {e}") from None
        if not attr.isidentifier() or not hasattr(module, attr):
            names = [n for n in dir(module) if not n.startswith("_")]
            close = difflib.get_close_matches(attr, names, n=1)
            hint = f"; did you mean '{module_name}:{close[0]}'?" if close else ""
            raise ValueError(f"env '{env}': module '{module_name}' has no '{attr}'{hint}")
        import gymnasium

        found = getattr(module, attr)
        if not (isinstance(found, type) and issubclass(found, gymnasium.Env)):
            kind = "a class" if isinstance(found, type) else "a function" if callable(found) else "a value"
            raise ValueError(f"env '{env}' is {kind}, not a gymnasium.Env subclass: rlbench creates envs only from "
                             "a gymnasium.Env subclass or a registered gymnasium id (it never calls anything else "
                             "a spec names)")
        return
    import gymnasium

    try:
        gymnasium.spec(env)
    except Exception:
        ids = list(gymnasium.registry.keys())
        close = difflib.get_close_matches(env, ids, n=1)
        hint = f"; did you mean '{close[0]}'?" if close else ""
        raise ValueError(
            f"env '{env}' is neither a registered gymnasium id nor an import path 'package.module:Class'{hint}"
        ) from None
