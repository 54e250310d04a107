"""Every bottleneck word a verdict can give is explained (analysis/findings.py's LABEL_MEANINGS), and a verdict's
short form is its cause and knob, under the length of a line (issue 59)."""

from __future__ import annotations

import ast

from conftest import REPO

from rlbench.analysis.findings import Verdict
from rlbench.analysis.knobs import Knob
from rlbench.analysis.labels import LABEL_MEANINGS, Kind, label_meanings


def _general_labels(path) -> set[str]:
    """The general verdict's labels: the strings assigned or added to a variable named ``label``, alone or in a tuple
    (``label += ", CPU-starved"``, ``label, one_side = "mixed", False``); a sampler's or learner's verdict says a
    :class:`Kind`."""
    out: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        targets = (
            node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(node, ast.AugAssign) else []
        )
        if any(getattr(e, "id", "") == "label" for t in targets for e in getattr(t, "elts", [t])):
            out |= {
                c.value.lstrip(", ")
                for c in ast.walk(node.value)
                if isinstance(c, ast.Constant) and isinstance(c.value, str)
            }
    return {label for label in out if label}


def test_every_label_a_verdict_gives_has_its_meaning():
    labels = _general_labels(REPO / "rlbench" / "analysis" / "findings.py") | set(Kind)
    assert {
        "sampling-bound",
        "per-step work-bound",
        "launch-bound",
        Kind.CORES_LIMIT,
    } <= labels  # the reader reads them
    assert labels - set(LABEL_MEANINGS) == set()


def test_a_bottleneck_label_is_explained_word_by_word():
    assert [w for w, _ in label_meanings("sampling-bound, CPU-starved, per-step work-bound")] == [
        "sampling-bound",
        "CPU-starved",
        "per-step work-bound",
    ]


def test_the_short_form_is_cause_and_knob():
    v = Verdict(Kind.PER_STEP_BOUND, "env runners mostly outside the env: " + "x" * 500, "num_envs_per_env_runner")
    assert v.short == "per-step work-bound: change num_envs_per_env_runner"
    assert Verdict(Kind.CORES_LIMIT, "...", None).short == Kind.CORES_LIMIT
    assert all(len(Verdict(Kind(k), "", Knob.NUM_CPUS_FOR_MAIN_PROCESS).short) < 120 for k in Kind)
