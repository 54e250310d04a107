"""A package's releases compared on each configuration: the trend and the step between adjacent releases.

``rlbench history`` runs a spec's configurations across versions of one package as variants, round by
round (:mod:`rlbench.spec.versions`). Per configuration and version this gives the median over rounds of
the throughput (``env_steps_per_s``) and, when the spec has a ``stop`` target, of the time to it
(``time_to_target_s``), each with a bootstrap interval (:func:`~rlbench.analysis.stats.median_ci`); per
pair of adjacent versions, the paired comparison of the rounds (:func:`~rlbench.analysis.change.paired`, the
one rule: ratio of medians, paired ratio, Wilcoxon) and its verdict and sentence
(:mod:`rlbench.analysis.evidence`: none without :data:`~rlbench.analysis.findings.ROUNDS_FOR_EVIDENCE` rounds
and both intervals on one side of 1). A step is *flagged* when it has that evidence and moved by at least
the threshold (``regressed`` or ``improved``).

Time to target is compared as its inverse, the speed to the target, so that in every step a ratio below
1 means the later version is slower, whichever the metric.

Beside the throughput, each version's iteration split (:mod:`rlbench.analysis.history.split`: milliseconds per
1,000 env steps per phase, median over the rounds with its interval) and, per throughput step, the phases' own
paired changes, which say where a change came from. A flagged step is then *called* only when a second, separate
interleaved run of its two releases alone agrees (:func:`confirm_steps`: the history's many steps are many
tests, and some flag by chance); a flagged step across which the framework resolved a default differently is
said as an API change (:mod:`rlbench.analysis.history.changes`), not as a regression; a history of two releases
is its own confirmation (``alone``).

A slowdown spread over many releases passes every adjacent step, so each configuration is also read whole: every
release against the first and the last (``cumulative``, the same paired rule), and the change points of the
throughput's and each phase's series (:mod:`rlbench.analysis.history.points`), with the return at equal env steps
beside each throughput step and change point (a slower release that learns better is a trade).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, replace
from typing import Any

import numpy as np
import pandas as pd

from rlbench.analysis.change import COMPARISON_SCHEMA_VERSION, Change, by_rounds, paired
from rlbench.analysis.comparison import FAILING
from rlbench.analysis.evidence import beyond, change_sentence, change_verdict
from rlbench.analysis.findings import CHANGE_THRESHOLD, CONFIDENCE
from rlbench.analysis.history.changes import ApiChange, api_change, release_facts
from rlbench.analysis.history.points import (
    ChangePoint,
    LearningStep,
    config_points,
    equal_step_returns,
    learning_between,
    trade_words,
)
from rlbench.analysis.history.split import PHASES, split_column
from rlbench.analysis.stats import median_ci
from rlbench.analysis.variants import grid_points

#: Metric -> (trials-table column, unit in words). Time to target and CPU cost: lower is better. The CPU cost
#: (CPU milliseconds the trial's processes spent per 1,000 env steps, :mod:`rlbench.analysis.history.runs`) is what
#: a release asks of the machine per step: a busy machine slows a trial down without making it do more work, so
#: a step whose throughput moved while its CPU cost did not points at the machine, not at the release.
METRICS: dict[str, tuple[str, str]] = {
    "throughput": ("env_steps_per_s", "env steps/s"),
    "cpu_cost": ("cpu_ms_per_k", "CPU ms per 1k env steps"),
    "time_to_target": ("time_to_target_s", "s to target"),
}


@dataclass(frozen=True)
class PhaseFigure:
    """One phase of one version's iterations: its median over the rounds, milliseconds per 1,000 env steps."""

    phase: str
    """The iterations column (``sample_s``; :data:`~rlbench.analysis.history.split.PHASES`)."""
    ms_per_k: float | None
    """Median over the rounds (None: the version's trials never reported it)."""
    ci_low: float | None
    """Lower end of its 95% interval (None with fewer than 2 rounds)."""
    ci_high: float | None
    """Upper end."""


@dataclass(frozen=True)
class PhaseStep:
    """One phase from one version to the next, paired by round."""

    phase: str
    """The iterations column."""
    change: Change
    """The later version's milliseconds per 1,000 env steps against the earlier's (above 1: the phase takes longer)."""


