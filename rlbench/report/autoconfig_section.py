"""The report's Autoconfig section, for a result set ``rlbench autoconfig`` wrote (it has ``autoconfig.json``).

The answer with its speed-up and interval and what it rests on, the plan the budget bought (how long a
trial was, what one cost here, which step of the plan and why), the search path (every trial by phase,
rung and round, and why each configuration left), the cost model's prediction against what each trial
measured, and the Pareto front of CPUs asked against throughput. Built once as blocks like every section, from
``autoconfig.json`` as the analysis read it (:class:`~rlbench.results.autoconfig_file.AutoconfigFile`: a damaged
value reads as None, drawn as a dash).
"""

from __future__ import annotations

import math

import pandas as pd

from rlbench.analysis.autoconfig_run import AutoconfigRun, reason_words
from rlbench.analysis.configs import config_label
from rlbench.analysis.evidence import enough_readings_text, too_few_readings_text
from rlbench.analysis.findings import CONFIDENCE
from rlbench.report.blocks import Block, Bullets, Heading, Paragraph, Table
from rlbench.report.style import fmt
from rlbench.results.autoconfig_file import AutoconfigFile, EliminationEntry, PlanEntry

_PHASES = {"probe": 0, "search": 1, "race": 2}


#: Whose readings an answer rests on, in words (autoconfig.json's ``answer_source``).
_SOURCES = {"race": "race", "search": "search", "probe": "probe", "search+probe": "search and probe"}


def indistinguishable_text(keys: list[str | None], tolerance_pct: float | None) -> str:
    """The configurations the change rule cannot tell from the fastest, and how the chosen one was picked among
    them, with the run's own tolerance (autoconfig.json 6 and later; an older file did not record it)."""
    within = (
        f"within {tolerance_pct:g}% of the fastest's median (the run's tolerance_pct)"
        if tolerance_pct is not None
        else "within the run's tolerance_pct of the fastest's median (not recorded by this autoconfig.json)"
    )
    return (
        f"Statistically indistinguishable from the fastest ({enough_readings_text()}, the change rule finding no "
        f"difference): {', '.join(map(str, keys))}. The chosen one is the cheapest of them {within}."
    )


def answer_text(data: AutoconfigFile) -> str:
    """The answer in one sentence: winner, median, speed-up with its interval, trials and seconds."""
    best, sp, trials = data.best, data.speedup, data.trials_run or 0
    if best is None:
        seconds = f"{fmt(data.wall_s)} s of a {fmt(data.budget_s)} s budget"
        return f"No configuration gave a reading ({trials} trials, {seconds})."
    base = data.baseline
    why = "the baseline gave no reading" if base is None or not base.n else "the baseline mostly missed the target"
    ratio = (
        f"not measurable ({why})"
        if sp.ratio is None
        else (
            f"{sp.ratio:.2f}x"
            + (
                f" ({CONFIDENCE:.0%} CI {sp.ci_low:.2f}-{sp.ci_high:.2f})"
                if sp.ci_low is not None and sp.ci_high is not None
                else " (no interval: too few readings)"
            )
        )
    )
    source = _SOURCES.get(data.answer_source, data.answer_source)
    n = best.n
    return (
        f"Chosen: {best.key}, median {fmt(best.median, 1)} {data.unit} over {n} {source} "
        f"reading{'s' * (n != 1)}; speed-up over the baseline ({None if base is None else base.key}): {ratio}. "
        f"{trials} search and race trials after {1 if data.probe_trials is None else data.probe_trials} probe(s), "
        f"{fmt(data.wall_s)} s of a {fmt(data.budget_s)} s budget."
    )


def _trials(plan: PlanEntry) -> float:
    """Trials the left seconds buy at the median cost (nan: either is missing, or no cost)."""
    left, cost = plan.left_s, plan.trial_cost_s
    return left // cost if left is not None and cost is not None and cost > 0 else math.nan


