"""What to pick, and what more learner CPUs bought: recommendations and the forum question, in words.

Recommendations name the best configuration for each goal (throughput, per CPU, per watt) with
the caveats that keep them honest (noisy configurations not ranked, ties within the CIs, single
runs). The learner-CPU findings answer the Ray forum question ("13 CPUs only made PPO 2.7x
faster") in plain words. Rules: docs/ANALYSIS.md.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import pandas as pd

from rlbench.analysis.configs import BOUND_FRAC, config_label, is_number, num
from rlbench.analysis.curves import Below
from rlbench.analysis.stats import NOISY_CV
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


GOALS: tuple[tuple[str, str, str], ...] = (
    ("highest throughput", "env_steps_per_s", "env steps/s"),
    ("highest throughput per CPU", "env_steps_per_s_per_cpu", "env steps/s per CPU"),
    ("highest throughput per watt", "env_steps_per_s_per_w", "env steps/s per W"),
)


def recommendations(configs: pd.DataFrame, axes: list[str]) -> list[Recommendation]:
    """The best configuration for throughput, throughput per CPU and (when measured) per watt."""
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
            notes.append(f"every configuration is too noisy to rank (CV > {NOISY_CV:.0%}); this is the highest "
                         "median, not a verified winner")
        ordered = rankable.sort_values(column, ascending=False)
        best = ordered.iloc[0]
        if len(ordered) > 1 and column == "env_steps_per_s":
            second = ordered.iloc[1]
            if num(best.get("env_steps_per_s_ci_low")) is not None and num(second.get("env_steps_per_s_ci_high")) \
                    is not None and best["env_steps_per_s_ci_low"] <= second["env_steps_per_s_ci_high"]:
                notes.append(f"tied within the 95% CIs with {config_label(second, axes)} "
                             f"({second[column]:,.0f} {unit})")
        if int(best["n"]) < 2:
            notes.append("single run: no confidence interval (set repeats: 2 or more)")
        skipped_noisy = int(measured["noisy"].sum())
        if skipped_noisy and not all_noisy:
            notes.append(f"{skipped_noisy} noisy configuration{'s' if skipped_noisy != 1 else ''} not ranked")
        out.append(Recommendation(goal, column, int(best["index"]), config_label(best, axes),
                                  float(best[column]), "; ".join(notes)))
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
        return [Recommendation("reaching the target", "time_to_target_s", None, "none", None,
                               f"no configuration reached the target in any of its {int(ttt['repeats'].sum())} ok "
                               "repeats")]
    out = []
    for goal, column, _unit in TARGET_GOALS:
        pool = candidates[candidates[column].notna()]
        if pool.empty:
            continue
        ordered = pool.sort_values(column)
        best = ordered.iloc[0]
        notes = []
        if best["reached"] < best["repeats"]:
            notes.append(f"it reached the target in {int(best['reached'])} of {int(best['repeats'])} repeats; no "
                         "configuration did in all")
        if column == "time_to_target_s" and len(ordered) > 1:
            second = ordered.iloc[1]
            if num(best.get("time_to_target_s_ci_high")) is not None and num(second.get("time_to_target_s_ci_low")) \
                    is not None and best["time_to_target_s_ci_high"] >= second["time_to_target_s_ci_low"]:
                notes.append(f"tied within the 95% CIs with {config_label(second, axes)} "
                             f"({second[column]:,.1f} s)")
        if int(best["reached"]) < 2:
            notes.append("one repeat reached it: no confidence interval (set repeats: 3 or more)")
        missed = ttt[ttt["reached_share"] < best["reached_share"]]
        if len(missed):
            notes.append("not ranked, having missed the target in more repeats: " + ", ".join(
                f"{config_label(r, axes)} ({int(r['reached'])}/{int(r['repeats'])})" for _, r in missed.iterrows()))
        out.append(Recommendation(goal, column, int(best["index"]), config_label(best, axes), float(best[column]),
                                  "; ".join(notes)))
    return out


def with_learning_notes(recs: list[Recommendation], configs: pd.DataFrame, ttt: pd.DataFrame, below: list[Below],
                        axes: list[str], steps: float | None = None) -> list[Recommendation]:
    """Throughput recommendations with what learning says about them: with a target, whether the pick
    missed it where others reached it; without one, every configuration whose return at equal env
    steps (``steps``) is clearly below the best's (:func:`rlbench.analysis.curves.clearly_below`)."""
    at = f" at {steps:,.0f} env steps" if steps else ""
    labels = {int(r["index"]): config_label(r, axes) for _, r in configs.iterrows()} if not configs.empty else {}
    out = []
    for rec in recs:
        notes = [rec.note] if rec.note else []
        if not ttt.empty and rec.index is not None:
            mine = ttt[ttt["index"] == rec.index]
            top = ttt["reached_share"].max()
            if len(mine) and mine["reached_share"].iloc[0] < top:
                r = mine.iloc[0]
                others = "all of theirs" if top == 1 else f"{top:.0%} of theirs"
                notes.append(f"it reached the learning target in {int(r['reached'])} of {int(r['repeats'])} repeats, "
                             f"others in {others}: see the target recommendations")
        elif below:
            mine = [b for b in below if b.index == rec.index]
            if mine:
                notes.append(f"but it learns clearly worse at equal env steps (return {mine[0].median:,.1f} against "
                             f"{mine[0].best_median:,.1f} for {labels.get(mine[0].best_index, mine[0].best_index)}{at})")
            others = [b for b in below if b.index != rec.index]
            if others:
                notes.append(f"learning clearly worse at equal env steps (best return {others[0].best_median:,.1f}{at}): "
                             + ", ".join(f"{labels.get(b.index, b.index)} (return {b.median:,.1f})" for b in others))
        out.append(replace(rec, note="; ".join(notes)))
    return out


