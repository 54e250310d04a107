"""A run of ``rlbench autoconfig`` as the analysis reads it: the one spelling of why a configuration left the
search or the race (:class:`Reason`) and its one table of words (:data:`REASON_WORDS`).

The decision core (``rlbench.autoconfig``) writes the reasons into ``autoconfig.json``; the evidence sentence it
writes there and the report's search path both say them in these words. Two tables that had drifted apart
("separated in the search" and "separated from the leader"; "not raced" two ways) are this one (issue 51).
"""

from __future__ import annotations

import enum

from rlbench.analysis.evidence import too_few_readings_text


class Reason(enum.StrEnum):
    """Why a configuration left (``autoconfig.json``'s ``eliminations[].reason`` and ``race_left[].reason``)."""

    MODEL = "model"
    """Predicted below the cut by the cost model, before any trial (throughput only)."""
    BUDGET = "budget"
    """Not measured: the budget's plan measured the model's top configurations only."""
    SEPARATED = "separated"
    """Below the leader by the change rule (the interval of the ratio below 1, the rank test agreeing)."""
    READING_AND_MODEL = "reading_and_model"
    """Fewer readings than the rank test needs, but they and the refit model both put it below the leader beyond
    the model's error."""
    NOT_RACED = "not_raced"
    """Measured, but the race had room for fewer; its readings are kept."""
    FAILED = "failed"
    """Failed at least twice and never gave a reading."""


#: Each reason in words: the report's search path (``key: words after rung r (detail)``) and the evidence sentence
#: (``2 words; 1 words``) both read this one table.
REASON_WORDS: dict[Reason, str] = {
    Reason.MODEL: "dropped by the cost model",
    Reason.BUDGET: "not measured (budget)",
    Reason.SEPARATED: "separated from the leader",
    Reason.READING_AND_MODEL: f"dropped on {too_few_readings_text(a_side=False)}, the model agreeing",
    Reason.NOT_RACED: "measured, not raced (budget)",
    Reason.FAILED: "failed",
}


def reason_words(reason: object) -> str:
    """A reason in words; an unknown one (a newer or damaged file) as it is written."""
    try:
        return REASON_WORDS[Reason(str(reason))]
    except ValueError:
        return str(reason)
