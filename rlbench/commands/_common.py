"""What the verbs share: their typed options from the parsed flags, the console, the error line for bad input,
printing text that is not ours, paths the user typed, the one grammar of ``--threshold``."""

from __future__ import annotations

import argparse
import dataclasses
import os
import re
from pathlib import Path
from typing import IO, TYPE_CHECKING, TypeVar, overload

from rich.console import Console
from rich.text import Text

from rlbench.analysis.findings import CHANGE_THRESHOLD
from rlbench.commands.exit_codes import EXIT_BAD_INPUT
from rlbench.results.session import ReadFolder, open_for_read
from rlbench.results.text import plain

if TYPE_CHECKING:
    from _typeshed import DataclassInstance

Options = TypeVar("Options", bound="DataclassInstance")


def options_from(cls: type[Options], args: argparse.Namespace) -> Options:
    """A verb's typed options (a dataclass, a field a flag by its ``dest``, as cleanrl's ``Args``) from the
    parsed flags: the one place a Namespace becomes them; verbs call each other with the dataclass."""
    return cls(**{f.name: getattr(args, f.name) for f in dataclasses.fields(cls)})


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
    """Print ``error: <message>`` and return the bad-input exit code (the message is printed as
    plain text: it quotes paths, spec values and env errors, never markup)."""
    console.print(Text.assemble(("error:", "red"), " ", plain(message, keep_newlines=True)), soft_wrap=True)
    return EXIT_BAD_INPUT


def say(console: Console, text: str, style: str = "") -> None:
    """Print a line that holds text not ours (paths, values, reasons) as plain text, controls visible."""
    console.print(Text(plain(text), style=style), soft_wrap=True)


def read_folder(path: Path, console: Console) -> ReadFolder:
    """A result folder (maybe from elsewhere) opened to read (:func:`rlbench.results.session.open_for_read`:
    OutDirError says why it cannot be); a folder of an older format, migrated on read, is named with a note."""
    opened = open_for_read(path)
    if opened.note:
        say(console, f"note: {opened.note}", style="yellow")
    return opened


@overload
def own_path(path: Path) -> Path: ...
@overload
def own_path(path: None) -> None: ...
def own_path(path: Path | None) -> Path | None:
    """A path the user typed, its own symbolic link (if it is one) followed here, once: inside a
    results folder rlbench follows none (``results.lock.check_plain_folder``)."""
    return Path(path).resolve() if path is not None and Path(path).is_symlink() else path


@overload
def own_file(path: Path) -> Path: ...
@overload
def own_file(path: None) -> None: ...
def own_file(path: Path | None) -> Path | None:
    """A file path the user typed for an output, its folder's links followed here, once (rlbench's
    writes never follow a link in the folder itself)."""
    return None if path is None else Path(path).parent.resolve() / Path(path).name


@overload
def int_list(text: str, flag: str) -> list[int]: ...
@overload
def int_list(text: None, flag: str) -> None: ...
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


def add_threshold_argument(p: argparse.ArgumentParser, what: str) -> None:
    """``--threshold`` as compare, history and bisect take it (:func:`threshold_of` reads it in ``run``)."""
    p.add_argument(
        "--threshold",
        default=None,
        help=f"{what}: 5%%, or 0.05 (default {100 * CHANGE_THRESHOLD:.0f}%%, the analysis' CHANGE_THRESHOLD)",
    )


def threshold_of(text: str | None) -> float:
    """``5%`` or ``0.05`` -> 0.05, None -> :data:`~rlbench.analysis.findings.CHANGE_THRESHOLD`; ValueError with the
    fix for anything else: a share must lie strictly between 0 and 1 (0 would call every change with evidence
    a regression, 1 none)."""
    if text is None:
        return CHANGE_THRESHOLD
    found = re.fullmatch(r"\s*([0-9]*\.?[0-9]+)\s*(%?)\s*", text)
    value = (float(found.group(1)) / (100 if found.group(2) else 1)) if found else -1.0
    if not 0 < value < 1:
        raise ValueError(f"--threshold {text!r}: give a share between 0 and 1, e.g. 5% or 0.05")
    return value
