"""Connecting to a Ray cluster as rlbench does: token authentication and code shipping (standard library only).

Token authentication stays on: a cluster started by ``ray start --head`` on Ray 2.60 requires
the token once one exists (``~/.ray/auth_token``), and Ray turns token mode on for clients only
when the address is ``auto``; :func:`enable_token_auth` does the same for an explicit address
when a token is at hand. rlbench never sets ``RAY_AUTH_MODE=disabled``.

Code reaches remote workers through the job's ``runtime_env`` (:func:`runtime_env_for`): the
``rlbench`` package (its sampler actor and RLlib callback run in workers) and the env's top-level
package when it lives outside site-packages (``envs/`` next to the spec), as ``py_modules``. Used
by the sweep's cluster probe and by each trial's driver.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

#: Environment variable Ray (and rlbench) read the cluster address from.
ADDRESS_ENV = "RAY_ADDRESS"


def token_available(environ: dict[str, str] | None = None) -> bool:
    """True when a Ray auth token is at hand (``RAY_AUTH_TOKEN``, ``RAY_AUTH_TOKEN_PATH`` or ~/.ray/auth_token)."""
    environ = os.environ if environ is None else environ
    if environ.get("RAY_AUTH_TOKEN"):
        return True
    path = environ.get("RAY_AUTH_TOKEN_PATH")
    return Path(path).is_file() if path else (Path.home() / ".ray" / "auth_token").is_file()


def enable_token_auth(environ: dict[str, str] | None = None) -> str | None:
    """Turn Ray's token mode on for this process when it is unset and a token exists; returns the mode.

    Ray 2.60 does this itself only for ``address="auto"``; a cluster started with ``ray start`` on a
    machine holding a token requires it, so an explicit address needs the same. A mode the user set
    (even ``disabled``) is left as it is.
    """
    live = environ is None
    environ = os.environ if environ is None else environ
    if environ.get("RAY_AUTH_MODE") is None and token_available(environ):
        environ["RAY_AUTH_MODE"] = "token"
        if live and "ray" in sys.modules:  # Ray read its config at import (the trial's fork server): re-read it
            from ray._raylet import Config

            Config.initialize("")
    return environ.get("RAY_AUTH_MODE")


def _package_dir(name: str) -> Path | None:
    import importlib.util

    try:
        found = importlib.util.find_spec(name)
    except (ImportError, ValueError):
        return None
    if found is None or not found.submodule_search_locations:
        return None
    return Path(list(found.submodule_search_locations)[0]).resolve()


def runtime_env_for(env: str) -> dict[str, Any]:
    """The job's runtime_env: ship rlbench and the env's package to every worker as ``py_modules``.

    An env given as ``package.module:Class`` whose top-level package is not installed in
    site-packages (e.g. ``envs/`` next to the spec) is shipped; a gymnasium id ships nothing more.
    The nodes still need the same Python packages rlbench's workers import (ray[rllib], torch,
    gymnasium): use one image for the whole cluster.
    """
    modules: list[str] = []
    rlbench_dir = Path(__file__).resolve().parents[1]
    modules.append(str(rlbench_dir))
    if ":" in env:
        top = env.partition(":")[0].split(".")[0]
        directory = _package_dir(top)
        if directory is not None and "site-packages" not in directory.parts and directory != rlbench_dir:
            modules.append(str(directory))
    return {"py_modules": modules}
