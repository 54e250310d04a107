"""What every report section is given: the analysis, and what :func:`~rlbench.report.document.write_report` made
beside it (the figures drawn, the notes, ``next.yaml`` as written, the profiles' view).

A section is a function of one :class:`SectionInput` that returns its blocks (its figures among them, as
:class:`~rlbench.report.blocks.Figure` blocks), ``[]`` when it has nothing to show; the document draws
:data:`rlbench.report.sections.SECTIONS` in order. A new section: its module, and its line in that list.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from rlbench.analysis.result_set import Analysis
from rlbench.report.blocks import Block, Figure
from rlbench.report.next_spec import NextSpec
from rlbench.report.runners_section import InsideReport


@dataclass(frozen=True)
class SectionInput:
    """One result set's analysis and what the report wrote beside it."""

    analysis: Analysis
    """Everything computed (:func:`rlbench.analysis.analyze`)."""
    inside: InsideReport | None = None
    """Inside the iteration and per role (:func:`rlbench.report.runners_section.inside_report`), or None."""
    figures: list[Figure] = field(default_factory=list)
    """The figures of the Figures section, drawn already."""
    notes: list[str] = field(default_factory=list)
    """Notes under the figures (a figure left out, ``next.yaml`` not written); empty ones are skipped."""
    written: NextSpec | None = None
    """``next.yaml`` as written, or None."""


#: A report section: its blocks for one result set (``[]``: nothing to show, no heading either).
Section = Callable[[SectionInput], list[Block]]
