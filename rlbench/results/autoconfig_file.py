"""``autoconfig.json`` as it is read back (schema 7: a search's and a walk's fields; the older schemas' files too):
one pydantic model a record, with the fields of the types the writer writes it from (``rlbench.autoconfig``:
``Standing``, ``Elimination``, ``BudgetPlan``, ``PredictionRow``, ``StepsStanding``, ``StepsComparison``,
``PathStep``, ``PointRead``; tests/autoconfig/test_autoconfig_file_fields.py holds the two lists of fields
equal), parsed once by :func:`read_autoconfig_file`, which the analysis calls (``AutoconfigRun.file``).

A results folder may come from elsewhere, damaged or hostile, so the reading never fails on a value
(:class:`~rlbench.results.file_record.FileRecord`): every field is optional (an older schema lacks the newer ones),
a value not of its field's type reads as the field's default (None: the report draws a dash), and an entry of a
list that is not an object is left out. Only a file that is not a JSON object at all reads as None (no Autoconfig
section). Fields: docs/AUTOCONFIG.md, "Outputs" and "The walk".
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import ValidationError

from rlbench.results.file_record import FileRecord, Number, Rows


class StepsEntry(FileRecord):
    """A standing's env steps to the target (``standings[].steps_to_target``; ``StepsStanding`` less its key)."""

    median: Number | None = None
    """Median env steps to the target; None when more than half were censored."""
    ci_low: Number | None = None
    """Lower end of its bootstrap interval."""
    ci_high: Number | None = None
    """Upper end (None: unbounded)."""
    n: int | None = None
    """Readings (censored included)."""
    censored: int | None = None
    """Readings that did not reach the target."""


class StandingEntry(FileRecord):
    """One configuration's readings summarised (``best``, ``baseline``, ``standings[]``, ``indistinguishable[]``,
    ``not_measured_enough[]``): the decision core's ``Standing``, with its axes and its env steps to the target."""

    key: str | None = None
    """Candidate key."""
    axes: dict[str, Any] = {}
    """Grid axis -> value (null: the spec leaves it at its default)."""
    cpus: Number | None = None
    """CPUs it asks for."""
    gpus: Number | None = None
    """GPUs it asks for."""
    median: Number | None = None
    """Median, in the file's ``unit``."""
    ci_low: Number | None = None
    """Lower end of the median's bootstrap interval."""
    ci_high: Number | None = None
    """Upper end."""
    n: int | None = None
    """Readings (censored included)."""
    censored: int | None = None
    """Readings that did not reach the target (time to target)."""
    failed: int | None = None
    """Trials that gave no reading."""
    steps_to_target: StepsEntry | None = None
    """Time to target only: its env steps to the target; else None."""


class SpeedupEntry(FileRecord):
    """The answer over the baseline (``speedup``)."""

    ratio: Number | None = None
    """median(best) / median(baseline) in throughput, or the baseline's time over the best's; None: not measurable."""
    ci_low: Number | None = None
    """Lower end of its interval (None: too few readings)."""
    ci_high: Number | None = None
    """Upper end."""


class EliminationEntry(FileRecord):
    """Why a configuration left the search (``eliminations[]``) or the race (``race_left[]``): ``Elimination``."""

    key: str | None = None
    """Candidate key."""
    rung: int | None = None
    """The rung (the race: the round) after which it left (-1: before any trial)."""
    reason: str | None = None
    """Why (``analysis/autoconfig_run.py``'s ``Reason``; an unknown one is said as written)."""
    detail: str | None = None
    """The numbers behind the reason, in words."""
    median: Number | None = None
    """Its median then."""
    ci_low: Number | None = None
    """Its interval then."""
    ci_high: Number | None = None
    """Upper end."""
    leader_key: str | None = None
    """The leader it was compared with."""


class PlanEntry(FileRecord):
    """What the budget bought after the probes (``plan``, schema 4 on): ``BudgetPlan``."""

    step: str | None = None
    """Which step of the plan (``full``, ``fewer_readings``, ``model_top``, ``race_only``, ``smallest``)."""
    readings: int | None = None
    """First-rung readings of each configuration the search measures (0: no search)."""
    measured: list[str] = []
    """Configurations the search measures."""
    not_measured: list[str] = []
    """Configurations the model kept but the budget left unmeasured."""
    race: list[str] = []
    """``race_only`` and ``smallest``: the race's entrants."""
    search_budget_s: Number | None = None
    """Seconds the search could charge."""
    race_min_s: Number | None = None
    """Seconds of the race's minimum."""
    left_s: Number | None = None
    """Seconds the search and the race had together."""
    trial_cost_s: Number | None = None
    """The median configuration's expected trial cost."""
    words: str | None = None
    """The plan in one sentence."""


