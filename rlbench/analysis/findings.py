"""Findings: every threshold of the analysis, and the rules that turn its numbers into sentences.

The numbers come from the other analysis modules (per configuration: :mod:`~rlbench.analysis.configs`;
per env runner: :mod:`~rlbench.analysis.runners`; per role's profile: :mod:`~rlbench.analysis.profiles`;
learning at equal env steps: :mod:`~rlbench.analysis.curves`; variants: :mod:`~rlbench.analysis.variants`);
what they are called in words, and from what value on, is decided here only (docs/ANALYSIS.md).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import pandas as pd
from scipy import stats

from rlbench.analysis.curves import EqualSteps
from rlbench.analysis.stats import CONFIDENCE, Ratio, interval_text, num

#: A configuration whose coefficient of variation is above this is "too noisy to rank".
NOISY_CV = 0.10
#: The knee is the smallest setting whose throughput is within this fraction of the best.
KNEE_MARGIN = 0.05
#: In an asynchronous algorithm, env runners or learners busy at least this share of the iteration
#: are saturated: that side limits the pipeline.
SATURATED_FRAC = 0.8
#: A phase taking at least this share of an iteration makes the configuration bound by it.
BOUND_FRAC = 0.5
#: Weight sync taking at least this share is called out.
SYNC_HEAVY_FRAC = 0.2
#: A role using at least this share of its allocated CPUs is at its allocation (CPU-starved).
STARVED_FRAC = 0.85
#: All roles together using at least this share of the trial's cpus: every core is busy.
ALL_BUSY_FRAC = 0.9
#: A role given >= 1 CPU and using less than this share of it leaves its allocation idle.
IDLE_FRAC = 0.5
#: A learner GPU below this mean utilization (%) in steady state is idle.
GPU_IDLE_PCT = 20.0
#: A repeat during which the hypervisor took at least this share of the machine's CPU time (steal,
#: %) is called out: 13% was read on an idle VM here, where one configuration's throughput moved
#: from 700 to 1,000 env steps/s between runs (docs/MEASUREMENT.md 7).
HOST_STEAL_PCT = 5.0
#: A runner at least this many times the others' median time (or CPU) per env step is a straggler.
STRAGGLER_RATIO = 1.5
#: A function taking at least this share of a role's samples in its own code dominates the role.
DOMINANT_SELF_FRAC = 0.4
#: Learning speeding up by less than this share of the thread increase is "sub-linear".
SUBLINEAR_FRAC = 0.5
#: A comparison between configurations is a finding only at this one-sided significance level (an
#: exact rank test on their repeats; docs/ANALYSIS.md).
SIGNIFICANCE = 0.05
#: Repeats a side with which a rank test can reach SIGNIFICANCE: every one below every other gives
#: p = 1 / C(6, 3) = 0.05; 2 a side can give no less than 1/6, 1 a side 1/2.
REPEATS_FOR_EVIDENCE = 3
#: Rounds a Wilcoxon test of variant pairs needs to reach SIGNIFICANCE: all one way gives p = 2 / 2**n (6: 0.031).
ROUNDS_FOR_EVIDENCE = 6
#: Below the best return at equal env steps: a median lower by at least this share of the best
#: median's size; "clearly" only when a rank test shows it too (docs/ANALYSIS.md).
CLEARLY_BELOW_FRAC = 0.10


def verdict(row: dict[str, Any]) -> tuple[str, list[str]]:
    """(short bottleneck label, plain-words findings) for one configuration row."""
    if num(row.get("env_steps_per_s")) is None:
        return "no data", [f"no steady-state measurement ({row.get('statuses') or 'no trials'})"
                           + (f": {row['reason'][:200]}" if row.get("reason") else "")]
    findings: list[str] = []
    sample, learn, sync = (num(row.get(f"{p}_frac")) or 0.0 for p in ("sample", "learn", "sync"))
    if row.get("asynchronous") and num(row.get("sampler_busy_frac")) is not None \
            and num(row.get("learner_busy_frac")) is not None:
        label = _overlapping_verdict(row, findings)
    elif sample >= BOUND_FRAC:
        label = "sampling-bound"
        findings.append(f"sampling-bound: {sample:.0%} of each iteration collects samples ({learn:.0%} learning)")
    elif learn >= BOUND_FRAC:
        label = "learning-bound"
        findings.append(f"learning-bound: {learn:.0%} of each iteration is the learner update ({sample:.0%} sampling)")
    else:
        label = "mixed"
        findings.append(f"no single phase dominates: sampling {sample:.0%}, learning {learn:.0%}, sync {sync:.0%}")
    if sync >= SYNC_HEAVY_FRAC:
        findings.append(f"weight sync takes {sync:.0%} of each iteration")
    lag_mean, lag_max = num(row.get("policy_lag_mean")), num(row.get("policy_lag_max"))
    if lag_mean is not None and row.get("asynchronous"):  # PPO's is always 1 (RLlib's count; docs/ANALYSIS.md)
        findings.append(f"policy lag: {lag_mean:.1f} learner updates on average, at most {fmt_num(lag_max)} "
                        "(1: on-policy, as PPO)")
    cpus, used_total = num(row.get("cpus")), num(row.get("cpus_used"))
    starved = []
    for role, name, keep, their, were in (("env_runner", "env runners", "keep", "their", "were"),
                                          ("learner", "remote learners", "keep", "their", "were"),
                                          ("aggregator", "aggregator actors", "keep", "their", "were"),
                                          ("driver", "the driver", "keeps", "its", "was")):
        alloc, used = num(row.get(f"{role}_cpus_allocated")), num(row.get(f"{role}_cpus_used"))
        if alloc is None or used is None or alloc <= 0:
            continue
        plural = "s" if alloc != 1 else ""
        if used >= STARVED_FRAC * alloc:
            starved.append(f"{name} {keep} {used:.2f} of {their} {alloc:g} allocated core{plural} busy")
        elif alloc >= 1 and used < IDLE_FRAC * alloc:
            findings.append(f"idle allocation: {name} {were} given {alloc:g} CPU{plural} and use{'s' if keep == 'keeps' else ''} "
                            f"{used:.2f}")
    if starved:
        findings.append("CPU-starved: " + "; ".join(starved))
    if cpus and used_total is not None and used_total >= ALL_BUSY_FRAC * cpus:
        findings.append(f"all cores busy: {used_total:.2f} of the trial's {cpus:g} cores in use")
        starved.append("all")
    if starved and label in ("sampling-bound", "learning-bound"):
        label += ", CPU-starved"
    gpus, util = num(row.get("learner_gpus")) or 0.0, num(row.get("gpu_util_pct"))
    if gpus > 0:
        if util is None:
            findings.append("GPU utilization not measured")
        elif util < GPU_IDLE_PCT:
            findings.append(f"GPU idle: {util:.0f}% mean utilization in steady state")
            label += ", GPU idle"
    straggler = straggler_finding(row)
    if straggler:
        findings.append(straggler)
    steal = num(row.get("host_steal_pct"))
    if steal is not None and steal >= HOST_STEAL_PCT:
        findings.append(f"host busy: the hypervisor took {steal:.0f}% of this machine's CPU time while a repeat ran "
                        "(steal); its throughput says as much about the host as about the configuration")
    if row.get("noisy"):
        findings.append(f"too noisy to rank: CV {row['env_steps_per_s_cv']:.0%} across repeats (> {NOISY_CV:.0%})")
    return label, findings


def _overlapping_verdict(row: dict[str, Any], findings: list[str]) -> str:
    """Bottleneck of an asynchronous configuration from where the work ran, not from the driver's waits:
    the side (env runners, learners) busy at least SATURATED_FRAC of the iteration limits it."""
    sampler, learner = num(row["sampler_busy_frac"]), num(row["learner_busy_frac"])
    overlap = num(row.get("busy_overlap_frac")) or 0.0
    busy = f"env runners busy {sampler:.0%}, learner busy {learner:.0%} of each iteration"
    if sampler >= SATURATED_FRAC and learner >= SATURATED_FRAC:
        label = "sampling- and learning-bound"
        findings.append(f"both sides saturated ({busy}): the pipeline is full")
    elif learner >= SATURATED_FRAC:
        label = "learning-bound"
        findings.append(f"learning-bound: {busy}; more env runners would wait on the learner")
    elif sampler >= SATURATED_FRAC:
        label = "sampling-bound"
        findings.append(f"sampling-bound: {busy}; the learner waits for samples")
    else:
        label = "mixed"
        findings.append(f"neither side saturated ({busy}); the driver's loop takes "
                        f"{num(row.get('other_frac')) or 0.0:.0%}")
    findings.append(f"sampling and learning overlap for at least {overlap:.0%} of each iteration; the driver "
                    f"waits {num(row.get('sample_frac')) or 0.0:.0%} for samples and "
                    f"{num(row.get('learn_frac')) or 0.0:.0%} for the learner")
    return label


def fmt_num(value: float | None) -> str:
    """A lag figure in a sentence: one decimal, or ``-``."""
    return "-" if value is None else f"{value:.1f}"


def straggler_finding(row: dict[str, Any]) -> str | None:
    """The verdict's straggler sentence for one configuration row, or None."""
    runner = row.get("straggler_env_runner")
    if runner is None or pd.isna(runner):
        return None
    step, cpu = row.get("straggler_step_ratio"), row.get("straggler_cpu_ratio")
    parts = [f"{step:.1f}x the others' time per env step" if step is not None and not pd.isna(step) else None,
             f"{cpu:.1f}x their CPU per env step" if cpu is not None and not pd.isna(cpu) else None]
    text = f"straggler: env runner {int(runner)} takes " + " and ".join(p for p in parts if p)
    wait, frac = row.get("straggler_wait_s"), row.get("straggler_wait_frac")
    if wait is not None and not pd.isna(wait):
        share = f" ({frac:.0%} of it)" if frac is not None and not pd.isna(frac) else ""
        text += f"; the driver waited {wait:.2f} s per iteration on it after the others were done{share}"
    repeats, n = row.get("straggler_repeats"), row.get("n")
    if repeats is not None and not pd.isna(repeats) and n:
        text += f" (in {int(repeats)} of {int(n)} repeats)"
    return text


