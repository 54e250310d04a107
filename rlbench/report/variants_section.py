"""The report's "Variants" section and ``rlbench compare DIR``'s table: per grid point, each variant
against the first, paired by round (:mod:`rlbench.analysis.variants`; rows: :mod:`rlbench.analysis.comparison`).

Built once as typed blocks (:mod:`rlbench.report.blocks`) that every backend draws.
"""

from __future__ import annotations

from rlbench.analysis.comparison import ComparisonRow
from rlbench.analysis.findings import CONFIDENCE, SIGNIFICANCE
from rlbench.analysis.stats import interval_text
from rlbench.report.blocks import Block, Cell, Heading, Paragraph, Table, Verdicts
from rlbench.report.style import fmt


def method_text() -> str:
    """How the figures were computed, in one paragraph."""
    return (
        "Each grid point ran once per variant per round, a round's variants back to back with the first "
        "of them rotating, so the two sides of a pair ran seconds apart. Throughput is each trial's "
        "steady-state env steps/s. ratio: the variant's median over rounds / the reference's, with a "
        f"{CONFIDENCE:.0%} bootstrap interval resampling each side; paired: the median over rounds of the "
        "round's variant / reference, with a bootstrap interval over the rounds; Wilcoxon: the exact "
        "signed-rank test of the rounds' log ratios. A variant is called faster or slower only when both "
        f"intervals exclude 1 on the same side and the Wilcoxon test agrees at {SIGNIFICANCE:g} (docs/ANALYSIS.md, "
        '"Did it change? One rule").'
    )


def short(row: ComparisonRow) -> Cell:
    """The verdict in one word, coloured for a terminal."""
    if row.sentence.startswith("no data"):
        return Cell("no data", "default")
    if not row.change.differs:
        return Cell("no evidence", "default")
    faster = (row.change.paired_ratio or 0) > 1
    return Cell("faster" if faster else "slower", "green" if faster else "red")


def variant_table(rows: list[ComparisonRow], title: str = "") -> Table:
    """One row per grid point and variant against the reference."""
    header = [
        "configuration",
        "variant",
        "reference",
        "env steps/s",
        "reference env steps/s",
        "ratio",
        f"{CONFIDENCE:.0%} CI",
        "paired",
        f"paired {CONFIDENCE:.0%} CI",
        "rounds",
        "Wilcoxon p",
        "verdict",
    ]
    body: list[list[str | Cell]] = [
        [
            r.label,
            r.b,
            r.a,
            fmt(r.b_env_steps_per_s),
            fmt(r.a_env_steps_per_s),
            fmt(c.ratio, 3),
            interval_text(c.ci_low, c.ci_high),
            fmt(c.paired_ratio, 3),
            interval_text(c.paired_ci_low, c.paired_ci_high),
            str(c.runs_a),
            "-" if c.p_value is None else f"{c.p_value:.2g}",
            short(r),
        ]
        for r in rows
        for c in [r.change]
    ]
    return Table(header, body, frozenset({0, 1, 2, len(header) - 1}), title=title)


def variant_blocks(rows: list[ComparisonRow]) -> list[Block]:
    """The section; nothing for a sweep without two variants."""
    if not rows:
        return []
    return [
        Heading("Variants", 2),
        Paragraph(method_text(), muted=True),
        variant_table(rows),
        Verdicts([(f"{r.b} against {r.a}" + (f", {r.label}" if r.label != "all" else ""), r.sentence) for r in rows]),
    ]
