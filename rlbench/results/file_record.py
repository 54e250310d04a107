"""A record of a results file as a later command reads it back (``autoconfig.json``: :mod:`.autoconfig_file`;
``env_ceilings.json``: :mod:`.ceilings_file`; ``events.jsonl``: :mod:`.events_file`): a pydantic model whose reading
never fails on a value.

A results folder may come from elsewhere, damaged or hostile. A :class:`FileRecord`'s value not of its field's type
reads as the field's default (None where the writer may leave it out: the reader draws a dash), a list of records
(:data:`Rows`) keeps its entries that are JSON objects, and a field the record does not name (a newer writer's) is
ignored. Types are strict (``"12"`` is no number, ``true`` no count), and a number keeps the type it was written with
(:data:`Number`), so a report prints what was written.
"""

from __future__ import annotations

from typing import Annotated, Any, TypeVar

from pydantic import BaseModel, BeforeValidator, ConfigDict, ValidationError, ValidationInfo, field_validator
from pydantic_core.core_schema import ValidatorFunctionWrapHandler

T = TypeVar("T")

#: A number as written: an int stays an int (``cpus: 2``), a float a float, so the report's one number format
#: prints it as the writer wrote it; a bool or a text is no number.
Number = int | float


def _objects(value: Any) -> Any:
    """A list's entries that are JSON objects (a damaged entry is left out, not the whole list)."""
    return [v for v in value if isinstance(v, dict)] if isinstance(value, list) else value


#: A list of records, read entry by entry (:func:`_objects`).
Rows = Annotated[list[T], BeforeValidator(_objects)]


class FileRecord(BaseModel):
    """A record read from a file: a value not of its field's type reads as the field's default."""

    model_config = ConfigDict(strict=True, extra="ignore", frozen=True, use_attribute_docstrings=True)

    @field_validator("*", mode="wrap")
    @classmethod
    def _damaged_reads_as_default(cls, value: Any, handler: ValidatorFunctionWrapHandler, info: ValidationInfo) -> Any:
        try:
            return handler(value)
        except ValidationError:
            return cls.model_fields[str(info.field_name)].get_default(call_default_factory=True)