def plan_blocks(data: AutoconfigFile) -> list[Block]:
    """What the budget bought: the trial, its cost here, the plan's step and why (autoconfig.json 4 and later)."""
    plan = data.plan
    if plan is None:
        return []
    rows = [
        ["how long a trial was", str(data.trial or "-")],
        [
            "a trial's cost here",
            f"{fmt(plan.trial_cost_s, 1)} s, of it {fmt(data.cold_start_s, 1)} s "
            "of cold start and shutdown (measured by the probes)",
        ],
        [
            "seconds for the search and the race",
            f"{fmt(plan.left_s)} s"
            + (f": about {int(trials)} trials at that cost" if math.isfinite(trials := _trials(plan)) else ""),
        ],
        ["the plan", f"{plan.step}: {plan.words}"],
        [
            "measured by the search",
            f"{len(plan.measured)} configurations, {plan.readings} first-rung readings each"
            if plan.readings
            else f"none: the race's {len(plan.race)} entrants are measured in the race",
        ],
        ["not measured (budget)", str(len(plan.not_measured))],
        ["the race's minimum", f"{fmt(plan.race_min_s)} s"],
    ]
    return [
        Heading("What the budget bought", 3),
        Paragraph(
            "The probes measured what a trial costs on this machine; the plan is the most evidence the rest "
            'of the budget buys, in stated steps (docs/AUTOCONFIG.md, "What the budget buys").',
            muted=True,
        ),
        Table(["", ""], rows, frozenset({0, 1})),
    ]


def search_path(trials: pd.DataFrame, axes: list[str]) -> Table:
    """Every autoconfig trial in the order of its stage: probe, search rungs, race rounds."""
    t = trials[trials["phase"].notna()].copy()
    t["_p"] = t["phase"].map(_PHASES).fillna(3)
    t["_s"] = t["rung"].fillna(t["round"]).fillna(0) if "round" in t else 0
    t = t.sort_values(["_p", "_s", "trial_id"])
    rows = [
        [
            str(r["trial_id"]),
            str(r["phase"]),
            "" if pd.isna(r.get("rung")) else str(int(r["rung"])),
            "" if pd.isna(r.get("round")) else str(int(r["round"])),
            config_label(r, axes),
            str(r["status"]),
            fmt(r.get("env_steps_per_s")),
            fmt(r.get("time_to_target_s"), 1),
        ]
        for _, r in t.iterrows()
    ]
    return Table(
        ["trial", "phase", "rung", "round", "configuration", "status", "env steps/s", "time to target s"],
        rows,
        frozenset({0, 1, 4, 5}),
        md_max_rows=40,
        md_more="{n} more trials in trials.parquet.",
        collapsed=f"{len(rows)} trials",
    )


def front_rows(run: AutoconfigRun) -> list[list[str]]:
    """The Pareto front of CPUs given against throughput (computed by the analysis), as table rows."""
    return [[r.label, f"{r.cpus_given:g}", fmt(r.env_steps_per_s), str(r.trials)] for r in run.front.itertuples()]


