"""What to pick, and what more learner CPUs bought: recommendations and the forum question, in words.

Recommendations name the best configuration for each goal (throughput, per CPU, per watt) with
the caveats that keep them honest (noisy configurations not ranked, ties within the CIs, single
runs). The learner-CPU findings answer the Ray forum question ("13 CPUs only made PPO 2.7x
faster") in plain words. Rules: docs/ANALYSIS.md.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import pandas as pd

from rlbench.analysis.config_row import num
from rlbench.analysis.configs import axis_value_text, config_label
from rlbench.analysis.evidence import (
    Below,
    LearnerCpuStep,
    beats_note,
    learner_cpu_text,
    learning_notes,
    missed_target_note,
    runs_text,
)
from rlbench.analysis.findings import CONFIDENCE, NOISY_CV
from rlbench.analysis.stats import Ratio, is_number, ratio_ci
from rlbench.analysis.targets import eligible
from rlbench.analysis.windows import steady


@dataclass(frozen=True)
class Recommendation:
    """The configuration to pick for one goal."""

    goal: str
    """What it optimizes, in words."""
    column: str
    """The configurations column it maximizes."""
    index: int | None
    """Grid index of the pick (None when nothing was measured)."""
    label: str
    """The pick's axis values."""
    value: float | None
    """Its median value of ``column``."""
    note: str
    """Caveats: ties within the CI, noisy data, single runs."""
    versus: str = ""
    """The pick against the runner-up in one clause (``tied within the 95% CIs with a=1``, ``no evidence yet that it
    beats a=1: 1 run a side``, ``ahead of a=1 beyond both 95% CIs``); empty with no runner-up."""


GOALS: tuple[tuple[str, str, str], ...] = (
    ("highest throughput", "env_steps_per_s", "env steps/s"),
    ("highest throughput per CPU", "env_steps_per_s_per_cpu", "env steps/s per CPU"),
    ("highest throughput per watt", "env_steps_per_s_per_w", "env steps/s per W"),
)


def _ci_end(row: pd.Series, column: str, end: str) -> float | None:
    """An end (``low``, ``high``) of a configuration's 95% interval of ``column``; per CPU, the
    throughput's over its CPUs (a configuration's CPUs are fixed)."""
    if column == "env_steps_per_s_per_cpu":
        value, cpus = num(row.get(f"env_steps_per_s_ci_{end}")), num(row.get("cpus"))
        return value / cpus if value is not None and cpus else None
    return num(row.get(f"{column}_ci_{end}"))


def _repeat_end(row: pd.Series, column: str, end: str) -> float | None:
    """A configuration's slowest (``min``) or fastest (``max``) repeat of ``column`` (throughput, or per CPU over its
    fixed CPUs); None where the table has no such column (per watt)."""
    value = num(row.get(f"env_steps_per_s_{end}"))
    if column == "env_steps_per_s":
        return value
    cpus = num(row.get("cpus"))
    return value / cpus if column == "env_steps_per_s_per_cpu" and value is not None and cpus else None


def beat_outright(row: pd.Series, other: pd.Series, column: str) -> str | None:
    """How ``row`` beat ``other`` beyond doubt, noise or not: its interval wholly above the other's, or every one of
    its repeats above every one of the other's (in words); None when it did not."""
    low, high = _ci_end(row, column, "low"), _ci_end(other, column, "high")
    if low is not None and high is not None and low > high:
        return f"its {CONFIDENCE:.0%} CI lies wholly above that of"
    slowest, fastest = _repeat_end(row, column, "min"), _repeat_end(other, column, "max")
    if slowest is not None and fastest is not None and slowest > fastest:
        return "every repeat of it beat every repeat of"
    return None


