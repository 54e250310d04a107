"""What the verbs share: the console, the error line for bad input."""

from __future__ import annotations

import os
from typing import IO

from rich.console import Console

from rlbench.commands.exit_codes import EXIT_BAD_INPUT

#: Width of the console when the output is not a terminal and COLUMNS is not set: wide enough that
#: every table prints at its natural width and no line is wrapped (a log viewer wraps for itself).
LOG_WIDTH = 1000


def make_console(file: IO[str] | None = None) -> Console:
    """The console every verb prints to.

    In a terminal, rich's own: its width (or ``COLUMNS``), colours unless ``NO_COLOR`` is set, live
    progress. Anywhere else (CI, ``| tee``, a file) rich would lay tables out at 80 columns and wrap
    every cell (``t000r`` / ``0``): there tables print at their natural width unless ``COLUMNS``
    says otherwise, without colour, and the sweep logs one line per trial instead of a bar.
    """
    console = Console(file=file)
    if console.is_terminal or os.environ.get("COLUMNS", "").isdigit():
        return console
    return Console(file=file, width=LOG_WIDTH)


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