def autoconfig_blocks(run: AutoconfigRun | None, trials: pd.DataFrame, axes: list[str]) -> list[Block]:
    """The section's blocks; [] for a result set without autoconfig.json (``run`` None)."""
    if run is None:
        return []
    data = run.file
    out: list[Block] = [Heading("Autoconfig", 2), Paragraph(answer_text(data), lead="Answer")]
    if data.evidence:
        out.append(Paragraph(data.evidence, lead="Evidence"))
    same = [s.key for s in data.indistinguishable]
    if len(same) > 1:
        out.append(Paragraph(indistinguishable_text(same, data.tolerance_pct)))
    thin = [f"{s.key} ({s.n} reading{'s' * (s.n != 1)}, median {fmt(s.median, 1)})" for s in data.not_measured_enough]
    if thin:
        out.append(
            Paragraph(
                f"Not measured enough to tell from the fastest ({too_few_readings_text()}), neither tied "
                f"nor worse: {', '.join(thin)}."
            )
        )
    out += plan_blocks(data)
    st = [
        [
            str(s.key),
            fmt(s.cpus, 2),
            fmt(s.median, 1),
            f"{fmt(s.ci_low, 1)}-{fmt(s.ci_high, 1)}",
            str(s.n),
            str(s.censored),
            str(s.failed),
        ]
        for s in data.standings
    ]
    partial = data.race_partial_rounds or 0
    out += [
        Heading("The race", 3),
        Paragraph(
            f"{data.race_rounds} interleaved rounds"
            f"{f' ({partial} of them partial: the leader and its closest rivals only)' if partial else ''}; "
            f"stopped: {data.race_stop_reason}. "
            f"The search stopped: {data.search_stop_reason}.",
            muted=True,
        ),
        Table(
            ["configuration", "CPUs", f"median {data.unit}", f"{CONFIDENCE:.0%} CI", "n", "censored", "failed"],
            st,
            frozenset({0}),
        ),
    ]
    left = [f"{e.key}: left after round {e.rung} ({e.detail})" for e in data.race_left]
    if left:
        out.append(Bullets(left))
    out += steps_blocks(data)
    gone = [_gone(e) for e in data.eliminations]
    out += [Heading("Search path", 3), Bullets(gone or ["no configuration was dropped by the search"])]
    if "phase" in trials:
        out.append(search_path(trials, axes))
    pvm = [
        [str(r.key), fmt(r.predicted_iteration_s, 3), fmt(r.measured_iteration_s, 3), fmt(r.error_pct, 0)]
        for r in data.predicted_vs_measured
    ]
    out += [
        Heading("Predicted against measured", 3),
        Paragraph(
            "One row per trial: the cost model refit on every trial's median steady iteration, beside what "
            "the trial measured (error: predicted over measured, in percent).",
            muted=True,
        ),
        Table(
            ["configuration", "predicted iteration s", "measured iteration s", "error %"],
            pvm,
            frozenset({0}),
            md_max_rows=20,
            collapsed=f"{len(pvm)} trials",
        )
        if pvm
        else Paragraph("No prediction: the probe gave no steady iteration.", muted=True),
    ]
    front = front_rows(run)
    if front:
        out += [
            Heading("CPUs against throughput: the Pareto front", 3),
            Paragraph(
                "Configurations no cheaper one beats: CPUs asked (driver, learners, env runners) against "
                "the median steady env steps/s over every trial of it.",
                muted=True,
            ),
            Table(["configuration", "CPUs", "env steps/s", "trials"], front, frozenset({0})),
        ]
    return out


def _gone(e: EliminationEntry) -> str:
    """A configuration the search dropped: ``key: words after rung r (detail)`` (no rung: dropped before any)."""
    after = f" after rung {e.rung}" if e.rung is not None and e.rung >= 0 else ""
    return f"{e.key}: {reason_words(e.reason)}{after} ({e.detail})"


def steps_blocks(data: AutoconfigFile) -> list[Block]:
    """Time to target only: each entrant's env steps to the target and how it differs from the chosen one's."""
    rows = [
        [str(s.key), fmt(t.median), f"{fmt(t.ci_low)}-{fmt(t.ci_high)}", str(t.n), str(t.censored)]
        for s in data.standings
        if (t := s.steps_to_target) is not None
    ]
    if not rows:
        return []
    found = [str(c.text) for c in data.steps_to_target]
    return [
        Heading("Env steps to the target", 4),
        Paragraph(
            "The same race trials, counted in env steps: whether a configuration reaches the target sooner "
            "because it steps faster or because it learns from fewer steps. A censored trial counts as never "
            "reaching it; '-' as the median: more than half were censored; as the interval's top: unbounded.",
            muted=True,
        ),
        Table(["configuration", "median env steps", f"{CONFIDENCE:.0%} CI", "n", "censored"], rows, frozenset({0})),
        Bullets(found or ["no other configuration raced"]),
    ]