def dominance_verdict(subject: str, plural: bool, function: str, place: str, self_frac: float) -> str | None:
    """``the learner spends 62% of its active time in _single_tensor_adam (torch/optim/adam.py:345)
    itself`` for a role's top function (``place``: its ``file:line``, or empty) when its self share
    reaches :data:`DOMINANT_SELF_FRAC`, else None."""
    if self_frac < DOMINANT_SELF_FRAC:
        return None
    where = f" ({place})" if place else ""
    verb, their = ("spend", "their") if plural else ("spends", "its")
    return f"{subject} {verb} {self_frac:.0%} of {their} active time in {function}{where} itself"


def no_dominance_text() -> str:
    """What the report says of a role whose top function stays under :data:`DOMINANT_SELF_FRAC`."""
    return f"no single function dominates (none takes {DOMINANT_SELF_FRAC:.0%} of the samples in its own code)"


def smallest_p(n_a: int, n_b: int) -> float:
    """The smallest one-sided p-value an exact rank test of ``n_a`` against ``n_b`` values can give:
    every value of one side below every value of the other, 1 / C(n_a + n_b, n_a) (1 without values)."""
    return 1.0 / math.comb(n_a + n_b, n_a) if n_a > 0 and n_b > 0 else 1.0


def rank_p(lower: Sequence[float], higher: Sequence[float]) -> float:
    """One-sided exact Mann-Whitney U p-value that ``lower``'s values lie below ``higher``'s
    (scipy.stats.mannwhitneyu; 3 values all below 3 others: 1/20 = 0.05)."""
    return float(stats.mannwhitneyu(lower, higher, alternative="less", method="exact").pvalue)


