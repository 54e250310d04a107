"""Whether a spec's env can be made: a registered gymnasium id, or an import path to a gymnasium.Env
subclass (checked when a spec is loaded and by ``rlbench envbench``, before anything runs); and whether the
frameworks its trials use are installed (an adapter's ``extra``: :func:`framework_problem`).

An env whose package is not installed (ALE's Atari games, MuJoCo, Box2D) is refused here with the extra that
installs it (``pip install -e ".[atari]"``), not by a traceback from inside a trial: a gymnasium id's module
(its entry point) is imported too, which is where gymnasium reports a missing ``mujoco`` or ``Box2D``.
"""

from __future__ import annotations

import difflib
import importlib
import importlib.util
import sys

from rlbench.adapters import get_adapter, is_import_path

#: A module an env family imports -> rlbench's extra that installs it (pyproject.toml; README, "Install").
EXTRA_OF_MODULE: dict[str, str] = {
    "ale_py": "atari",
    "cv2": "atari",
    "mujoco": "mujoco",
    "imageio": "mujoco",
    "Box2D": "box2d",
    "pygame": "box2d",
}
#: A gymnasium entry point's package (or an id's ``module:`` prefix) -> the extra its envs need.
EXTRA_OF_ENTRY_POINT: dict[str, str] = {
    "ale_py": "atari",
    "gymnasium.envs.mujoco": "mujoco",
    "gymnasium.envs.box2d": "box2d",
}


def missing_extra(error: BaseException, where: str = "") -> str | None:
    """The extra to install when ``error`` (raised importing an env's module) is a missing package of an env
    family; None when it is anything else. ``where``: the module or entry point imported, which names the
    family when the error does not (gymnasium's ``DependencyNotInstalled`` for MuJoCo and Box2D)."""
    seen: BaseException | None = error
    while seen is not None:  # gymnasium raises DependencyNotInstalled from the ImportError
        name = getattr(seen, "name", None)
        if isinstance(seen, ImportError) and name and name.split(".")[0] in EXTRA_OF_MODULE:
            return EXTRA_OF_MODULE[name.split(".")[0]]
        seen = seen.__cause__ or seen.__context__
    if type(error).__name__ == "DependencyNotInstalled" or isinstance(error, ImportError):
        return next((extra for prefix, extra in EXTRA_OF_ENTRY_POINT.items() if where.startswith(prefix)), None)
    return None


def pip_line(extra: str) -> str:
    """How to install one of rlbench's extras, in the words every refusal of a missing one uses."""
    return f'pip install -e ".[{extra}]" (or pip install "rlbench[{extra}]")'


def importable(module: str) -> bool:
    """Whether ``module`` (a top-level name) can be imported here, without importing it (``sys.modules[name] = None``,
    Python's way to block an import, counts as missing)."""
    if module in sys.modules:
        return sys.modules[module] is not None
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        return False


def framework_problem(framework: str) -> str | None:
    """Why trials of ``framework`` cannot run here: its adapter's extra is not installed (one of its
    ``extra_modules`` missing), with the ``pip install`` line that fixes it; None when they can. Issue 51: without
    it, ``rlbench sweep configs/rllib_vs_sb3.yaml`` ran six RLlib trials and then failed its SB3 trial with
    ``ModuleNotFoundError: No module named 'stable_baselines3'``."""
    adapter = get_adapter(framework)
    missing = [m for m in adapter.extra_modules if not importable(m)]
    if adapter.extra is None or not missing:
        return None
    return (
        f"framework '{framework}' needs the [{adapter.extra}] extra, which is not installed: {pip_line(adapter.extra)}"
        f"; no module named {', '.join(repr(m) for m in missing)}"
    )


def _install_hint(env: str, extra: str, error: BaseException) -> str:
    said = f"{type(error).__name__}: {error}"
    if "gymnasium[" in said:  # gymnasium[mujoco] pulls mujoco 4, gymnasium[box2d] a source build: not those
        said += f" (rlbench's [{extra}] extra names the packages that work with ray[rllib]'s gymnasium instead)"
    return (
        f"env '{env}' needs the [{extra}] extra, which is not installed: {pip_line(extra)}; importing it failed "
        f"with {said}"
    )


def check_env(env: str) -> None:
    """Raise ValueError unless ``env`` is a registered gymnasium id or an import path
    ``module:Class`` naming a ``gymnasium.Env`` subclass.

    The module is imported (a spec names code: see docs/SECURITY.md); nothing in it is called.
    """
    if is_import_path(env):
        module_name, _, attr = env.partition(":")
        try:
            module = importlib.import_module(module_name)
        except ImportError as e:
            if (extra := missing_extra(e, module_name)) is not None:
                raise ValueError(_install_hint(env, extra, e)) from None
            raise ValueError(
                f"env '{env}': cannot import module '{module_name}' ({e}); is its folder on PYTHONPATH "
                "(run rlbench from the folder that holds it)?"
            ) from None
        except Exception as e:  # noqa: BLE001 - the module itself is broken: say so, with its error
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
            raise ValueError(
                f"env '{env}' is {kind}, not a gymnasium.Env subclass: rlbench creates envs only from "
                "a gymnasium.Env subclass or a registered gymnasium id (it never calls anything else "
                "a spec names)"
            )
        return
    import gymnasium

    module_name, _, env_id = env.partition(":") if ":" in env else ("", "", env)
    if env_id.startswith("ALE/") and not module_name:  # a fresh env runner has not imported ale_py: make() fails
        raise ValueError(
            f"env '{env}': ALE's ids are registered by importing ale_py, which a trial's env runners do "
            f"not do: name it 'ale_py:{env_id}' (RLlib imports ale_py for it), or use envs.atari:AtariEnv "
            'for RLlib\'s Atari preprocessing; both need the [atari] extra: pip install -e ".[atari]"'
        )
    try:
        if module_name:  # gymnasium's "module:id" (RLlib's "ale_py:ALE/Pong-v5"): the module registers the ids
            importlib.import_module(module_name)
        spec = gymnasium.spec(env_id)
    except ImportError as e:
        if (extra := missing_extra(e, module_name)) is not None:
            raise ValueError(_install_hint(env, extra, e)) from None
        raise ValueError(f"env '{env}': cannot import module '{module_name}' ({e})") from None
    except Exception:  # noqa: BLE001 - not a gymnasium id either: the refusal names the closest one
        ids = list(gymnasium.registry.keys())
        close = difflib.get_close_matches(env, ids, n=1)
        hint = f"; did you mean '{close[0]}'?" if close else ""
        raise ValueError(
            f"env '{env}' is neither a registered gymnasium id nor an import path 'package.module:Class'{hint}"
        ) from None
    entry = spec.entry_point if isinstance(spec.entry_point, str) else ""
    if ":" in entry:  # the env's module: where a missing simulator package shows (mujoco, Box2D)
        try:
            importlib.import_module(entry.partition(":")[0])
        except Exception as e:  # noqa: BLE001 - the env's module is broken: the refusal says how, with its error
            if (extra := missing_extra(e, entry)) is not None:
                raise ValueError(_install_hint(env, extra, e)) from None
            raise ValueError(
                f"env '{env}': importing its module '{entry.partition(':')[0]}' raised {type(e).__name__}: {e}"
            ) from None
