"""Evidence: when a comparison of two sets of runs is a finding, and its words, with the evidence it has.

Every comparison states its evidence, or what is missing (the brief: no "faster" from one run a side):
what too few runs lack (whether a rank test could reach :data:`~rlbench.analysis.findings.SIGNIFICANCE` at all
is the rule's: :func:`~rlbench.analysis.change.can_show`), the words of the one rule of "did it change?"
(:mod:`rlbench.analysis.change`: :func:`change_verdict`, :func:`change_sentence`), learning
compared at equal env steps (:class:`Below`), the recommendations' caveats and what learner CPUs bought.
The thresholds are :mod:`rlbench.analysis.findings`'; the figures come from the modules that compute them.
"""

from __future__ import annotations

from dataclasses import dataclass

from rlbench.analysis.change import Change, can_show
from rlbench.analysis.findings import (
    BOUND_FRAC,
    CLEARLY_BELOW_FRAC,
    CONFIDENCE,
    GAIN_WORTH_HAVING,
    REPEATS_FOR_EVIDENCE,
    ROUNDS_FOR_EVIDENCE,
    SIGNIFICANCE,
    SUBLINEAR_FRAC,
)
from rlbench.analysis.stats import Ratio, interval_text


def beyond(effect: float | None, threshold: float, direction: str | None = None) -> bool:
    """Whether the ratio ``effect`` moved by at least ``threshold``: down (``slower``), up (``faster``), or
    either way (None)."""
    if effect is None:
        return False
    down, up = effect <= 1 - threshold, effect >= 1 + threshold
    return down if direction == "slower" else up if direction == "faster" else down or up


def runs_text(n_a: int, n_b: int) -> str:
    """``1 run a side``, ``2 runs a side``, ``1 run against 2``."""
    if n_a == n_b:
        return f"{n_a} run{'s' if n_a != 1 else ''} a side"
    return f"{n_a} run{'s' if n_a != 1 else ''} against {n_b}"


def enough_readings_text(what: str = "readings") -> str:
    """The fewest readings a side with which the rank test of independent runs can reach :data:`SIGNIFICANCE`,
    in words (``3 or more readings a side``): every text that says it is made from :data:`REPEATS_FOR_EVIDENCE`."""
    return f"{REPEATS_FOR_EVIDENCE} or more {what} a side"


def too_few_readings_text(what: str = "readings", *, a_side: bool = True) -> str:
    """Too few for that rank test, in words (``fewer than 3 readings a side``)."""
    return f"fewer than {REPEATS_FOR_EVIDENCE} {what}" + " a side" * a_side


def missing_evidence(n_a: int, n_b: int, claim: str = "") -> str:
    """What ``n_a`` against ``n_b`` repeats lack, in words: too few for any rank test to reach :data:`SIGNIFICANCE`."""
    that = f" that {claim}" if claim else ""
    return f"no evidence yet{that}: {runs_text(n_a, n_b)}; {REPEATS_FOR_EVIDENCE} repeats a side could show it"


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


def lower_at_equal_steps(median: float, best_median: float) -> bool:
    """Whether a median return at equal env steps is below the best by at least :data:`CLEARLY_BELOW_FRAC`
    of the best's size (any gap when that is 0)."""
    return best_median > median and best_median - median >= CLEARLY_BELOW_FRAC * abs(best_median)


def worth_saying(below: Below) -> bool:
    """A lower return is said when the test shows it, or when too few repeats could show it (as missing
    evidence, never as a finding); a gap that enough repeats do not confirm is no finding."""
    return below.clear or not can_show(below.n, below.best_n)


def missed_target_note(reached: int, repeats: int, top_share: float) -> str:
    """What a throughput pick that reached the learning target in ``reached`` of ``repeats`` repeats is
    told, when others reached it in ``top_share`` of theirs."""
    others = "all of theirs" if top_share == 1 else f"{top_share:.0%} of theirs"
    return (
        f"it reached the learning target in {reached} of {repeats} repeats, others in {others}: see the target "
        "recommendations"
    )


