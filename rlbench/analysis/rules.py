"""A verdict and the rule that gives it (issue 58, item 1): each side's verdicts are one ordered list of rules, the
learner's :data:`rlbench.analysis.findings.LEARNER_RULES` and the sampler's
:data:`rlbench.analysis.sampling.SAMPLER_RULES`, each beside the functions that write its words, and one
:func:`evaluate` reads either. Standard library only, as :mod:`rlbench.analysis.findings`, which re-exports
:class:`Verdict`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from rlbench.analysis.config_row import ConfigRow
from rlbench.analysis.knobs import Knob
from rlbench.analysis.labels import Kind


@dataclass(frozen=True)
class Verdict:
    """Why one side of a configuration (its learner, its sampler) is slow, with its evidence, and the knob that
    changes it (:mod:`rlbench.analysis.next_step` turns the knob into the values worth sweeping)."""

    kind: Kind
    """What it says; its word (:attr:`label`) is the bottleneck column's: ``launch-bound``, ``env waits``, ..."""
    text: str
    """The finding in words, with its numbers."""
    knob: Knob | None
    """The spec key to change, its facts :data:`~rlbench.analysis.knobs.KNOBS`' (None: no knob is known to help)."""

    @property
    def label(self) -> str:
        return str(self.kind)

    @property
    def short(self) -> str:
        """Cause and knob in a few words (``per-step work-bound: change num_envs_per_env_runner``): what the report's
        first screen, ``next.yaml``'s header and the terminal say; :attr:`text` stands once, in the Verdicts."""
        return f"{self.label}: change {self.knob}" if self.knob else self.label


@dataclass(frozen=True)
class Rule:
    """One verdict's rule: what it may say and name, and the function that says it of a row. A rule's side is the list
    it stands in; its place there is where the report says it."""

    kinds: tuple[Kind, ...]
    """The kinds it may say: two where the row picks (outside the env: the forward pass or RLlib's per-step work)."""
    check: Callable[[ConfigRow, float], Verdict | None]
    """Its verdict of a row, or None; the second argument is the share of the iteration from which a side limits it
    (:func:`~rlbench.analysis.findings.limiting_sides`' ``bound``)."""
    knobs: tuple[Knob | None, ...] = (None,)
    """The knobs it may name, None if it may name none (the CPU learner's: the driver's CPUs or a remote learner's)."""
    group: str | None = None
    """Of a group's rules, the first that holds says its verdict and the rest are not asked (an ``elif`` chain)."""
    stops: bool = False
    """Its verdict, when it holds, is its side's last (an env that waits: the split the later rules read is waiting),
    but for the rules that follow a stop (:attr:`after_stop`)."""
    after_stop: bool = False
    """Asked also after a rule that stops: the work more envs per runner share is a runner's busy share, which an env
    that waits does not change (issue 57's env_waits_wide: at 4 runners x 1 env no runner fits, 24% of ``sample()``
    outside the env, and 4 x 8 ran 1.8x)."""


def evaluate(rules: Sequence[Rule], row: ConfigRow, bound: float) -> list[Verdict]:
    """The verdicts of ``rules``, in their order, on ``row``: each rule's that holds, at most one of a group, none
    after a rule that stops but those that follow a stop."""
    out: list[Verdict] = []
    said: set[str] = set()
    stopped = False
    for rule in rules:
        if stopped and not rule.after_stop:
            continue
        verdict = None if rule.group in said else rule.check(row, bound)
        if verdict is None:
            continue
        out.append(verdict)
        if rule.group is not None:
            said.add(rule.group)
        stopped = stopped or rule.stops
    return out
