"""What a configuration's verdicts ask for next: the knob and the values that fit, or why there is none.

The verdicts (why a learner is slow, :func:`~rlbench.analysis.findings.learner_verdicts`; why sampling is slow,
:func:`~rlbench.analysis.sampling.sampler_verdicts`) each name a knob or none, those of the side that limits the
iteration first (:func:`knob_verdicts`). :func:`advices` turns each one's knob into the values worth sweeping around
its current one, only values the trial's cores hold (the plan would skip the rest), or says why it has none (no larger
value fits; the machine's cores are the limit); :func:`advise` is the first that has a step, or why none has.
:func:`next_sweep` is the report's use of it (``next.yaml``, written by :mod:`rlbench.report.next_spec`), and
``rlbench autoconfig``'s walk moves by :func:`advices`, passing a blocked verdict for the next (issue 57).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

import pandas as pd

from rlbench.analysis.config_row import ConfigRow
from rlbench.analysis.findings import (
    BOUND_FRAC,
    OTHER_SIDE_FRAC,
    SHARE_WORTH_FRAC,
    Verdict,
    learner_verdicts,
    limiting_sides,
)
from rlbench.analysis.knobs import Knob, facts
from rlbench.analysis.labels import Kind
from rlbench.analysis.sampling import room, sampler_verdicts


@dataclass(frozen=True)
class NextSweep:
    """The sweep a verdict asks for: one knob around its current value, for one configuration (``next.yaml``)."""

    index: int
    """The configuration (its grid index) whose trial the sweep starts from."""
    verdict: Verdict
    """The verdict that names the knob, with its evidence."""
    knob: Knob
    """The knob to sweep (the driver's CPUs are resolved against the trial's plan by the writer)."""
    current: float
    """Its value in that configuration."""
    values: tuple[int, ...]
    """The grid values, the current one included (the baseline of the comparison)."""


def knob_values(knob: str, current: float, config: Mapping[str, Any] | ConfigRow) -> tuple[int, ...]:
    """The values to sweep, around ``current``, by the knob's ladder (:data:`~rlbench.analysis.knobs.KNOBS`): x2, x4,
    x8 up to its cap (the minibatch: the train batch per learner; envs per runner: while each env still takes a step
    of the train batch an iteration); else half, the same, twice and four times (from 1 where the current is 0), up to
    what the trial's cores hold beside its other roles (:func:`~rlbench.analysis.sampling.room`), and for env runners
    that most where twice the current does not fit; the current value always included."""
    c, known, row = int(current), facts(knob), ConfigRow.of(config)
    if known.cap is not None:
        batch = row.total_train_batch_size or row.train_batch_size_per_learner
        per_env = batch / max(1.0, row.num_env_runners or 0.0) if batch else 8 * c
        cap = (row.train_batch_size_per_learner or c) if known.cap == "train_batch" else per_env
        return tuple(sorted({c} | {m * c for m in (2, 4, 8) if m * c <= cap}))
    cap = room(knob, row) if known.role else (row.cpus or max(1, c))
    base = max(1, c)
    values = {c} | {v for v in (base // 2, base, 2 * base, 4 * base) if 1 <= v <= cap}
    if known.role == "env_runner" and c < cap < 2 * base:  # 12 runners where 13 fit: the one that fits, not none
        values.add(int(cap))
    return tuple(sorted(values))


#: Why a verdict names no step: no verdict names a knob (``no_knob``); its knob has no larger value that the trial's
#: cores hold (``no_fit``); the sampler's verdict says this machine's cores are the limit (``cores_limit``: no knob
#: that needs more of them fits, and none that needs fewer is known to help).
NoStep = Literal["no_knob", "no_fit", "cores_limit"]


@dataclass(frozen=True)
class Advice:
    """What one of a configuration's verdicts asks for next."""

    step: NextSweep | None
    """The knob and the values to sweep (the current one among them); None when there is none."""
    stop: NoStep | None
    """Why there is no step (None when there is one)."""
    reason: str
    """In words: the verdict that names the knob, or why nothing does."""
    verdict: Verdict | None = None
    """The verdict (also without a step: a knob with no larger value that fits, the cores' limit); None: none."""
    current: float | None = None
    """The knob's current value (a step's too), where the verdict names a knob."""