def learning_notes(
    pick: int | None, below: list[Below], labels: dict[int, str], steps: float | None = None
) -> list[str]:
    """What learning at equal env steps (``steps``) says of a throughput recommendation's pick (grid index
    ``pick``) without a target: every configuration whose return there is below the best's
    (:func:`~rlbench.analysis.curves.below_at_equal_steps`), with its evidence."""
    at = f" at {steps:,.0f} env steps" if steps else ""
    notes: list[str] = []
    for b in [b for b in below if b.index == pick]:
        versus = f"{b.median:,.1f} against {b.best_median:,.1f} for {labels.get(b.best_index, b.best_index)}{at}"
        notes.append(
            f"but it learns clearly worse at equal env steps (return {versus}; {b.evidence})"
            if b.clear
            else f"its return at equal env steps is lower ({versus}), but there is "
            + missing_evidence(b.n, b.best_n, "it learns worse")
        )
    others = [b for b in below if b.index != pick]
    clear, unclear = [b for b in others if b.clear], [b for b in others if not b.clear]
    if clear:
        notes.append(
            f"learning clearly worse at equal env steps (best return {clear[0].best_median:,.1f}{at}): "
            + ", ".join(f"{labels.get(b.index, b.index)} (return {b.median:,.1f}; {b.evidence})" for b in clear)
        )
    if unclear:
        notes.append(
            f"lower return at equal env steps (best {unclear[0].best_median:,.1f}{at}), no evidence yet "
            "that it means worse learning: "
            + ", ".join(
                f"{labels.get(b.index, b.index)} (return {b.median:,.1f}, {runs_text(b.n, b.best_n)})" for b in unclear
            )
            + f"; {REPEATS_FOR_EVIDENCE} repeats a side could show it"
        )
    return notes


def beats_note(second_label: str, second_value: str, n_best: int, n_second: int) -> str | None:
    """A recommendation's caveat when its pick and the runner-up have too few repeats for any test
    to tell them apart (None when a test could)."""
    if can_show(n_best, n_second):
        return None
    return missing_evidence(n_best, n_second, f"it beats {second_label} ({second_value})")


def ratio_evidence(ratio: Ratio) -> str | None:
    """The interval of a throughput ratio when its repeats are enough for a test, else None."""
    if ratio.ci_low is None or not can_show(ratio.n_a, ratio.n_b):
        return None
    return f"{CONFIDENCE:.0%} CI {ratio.ci_low:.2f}-{ratio.ci_high:.2f}"


@dataclass(frozen=True)
class LearnerCpuStep:
    """The figures of one learner-CPU axis from its lowest to its highest setting (the other axes at the
    lowest setting's values; :func:`rlbench.analysis.advice.learner_cpu_step` reads them), for
    :func:`learner_cpu_text`."""

    axis: str
    """The axis."""
    lo: str
    """Its lowest setting, as the user wrote it."""
    hi: str
    """Its highest setting with the same other axes."""
    others: list[tuple[str, str]]
    """The other axes and their values."""
    lo_env_steps_per_s: float
    """Median throughput at ``lo``."""
    hi_env_steps_per_s: float
    """Same at ``hi``."""
    ratio: Ratio
    """hi's throughput over lo's, over their repeats, with its interval."""
    lo_wall_s: float
    """Median over repeats of the mean steady iteration's seconds at ``lo``: wall ..."""
    hi_wall_s: float
    lo_learn_s: float
    """... learning ..."""
    hi_learn_s: float
    lo_sample_s: float
    """... and sampling."""
    hi_sample_s: float
    in_driver: bool
    """The learner runs in the driver (no remote learners)."""
    lo_threads: float | None
    """Torch threads where the learner runs, at ``lo`` (None: not recorded)."""
    hi_threads: float | None
    lo_cores_used: float | None
    """Cores that process kept busy at ``lo``."""
    hi_cores_used: float | None

    @property
    def speed(self) -> float:
        """hi's median throughput over lo's."""
        return self.hi_env_steps_per_s / self.lo_env_steps_per_s

    @property
    def learn_speedup(self) -> float:
        """lo's learning seconds over hi's (NaN when hi's are 0)."""
        return self.lo_learn_s / self.hi_learn_s if self.hi_learn_s > 0 else float("nan")