@dataclass(frozen=True)
class VersionPoint:
    """One version on one configuration: its medians over the rounds with their intervals."""

    version: str
    """The package's version."""
    variant: str
    """Its variant's name (``ray-2.59.0``)."""
    ok_rounds: int
    """Rounds in which its trial finished ok."""
    env_steps_per_s: float | None
    """Median steady-state throughput over those rounds."""
    env_steps_per_s_ci_low: float | None
    """Lower end of its 95% interval (None with fewer than 2 rounds)."""
    env_steps_per_s_ci_high: float | None
    """Upper end."""
    reached_target: int | None = None
    """Rounds whose trial reached the ``stop`` target (None: the spec has none)."""
    time_to_target_s: float | None = None
    """Median seconds to the target over the rounds that reached it."""
    time_to_target_s_ci_low: float | None = None
    """Lower end of its 95% interval."""
    time_to_target_s_ci_high: float | None = None
    """Upper end."""
    cpu_ms_per_k: float | None = None
    """Median over the rounds of the CPU milliseconds its trial's processes spent per 1,000 env steps (None: not
    measured)."""
    cpu_ms_per_k_ci_low: float | None = None
    """Lower end of its 95% interval."""
    cpu_ms_per_k_ci_high: float | None = None
    """Upper end."""
    phases: list[PhaseFigure] = field(default_factory=list)
    """The iteration split (the phases a version reported)."""
    failed: int = 0
    """Rounds whose trial did not finish ok (failed, timed out, skipped)."""
    failure: str | None = None
    """The first such trial's reason."""


@dataclass(frozen=True)
class VersionStep:
    """One version against the one before it on one configuration and metric."""

    before: str
    """The earlier version."""
    after: str
    """The later version."""
    metric: str
    """``throughput`` or ``time_to_target`` (compared as speed to the target)."""
    change: Change
    """after against before, paired by round (speeds: a ratio below 1 means the later version is slower)."""
    verdict: str
    """``regressed`` / ``improved`` (with evidence, by at least the threshold), ``small change``, ``no
    significant change``, ``no evidence yet: ...`` or ``no data``
    (:func:`~rlbench.analysis.evidence.change_verdict`)."""
    sentence: str
    """``ray-2.59.0 is 12.3% slower than ray-2.58.0 (...)`` or ``no evidence of a difference (...)``."""
    api: ApiChange | None = None
    """What else differs between the two releases: read paths, defaults (None: not known)."""
    phases: list[PhaseStep] = field(default_factory=list)
    """Throughput steps: each phase's paired change."""
    outcome: str = ""
    """A flagged step's standing: ``confirmed`` (a separate interleaved run of the two releases agrees),
    ``not confirmed`` (it does not), ``unconfirmed`` (none ran yet), ``alone`` (the history holds these two releases
    only: its run is already a run of the two alone, and a confirmation would repeat the same design) or ``API
    change`` (the framework resolved a default differently across the step); empty for a step that is not flagged."""
    confirmation: Change | None = None
    """The confirming run's pair (its own rounds), when one ran."""
    confirmation_run: str | None = None
    """Its folder under ``runs/``."""
    learning: LearningStep | None = None
    """Throughput steps: the later release's return at equal env steps against the earlier's."""
    trade: str = ""
    """A throughput step slower with evidence whose later release learns better or changed a default, said as a
    trade (:func:`~rlbench.analysis.history.points.trade_words`); else empty."""

    @property
    def flagged(self) -> bool:
        """A change of at least the threshold with evidence, either way."""
        return self.verdict in ("regressed", "improved")

    @property
    def slower(self) -> bool:
        """Flagged, the later version the slower, and neither disproved by its confirmation nor an API change
        (what fails ``rlbench history``; the CPU cost, a check beside the throughput, never does)."""
        return (
            self.metric != "cpu_cost"
            and self.verdict in FAILING
            and self.outcome not in ("not confirmed", "API change")
        )

    @property
    def called(self) -> str:
        """The step in one word for a page: ``regressed`` / ``improved`` once confirmed, ``regressed?`` /
        ``improved?`` flagged but unconfirmed, ``API change``, ``not confirmed``, else the verdict."""
        if not self.flagged or self.outcome in ("confirmed", "alone"):
            return self.verdict
        if self.outcome == "unconfirmed":
            return f"{self.verdict}?"
        return self.outcome