class PredictionEntry(FileRecord):
    """One row of predicted against measured (``predicted_vs_measured[]``): ``PredictionRow``."""

    key: str | None = None
    """Candidate key."""
    predicted_iteration_s: Number | None = None
    """The cost model's iteration (None: it cannot predict it)."""
    measured_iteration_s: Number | None = None
    """What the trial measured."""
    error_pct: Number | None = None
    """100 * (predicted - measured) / measured."""


class StepsComparisonEntry(FileRecord):
    """An entrant's env steps to the target against the chosen one's (``steps_to_target[]``): ``StepsComparison``."""

    key: str | None = None
    """The entrant."""
    chosen_key: str | None = None
    """The chosen configuration."""
    ratio: Number | None = None
    """median steps(key) / median steps(chosen)."""
    ci_low: Number | None = None
    """Lower end of the ratio's interval."""
    ci_high: Number | None = None
    """Upper end."""
    p_value: Number | None = None
    """One-sided exact Mann-Whitney U p-value (None: too few rounds)."""
    differ: bool | None = None
    """Whether the one rule finds a change."""
    text: str | None = None
    """The finding in words."""


class PathStepEntry(FileRecord):
    """One step of a walk (``path[]``): the walk's ``PathStep``, field for field."""

    step: int | None = None
    """1 for the first move tried."""
    knob: str | None = None
    """The spec key the verdict named."""
    axis: str | None = None
    """The spec key the walk set."""
    from_key: str | None = None
    """The point the step started from."""
    to_key: str | None = None
    """Where it stood after the step."""
    from_value: Any = None
    """The knob's value at the start of the step."""
    to_value: Any = None
    """Its value after."""
    values: list[Any] = []
    """The values raced beside the current one."""
    verdict_label: str | None = None
    """The verdict's short label."""
    verdict: str | None = None
    """The verdict's sentence, with its numbers."""
    outcome: str | None = None
    """``gain``, ``cheaper`` or ``stay``."""
    speedup: Number | None = None
    """The new point over the old one in the step's race (``stay``: the best value raced over the current)."""
    ci_low: Number | None = None
    """Lower end of its interval."""
    ci_high: Number | None = None
    """Upper end."""
    design: str | None = None
    """``paired`` by round, or ``unpaired``."""
    readings_from: int | None = None
    """The old point's race readings."""
    readings_to: int | None = None
    """The new (or best) point's race readings."""
    rounds: int | None = None
    """The step's race rounds."""
    wall_s: Number | None = None
    """Seconds the step's trials cost."""
    changes_learning: str | None = None
    """What the knob changes in learning, or None (speed only)."""
    learning: str | None = None
    """The two points' returns at equal env steps, with the evidence; else None."""
    learning_cost: bool = False
    """Whether that comparison shows the move cost learning."""
    race_stop_reason: str | None = None
    """Why the step's race stopped."""
    skipped: list[str] = []
    """Values of the knob the machine cannot run, with why."""
    kind: str | None = None
    """``verdict``, ``continue`` or ``trade`` (issue 57; None: an older file)."""
    passed: list[str] = []
    """The point's verdicts passed before this one, each with why."""
    partner_axis: str | None = None
    """A trade's second knob (None: one knob moved)."""
    partner_from: Any = None
    """Its value at the start of the step."""
    partner_to: Any = None
    """Its value after."""
    extra_rounds: int = 0
    """Rounds its race ran past its cap of 6 while the rule could not say and its best value led (0: none, or an
    older file)."""


class PointEntry(FileRecord):
    """A point a walk stood at (``walk_points[]``): the walk's ``PointRead``, field for field."""

    step: int | None = None
    """0: the start; k: where step k left the walk (None: not a point the figure can place)."""
    key: str | None = None
    """The configuration."""
    median: Number | None = None
    """Median of the readings that put the walk there, in the file's ``unit``."""
    ci_low: Number | None = None
    """Lower end of its interval."""
    ci_high: Number | None = None
    """Upper end."""
    n: int | None = None
    """Those readings."""
    ceiling_env_steps_per_s: Number | None = None
    """What its env and learner allow here; None: not measured."""
    ceiling_frac: Number | None = None
    """Its throughput over that ceiling; None: not measured."""
    verdict: str | None = None
    """What its verdicts said."""


