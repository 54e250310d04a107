"""Connecting to a Ray cluster as rlbench does: token authentication and code shipping (standard library only).

Token authentication stays on, and its token stays private (:func:`secure_token`: Ray 2.60 writes it
world-readable); a private local runtime listens on 127.0.0.1 only
(:func:`bind_local_runtime_to_loopback`). Token authentication stays on: a cluster started by ``ray start --head`` on
Ray 2.60 requires
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
import secrets
import stat
import sys
from collections.abc import Mapping, MutableMapping
from pathlib import Path
from typing import Any

from rlbench.ray_facts import private

#: Environment variable Ray (and rlbench) read the cluster address from.
ADDRESS_ENV = "RAY_ADDRESS"


def token_available(environ: Mapping[str, str] | None = None) -> bool:
    """True when a Ray auth token is at hand (``RAY_AUTH_TOKEN``, ``RAY_AUTH_TOKEN_PATH`` or ~/.ray/auth_token)."""
    environ = os.environ if environ is None else environ
    if environ.get("RAY_AUTH_TOKEN"):
        return True
    path = environ.get("RAY_AUTH_TOKEN_PATH")
    return Path(path).is_file() if path else (Path.home() / ".ray" / "auth_token").is_file()


def enable_token_auth(environ: MutableMapping[str, str] | None = None) -> str | None:
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
            config = private.resolve("ray._raylet.Config")
            if config is not None:
                config.initialize("")
    return environ.get("RAY_AUTH_MODE")


def token_path(environ: Mapping[str, str] | None = None) -> Path:
    """Where Ray reads its token file: ``RAY_AUTH_TOKEN_PATH``, else ``~/.ray/auth_token``."""
    environ = os.environ if environ is None else environ
    path = environ.get("RAY_AUTH_TOKEN_PATH")
    return Path(path) if path else Path.home() / ".ray" / "auth_token"


def secure_token(environ: Mapping[str, str] | None = None, *, create: bool = True) -> str | None:
    """Make Ray's token file private before the first ``ray.init``; returns a line to print, or None.

    Ray 2.60 writes ``~/.ray/auth_token`` with the default umask (0644 measured), and the token is
    all that keeps another local user from running code in a trial's Ray. With ``create`` and no
    token anywhere (no ``RAY_AUTH_TOKEN``, no file), the default file is created here 0600
    (``secrets.token_hex(32)``, as Ray would), in a ``~/.ray`` made 0700. A file readable or
    writable by others that this user owns is tightened to 0600, and the returned line says so
    (so it is said once: the next call finds it private). The token is never read or printed.
    """
    environ = os.environ if environ is None else environ
    path = token_path(environ)
    if create and not environ.get("RAY_AUTH_TOKEN") and not environ.get("RAY_AUTH_TOKEN_PATH"):
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
        except FileExistsError:
            pass
        else:
            with os.fdopen(fd, "w") as f:
                f.write(secrets.token_hex(32))
                f.flush()
                os.fsync(f.fileno())
            return None
    try:
        st = os.stat(path)
    except OSError:
        return None
    loose = stat.S_IMODE(st.st_mode) & 0o077
    if not loose:
        return None
    if st.st_uid != os.geteuid():
        return (
            f"Ray's token {path} is mode {stat.S_IMODE(st.st_mode):04o} and owned by another user: other users "
            "can read it and run code in every trial's Ray; make it 0600"
        )
    os.chmod(path, 0o600)
    return (
        f"Ray's token {path} was mode {stat.S_IMODE(st.st_mode):04o} (readable by other local users, who could "
        "then run code in a trial's Ray): made it 0600"
    )


def auth_disabled_warning(environ: Mapping[str, str] | None = None) -> str | None:
    """A warning when the environment turns Ray's token authentication off (rlbench never does)."""
    environ = os.environ if environ is None else environ
    if (environ.get("RAY_AUTH_MODE") or "").strip().lower() == "disabled":
        return (
            "RAY_AUTH_MODE=disabled is set: every trial's Ray runtime then runs code from anyone who can reach "
            "its ports (any local user; with --address, anyone on the network); unset it to keep token "
            "authentication on"
        )
    return None


#: Ray's switch between "this machine only" and "a cluster node" (``ray._private.ray_constants``).
#: Off, ``services.get_node_ip_address`` is 127.0.0.1 and every server of a local runtime listens there.
LOOPBACK_ENV = "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"


def bind_local_runtime_to_loopback(environ: MutableMapping[str, str] | None = None) -> None:
    """Make the private local Ray runtime this process starts next listen on 127.0.0.1 only.

    Ray 2.60 turns ``_node_ip_address="127.0.0.1"`` into the machine's outside address unless its
    cluster switch is off (``services.resolve_ip_for_localhost``); with it off, gcs_server,
    raylet, the workers and the agents bind 127.0.0.1 (measured, ``tests/worker/test_ray_auth.py``),
    where by default they listen on all interfaces. Only for a runtime of this machine: never
    before connecting to a cluster. Ray reads the switch at import; a process that imported Ray
    already (the trial's fork server) gets the module's constant set too (a private name: if a Ray
    release drops it, the runtime listens everywhere again and the test says so).
    """
    live = environ is None
    environ = os.environ if environ is None else environ
    environ[LOOPBACK_ENV] = "0"
    if live and "ray" in sys.modules:
        held = private.owner("ray._private.ray_constants.ENABLE_RAY_CLUSTER")
        if held is not None:
            setattr(held[0], held[1], False)


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