def verdicts_in_order(row: ConfigRow) -> list[Verdict]:
    """One configuration row's sampler and learner verdicts (:func:`~rlbench.analysis.sampling.sampler_verdicts`,
    :func:`~rlbench.analysis.findings.learner_verdicts`), those of the side that limits the iteration first. A
    synchronous iteration no side limits is the sum of both: each side taking at least :data:`~rlbench.analysis.
    findings.SHARE_WORTH_FRAC` of it says its verdicts, the larger share's first (issue 57). Where one side limits
    it, the other side's verdicts follow where it takes at least :data:`~rlbench.analysis.findings.OTHER_SIDE_FRAC`:
    what the walk and ``next.yaml`` take when every verdict of the limiting side is blocked."""
    learning, sampling = limiting_sides(row)
    mixed = not (learning or sampling or row.asynchronous)
    bound = SHARE_WORTH_FRAC if mixed else BOUND_FRAC
    sampler, learner = sampler_verdicts(row, bound), learner_verdicts(row, bound)
    if mixed:
        learning = (row.learn_frac or 0.0) > (row.sample_frac or 0.0)
    elif not row.asynchronous and learning != sampling:  # the other side, after the limiting one's
        sampler = sampler or ([] if sampling else sampler_verdicts(row, OTHER_SIDE_FRAC))
        learner = learner or ([] if learning else learner_verdicts(row, OTHER_SIDE_FRAC))
    return [*learner, *sampler] if learning else [*sampler, *learner]


def knob_verdicts(config: Mapping[str, Any] | ConfigRow) -> list[Verdict]:
    """One configuration row's verdicts that name a knob, the sampler's and the learner's, those of the side that
    limits the iteration first, in the order they are followed."""
    return [v for v in verdicts_in_order(ConfigRow.of(config)) if v.knob is not None]


def advices(config: Mapping[str, Any] | ConfigRow) -> list[Advice]:
    """Every verdict of one configuration row that names a knob or the cores' limit, in the order they are followed
    (:func:`verdicts_in_order`), each as the step it asks for (:func:`knob_values` around the current value, when a
    larger one fits) or why it has none (``no_fit``, ``cores_limit``); empty when none does."""
    out: list[Advice] = []
    row = ConfigRow.of(config)
    for verdict in verdicts_in_order(row):
        if verdict.kind is Kind.CORES_LIMIT:
            out.append(Advice(None, "cores_limit", verdict.text, verdict))
            continue
        current = getattr(row, verdict.knob) if verdict.knob else None
        if verdict.knob is None or current is None:
            continue
        values = knob_values(verdict.knob, current, row)
        if max(values) > current:
            step = NextSweep(int(row.index), verdict, verdict.knob, current, values)
            out.append(Advice(step, None, verdict.text, verdict, current))
            continue
        where = facts(verdict.knob).fits or f"fits the trial's {row.cpus or 0:g} cores beside its other roles"
        text = f"{verdict.text}; but no larger {verdict.knob} than {current:g} {where}"
        out.append(Advice(None, "no_fit", text, verdict, current))
    return out


def advise(row: Mapping[str, Any] | ConfigRow) -> Advice:
    """The step one configuration row's verdicts ask for (its ``index`` names the configuration): the first verdict,
    in :func:`advices`' order, whose knob has a larger value that fits; a verdict blocked before it (no value fits,
    the cores' limit) is passed, as the walk passes it (issue 57). Without one, why not: the first verdict's stop
    (``no_fit``, ``cores_limit``), or ``no_knob``."""
    options = advices(row)
    return next((a for a in options if a.step is not None), options[0] if options else None) or Advice(
        None, "no_knob", "no verdict names a knob"
    )


def next_advice(configs: pd.DataFrame) -> Advice | None:
    """What the folder asks for next: of the configurations whose verdicts name a knob or a limit, the fastest's
    (the one a user would keep) :func:`advise`; None when no configuration's does."""
    if configs.empty:
        return None
    for _, row in configs.sort_values("env_steps_per_s", ascending=False, na_position="last").iterrows():
        advice = advise(row.to_dict())
        if advice.stop != "no_knob":
            return advice
    return None


def next_sweep(configs: pd.DataFrame) -> NextSweep | None:
    """The one sweep to run next: :func:`next_advice`'s step; None when it has none (no verdict names a knob, no
    larger value of its knob fits the trial, the machine's cores are the limit), or when this folder already
    measured every value the sweep would run (a folder of ``next.yaml`` itself asks for no second one)."""
    advice = next_advice(configs)
    step = advice.step if advice is not None else None
    if step is None:
        return None  # the configuration to keep has its answer here: no slower one's sweep instead
    measured = set(configs[step.knob].dropna()) if step.knob in configs else set()
    return None if set(step.values) <= measured else step  # this folder swept it already: no second sweep
