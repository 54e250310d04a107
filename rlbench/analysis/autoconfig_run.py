"""A run of ``rlbench autoconfig`` as the analysis reads it: its ``autoconfig.json`` (typed, read once:
:mod:`rlbench.results.autoconfig_file`) and its Pareto front of CPUs
given against throughput (:func:`autoconfig_run`, which :func:`~rlbench.analysis.analyze` calls, so the report
draws what is computed here), the one spelling of why a configuration left the search or the race
(:class:`Reason`) and its one table of words (:data:`REASON_WORDS`).

The decision core (``rlbench.autoconfig``) writes the reasons into ``autoconfig.json``; the evidence sentence it
writes there and the report's search path both say them in these words. Two tables that had drifted apart
("separated in the search" and "separated from the leader"; "not raced" two ways) are this one (issue 51).
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from rlbench.analysis.configs import config_label
from rlbench.analysis.evidence import too_few_readings_text
from rlbench.analysis.targets import cpus_given, pareto_front
from rlbench.results.autoconfig_file import AutoconfigFile, read_autoconfig_file
from rlbench.results.layout import ResultsFolder


class Reason(str, enum.Enum):
    """Why a configuration left (``autoconfig.json``'s ``eliminations[].reason`` and ``race_left[].reason``): a
    ``str`` (Python 3.10 has no ``StrEnum``), so JSON writes it as the plain word and it compares equal to one read."""

    __str__ = str.__str__
    __format__ = str.__format__  # type: ignore[assignment]  # the plain word in f-strings, as str's

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


@dataclass(frozen=True)
class AutoconfigRun:
    """What the report shows of an autoconfig run beside its trials."""

    file: AutoconfigFile
    """``autoconfig.json`` as read (:class:`~rlbench.results.autoconfig_file.AutoconfigFile`: a search's fields and a
    walk's); text from a folder, so a value not of its field's type reads as None and the report draws a dash."""
    front: pd.DataFrame
    """Configurations no cheaper one beats (:func:`cpu_front`): ``label``, ``cpus_given``, ``env_steps_per_s``,
    ``trials``; cheapest first."""


def cpu_front(trials: pd.DataFrame, axes: list[str]) -> pd.DataFrame:
    """Configurations not beaten by a cheaper one: CPUs given (:func:`~rlbench.analysis.targets.cpus_given`, the
    plan's rule, as time to target's front) against the median steady env steps/s over every ok trial of it
    (:func:`~rlbench.analysis.targets.pareto_front`), cheapest first, the faster first among equals."""
    columns = ["label", "cpus_given", "env_steps_per_s", "trials"]
    ok = trials[(trials["status"] == "ok") & trials["env_steps_per_s"].notna()] if len(trials) else trials
    if ok.empty:
        return pd.DataFrame(columns=columns)
    ok = ok.assign(cpus_given=cpus_given(ok).fillna(0.0))
    per = pd.DataFrame(
        [
            {
                "label": config_label(g.iloc[0], axes),
                "cpus_given": float(g["cpus_given"].iloc[0]),
                "env_steps_per_s": float(g["env_steps_per_s"].median()),
                "trials": len(g),
            }
            for _, g in ok.groupby("index")
        ],
        columns=columns,
    )
    front = per[pareto_front(per, ["cpus_given"], ["env_steps_per_s"])]
    return front.sort_values(["cpus_given", "env_steps_per_s"], ascending=[True, False]).reset_index(drop=True)


def autoconfig_run(folder: Path, trials: pd.DataFrame, axes: list[str]) -> AutoconfigRun | None:
    """The autoconfig run of the result set in ``folder``, or None when ``rlbench autoconfig`` did not write it."""
    file = read_autoconfig_file(ResultsFolder(Path(folder)).autoconfig)
    return None if file is None else AutoconfigRun(file, cpu_front(trials, axes))
