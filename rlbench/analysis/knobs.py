"""The knobs a verdict may name, and every fact about each, in one table (issue 58, item 1).

A knob is a spec key whose configuration column has the same name (:mod:`rlbench.analysis.configs`). What the
verdicts, the next sweep and autoconfig's walk know of one is its row of :data:`KNOBS`: the role whose CPUs it
reserves, its ladder of values and their cap, what moving it changes in learning, whether it raises the ceiling,
the knob it trades cores with. A verdict that names a new knob adds one row here. Standard library only, as
:mod:`rlbench.analysis.findings`.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from typing import Literal


class Knob(str, Enum):
    """A spec key a verdict or the walk may move, spelled as the spec and the configuration column spell it: a
    ``str``, so it compares equal to an axis' name and JSON writes it plain."""

    __str__ = str.__str__
    __format__ = str.__format__  # type: ignore[assignment]  # the plain key in f-strings, as str's

    MINIBATCH_SIZE = "minibatch_size"
    NUM_ENVS_PER_ENV_RUNNER = "num_envs_per_env_runner"
    NUM_ENV_RUNNERS = "num_env_runners"
    NUM_CPUS_FOR_MAIN_PROCESS = "num_cpus_for_main_process"
    NUM_CPUS_PER_LEARNER = "num_cpus_per_learner"
    DRIVER_TORCH_THREADS = "driver_torch_threads"
    NUM_EPOCHS = "num_epochs"
    TRAIN_BATCH_SIZE_PER_LEARNER = "train_batch_size_per_learner"
    TRAIN_BATCH_SIZE = "train_batch_size"
    ROLLOUT_FRAGMENT_LENGTH = "rollout_fragment_length"
    NUM_LEARNERS = "num_learners"


@dataclass(frozen=True)
class KnobFacts:
    """What rlbench knows of one knob."""

    role: str | None = None
    """The role whose CPUs it reserves (``driver``, ``learner``, ``env_runner``): its values are capped by the room
    the trial's cores leave that role (:func:`rlbench.analysis.sampling.room`); None: it reserves none."""
    per: str | None = None
    """The configuration column counting that role (``num_learners``: CPUs per learner); None: one."""
    cap: Literal["train_batch", "batch_per_runner"] | None = None
    """A ladder of multiples (x2, x4, x8) up to the train batch per learner (``train_batch``) or while each env
    still takes a step of the train batch (``batch_per_runner``); None: half, the same, x2, x4 within the room its
    role has (the trial's cores without a role)."""
    fits: str | None = None
    """Where no larger value fits, why, in words (None: it does not fit the trial's cores beside its other roles)."""
    learning: str | None = None
    """What moving it changes in what is learned, not only how fast (each walk step says so); None: speed only."""
    raises_ceiling: bool = False
    """It raises the ceiling itself (the env's rate in as many processes as the trial has runners, issue 49): a
    verdict asking for it is followed however close to its ceiling the point is."""
    trade: Knob | None = None
    """The knob it shares the trial's cores with (issue 57): where it has no larger value that fits, a step races
    the pair, it up and the partner down, as one move of two knobs."""
    floor: int | None = None
    """The fewest of it a trade leaves, as a partner (the driver keeps a CPU; no runner samples in the driver)."""


#: Every knob's facts: more runners need cores the driver holds, the driver's (or a learner's) CPUs cores the runners
#: hold, more envs per runner than the train batch leaves a step each fewer runners.
KNOBS: dict[Knob, KnobFacts] = {
    Knob.MINIBATCH_SIZE: KnobFacts(cap="train_batch", learning="fewer, larger SGD steps an epoch"),
    Knob.NUM_ENVS_PER_ENV_RUNNER: KnobFacts(
        cap="batch_per_runner",
        fits="leaves each env a step of the train batch",
        learning="rollouts: the batch is collected in shorter fragments from more envs at once",
        trade=Knob.NUM_ENV_RUNNERS,
    ),
    Knob.NUM_ENV_RUNNERS: KnobFacts(
        role="env_runner",
        learning="rollouts: the batch is collected in shorter fragments from more runners (asynchronous algorithms: "
        "more policy lag)",
        raises_ceiling=True,
        trade=Knob.NUM_CPUS_FOR_MAIN_PROCESS,
        floor=0,
    ),
    Knob.NUM_CPUS_FOR_MAIN_PROCESS: KnobFacts(role="driver", trade=Knob.NUM_ENV_RUNNERS, floor=1),
    Knob.NUM_CPUS_PER_LEARNER: KnobFacts(role="learner", per="num_learners", trade=Knob.NUM_ENV_RUNNERS),
    Knob.DRIVER_TORCH_THREADS: KnobFacts(),
    Knob.NUM_EPOCHS: KnobFacts(learning="passes over each train batch"),
    Knob.TRAIN_BATCH_SIZE_PER_LEARNER: KnobFacts(learning="env steps each update learns from"),
    Knob.TRAIN_BATCH_SIZE: KnobFacts(learning="env steps each update learns from"),
    Knob.ROLLOUT_FRAGMENT_LENGTH: KnobFacts(learning="how rollouts are cut into fragments"),
    Knob.NUM_LEARNERS: KnobFacts(
        learning="the batch of an update: each learner trains on its own train_batch_size_per_learner"
    ),
}


def facts(knob: str | None) -> KnobFacts:
    """A knob's facts (a grid axis' name too); an unknown key's are the defaults: no role, speed only."""
    return next((f for k, f in KNOBS.items() if k == knob), KnobFacts())