@dataclass(frozen=True)
class ConfigTrend:
    """One configuration across the versions."""

    label: str
    """The grid point's axis values, ``a=1, b=2`` (``all`` without grid axes)."""
    axes: dict[str, Any]
    """Grid axis column -> value."""
    points: list[VersionPoint]
    """One per version, in the order given."""
    steps: list[VersionStep] = field(default_factory=list)
    """One per adjacent pair of versions and metric."""
    cumulative: list[VersionStep] = field(default_factory=list)
    """Throughput (and time to target): every release but the second against the first (``before`` the first
    release) and the last against every release but the one before it (``after`` the last; a neighbour is a step
    already), paired by round: a change spread over many steps, each too small."""
    change_points: list[ChangePoint] = field(default_factory=list)
    """Where the throughput's and each phase's series step over the whole history (the reported first, the biggest
    first; :mod:`rlbench.analysis.history.points`)."""


def _by_round(frame: pd.DataFrame, column: str) -> dict[int, float]:
    """round -> the column's value, of the rounds with a reading (a positive number)."""
    values = pd.to_numeric(frame[column], errors="coerce") if column in frame else pd.Series(dtype=float)
    return {int(r): float(v) for r, v in zip(frame["_round"], values) if np.isfinite(v) and v > 0}


def _rates(frame: pd.DataFrame, metric: str) -> dict[int, float]:
    """round -> the metric as a speed (throughput, or 1 / time to target) of the rounds with a reading."""
    values = _by_round(frame, METRICS[metric][0])
    return values if metric == "throughput" else {r: 1.0 / v for r, v in values.items()}


def _point(
    frame: pd.DataFrame, version: str, variant: str, with_target: bool, failed: pd.DataFrame | None = None
) -> VersionPoint:
    tput = median_ci(pd.to_numeric(frame["env_steps_per_s"], errors="coerce").dropna().tolist())
    target: dict[str, Any] = {}
    if with_target:
        reached = frame[frame["reached_target"].fillna(False).astype(bool)] if "reached_target" in frame else frame[:0]
        ttt = median_ci(
            pd.to_numeric(reached.get("time_to_target_s", pd.Series(dtype=float)), errors="coerce").dropna().tolist()
        )
        target = {
            "reached_target": len(reached),
            "time_to_target_s": ttt.median,
            "time_to_target_s_ci_low": ttt.ci_low,
            "time_to_target_s_ci_high": ttt.ci_high,
        }
    phases = []
    for phase, _ in PHASES:
        column = split_column(phase)
        if column in frame:
            est = median_ci(pd.to_numeric(frame[column], errors="coerce").dropna().tolist())
            if est.median is not None:
                phases.append(PhaseFigure(phase, est.median, est.ci_low, est.ci_high))
    cpu = median_ci(pd.to_numeric(frame.get("cpu_ms_per_k", pd.Series(dtype=float)), errors="coerce").dropna().tolist())
    failed = failed if failed is not None else frame[:0]
    reasons = [str(r) for r in failed.get("reason", pd.Series(dtype=object)).dropna()]
    return VersionPoint(
        version,
        variant,
        len(frame),
        tput.median,
        tput.ci_low,
        tput.ci_high,
        **target,
        cpu_ms_per_k=cpu.median,
        cpu_ms_per_k_ci_low=cpu.ci_low,
        cpu_ms_per_k_ci_high=cpu.ci_high,
        phases=phases,
        failed=len(failed),
        failure=reasons[0] if reasons else None,
    )


def _phase_steps(before: pd.DataFrame, after: pd.DataFrame) -> list[PhaseStep]:
    """Each phase both sides reported, paired by round (the later's milliseconds against the earlier's)."""
    out = []
    for phase, _ in PHASES:
        column = split_column(phase)
        if column not in before or column not in after:
            continue
        sides = [_by_round(f, column) for f in (before, after)]
        if sides[0] and sides[1]:
            out.append(PhaseStep(phase, paired(*sides)))
    return out