def learner_cpu_text(step: LearnerCpuStep) -> str:
    """What going from the lowest to the highest setting of a learner-CPU axis bought, in words (the figures:
    :func:`rlbench.analysis.advice.learner_cpu_findings`)."""
    where = "the driver, which holds the learner" if step.in_driver else "the learner actors"
    context = f" (with {', '.join(f'{o}={v}' for o, v in step.others)})" if step.others else ""
    speed, learn_speedup = step.speed, step.learn_speedup
    interval = ratio_evidence(step.ratio)
    evidence = interval or missing_evidence(step.ratio.n_a, step.ratio.n_b)
    text = (
        f"{step.axis} {step.lo} -> {step.hi}{context}: throughput {step.lo_env_steps_per_s:,.0f} -> "
        f"{step.hi_env_steps_per_s:,.0f} env steps/s ({speed:.2f}x; {evidence}). An iteration took "
        f"{step.lo_wall_s:.2f} -> {step.hi_wall_s:.2f} s: learning {step.lo_learn_s:.2f} -> {step.hi_learn_s:.2f} s "
        f"(speed-up {learn_speedup:.2f}x), sampling {step.lo_sample_s:.2f} -> {step.hi_sample_s:.2f} s."
    )
    th_lo, th_hi, used_lo, used_hi = step.lo_threads, step.hi_threads, step.lo_cores_used, step.hi_cores_used
    if th_lo and th_hi:
        text += f" torch threads in {where}: {th_lo:.0f} -> {th_hi:.0f}"
        if used_lo is not None and used_hi is not None:
            text += f"; it kept {used_lo:.2f} -> {used_hi:.2f} cores busy"
        text += "."
        thread_gain = th_hi / th_lo
        if thread_gain > 1 and learn_speedup < 1 + SUBLINEAR_FRAC * (thread_gain - 1):
            text += (
                f" Only the SGD step uses the extra threads, and it scaled sub-linearly ({learn_speedup:.2f}x "
                f"for {thread_gain:.0f}x the threads): the small network's matrix products are too small to "
                "split well."
            )
    sample_share = step.hi_sample_s / step.hi_wall_s if step.hi_wall_s > 0 else 0.0
    if sample_share >= BOUND_FRAC:
        text += (
            f" Sampling now takes {sample_share:.0%} of an iteration and more learner CPUs cannot shorten it: "
            "give CPUs to env runners instead."
        )
    elif speed < GAIN_WORTH_HAVING and interval and (step.ratio.ci_high or 0.0) < GAIN_WORTH_HAVING:
        text += (
            f" The extra CPUs bought nothing worth having ({speed:.2f}x the throughput): leave them to env "
            "runners or other work."
        )
    elif speed < GAIN_WORTH_HAVING:
        text += f" No gain worth having showed ({speed:.2f}x the throughput), but that is not yet evidence of none."
    return text


# ---------------------------------------------------------------------------------------------
# Did it change? The words of the one rule (rlbench.analysis.change)


def change_verdict(change: Change | None, threshold: float) -> str:
    """A pair's verdict in one of the words compare, history and bisect share: ``regressed`` / ``improved``
    (a change with evidence, down / up by at least ``threshold``), ``small change`` (with evidence, within
    it), ``no significant change``, ``no evidence yet: ...`` (too few runs for the test to show any),
    ``no data``."""
    if change is None or change.effect is None:
        return "no data"
    if not change.enough:
        return (
            missing_rounds(change.runs_a)
            if change.design == "paired"
            else missing_evidence(change.runs_a, change.runs_b)
        )
    if not change.differs:
        return "no significant change"
    return (
        "regressed"
        if beyond(change.effect, threshold, "slower")
        else "improved"
        if beyond(change.effect, threshold, "faster")
        else "small change"
    )