class AutoconfigFile(FileRecord):
    """``autoconfig.json``: a search's answer and its evidence, and a walk's path (``mode: walk``)."""

    schema_version: int | None = None
    """The file's schema (docs/AUTOCONFIG.md; 7: the walk's fields)."""
    mode: str = "search"
    """``search`` or ``walk`` (schema 7; before: a search)."""
    objective: str | None = None
    """``throughput`` or ``time_to_target``."""
    unit: str = ""
    """``env_steps_per_s`` or ``time_to_target_s``: the medians' unit."""
    best: StandingEntry | None = None
    """The chosen configuration (a walk: the endpoint); None: nothing gave a reading."""
    fastest_key: str | None = None
    """The highest median."""
    baseline: StandingEntry | None = None
    """The baseline's standing (a walk: the start)."""
    speedup: SpeedupEntry = SpeedupEntry()
    """The best over the baseline."""
    indistinguishable: Rows[StandingEntry] = []
    """The fastest, then those the one rule cannot tell from it."""
    standings: Rows[StandingEntry] = []
    """Every entrant of the source the answer rests on."""
    not_measured_enough: Rows[StandingEntry] = []
    """Standings with a reading, but too few to tell from the fastest (schema 4 on)."""
    trials_run: int | None = None
    """Trials of the search and the race (a walk: its races)."""
    probe_trials: int | None = None
    """Probe trials (a walk: the start's readings); schema 4 on."""
    wall_s: Number | None = None
    """Seconds the run took."""
    budget_s: Number | None = None
    """Seconds it was given."""
    tolerance_pct: Number | None = None
    """The run's "as good as the best", in percent (schema 6 on)."""
    race_rounds: int | None = None
    """The race's rounds."""
    race_partial_rounds: int | None = None
    """Of them, those that ran the leader and its closest rivals only (schema 3 on)."""
    race_stop_reason: str | None = None
    """Why the race stopped."""
    race_left: Rows[EliminationEntry] = []
    """Entrants that left the race (schema 3 on)."""
    search_stop_reason: str | None = None
    """Why the search handed over to the race."""
    eliminations: Rows[EliminationEntry] = []
    """The search's log."""
    predicted_vs_measured: Rows[PredictionEntry] = []
    """The refit cost model beside what each trial measured."""
    steps_to_target: Rows[StepsComparisonEntry] = []
    """Time to target only: each other entrant's env steps against the chosen one's (schema 2 on)."""
    answer_source: str = "race"
    """Whose readings the answer rests on: ``race``, ``search``, ``probe``, ``search+probe`` (before schema 4: the
    race)."""
    design: str | None = None
    """How the fastest was compared with the others (schema 5 on)."""
    design_note: str | None = None
    """Why the race's rounds were not paired, or None."""
    evidence: str | None = None
    """What the answer rests on, in one sentence (schema 4 on)."""
    trial: str | None = None
    """How long a trial was and why, in words."""
    cold_start_s: Number | None = None
    """A trial's seconds outside training, as measured."""
    plan: PlanEntry | None = None
    """What the budget bought (schema 4 on; a walk has none)."""
    path: Rows[PathStepEntry] = []
    """A walk's steps (schema 7)."""
    stop_reason: str | None = None
    """Why the walk stopped."""
    stop_text: str | None = None
    """That, in words."""
    walk_points: Rows[PointEntry] = []
    """Each point the walk stood at."""
    grid_walk: bool | None = None
    """Whether the walk ran on a grid (``--walk``)."""
    warm_windows: int | None = None
    """A walk's readings: up to this many windows of one warm trial a process (issue 56); 0 or None: each reading a
    cold trial of its own."""


def read_autoconfig_file(path: Path) -> AutoconfigFile | None:
    """``autoconfig.json`` at ``path`` read once, typed; None when there is none (a sweep's folder) or it is not a
    JSON object (damaged)."""
    try:
        text = Path(path).read_bytes()
    except OSError:
        return None
    try:
        return AutoconfigFile.model_validate_json(text)
    except ValidationError:  # not JSON, not an object, or nested beyond the parser's limit
        return None