def compare_step(
    before: dict[int, float],
    after: dict[int, float],
    versions: tuple[str, str],
    names: tuple[str, str],
    metric: str,
    threshold: float,
) -> VersionStep:
    """``after`` against ``before`` (each round -> speed) of ``versions``, with the verdict in words (of ``names``)."""
    change = paired(before, after)
    return VersionStep(
        versions[0],
        versions[1],
        metric,
        change,
        change_verdict(change, threshold),
        change_sentence(names[0], names[1], change),
    )


def _ok_rounds(trials: pd.DataFrame) -> pd.DataFrame:
    """The trials that ran ok, each with its round as ``_round`` (``round``, else ``repeat``)."""
    ok = trials[trials["status"] == "ok"]
    return ok.assign(_round=(ok["round"] if "round" in ok else ok["repeat"]).astype(int))


def history_trends(
    trials: pd.DataFrame,
    axes: list[str],
    versions: list[tuple[str, str]],
    *,
    threshold: float = CHANGE_THRESHOLD,
    facts: dict[str, dict[str, Any]] | None = None,
    package: str | None = None,
    curves: dict[str, Any] | None = None,
) -> list[ConfigTrend]:
    """Per grid point (``axes``: its columns), every version (``versions``: (version, variant name), in
    order) and the step between each adjacent pair: throughput always, time to target when the trials
    ran with a target. ``facts`` (trial_id -> build facts) adds each step's API change; ``curves`` (trial_id ->
    :class:`~rlbench.analysis.curves.Curve`) the return at equal env steps beside each throughput step. Each
    configuration also gets its cumulative comparisons (with the first and the last release) and its change points
    over the whole series (:func:`~rlbench.analysis.history.points.config_points`)."""
    if "variant" not in trials or trials.empty:
        return []
    ok = _ok_rounds(trials)
    not_ok = trials[trials["status"] != "ok"]
    with_target = "reached_target" in trials and trials["reached_target"].notna().any()
    with_cpu = "cpu_ms_per_k" in trials and pd.to_numeric(trials["cpu_ms_per_k"], errors="coerce").notna().any()
    metrics = ["throughput", *(["cpu_cost"] if with_cpu else []), *(["time_to_target"] if with_target else [])]
    out = []
    for point in grid_points(trials, axes):
        mine = ok.loc[ok.index.isin(point.rows)]
        lost = not_ok.loc[not_ok.index.isin(point.rows)]
        sides = {name: mine[mine["variant"] == name] for _, name in versions}
        points = [
            _point(sides[name], version, name, with_target, lost[lost["variant"] == name]) for version, name in versions
        ]
        known = {
            name: release_facts([facts.get(str(t), {}) for t in sides[name]["trial_id"]]) if facts else ({}, {}, {})
            for _, name in versions
        }
        at, returns = equal_step_returns(sides, curves)
        # a history of two releases is already a run of the two alone: confirming a step would repeat its design
        unconfirmed = "alone" if len(versions) == 2 else "unconfirmed"
        steps, apis = [], {}
        for metric in metrics:
            for (va, a), (vb, b) in zip(versions, versions[1:]):
                step = compare_step(
                    _rates(sides[a], metric), _rates(sides[b], metric), (va, vb), (a, b), metric, threshold
                )
                extra: dict[str, Any] = {"api": api_change(va, vb, known[a], known[b], package) if facts else None}
                if metric == "throughput":
                    apis[(va, vb)] = extra["api"]
                    extra["phases"] = _phase_steps(sides[a], sides[b])
                    extra["learning"] = learning_between(va, vb, returns.get(a, []), returns.get(b, []), at)
                    extra["trade"] = trade_words(step.verdict == "regressed", extra["learning"], extra["api"])
                if step.flagged and metric != "cpu_cost":
                    extra["outcome"] = (
                        "API change" if extra["api"] is not None and extra["api"].workload else unconfirmed
                    )
                steps.append(replace(step, **extra))
        cumulative = []
        if len(versions) > 2:  # with two, the one step is both
            (v0, first), (vn, last) = versions[0], versions[-1]
            for metric in [m for m in metrics if m != "cpu_cost"]:
                rates = {name: _rates(sides[name], metric) for _, name in versions}
                # a release's neighbour is its step already: the first against the second, the last against the
                # one before it are left to the steps
                cumulative += [
                    compare_step(rates[first], rates[b], (v0, vb), (first, b), metric, threshold)
                    for vb, b in versions[2:]
                ]
                cumulative += [
                    compare_step(rates[a], rates[last], (va, vn), (a, last), metric, threshold)
                    for va, a in versions[1:-2]
                ]
        found = config_points(sides, versions, threshold, returns=(at, returns), apis=apis)
        out.append(ConfigTrend(point.label, point.axes, points, steps, cumulative, found))
    return out