def _noisy_pick_note(pick: pd.Series, ranked: pd.Series, column: str, unit: str, axes: list[str]) -> str:
    """Why a noisy configuration is the pick: the best ranked one it beat, and what would rank it."""
    how = beat_outright(pick, ranked, column)
    return (
        f"too noisy to rank (CV {num(pick.get('env_steps_per_s_cv')) or 0.0:.0%}, over {NOISY_CV:.0%}), but {how} "
        f"{config_label(ranked, axes)} ({ranked[column]:,.0f} {unit}), the fastest ranked: more repeats, a quieter "
        "machine (no host steal, nothing else running) would rank it"
    )


def recommendations(configs: pd.DataFrame, axes: list[str]) -> list[Recommendation]:
    """The best configuration for throughput, throughput per CPU and (when measured) per watt: the best ranked one,
    unless a configuration too noisy to rank beat it outright (:func:`beat_outright`), which is then the pick, its
    noise said."""
    out: list[Recommendation] = []
    if configs.empty:
        return out
    for goal, column, unit in GOALS:
        if column not in configs or configs[column].isna().all():
            continue
        measured = configs[configs[column].notna()]
        rankable = measured[~measured["noisy"]]
        notes = []
        all_noisy = rankable.empty
        if all_noisy:
            rankable = measured
            notes.append(
                f"every configuration is too noisy to rank (CV > {NOISY_CV:.0%}); this is the highest "
                "median, not a verified winner"
            )
        ordered = rankable.sort_values(column, ascending=False)
        ranked_best = ordered.iloc[0]
        if not all_noisy:  # a noisy configuration still competes when it beat the best ranked one outright
            noisy = measured[measured["noisy"]]
            beaters = noisy[[beat_outright(r, ranked_best, column) is not None for _, r in noisy.iterrows()]]
            ordered = pd.concat([beaters, rankable]).sort_values(column, ascending=False)
        best = ordered.iloc[0]
        if best["noisy"] and not all_noisy:
            notes.append(_noisy_pick_note(best, ranked_best, column, unit, axes))
        evidence, versus = None, ""
        if len(ordered) > 1:
            second = ordered.iloc[1]
            low, high = _ci_end(best, column, "low"), _ci_end(second, column, "high")
            them = (config_label(second, axes), f"{second[column]:,.0f} {unit}")
            if low is not None and high is not None and low <= high:
                notes.append(f"tied within the {CONFIDENCE:.0%} CIs with {them[0]} ({them[1]})")
                versus = f"tied with {them[0]} within the {CONFIDENCE:.0%} CIs: the evidence cannot separate them yet"
            else:  # apart, or no intervals: the repeats must be enough for a test to tell them apart
                evidence = beats_note(*them, int(best["n"]), int(second["n"]))
                versus = (
                    f"not yet shown to beat {them[0]} ({runs_text(int(best['n']), int(second['n']))})"
                    if evidence
                    else f"ahead of {them[0]} ({them[1]}) beyond both {CONFIDENCE:.0%} CIs"
                )
        if int(best["n"]) < 2:
            notes.append("single run: no confidence interval" + ("" if evidence else " (set repeats: 2 or more)"))
        if evidence:
            notes.append(evidence)
        skipped_noisy = int(measured["noisy"].sum()) - int(ordered["noisy"].sum())
        if skipped_noisy and not all_noisy:
            notes.append(f"{skipped_noisy} noisy configuration{'s' if skipped_noisy != 1 else ''} not ranked")
        out.append(
            Recommendation(
                goal,
                column,
                int(best["index"]),
                config_label(best, axes),
                float(best[column]),
                "; ".join(notes),
                versus,
            )
        )
    return out


#: With a target: (goal, time-to-target column it minimizes, unit).
TARGET_GOALS: tuple[tuple[str, str, str], ...] = (
    ("fastest to target", "time_to_target_s", "s"),
    ("fewest CPU-seconds to target", "cpu_s_to_target", "CPU-s"),
    ("least energy to target", "energy_to_target_j", "J"),
)


