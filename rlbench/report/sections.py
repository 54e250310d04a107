"""The report's sections, in the order the document draws them: each a :data:`~rlbench.report.section_input.Section`,
a function of the analysis and what the report wrote beside it (:class:`~rlbench.report.section_input.SectionInput`)
that returns its blocks, ``[]`` when it has nothing to show.

A new section is its module (a function ``def my_section(given: SectionInput) -> list[Block]``) and its line in
:data:`SECTIONS`; docs/ARCHITECTURE.md, "Where a change goes", walks through one.
"""

from __future__ import annotations

from dataclasses import replace

from rlbench.report import configs_section, recommendations_section, trials_section
from rlbench.report import runners_section as inside
from rlbench.report.blocks import Block, Break, Bullets, Heading, Links, Paragraph
from rlbench.report.ceiling_section import ceiling_blocks
from rlbench.report.first_screen import first_screen
from rlbench.report.learning_section import learning_blocks
from rlbench.report.nodes_section import node_blocks
from rlbench.report.path_section import autoconfig_section
from rlbench.report.section_input import Section, SectionInput
from rlbench.report.variants_section import variant_blocks


def title(given: SectionInput) -> list[Block]:
    """The page's title: the sweep's name."""
    a = given.analysis
    return [Heading(f"rlbench report: {(a.manifest.get('spec') or {}).get('name', a.out_dir.name)}", 1)]


def autoconfig(given: SectionInput) -> list[Block]:
    """autoconfig's raced answer, first: the recommendations pool every trial, probes included ([] for a sweep)."""
    a = given.analysis
    return autoconfig_section(a.autoconfig, a.out_dir, a.trials, a.axes)


def learner_cpus(given: SectionInput) -> list[Block]:
    """What more learner CPUs bought (the forum question), per learner-CPU axis."""
    findings = given.analysis.findings
    return [Heading("What more learner CPUs bought", 2), Bullets(findings)] if findings else []


def learning(given: SectionInput) -> list[Block]:
    """Learning: time to a target, or the return at equal env steps ([] with nothing to say)."""
    a = given.analysis
    blocks = learning_blocks(a.learning, a.configs, a.axes, a.energy) if a.learning is not None else []
    return [Heading("Learning", 2), *blocks] if blocks else []


def figures(given: SectionInput) -> list[Block]:
    """The figures drawn for the report, and the notes under them ([] with neither). A caption the figure above had
    already is not written again: it says so."""
    notes: list[Block] = [Paragraph(n, muted=True) for n in given.notes if n]
    if not given.figures and not notes:
        return []
    shown: list[Block] = []
    seen: set[str] = set()
    for figure in given.figures:
        again = figure.caption and figure.caption in seen
        seen.add(figure.caption)
        shown.append(replace(figure, caption="Read as the figure above.") if again else figure)
    return [Heading("Figures", 2), *shown, *(notes or [Break()])]


#: The report, top to bottom (the first screen's links to the sections below are added by :func:`section_blocks`).
SECTIONS: tuple[Section, ...] = (
    title,
    first_screen,
    autoconfig,
    recommendations_section.recommendations,
    recommendations_section.next_sweep,
    lambda given: variant_blocks(given.analysis.variants),
    learner_cpus,
    learning,
    configs_section.configurations,
    configs_section.verdicts,
    lambda given: ceiling_blocks(given.analysis.configs, given.analysis.axes),
    configs_section.scaling,
    lambda given: node_blocks(given.analysis.nodes, given.analysis.trials),
    lambda given: inside.section_blocks(given.inside),
    figures,
    trials_section.trials,
    trials_section.provenance_section,
)


def section_blocks(given: SectionInput) -> list[Block]:
    """Every section's blocks, in order; under the first screen, a link to each section below it."""
    parts = [section(given) for section in SECTIONS]
    at = SECTIONS.index(first_screen)
    below = [b.text for part in parts[at + 1 :] for b in part if isinstance(b, Heading) and b.level == 2]
    if parts[at] and below:
        parts[at] = [*parts[at], Links("Sections", below)]
    return [block for part in parts for block in part]