def runs_text(n_a: int, n_b: int) -> str:
    """``1 run a side``, ``2 runs a side``, ``1 run against 2``."""
    if n_a == n_b:
        return f"{n_a} run{'s' if n_a != 1 else ''} a side"
    return f"{n_a} run{'s' if n_a != 1 else ''} against {n_b}"


def missing_evidence(n_a: int, n_b: int, claim: str = "") -> str:
    """What ``n_a`` against ``n_b`` repeats lack, in words: too few for any rank test to reach :data:`SIGNIFICANCE`."""
    that = f" that {claim}" if claim else ""
    return f"no evidence yet{that}: {runs_text(n_a, n_b)}; {REPEATS_FOR_EVIDENCE} repeats a side could show it"


def can_show(n_a: int, n_b: int) -> bool:
    """Whether ``n_a`` against ``n_b`` repeats are enough for a rank test to reach :data:`SIGNIFICANCE`."""
    return smallest_p(n_a, n_b) <= SIGNIFICANCE


@dataclass(frozen=True)
class Below:
    """A configuration whose return at equal env steps is below the best one's by at least
    :data:`CLEARLY_BELOW_FRAC`: clearly (a rank test says so), or with the evidence still missing."""

    index: int
    """The configuration."""
    median: float
    """Its median return at the common env-step count."""
    best_index: int
    """The configuration with the highest median return there."""
    best_median: float
    """That median."""
    n: int = 1
    """Its repeats with a return there."""
    best_n: int = 1
    """The best configuration's."""
    p_value: float = 1.0
    """One-sided exact Mann-Whitney U p-value that its returns lie below the best's."""

    @property
    def clear(self) -> bool:
        """Whether the test shows it (p at most :data:`SIGNIFICANCE`)."""
        return self.p_value <= SIGNIFICANCE

    @property
    def evidence(self) -> str:
        """The test's result, or what evidence is missing."""
        if self.clear:
            return f"p = {self.p_value:.2g}, one-sided Mann-Whitney U, {runs_text(self.n, self.best_n)}"
        return missing_evidence(self.n, self.best_n)