def target_recommendations(ttt: pd.DataFrame, axes: list[str]) -> list[Recommendation]:
    """The best configuration for each goal of :data:`TARGET_GOALS` (energy only when measured).

    Only configurations that reached the target in the largest share of repeats any did are
    candidates (:func:`rlbench.analysis.targets.eligible`): one that missed a target others reached
    is never named first.
    """
    if ttt.empty:
        return []
    candidates = eligible(ttt)
    if candidates.empty:
        return [
            Recommendation(
                "reaching the target",
                "time_to_target_s",
                None,
                "none",
                None,
                f"no configuration reached the target in any of its {int(ttt['repeats'].sum())} ok repeats",
            )
        ]
    out = []
    for goal, column, unit in TARGET_GOALS:
        pool = candidates[candidates[column].notna()]
        if pool.empty:
            continue
        ordered = pool.sort_values(column)
        best = ordered.iloc[0]
        notes = []
        if best["reached"] < best["repeats"]:
            notes.append(
                f"it reached the target in {int(best['reached'])} of {int(best['repeats'])} repeats; no "
                "configuration did in all"
            )
        evidence = None
        if len(ordered) > 1:
            second = ordered.iloc[1]
            them = (config_label(second, axes), f"{second[column]:,.1f} {unit}")
            high, low = num(best.get(f"{column}_ci_high")), num(second.get(f"{column}_ci_low"))
            if high is not None and low is not None and high >= low:
                notes.append(f"tied within the {CONFIDENCE:.0%} CIs with {them[0]} ({them[1]})")
            else:  # apart, or no intervals: the repeats that reached it must be enough for a test
                evidence = beats_note(*them, int(best["reached"]), int(second["reached"]))
        if int(best["reached"]) < 2:
            notes.append(
                "one repeat reached it: no confidence interval" + ("" if evidence else " (set repeats: 3 or more)")
            )
        if evidence:
            notes.append(evidence)
        missed = ttt[ttt["reached_share"] < best["reached_share"]]
        if len(missed):
            notes.append(
                "not ranked, having missed the target in more repeats: "
                + ", ".join(
                    f"{config_label(r, axes)} ({int(r['reached'])}/{int(r['repeats'])})" for _, r in missed.iterrows()
                )
            )
        out.append(
            Recommendation(
                goal, column, int(best["index"]), config_label(best, axes), float(best[column]), "; ".join(notes)
            )
        )
    return out


def with_learning_notes(
    recs: list[Recommendation],
    configs: pd.DataFrame,
    ttt: pd.DataFrame,
    below: list[Below],
    axes: list[str],
    steps: float | None = None,
) -> list[Recommendation]:
    """Throughput recommendations with what learning says about their picks: with a target, whether the pick
    missed it where others reached it (:func:`~rlbench.analysis.evidence.missed_target_note`); without one,
    every configuration that learns worse at equal env steps (:func:`~rlbench.analysis.evidence.learning_notes`)."""
    labels = {int(r["index"]): config_label(r, axes) for _, r in configs.iterrows()} if not configs.empty else {}
    out = []
    for rec in recs:
        notes = [rec.note] if rec.note else []
        if not ttt.empty and rec.index is not None:
            mine, top = ttt[ttt["index"] == rec.index], ttt["reached_share"].max()
            if len(mine) and mine["reached_share"].iloc[0] < top:
                notes.append(missed_target_note(int(mine["reached"].iloc[0]), int(mine["repeats"].iloc[0]), top))
        else:
            notes += learning_notes(rec.index, below, labels, steps)
        out.append(replace(rec, note="; ".join(notes)))
    return out


#: Axes that change the learner's CPU budget or torch threads.
LEARNER_CPU_AXES: tuple[str, ...] = (
    "num_cpus_for_main_process",
    "driver_torch_threads",
    "learner_torch_threads",
    "num_cpus_per_learner",
)


def _phase_seconds(trials: pd.DataFrame, iterations: pd.DataFrame) -> pd.DataFrame:
    """Per grid point: median over ok repeats of each trial's mean steady-state seconds per phase."""
    per_trial = steady(iterations).groupby("trial_id")[["wall_s", "sample_s", "learn_s"]].mean()
    ok = trials[trials["status"] == "ok"][["trial_id", "index"]].set_index("trial_id")
    return per_trial.join(ok, how="inner").groupby("index").median()


