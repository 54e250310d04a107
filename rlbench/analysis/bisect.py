"""Bisecting releases: the first version of a package at which a configuration got slower (or faster).

Pure: the measuring is a callable, ``measure(reference, candidate) -> [VersionStep, ...]`` (one per
configuration, :class:`~rlbench.analysis.history.trends.VersionStep`), which ``rlbench bisect`` makes from a
small interleaved sweep of the two versions; the tests give hand-made steps. The search:

1. the ends, ``good`` against ``bad``: a change of at least the threshold with evidence (the one rule's,
   paired by round: :attr:`~rlbench.analysis.change.Change.differs`) sets the direction; without one the
   bisect stops there, saying so;
2. halving over the versions between them, each probe a comparison of the middle version against the
   good end (a probe that is beyond the threshold without evidence is measured once more; a version
   with no reading, e.g. one that would not install, is left out as ``git bisect skip`` does);
3. the final adjacent pair compared with each other, unless the last probe was that pair already.

A probe that stops when it knows (issue 56): given ``look``, each comparison first reads
:data:`FIRST_LOOK_ROUNDS` rounds and stops there when they are clear either way (:func:`first_look`: changed beyond
the threshold by the race's first-look rule, or as good within it by every interval); only where they cannot say
does ``measure`` run the rest of the rounds, judged as before over all of them (paired).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any

from rlbench.analysis.change import COMPARISON_SCHEMA_VERSION, Change, clear_of, equivalent
from rlbench.analysis.evidence import beyond
from rlbench.analysis.findings import CONFIDENCE, FIRST_LOOK_MARGIN, REPEATS_FOR_EVIDENCE, SIGNIFICANCE
from rlbench.analysis.history.trends import VersionStep
from rlbench.analysis.stats import interval_text

#: One comparison of two versions: (reference, candidate) -> configuration label -> its step.
Measure = Callable[[str, str], dict[str, VersionStep]]
#: A probe's first rounds: (reference, candidate) -> (label -> its step over them, label -> its change as
#: independent repeats); a ``measure`` of the same pair right after it adds the rest of the rounds to them.
Look = Callable[[str, str], tuple[dict[str, VersionStep], dict[str, Change]]]
#: Rounds of a probe's first look: the fewest with which the rank test of independent runs can reach
#: SIGNIFICANCE (3 a side: p = 1/20); the paired test needs 6 (ROUNDS_FOR_EVIDENCE), so the look compares them
#: as independent repeats, as autoconfig's race does on its first look.
FIRST_LOOK_ROUNDS = REPEATS_FOR_EVIDENCE


@dataclass(frozen=True)
class BisectProbe:
    """One measured comparison of the bisect."""

    purpose: str
    """``ends`` (good against bad), ``probe`` (a middle version against the good end) or ``confirm``."""
    reference: str
    """The version compared against."""
    candidate: str
    """The version judged."""
    outcome: str
    """``bad`` (changed beyond the threshold with evidence), ``good``, ``unclear`` (beyond the threshold
    without evidence) or ``no data`` (a side has no reading)."""
    steps: dict[str, VersionStep]
    """The comparison on every configuration (label -> step), over the rounds read."""
    first_look: dict[str, Change] = field(default_factory=dict)
    """The look after the first :data:`FIRST_LOOK_ROUNDS` rounds (label -> the change, the rounds as independent
    repeats); empty where none was taken."""
    decided_by: str = "rounds"
    """``first look`` (its rounds were clear either way: the rest were not run) or ``rounds`` (every round
    read, judged paired)."""


@dataclass
class BisectResult:
    """What the bisect found, and every probe it measured."""

    status: str
    """``found``, ``no_difference`` (the ends do not differ at the threshold with evidence), ``unconfirmed``
    (the final adjacent pair does not differ alone: the change is spread over releases) or ``undecided``."""
    sentence: str
    """The answer in one sentence."""
    candidates: list[str]
    """The versions searched, good end first."""
    direction: str | None = None
    """``slower`` or ``faster``: what the bad end is, against the good end."""
    first_bad: str | None = None
    """The first version that is ``direction`` (with ``found`` and ``unconfirmed``)."""
    last_good: str | None = None
    """The version before it."""
    configuration: str | None = None
    """The configuration that changed most between the two (its label)."""
    step: VersionStep | None = None
    """The comparison of the two on it (its ratio and interval)."""
    skipped: list[str] = field(default_factory=list)
    """Versions left out for having no reading."""
    probes: list[BisectProbe] = field(default_factory=list)
    """Every comparison measured, in order."""

    def as_json(self) -> dict[str, Any]:
        """``bisect.json``'s body (every step's pair nested: docs/SCHEMA.md, "Comparison files")."""
        return {"schema_version": COMPARISON_SCHEMA_VERSION, **asdict(self), "confidence": CONFIDENCE}


def judge(steps: dict[str, VersionStep], threshold: float, direction: str) -> str:
    """``bad`` if a configuration changed in ``direction`` by at least ``threshold`` with evidence,
    ``unclear`` if one did without evidence, ``no data`` if none has a reading, else ``good``."""
    read = [s.change for s in steps.values() if s.change.paired_ratio is not None]
    if not read:
        return "no data"
    if any(c.differs and beyond(c.effect, threshold, direction) for c in read):
        return "bad"
    return "unclear" if any(beyond(c.effect, threshold, direction) for c in read) else "good"


def first_look(changes: dict[str, Change], threshold: float, direction: str) -> str | None:
    """What a probe's first rounds say (``changes``: label -> the change, as independent repeats): ``bad`` where a
    configuration changed in ``direction`` beyond the threshold by autoconfig's first-look rule (the rank test at
    SIGNIFICANCE and every interval beyond FIRST_LOOK_MARGIN times the threshold: ``decide.verdict``, whose error
    rates docs/MEASUREMENT.md 10 gives), ``good`` where every configuration is as good within the threshold
    (:func:`~rlbench.analysis.change.equivalent`: more rounds cannot show a change that large), else None: read
    the rest of the rounds."""
    read = [c for c in changes.values() if c.effect is not None]
    if not read:
        return None
    band = FIRST_LOOK_MARGIN * threshold
    if any(
        c.p_value is not None and c.p_value <= SIGNIFICANCE and beyond(c.effect, band, direction) and clear_of(c, band)
        for c in read
    ):
        return "bad"
    return "good" if all(equivalent(c, threshold) for c in read) else None


def _worst(steps: dict[str, VersionStep], direction: str) -> tuple[str, VersionStep] | None:
    read = [(label, s) for label, s in steps.items() if s.change.paired_ratio is not None]
    ratio = lambda ls: float(ls[1].change.paired_ratio)  # noqa: E731 - every one read has it (the filter above)
    return (min if direction == "slower" else max)(read, key=ratio) if read else None


def _figure(worst: tuple[str, VersionStep] | None, probe: BisectProbe | None = None) -> str:
    if worst is None:
        return "no reading"
    label, step = worst
    c = step.change
    said = (
        f"paired ratio {c.paired_ratio:.3f}, {CONFIDENCE:.0%} CI {interval_text(c.paired_ci_low, c.paired_ci_high)}, "
        f"{c.runs_a} rounds" + ("" if label == "all" else f", on {label}")
    )
    looked = probe.first_look.get(label) if probe is not None and probe.decided_by == "first look" else None
    if looked is None or looked.ratio is None:
        return said
    return (
        f"{said}; decided at the first look, the rounds as independent repeats: ratio of medians {looked.ratio:.3f}, "
        f"{CONFIDENCE:.0%} CI {interval_text(looked.ci_low, looked.ci_high)}, p {looked.p_value:.3f}"
    )


def bisect(
    candidates: list[str], measure: Measure, *, threshold: float, package: str = "", look: Look | None = None
) -> BisectResult:
    """Find the first of ``candidates`` (good end first, bad end last, the versions between in release
    order) that differs from the good end beyond ``threshold``; see the module's docstring (``look``: each probe's
    first rounds, read before ``measure`` runs the rest)."""
    versions = list(candidates)
    good, bad = versions[0], versions[-1]
    name = (lambda v: f"{package}=={v}") if package else (lambda v: v)
    result = BisectResult("undecided", "", list(candidates))

    def read(reference: str, candidate: str, directions: tuple[str, ...]):
        """(steps, the first look, each direction's outcome where the first look decided, else None)."""
        if look is None:
            return measure(reference, candidate), {}, None
        steps, looked = look(reference, candidate)
        early = {d: first_look(looked, threshold, d) for d in directions}
        if "bad" in early.values() or all(o == "good" for o in early.values()):
            return steps, looked, early
        return measure(reference, candidate), looked, None

    def probe(purpose: str, reference: str, candidate: str, direction: str) -> str:
        for _ in range(2):  # an unclear probe is measured once more: a fresh interleaved comparison
            steps, looked, early = read(reference, candidate, (direction,))
            outcome = (early[direction] or "good") if early else judge(steps, threshold, direction)
            by = "first look" if early else "rounds"
            result.probes.append(BisectProbe(purpose, reference, candidate, outcome, steps, looked, by))
            if outcome != "unclear":
                break
        return outcome

    ends, looked, early = read(good, bad, ("slower", "faster"))
    by = "first look" if early else "rounds"
    if early:
        direction = next((d for d, o in early.items() if o == "bad"), None)
    else:
        direction = next((d for d in ("slower", "faster") if judge(ends, threshold, d) == "bad"), None)
    if direction is None:
        outcomes = {"good"} if early else {judge(ends, threshold, d) for d in ("slower", "faster")}
        outcome = next((o for o in ("no data", "unclear") if o in outcomes), "good")
        result.probes.append(BisectProbe("ends", good, bad, outcome, ends, looked, by))
        result.status = "undecided" if outcome == "no data" else "no_difference"
        worst_said = _figure(_worst(ends, "slower"), result.probes[-1])
        result.sentence = {
            "no data": f"{name(good)} or {name(bad)} has no reading: see their trials' reasons",
            "unclear": f"{name(bad)} differs from {name(good)} by {threshold:.0%} or more, but without evidence "
            f"({worst_said}): nothing to bisect yet; more --rounds could show it",
            "good": f"no difference of {threshold:.0%} or more between {name(good)} and {name(bad)} ({worst_said}): "
            "nothing to bisect",
        }[outcome]
        return result
    result.probes.append(BisectProbe("ends", good, bad, "bad", ends, looked, by))
    result.direction = direction
    lo, hi = 0, len(versions) - 1
    while hi - lo > 1:
        mid = (lo + hi) // 2
        outcome = probe("probe", good, versions[mid], direction)
        if outcome == "no data":
            result.skipped.append(versions.pop(mid))
            hi -= 1
        elif outcome == "unclear":
            result.status = "undecided"
            result.sentence = (
                f"{name(versions[mid])} could not be told apart from {name(good)} twice "
                f"({_figure(_worst(result.probes[-1].steps, direction), result.probes[-1])}): give more --rounds"
            )
            return result
        elif outcome == "bad":
            hi = mid
        else:
            lo = mid
    result.last_good, result.first_bad = versions[lo], versions[hi]
    if lo == 0:  # the pair was measured already: the ends, or the last probe that found it bad
        confirming = next(p for p in reversed(result.probes) if p.candidate == versions[hi] and p.outcome == "bad")
        outcome = "bad"
    else:
        outcome = probe("confirm", versions[lo], versions[hi], direction)
        confirming = result.probes[-1]
    worst = _worst(confirming.steps, direction)
    if worst is not None:
        result.configuration, result.step = worst
    change = f"{name(versions[lo])} -> {name(versions[hi])}: {_figure(worst, confirming)}"
    if outcome == "bad":
        result.status = "found"
        result.sentence = f"first {direction} version: {name(versions[hi])} ({change})"
    else:
        result.status = "unconfirmed"
        result.sentence = (
            f"{name(versions[hi])} is the first version {direction} than {name(good)} beyond "
            f"{threshold:.0%}, but not than {name(versions[lo])} alone ({change}): the change is "
            "spread over several releases"
        )
    return result