def missing_rounds(pairs: int) -> str:
    """What ``pairs`` rounds lack, in words: too few for the signed-rank test to reach :data:`SIGNIFICANCE`."""
    return f"no evidence yet: {pairs} round{'s' if pairs != 1 else ''}; {ROUNDS_FOR_EVIDENCE} rounds could show it"


def change_evidence(change: Change) -> str:
    """What a change's verdict rests on, in words: the runs, both intervals (paired) or the ratio's, the test's p,
    and what more runs could show."""
    median_ratio = "-" if change.ratio is None else f"{change.ratio:.3f}"
    ratio = f"ratio of medians {median_ratio}, {CONFIDENCE:.0%} CI {interval_text(change.ci_low, change.ci_high)}"
    if change.design == "paired":
        n = change.runs_a  # 0 where no round holds both sides (a figure some trials did not read: CPU per step)
        paired_ratio = "-" if change.paired_ratio is None else f"{change.paired_ratio:.3f}"
        return (
            f"{n} round{'s' if n != 1 else ''}; paired ratio {paired_ratio}, {CONFIDENCE:.0%} CI "
            f"{interval_text(change.paired_ci_low, change.paired_ci_high)}; {ratio}"
            + ("" if change.p_value is None else f"; Wilcoxon p={change.p_value:.2g}")
            + f"; {ROUNDS_FOR_EVIDENCE} rounds could show one" * (not change.enough)
        )
    return (
        f"{runs_text(change.runs_a, change.runs_b)}; {ratio} over {change.basis}"
        + ("" if change.p_value is None else f"; Mann-Whitney U p={change.p_value:.2g}")
        + f"; {REPEATS_FOR_EVIDENCE} repeats a side could show one" * (not change.enough)
    )


def change_sentence(a: str, b: str, change: Change) -> str:
    """``B is 74.9% slower than A (...)``, ``B is 6.25x as fast as A (...)`` (from twice A on) or ``no evidence of a
    difference (...)``, with the evidence (:func:`change_evidence`)."""
    if change.n_a == 0 or change.n_b == 0 or change.effect is None:
        return f"no data: {b if change.n_b == 0 else a} has no ok trial here"
    evidence = change_evidence(change)
    if not change.differs:  # (never with too few runs: the evidence says so)
        return f"no evidence of a difference ({evidence})"
    if change.effect >= 2:
        return f"{b} is {change.effect:.2f}x as fast as {a} ({evidence})"
    return f"{b} is {abs(1 - change.effect):.1%} {'slower' if change.effect < 1 else 'faster'} than {a} ({evidence})"


def amount_sentence(a: str, b: str, change: Change, amount: str, more: bool, medians: str) -> str:
    """B against A in an amount that is neither better nor worse by itself (env steps to a target: fewer may be
    faster stepping or better learning): ``B needs more {amount} than A: {medians}; {evidence}``, ``no difference
    in {amount} shown between B and A: ...``, or what evidence is missing. ``change``: B against A in the amount's
    own units; ``more``: whether B's median is the larger."""
    if not change.enough:
        return missing_evidence(change.runs_b, change.runs_a, f"{b} and {a} differ in {amount}")
    said = f"{medians}; {change_evidence(change)}"
    if change.differs:
        return f"{b} needs {'more' if more else 'fewer'} {amount} than {a}: {said}"
    return f"no difference in {amount} shown between {b} and {a}: {said}"


def time_to_target_verdict(change: Change) -> str:
    """B/A of the time to target in words: ``sooner`` / ``later`` with evidence, ``no significant change``,
    or ``no evidence yet: ...``."""
    if not change.enough:
        return missing_evidence(change.runs_a, change.runs_b)
    if not change.differs:
        return "no significant change"
    return "later" if (change.ratio or 0.0) > 1 else "sooner"  # a change has a ratio
