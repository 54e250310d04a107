"""What a configuration's verdicts ask for next: the knob and the values that fit, or why there is none.

The verdicts (:mod:`rlbench.analysis.findings`: why a learner is slow,
:func:`~rlbench.analysis.findings.learner_verdicts`) each name a knob or none. :func:`advise` turns one configuration
row's first knob into the values worth sweeping
around its current one, only values the trial's cores hold (the plan would skip the rest), or says why nothing is
(no verdict names a knob; no larger value fits). :func:`next_sweep` is the report's use of it (``next.yaml``, written
by :mod:`rlbench.report.next_spec`), and ``rlbench autoconfig``'s walk moves by it one configuration at a time.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Literal

import pandas as pd

from rlbench.analysis.findings import Verdict, learner_verdicts, num


@dataclass(frozen=True)
class NextSweep:
    """The sweep a verdict asks for: one knob around its current value, for one configuration (``next.yaml``)."""

    index: int
    """The configuration (its grid index) whose trial the sweep starts from."""
    verdict: Verdict
    """The verdict that names the knob, with its evidence."""
    knob: str
    """The spec key to sweep (``minibatch_size``, ``num_env_runners``, ``num_cpus_per_learner``, or
    ``learner_cpus``: the driver's CPUs, resolved against the trial's plan by the writer)."""
    current: float
    """Its value in that configuration."""
    values: tuple[int, ...]
    """The grid values, the current one included (the baseline of the comparison)."""


#: The role whose CPUs each knob reserves, and how many of that role there are (a row's column; None: one). Torch
#: threads (``driver_torch_threads``) reserve nothing: up to the trial's cores.
_KNOB_ROLE = {
    "num_cpus_for_main_process": ("driver", None),
    "num_cpus_per_learner": ("learner", "num_learners"),
    "num_env_runners": ("env_runner", None),
}


def _room(knob: str, row: dict[str, Any]) -> float:
    """The largest value of a CPU knob the trial's cores hold, the other roles' allocations kept (the plan would
    skip a point past it): its ``cpus`` less what every other role is given, per learner for
    ``num_cpus_per_learner``, in env runners of ``num_cpus_per_env_runner`` for ``num_env_runners``."""
    cpus = num(row.get("cpus")) or 1.0
    role, count = _KNOB_ROLE[knob]
    given = {r: num(row.get(f"{r}_cpus_allocated")) for r in ("driver", "learner", "env_runner", "aggregator")}
    others = sum(v for r, v in given.items() if r != role and v is not None)
    room = max(0.0, cpus - others)
    if knob == "num_env_runners":
        per = num(row.get("num_cpus_per_env_runner")) or 0.0
        return math.floor(room / per) if per > 0 else cpus
    return room / max(1.0, num(row.get(count)) or 1.0) if count else room


def knob_values(knob: str, current: float, row: dict[str, Any]) -> tuple[int, ...]:
    """The values to sweep, around ``current``: a larger minibatch (x2, x4, x8, up to the train batch per learner);
    CPUs and env runners at half, the same, twice and four times (from 1 where the current is 0), up to what the
    trial's cores hold beside its other roles (:func:`_room`); the current value always included."""
    c = int(current)
    if knob == "minibatch_size":
        cap = num(row.get("train_batch_size_per_learner")) or c
        return tuple(sorted({c} | {m * c for m in (2, 4, 8) if m * c <= cap}))
    cap = _room(knob, row) if knob in _KNOB_ROLE else (num(row.get("cpus")) or max(1, c))
    base = max(1, c)
    return tuple(sorted({c} | {v for v in (base // 2, base, 2 * base, 4 * base) if 1 <= v <= cap}))


#: Why :func:`advise` names no step: no verdict names a knob (``no_knob``); its knob has no larger value that the
#: trial's cores hold (``no_fit``).
NoStep = Literal["no_knob", "no_fit"]


@dataclass(frozen=True)
class Advice:
    """What one configuration's verdicts ask for next."""

    step: NextSweep | None
    """The knob and the values to sweep (the current one among them); None when there is none."""
    stop: NoStep | None
    """Why there is no step (None when there is one)."""
    reason: str
    """In words: the verdict that names the knob, or why nothing does."""


def knob_verdicts(row: dict[str, Any]) -> list[Verdict]:
    """One configuration row's verdicts that name a knob, in the order they are followed."""
    return [v for v in learner_verdicts(row) if v.knob is not None]


def advise(row: dict[str, Any]) -> Advice:
    """The step one configuration row's first knob-naming verdict asks for (its ``index`` names the configuration):
    the knob's values around the current one (:func:`knob_values`) when a larger one fits, else why not."""
    for verdict in knob_verdicts(row):
        assert verdict.knob is not None  # knob_verdicts keeps the verdicts that name one
        current = num(row.get(verdict.knob_column)) if verdict.knob_column else None
        if current is None:
            continue
        values = knob_values(verdict.knob, current, row)
        if max(values) > current:
            return Advice(NextSweep(int(row["index"]), verdict, verdict.knob, current, values), None, verdict.text)
        return Advice(
            None,
            "no_fit",
            f"{verdict.text}; but no larger {verdict.knob} than {current:g} fits the trial's "
            f"{num(row.get('cpus')) or 0:g} cores beside its other roles",
        )
    return Advice(None, "no_knob", "no verdict names a knob")


def next_sweep(configs: pd.DataFrame) -> NextSweep | None:
    """The one sweep to run next: of the configurations with a verdict that names a knob, the fastest (the one a
    user would keep), with its first such verdict (:func:`advise`); None when no verdict names one, when no larger
    value of its knob fits the trial (the verdicts ask for more CPUs, env runners or a larger minibatch), or when
    this folder already measured every value the sweep would run (a folder of ``next.yaml`` itself asks for no
    second one)."""
    if configs.empty:
        return None
    for _, row in configs.sort_values("env_steps_per_s", ascending=False, na_position="last").iterrows():
        advice = advise(row.to_dict())
        if advice.stop == "no_knob":
            continue
        step = advice.step
        if step is None:
            return None  # the configuration to keep has its answer here: no slower one's sweep instead
        column = step.verdict.knob_column
        measured = set(configs[column].dropna()) if column in configs else set()
        return None if set(step.values) <= measured else step  # this folder swept it already: no second sweep
    return None