def first_look_changes(
    trials: pd.DataFrame, axes: list[str], names: tuple[str, str], metric: str = "throughput"
) -> dict[str, Change]:
    """Per grid point (its label), the second variant of ``names`` against the first from the rounds read so far,
    by :func:`~rlbench.analysis.change.by_rounds` (as independent repeats where the rounds are too few for the
    paired test): what a bisect probe's first look judges (:func:`rlbench.analysis.bisect.first_look`)."""
    if "variant" not in trials or trials.empty:
        return {}
    ok = _ok_rounds(trials)
    out = {}
    for point in grid_points(trials, axes):
        mine = ok.loc[ok.index.isin(point.rows)]
        a, b = (_rates(mine[mine["variant"] == name], metric) for name in names)
        out[point.label] = by_rounds(a, b)
    return out


def rounds_after(first: pd.DataFrame, rest: pd.DataFrame, rounds: int) -> pd.DataFrame:
    """One trials table of a probe's first ``rounds`` rounds and of the rest's, run as a sweep of their own whose
    rounds count from 0 again: numbered after the first ones, so each round still pairs its two sides."""
    shifted = {c: rest[c] + rounds for c in ("round", "repeat") if c in rest}
    return pd.concat([first, rest.assign(**shifted)], ignore_index=True)


def confirm_steps(
    trends: list[ConfigTrend], confirmations: dict[tuple[str, str, str], tuple[str, Change]], threshold: float
) -> list[ConfigTrend]:
    """The trends with each flagged throughput step's confirmation attached: ``confirmations`` maps (configuration
    label, earlier version, later version) to (its run's folder, its pair). Confirmed when the confirming run's pair
    changed with evidence, the same way, by at least the threshold."""
    out = []
    for trend in trends:
        steps = []
        for step in trend.steps:
            got = confirmations.get((trend.label, step.before, step.after))
            if step.metric == "throughput" and got is not None:
                run, change = got
                direction = "slower" if step.verdict == "regressed" else "faster"
                agrees = change.differs and beyond(change.effect, threshold, direction)
                outcome = step.outcome
                if step.flagged and outcome != "API change":
                    outcome = "confirmed" if agrees else "not confirmed"
                step = replace(step, confirmation=change, confirmation_run=run, outcome=outcome)
            steps.append(step)
        out.append(replace(trend, steps=steps))
    return out


def flagged_steps(trends: list[ConfigTrend]) -> list[tuple[ConfigTrend, VersionStep]]:
    """Every step with evidence of a change of at least the threshold, with its configuration (throughput and time
    to target: the CPU cost is a check said beside them, not a finding of its own)."""
    return [(t, s) for t in trends for s in t.steps if s.flagged and s.metric != "cpu_cost"]


def history_json(
    trends: list[ConfigTrend], *, package: str, versions: list[str], threshold: float, rounds: int, results: str
) -> dict[str, Any]:
    """What ``history.json`` holds: the inputs, and every configuration's points and steps (each step's pair
    nested, :class:`~rlbench.analysis.change.Change`; docs/SCHEMA.md, "Comparison files")."""
    return {
        "schema_version": COMPARISON_SCHEMA_VERSION,
        "package": package,
        "versions": versions,
        "rounds": rounds,
        "threshold": threshold,
        "confidence": CONFIDENCE,
        "results": results,
        "flagged": len(flagged_steps(trends)),
        "change_points": sum(p.reported for t in trends for p in t.change_points),
        "configurations": [asdict(t) for t in trends],
    }