def below_at_equal_steps(equal: EqualSteps) -> list[Below]:
    """Configurations whose median return at equal env steps is below the best median by at least
    :data:`CLEARLY_BELOW_FRAC` of its size (any gap when it is 0): each one the rank test shows
    below the best (:attr:`Below.clear`), and each one with too few repeats for the test to show
    it (said as missing evidence, never as a finding). A gap that enough repeats do not confirm is
    no finding."""
    medians = {i: equal.median(i) for i in equal.returns}
    if len(medians) < 2:
        return []
    best = max(medians, key=lambda i: medians[i])
    best_median, best_values = medians[best], equal.returns[best]
    margin = CLEARLY_BELOW_FRAC * abs(best_median)
    out = []
    for index, median in medians.items():
        values = equal.returns[index]
        if index == best or not (best_median - median >= margin and best_median > median):
            continue
        below = Below(index, median, best, best_median, len(values), len(best_values), rank_p(values, best_values))
        if below.clear or not can_show(below.n, below.best_n):
            out.append(below)
    return out


def learning_notes(pick: int | None, ttt: pd.DataFrame, below: list[Below], labels: dict[int, str],
                   steps: float | None = None) -> list[str]:
    """What learning says of a throughput recommendation's pick (grid index ``pick``): with a target,
    whether it missed it where others reached it; without one, every configuration whose return at
    equal env steps (``steps``) is below the best's (:func:`below_at_equal_steps`), with its evidence."""
    at = f" at {steps:,.0f} env steps" if steps else ""
    notes: list[str] = []
    if not ttt.empty and pick is not None:
        mine = ttt[ttt["index"] == pick]
        top = ttt["reached_share"].max()
        if len(mine) and mine["reached_share"].iloc[0] < top:
            r = mine.iloc[0]
            others = "all of theirs" if top == 1 else f"{top:.0%} of theirs"
            notes.append(f"it reached the learning target in {int(r['reached'])} of {int(r['repeats'])} repeats, "
                         f"others in {others}: see the target recommendations")
        return notes
    for b in [b for b in below if b.index == pick]:
        versus = f"{b.median:,.1f} against {b.best_median:,.1f} for {labels.get(b.best_index, b.best_index)}{at}"
        notes.append(f"but it learns clearly worse at equal env steps (return {versus}; {b.evidence})" if b.clear else
                     f"its return at equal env steps is lower ({versus}), but there is "
                     + missing_evidence(b.n, b.best_n, "it learns worse"))
    others = [b for b in below if b.index != pick]
    clear, unclear = [b for b in others if b.clear], [b for b in others if not b.clear]
    if clear:
        notes.append(f"learning clearly worse at equal env steps (best return {clear[0].best_median:,.1f}{at}): "
                     + ", ".join(f"{labels.get(b.index, b.index)} (return {b.median:,.1f}; {b.evidence})"
                                 for b in clear))
    if unclear:
        notes.append(f"lower return at equal env steps (best {unclear[0].best_median:,.1f}{at}), no evidence yet "
                     "that it means worse learning: "
                     + ", ".join(f"{labels.get(b.index, b.index)} (return {b.median:,.1f}, {runs_text(b.n, b.best_n)})"
                                 for b in unclear)
                     + f"; {REPEATS_FOR_EVIDENCE} repeats a side could show it")
    return notes


