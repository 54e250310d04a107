"""What the verbs share: the error line for bad input."""

from __future__ import annotations

from rich.console import Console

from rlbench.commands.exit_codes import EXIT_BAD_INPUT


def bad_input(console: Console, message: str) -> int:
    """Print ``error: <message>`` and return the bad-input exit code."""
    console.print(f"[red]error:[/] {message}", highlight=False, soft_wrap=True)
    return EXIT_BAD_INPUT


def int_list(text: str | None, flag: str) -> list[int] | None:
    """``1,2,4`` -> [1, 2, 4]; ValueError naming ``flag`` for anything else; None for None."""
    if text is None:
        return None
    try:
        values = [int(v) for v in text.split(",") if v.strip()]
    except ValueError:
        raise ValueError(f"{flag} takes comma-separated whole numbers, e.g. 1,2,4 (got {text!r})") from None
    if not values or min(values) < 1:
        raise ValueError(f"{flag} takes whole numbers >= 1 (got {text!r})")
    return values
