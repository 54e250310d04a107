"""What each bottleneck word of a verdict means, in one clause: the report explains a configuration's words where they
first appear (its first screen, under the Configurations table). The rules behind each: docs/ANALYSIS.md,
"Verdicts", "Why a learner is slow", "Why sampling is slow". Standard library only, as
:mod:`rlbench.analysis.findings`, which gives the words.
"""

from __future__ import annotations

#: What each bottleneck word means, in one clause (the report explains a configuration's words where they first
#: appear; the rules: docs/ANALYSIS.md, "Verdicts", "Why a learner is slow", "Why sampling is slow"). Every label a
#: verdict can give is here (tests/analysis/test_findings_words.py reads them from findings.py and sampling.py).
LABEL_MEANINGS: dict[str, str] = {
    "sampling-bound": "collecting samples takes most of each iteration",
    "learning-bound": "the learner's update takes most of each iteration",
    "sampling- and learning-bound": "env runners and learner both saturated: the pipeline is full",
    "mixed": "no single phase dominates the iteration",
    "no data": "no steady-state measurement",
    "CPU-starved": "a role keeps nearly all of its allocated cores busy",
    "GPU idle": "the learner's GPU is mostly idle in steady state",
    "learner starved": "sampling starves the learner, which waits for samples",
    "learner fed by the CPU": "building the train batch on the CPU is most of the GPU learner's work",
    "launch-bound": "many small minibatch steps: the GPU waits on kernel launches and syncs",
    "learner short of threads": "the CPU learner keeps all of its threads busy",
    "model too small for the GPU": "a CPU learner does as well as the GPU one",
    "waits on a straggler": "the driver waits on one slow env runner",
    "waits on transfer": "the driver waits on the slowest runner and the episodes' transfer",
    "env waits": "the env itself waits (a sleep, I/O, a simulator elsewhere)",
    "waits for a core": "env runners wait for a CPU core inside sample()",
    "inference-bound": "env runners spend most of their time in the forward pass, not the env",
    "per-step work-bound": "env runners spend most of their time in RLlib's per-step work around the env: "
    "connectors, episode bookkeeping",
    "forward pass on the CPU": "the forward pass runs on the CPU while the learner has a GPU",
    "env-bound": "env runners spend most of their time stepping the env",
    "shared work at the cores limit": "no core left for another env runner, but part of each step is work more envs "
    "per runner share",
    "cores are the limit": "the env keeps this machine's cores busy: a cheaper env or more cores moves it",
}


def label_meanings(bottleneck: str) -> list[tuple[str, str]]:
    """(word, meaning) for each word of a configuration's bottleneck label (``sampling-bound, per-step work-bound``)
    that :data:`LABEL_MEANINGS` knows."""
    words = [w.strip() for w in str(bottleneck).split(", ")]
    return [(w, LABEL_MEANINGS[w]) for w in words if w in LABEL_MEANINGS]