def beats_note(second_label: str, second_value: str, n_best: int, n_second: int) -> str | None:
    """A recommendation's caveat when its pick and the runner-up have too few repeats for any test
    to tell them apart (None when a test could)."""
    if can_show(n_best, n_second):
        return None
    return missing_evidence(n_best, n_second, f"it beats {second_label} ({second_value})")


def value_text(value) -> str:
    """An axis value as the user wrote it (a row of mixed columns turns 4 into 4.0)."""
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def ratio_evidence(ratio: Ratio) -> str | None:
    """The interval of a throughput ratio when its repeats are enough for a test, else None."""
    if ratio.ci_low is None or not can_show(ratio.n_a, ratio.n_b):
        return None
    return f"{CONFIDENCE:.0%} CI {ratio.ci_low:.2f}-{ratio.ci_high:.2f}"


def learner_cpu_text(axis: str, lo: pd.Series, hi: pd.Series, seconds: pd.DataFrame, first: pd.DataFrame,
                     others: list[str], ratio: Ratio) -> str:
    """What going from ``lo`` to ``hi`` along a learner-CPU axis bought (configuration rows; per-index
    phase ``seconds`` and ``first`` trial rows; ``ratio``: hi's throughput over lo's, over repeats), in words."""
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
    context = f" (with {', '.join(f'{o}={value_text(lo[o])}' for o in others)})" if others else ""
    interval = ratio_evidence(ratio)
    evidence = interval or missing_evidence(ratio.n_a, ratio.n_b)
    text = (f"{axis} {value_text(lo[axis])} -> {value_text(hi[axis])}{context}: throughput {lo['env_steps_per_s']:,.0f} -> "
            f"{hi['env_steps_per_s']:,.0f} env steps/s ({speed:.2f}x; {evidence}). An iteration took {s_lo['wall_s']:.2f} -> "
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
    elif speed < 1.1 and interval and ratio.ci_high < 1.1:
        text += (f" The extra CPUs bought nothing worth having ({speed:.2f}x the throughput): leave them to env "
                 "runners or other work.")
    elif speed < 1.1:
        text += f" No gain worth having showed ({speed:.2f}x the throughput), but that is not yet evidence of none."
    return text


def variant_differs(f: dict[str, Any]) -> bool:
    """Both intervals (ratio of medians, paired) exclude 1 on one side and the rank test agrees (docs/ANALYSIS.md)."""
    lows, highs = (f.get("ci_low"), f.get("paired_ci_low")), (f.get("ci_high"), f.get("paired_ci_high"))
    return None not in lows + highs and (min(lows) > 1.0 or max(highs) < 1.0) and f["wilcoxon_p"] <= SIGNIFICANCE


def variant_verdict(reference: str, name: str, f: dict[str, Any]) -> str:
    """``B is 74.9% slower than A (...)`` or ``no evidence of a difference (...)``, with the evidence."""
    if f.get("env_steps_per_s") is None or f.get("reference_env_steps_per_s") is None:
        return f"no data: {name if f.get('env_steps_per_s') is None else reference} has no ok trial here"
    n, paired = f["rounds"], f["paired_ratio"] if f["paired_ratio"] is not None else f["ratio"]
    evidence = (f"{n} round{'s' if n != 1 else ''}; paired ratio {paired:.3f}, {CONFIDENCE:.0%} CI "
                f"{interval_text(f['paired_ci_low'], f['paired_ci_high'])}; ratio of medians {f['ratio']:.3f}, "
                f"{CONFIDENCE:.0%} CI {interval_text(f['ci_low'], f['ci_high'])}"
                + ("" if f["wilcoxon_p"] is None else f"; Wilcoxon p={f['wilcoxon_p']:.2g}")
                + f"; {ROUNDS_FOR_EVIDENCE} rounds could show one" * (n < ROUNDS_FOR_EVIDENCE))
    if not variant_differs(f):  # (with fewer rounds than ROUNDS_FOR_EVIDENCE it never does: the evidence says so)
        return f"no evidence of a difference ({evidence})"
    return f"{name} is {abs(1 - paired):.1%} {'slower' if paired < 1 else 'faster'} than {reference} ({evidence})"
