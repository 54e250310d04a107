"""The spec's errors: what a user got wrong, and a cross-field check's error pinned to a key."""

from __future__ import annotations


class SpecError(Exception):
    """A problem in the user's sweep spec; the message says where and how to fix it."""


class _ValueErrorAt(ValueError):
    """A cross-field check's error, pinned to the key the user should change (for its line)."""

    def __init__(self, loc: tuple[str | int, ...], message: str):
        super().__init__(message)
        self.loc = loc