def learner_cpu_step(
    axis: str, lo: pd.Series, hi: pd.Series, seconds: pd.DataFrame, first: pd.DataFrame, others: list[str], ratio: Ratio
) -> LearnerCpuStep:
    """The figures of going from configuration row ``lo`` to ``hi`` along ``axis`` (per-index phase
    ``seconds`` and ``first`` trial rows)."""
    s_lo, s_hi = seconds.loc[lo["index"]], seconds.loc[hi["index"]]
    t_lo, t_hi = first.loc[lo["index"]], first.loc[hi["index"]]
    in_driver = int(t_lo.get("num_learners", 0) or 0) == 0
    role = "driver" if in_driver else "learner"
    threads_col = "driver_torch_threads" if in_driver else "learner_torch_threads"
    return LearnerCpuStep(
        axis=axis,
        lo=axis_value_text(lo[axis]),
        hi=axis_value_text(hi[axis]),
        others=[(o, axis_value_text(lo[o])) for o in others],
        lo_env_steps_per_s=lo["env_steps_per_s"],
        hi_env_steps_per_s=hi["env_steps_per_s"],
        ratio=ratio,
        lo_wall_s=s_lo["wall_s"],
        hi_wall_s=s_hi["wall_s"],
        lo_learn_s=s_lo["learn_s"],
        hi_learn_s=s_hi["learn_s"],
        lo_sample_s=s_lo["sample_s"],
        hi_sample_s=s_hi["sample_s"],
        in_driver=in_driver,
        lo_threads=num(t_lo.get(threads_col)),
        hi_threads=num(t_hi.get(threads_col)),
        lo_cores_used=num(lo.get(f"{role}_cpus_used")),
        hi_cores_used=num(hi.get(f"{role}_cpus_used")),
    )


def learner_cpu_findings(
    configs: pd.DataFrame, trials: pd.DataFrame, iterations: pd.DataFrame, axes: list[str]
) -> list[str]:
    """Plain words per learner-CPU axis: throughput, learning time and learner CPU use at its lowest
    and highest setting (the other axes at the lowest setting's values), and what that means."""
    if configs.empty or iterations is None or iterations.empty:
        return []
    seconds = _phase_seconds(trials, iterations)
    first = trials.sort_values(["index", "repeat"]).drop_duplicates("index").set_index("index")
    ok = (
        trials[trials["status"] == "ok"] if "env_steps_per_s" in trials else trials.iloc[:0].assign(env_steps_per_s=0.0)
    )
    out = []
    for axis in [a for a in axes if a in LEARNER_CPU_AXES]:
        measured = configs[configs["env_steps_per_s"].notna() & configs["index"].isin(seconds.index)]
        # astype(bool): on no rows, map gives an object Series, which pandas reads as column labels (KeyError)
        measured = measured[measured[axis].map(is_number).astype(bool)]
        if measured[axis].nunique() < 2:
            continue
        others = [a for a in axes if a != axis]
        lo = measured.sort_values(axis).iloc[0]
        same = measured[(measured[others] == lo[others]).all(axis=1)] if others else measured
        hi = same.sort_values(axis).iloc[-1]
        if hi[axis] == lo[axis]:
            continue
        ratio = ratio_ci(*(ok.loc[ok["index"] == row["index"], "env_steps_per_s"] for row in (lo, hi)))
        text = learner_cpu_text(learner_cpu_step(axis, lo, hi, seconds, first, others, ratio))
        best = same.sort_values("env_steps_per_s").iloc[-1]
        if best[axis] not in (lo[axis], hi[axis]):
            text += (
                f" The fastest setting was in between: {axis}={axis_value_text(best[axis])} at "
                f"{best['env_steps_per_s']:,.0f} env steps/s ({best['env_steps_per_s'] / lo['env_steps_per_s']:.2f}x "
                "the lowest); past it, more threads cost more than they bring."
            )
        out.append(text)
    return out