#: Axes that change the learner's CPU budget or torch threads.
LEARNER_CPU_AXES: tuple[str, ...] = ("num_cpus_for_main_process", "driver_torch_threads", "learner_torch_threads",
                                     "num_cpus_per_learner")


#: Learning speeding up by less than this share of the thread increase is "sub-linear".
SUBLINEAR_FRAC = 0.5


def _phase_seconds(trials: pd.DataFrame, iterations: pd.DataFrame) -> pd.DataFrame:
    """Per grid point: median over ok repeats of each trial's mean steady-state seconds per phase."""
    per_trial = steady(iterations).groupby("trial_id")[["wall_s", "sample_s", "learn_s"]].mean()
    ok = trials[trials["status"] == "ok"][["trial_id", "index"]].set_index("trial_id")
    return per_trial.join(ok, how="inner").groupby("index").median()


def learner_cpu_findings(configs: pd.DataFrame, trials: pd.DataFrame, iterations: pd.DataFrame,
                         axes: list[str]) -> list[str]:
    """Plain words per learner-CPU axis: throughput, learning time and learner CPU use at its lowest
    and highest setting (the other axes at the lowest setting's values), and what that means."""
    if configs.empty or iterations is None or iterations.empty:
        return []
    seconds = _phase_seconds(trials, iterations)
    first = trials.sort_values(["index", "repeat"]).drop_duplicates("index").set_index("index")
    out = []
    for axis in [a for a in axes if a in LEARNER_CPU_AXES]:
        measured = configs[configs["env_steps_per_s"].notna() & configs["index"].isin(seconds.index)]
        measured = measured[measured[axis].map(is_number)]
        if measured[axis].nunique() < 2:
            continue
        others = [a for a in axes if a != axis]
        lo = measured.sort_values(axis).iloc[0]
        same = measured[(measured[others] == lo[others]).all(axis=1)] if others else measured
        hi = same.sort_values(axis).iloc[-1]
        if hi[axis] == lo[axis]:
            continue
        text = _finding(axis, lo, hi, seconds, first, others)
        best = same.sort_values("env_steps_per_s").iloc[-1]
        if best[axis] not in (lo[axis], hi[axis]):
            text += (f" The fastest setting was in between: {axis}={_value_text(best[axis])} at "
                     f"{best['env_steps_per_s']:,.0f} env steps/s ({best['env_steps_per_s'] / lo['env_steps_per_s']:.2f}x "
                     "the lowest); past it, more threads cost more than they bring.")
        out.append(text)
    return out


def _value_text(value) -> str:
    """An axis value as the user wrote it (a row of mixed columns turns 4 into 4.0)."""
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def _finding(axis: str, lo: pd.Series, hi: pd.Series, seconds: pd.DataFrame, first: pd.DataFrame,
             others: list[str]) -> str:
    s_lo, s_hi = seconds.loc[lo["index"]], seconds.loc[hi["index"]]
    t_lo, t_hi = first.loc[lo["index"]], first.loc[hi["index"]]
    in_driver = int(t_lo.get("num_learners", 0) or 0) == 0
    role = "driver" if in_driver else "learner"
    where = "the driver, which holds the learner" if in_driver else "the learner actors"
    threads_col = "driver_torch_threads" if in_driver else "learner_torch_threads"
    th_lo, th_hi = num(t_lo.get(threads_col)), num(t_hi.get(threads_col))
    used_lo, used_hi = num(lo.get(f"{role}_cpus_used")), num(hi.get(f"{role}_cpus_used"))
    speed = hi["env_steps_per_s"] / lo["env_steps_per_s"]
    learn_speedup = s_lo["learn_s"] / s_hi["learn_s"] if s_hi["learn_s"] > 0 else float("nan")
    context = f" (with {', '.join(f'{o}={_value_text(lo[o])}' for o in others)})" if others else ""
    text = (f"{axis} {_value_text(lo[axis])} -> {_value_text(hi[axis])}{context}: throughput {lo['env_steps_per_s']:,.0f} -> "
            f"{hi['env_steps_per_s']:,.0f} env steps/s ({speed:.2f}x). An iteration took {s_lo['wall_s']:.2f} -> "
            f"{s_hi['wall_s']:.2f} s: learning {s_lo['learn_s']:.2f} -> {s_hi['learn_s']:.2f} s "
            f"(speed-up {learn_speedup:.2f}x), sampling {s_lo['sample_s']:.2f} -> {s_hi['sample_s']:.2f} s.")
    if th_lo and th_hi:
        text += f" torch threads in {where}: {th_lo:.0f} -> {th_hi:.0f}"
        if used_lo is not None and used_hi is not None:
            text += f"; it kept {used_lo:.2f} -> {used_hi:.2f} cores busy"
        text += "."
        thread_gain = th_hi / th_lo
        if thread_gain > 1 and learn_speedup < 1 + SUBLINEAR_FRAC * (thread_gain - 1):
            text += (f" Only the SGD step uses the extra threads, and it scaled sub-linearly ({learn_speedup:.2f}x "
                     f"for {thread_gain:.0f}x the threads): the small network's matrix products are too small to "
                     "split well.")
    sample_share = s_hi["sample_s"] / s_hi["wall_s"] if s_hi["wall_s"] > 0 else 0.0
    if sample_share >= BOUND_FRAC:
        text += (f" Sampling now takes {sample_share:.0%} of an iteration and more learner CPUs cannot shorten it: "
                 "give CPUs to env runners instead.")
    elif speed < 1.1:
        text += (f" The extra CPUs bought nothing worth having ({speed:.2f}x the throughput): leave them to env "
                 "runners or other work.")
    return text
