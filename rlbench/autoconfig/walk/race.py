"""The walk's stages (issue 50): the start's own readings, and a step's race of a knob's values against the current
point, with the rounds it may run past its cap while its best value leads (issue 57); :mod:`.session` drives them."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import Any, Protocol

from rlbench.analysis.change import Change, equivalent
from rlbench.analysis.findings import CONFIDENCE, SEQUENTIAL_SIGNIFICANCE, SIGNIFICANCE
from rlbench.autoconfig.ask_tell import Stage, TrialRequest, leader, rotated
from rlbench.autoconfig.decide import Race
from rlbench.autoconfig.model import Candidate
from rlbench.autoconfig.session import Runner
from rlbench.autoconfig.walk.steps import gain
from rlbench.spec.seeds import derive_seed


class WalkRunner(Runner, Protocol):
    """What the walk needs beside a :class:`~rlbench.autoconfig.session.Runner`."""

    def row(self, key: str) -> Mapping[str, Any] | None:
        """The point's configuration row over every reading it has so far (the analysis' own, with its verdicts'
        inputs), or None when it has none."""

    def point(self, axes: Mapping[str, Any]) -> Candidate | str:
        """The configuration of these axis values (the spec's base with them set), planned on this machine; the
        reason in words when it cannot run here. One configuration is one point: axes that make a configuration
        already planned give that one back (its key), so the walk knows a point it left; asked in the same order,
        it gives the same configurations."""


class _Stepped:
    """Requests named and seeded by the walk's step (``walk<step>/r<round>/i<slot>/<key>``), a round's trials sharing
    a seed; each trial's learning curve kept per point."""

    step: int
    _curves: dict[str, list]
    # the Stage's, beside which it is mixed in
    seed: int
    _issued: dict[str, TrialRequest]
    cap_of: Callable[[str], float]

    def tell(self, results) -> None:
        results = list(results)
        super().tell(results)  # type: ignore[misc]  # the Stage beside this mixin
        for r in results:
            self._curves.setdefault(self._issued[r.request_id].candidate_key, []).append(r.curve)

    def curves(self, key: str) -> list:
        """Each of its trials' learning curve of one point (the start's, an entrant's)."""
        return list(self._curves.get(key, []))

    def _request(self, key: str, rung: int, index: int) -> TrialRequest:
        return TrialRequest(
            f"walk{self.step}/r{rung}/i{index}/{key}",
            key,
            "walk",
            rung,
            index,
            derive_seed(self.seed, f"walk{self.step}", rung, index, sequence="request"),
            self.cap_of(key),
            step=self.step,
        )


#: The start's own readings before its verdict is read: one, which step 1's race then takes as the start's trial of
#: its first round (:class:`WalkRace`'s ``reuse``); issue 50's walk read it three times before any race.
START_READINGS = 1


class MeasureStage(_Stepped, Stage):
    """The start's own readings (step 0): ``readings`` trials of it, one batch."""

    def __init__(self, start: Candidate, readings: int, **kw):
        super().__init__(**kw)
        self.step, self.start, self.readings = 0, start, readings
        self.candidates = {start.key: start}
        self._curves: dict[str, list] = {}

    def _next_batch(self) -> list[TrialRequest]:
        if self.trials_run:
            self.stop_reason = "measured"
            return []
        return [self._request(self.start.key, r, 0) for r in range(self.readings)]


class WalkRace(_Stepped, Race):
    """One step's race: the knob's values against the current point, in interleaved rounds. Step 1's race takes the
    start's own reading as the start's trial of its first round (``reuse``): it ran just before that round's other
    trials, with their seed, so the start is not measured twice (issue 57: the start's readings count).

    Past its round cap (issue 57, "the walk that ends at the best"): where after the cap no raced value shows a gain
    over the current point by the walk's rule (:func:`~rlbench.autoconfig.walk.steps.gain`), the best value's median
    leads the current's by more than the tolerance, and the one rule does not find the two the same within it
    (:func:`~rlbench.analysis.change.equivalent`), the race runs another round of those two only, and again after
    each, up to ``extend_to`` rounds or while the budget lasts. It stops as soon as the rule says (a gain, the
    same), the lead falls to within the tolerance or the current leads. At the cap with the current leading or the
    lead within the tolerance, it stops there, as before (no extra trial). Past the cap a gain asks the rank test at
    ``past_level`` (:data:`~rlbench.analysis.findings.SEQUENTIAL_SIGNIFICANCE`, as the race's own later looks): at
    the one rule's 5% each look past 6 is one more chance, and identical points moved the walk in 5.2% of simulated
    steps at a CV of 20% (2.8% at 6 rounds); at 1%, in 2.8-3.2% (docs/MEASUREMENT.md 10). Every decision is one of
    the readings told, so a resumed walk fed the stored ones decides the same."""

    def __init__(
        self,
        step: int,
        *args,
        reuse: TrialRequest | None = None,
        extend_to: int = 0,
        past_level: float = SEQUENTIAL_SIGNIFICANCE,
        **kw,
    ):
        super().__init__(*args, **kw)
        self.step = step
        self.candidates = dict(self.entrants)
        self._curves: dict[str, list] = {}
        self.reuse = reuse
        self.extend_to, self.past_level = extend_to, past_level
        self.extra_rounds = 0
        self.went_on = ""  # why the race went past its cap, in words ("": it did not)

    def _next_batch(self) -> list[TrialRequest]:
        if self.round + 1 < self.max_rounds:
            return super()._next_batch()
        keys, end = self._on_past_cap()
        if not keys:
            self.stop_reason = self._past(end)
            return []
        self.round += 1
        self.extra_rounds += 1
        return [self._request(key, self.round, 0) for key in rotated(keys, self.round)]

    def _on_past_cap(self) -> tuple[list[str], str]:
        """At or past the cap: the two to race another round (the current point and the leader), or [] and why
        not, in words."""
        rounds, current, t = self.round + 1, self.baseline_key, self.threshold
        racing = [s for s in self._racing() if s.median is not None]
        best = leader(racing)
        if self.extend_to <= rounds and not self.extra_rounds:
            return [], ""
        if best is None or best.key == current or current not in self.contenders:
            return [], "the current point leads"
        change = self.versus(current, best.key)
        shown = [s.key for s in racing if s.key != current and gain(self.versus(current, s.key), t, self.level)]
        if shown:
            return [], f"the rule shows a gain of {', '.join(shown)} ({_ratio(self.versus(current, shown[0]))})"
        if equivalent(change, t):
            return [], f"{best.key} is the same as the current within {t:.0%} by every interval ({_ratio(change)})"
        if change.ratio is None or change.ratio <= 1.0 + t:
            return [], f"the lead of {best.key} fell to {_ratio(change)}, within the {t:.0%} tolerance"
        if rounds >= self.extend_to:
            return [], f"the hard cap of {self.extend_to} rounds, still without evidence ({best.key} {_ratio(change)})"
        keys = [k for k in self.entrants if k in (current, best.key)]
        if not self.fits(keys):
            return [], (
                f"budget: a round of the two needs {self.batch_cost_s(keys):.0f} s, "
                f"{max(0.0, self.remaining_s):.0f} s left"
            )
        if not self.went_on:
            self.went_on = (
                f"after {self.max_rounds} rounds the rule could not say and {best.key} led the current by "
                f"{_ratio(change)}, more than the {t:.0%} tolerance"
            )
        return keys, ""

    @property
    def level(self) -> float:
        """The rank test's level for a gain over the current point: the one rule's, else, once the race went past its
        cap, ``past_level`` (each look past the cap is one more chance for identical points to look apart)."""
        return self.past_level if self.extra_rounds else SIGNIFICANCE

    def _past(self, end: str) -> str:
        """The stop reason of a race that went past its cap: how many rounds, why it went on, why it stopped (a
        budget's first, as the walk reads it); ``end`` alone otherwise."""
        if not self.extra_rounds:  # stopped at the cap, as before the rounds past it
            return end if end.startswith("budget") else f"{self.max_rounds} rounds"
        extra = f"{self.extra_rounds} round{'s' if self.extra_rounds != 1 else ''}"
        went = f"{extra} past the cap of {self.max_rounds}: {self.went_on}"
        if end.startswith("budget"):
            return f"{end}; {went}"
        return f"{went}; stopped: {end}"

    def _close(self) -> None:
        super()._close()
        if self.extra_rounds and self.stop_reason is not None:  # settled by the race's own rule past the cap
            self.stop_reason = self._past(self.stop_reason)

    def _request(self, key: str, rung: int, index: int) -> TrialRequest:
        if self.reuse is not None and rung == 0 and index == 0:
            if key == self.reuse.candidate_key:
                return self.reuse
            return replace(super()._request(key, rung, index), seed=self.reuse.seed)  # the round's one seed
        return super()._request(key, rung, index)

    def tell(self, results) -> None:
        results = list(results)
        super().tell(results)
        for r in results:  # the start's reading is the measure stage's: neither its seconds nor its trial twice
            if self.reuse is not None and r.request_id == self.reuse.request_id:
                self.spent_s -= r.charged_s
                self.trials_run -= 1


def _ratio(change: Change) -> str:
    """``1.12x (95% CI 0.98-1.30)``: B over A in a step's race, as the path says it."""
    if change.ratio is None:
        return "no reading a side"
    ci = f" ({CONFIDENCE:.0%} CI {change.ci_low:.2f}-{change.ci_high:.2f})" if change.ci_low is not None else ""
    return f"{change.ratio:.2f}x{ci}"
