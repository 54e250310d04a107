"""What each bottleneck word of a verdict means, in one clause: the report explains a configuration's words where they
first appear (its first screen, under the Configurations table). The rules behind each: docs/ANALYSIS.md,
"Verdicts", "Why a learner is slow", "Why sampling is slow". Standard library only, as
:mod:`rlbench.analysis.findings`, which gives the words.
"""

from __future__ import annotations

from enum import Enum


class Kind(str, Enum):
    """What a sampler's or a learner's verdict says (:class:`rlbench.analysis.rules.Verdict`): its bottleneck word,
    the value (a ``str``, so the label it adds to a configuration's reads as the word), and what the word means."""

    __str__ = str.__str__
    __format__ = str.__format__  # type: ignore[assignment]  # the plain word in f-strings, as str's
    meaning: str

    def __new__(cls, word: str, meaning: str) -> Kind:
        kind = str.__new__(cls, word)
        kind._value_, kind.meaning = word, meaning
        return kind

    LEARNER_STARVED = "learner starved", "sampling starves the learner, which waits for samples"
    FED_BY_CPU = "learner fed by the CPU", "building the train batch on the CPU is most of the GPU learner's work"
    LAUNCH_BOUND = "launch-bound", "many small minibatch steps: the GPU waits on kernel launches and syncs"
    SHORT_OF_THREADS = "learner short of threads", "the CPU learner keeps all of its threads busy"
    MODEL_TOO_SMALL = "model too small for the GPU", "a CPU learner does as well as the GPU one"
    WAITS_ON_STRAGGLER = "waits on a straggler", "the driver waits on one slow env runner"
    WAITS_ON_TRANSFER = "waits on transfer", "the driver waits on the slowest runner and the episodes' transfer"
    ENV_WAITS = "env waits", "the env itself waits (a sleep, I/O, a simulator elsewhere)"
    WAITS_FOR_CORE = "waits for a core", "env runners wait for a CPU core inside sample()"
    INFERENCE_BOUND = "inference-bound", "env runners spend most of their time in the forward pass, not the env"
    PER_STEP_BOUND = (
        "per-step work-bound",
        "env runners spend most of their time in RLlib's per-step work around the env: connectors, episode bookkeeping",
    )
    FORWARD_ON_CPU = "forward pass on the CPU", "the forward pass runs on the CPU while the learner has a GPU"
    ENV_BOUND = "env-bound", "env runners spend most of their time stepping the env"
    SHARED_WORK_TOO = (
        "shared work beside its env",
        "env runners spend most of their time in the env (stepping it or waiting on it), but part of each step is work"
        " more envs per runner share",
    )
    SHARED_WORK = (
        "shared work at the cores limit",
        "no core left for another env runner, but part of each step is work more envs per runner share",
    )
    CORES_LIMIT = "cores are the limit", "the env keeps this machine's cores busy: a cheaper env or more cores moves it"


#: What each bottleneck word means, in one clause (the report explains a configuration's words where they first
#: appear; the rules: docs/ANALYSIS.md, "Verdicts", "Why a learner is slow", "Why sampling is slow"): the general
#: verdict's words (tests/analysis/test_findings_words.py reads them from findings.py), and every :class:`Kind`'s.
LABEL_MEANINGS: dict[str, str] = {
    "sampling-bound": "collecting samples takes most of each iteration",
    "learning-bound": "the learner's update takes most of each iteration",
    "sampling- and learning-bound": "env runners and learner both saturated: the pipeline is full",
    "mixed": "no single phase dominates the iteration",
    "no data": "no steady-state measurement",
    "CPU-starved": "a role keeps nearly all of its allocated cores busy",
    "GPU idle": "the learner's GPU is mostly idle in steady state",
    **{kind: kind.meaning for kind in Kind},
}


def label_meanings(bottleneck: str) -> list[tuple[str, str]]:
    """(word, meaning) for each word of a configuration's bottleneck label (``sampling-bound, per-step work-bound``)
    that :data:`LABEL_MEANINGS` knows."""
    words = [w.strip() for w in str(bottleneck).split(", ")]
    return [(w, LABEL_MEANINGS[w]) for w in words if w in LABEL_MEANINGS]
