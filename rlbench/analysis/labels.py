"""What each bottleneck word of a verdict means, in one clause: the report explains a configuration's words where they
first appear (its first screen, under the Configurations table). The rules behind each: docs/ANALYSIS.md,
"Verdicts", "Why a learner is slow", "Why sampling is slow". Standard library only, as
:mod:`rlbench.analysis.findings`, which gives the words.
"""

from __future__ import annotations

from enum import Enum


class Kind(str, Enum):
    """What a sampler's or a learner's verdict says (:class:`rlbench.analysis.findings.Verdict`), its bottleneck
    word the value: a ``str``, so the label it adds to a configuration's reads as the word."""

    __str__ = str.__str__
    __format__ = str.__format__  # type: ignore[assignment]  # the plain word in f-strings, as str's

    LEARNER_STARVED = "learner starved"
    FED_BY_CPU = "learner fed by the CPU"
    LAUNCH_BOUND = "launch-bound"
    SHORT_OF_THREADS = "learner short of threads"
    MODEL_TOO_SMALL = "model too small for the GPU"
    WAITS_ON_STRAGGLER = "waits on a straggler"
    WAITS_ON_TRANSFER = "waits on transfer"
    ENV_WAITS = "env waits"
    WAITS_FOR_CORE = "waits for a core"
    INFERENCE_BOUND = "inference-bound"
    PER_STEP_BOUND = "per-step work-bound"
    FORWARD_ON_CPU = "forward pass on the CPU"
    ENV_BOUND = "env-bound"
    SHARED_WORK = "shared work at the cores limit"
    CORES_LIMIT = "cores are the limit"


#: What each bottleneck word means, in one clause (the report explains a configuration's words where they first
#: appear; the rules: docs/ANALYSIS.md, "Verdicts", "Why a learner is slow", "Why sampling is slow"). Every label a
#: verdict can give is here (tests/analysis/test_findings_words.py holds every :class:`Kind` and general word to it).
LABEL_MEANINGS: dict[str, str] = {
    "sampling-bound": "collecting samples takes most of each iteration",
    "learning-bound": "the learner's update takes most of each iteration",
    "sampling- and learning-bound": "env runners and learner both saturated: the pipeline is full",
    "mixed": "no single phase dominates the iteration",
    "no data": "no steady-state measurement",
    "CPU-starved": "a role keeps nearly all of its allocated cores busy",
    "GPU idle": "the learner's GPU is mostly idle in steady state",
    Kind.LEARNER_STARVED: "sampling starves the learner, which waits for samples",
    Kind.FED_BY_CPU: "building the train batch on the CPU is most of the GPU learner's work",
    Kind.LAUNCH_BOUND: "many small minibatch steps: the GPU waits on kernel launches and syncs",
    Kind.SHORT_OF_THREADS: "the CPU learner keeps all of its threads busy",
    Kind.MODEL_TOO_SMALL: "a CPU learner does as well as the GPU one",
    Kind.WAITS_ON_STRAGGLER: "the driver waits on one slow env runner",
    Kind.WAITS_ON_TRANSFER: "the driver waits on the slowest runner and the episodes' transfer",
    Kind.ENV_WAITS: "the env itself waits (a sleep, I/O, a simulator elsewhere)",
    Kind.WAITS_FOR_CORE: "env runners wait for a CPU core inside sample()",
    Kind.INFERENCE_BOUND: "env runners spend most of their time in the forward pass, not the env",
    Kind.PER_STEP_BOUND: "env runners spend most of their time in RLlib's per-step work around the env: "
    "connectors, episode bookkeeping",
    Kind.FORWARD_ON_CPU: "the forward pass runs on the CPU while the learner has a GPU",
    Kind.ENV_BOUND: "env runners spend most of their time stepping the env",
    Kind.SHARED_WORK: "no core left for another env runner, but part of each step is work more envs per runner share",
    Kind.CORES_LIMIT: "the env keeps this machine's cores busy: a cheaper env or more cores moves it",
}


def label_meanings(bottleneck: str) -> list[tuple[str, str]]:
    """(word, meaning) for each word of a configuration's bottleneck label (``sampling-bound, per-step work-bound``)
    that :data:`LABEL_MEANINGS` knows."""
    words = [w.strip() for w in str(bottleneck).split(", ")]
    return [(w, LABEL_MEANINGS[w]) for w in words if w in LABEL_MEANINGS]
