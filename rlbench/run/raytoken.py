"""Before the sweep's first Ray: Ray's token made private, and a word when authentication is off."""

from __future__ import annotations

from rich.console import Console
from rich.text import Text

from rlbench.results.text import plain
from rlbench.worker.ray_auth import auth_disabled_warning, secure_token


def _warn(console: Console, note: str | None) -> None:
    if note:
        console.print(Text.assemble(("warning:", "yellow"), " ", plain(note)), soft_wrap=True)


def secure_ray(console: Console, *, create: bool) -> None:
    """Make Ray's token file private (created 0600 with ``create``; see
    :func:`~rlbench.worker.ray_auth.secure_token`), saying so when a looser one was tightened."""
    _warn(console, secure_token(create=create))


def warn_if_auth_disabled(console: Console) -> None:
    """Say so when the environment turns Ray's token authentication off (rlbench never does)."""
    _warn(console, auth_disabled_warning())
