"""The report's Recommendations and Next sweep sections: the configuration to pick per goal, and the sweep a
verdict asks for next (``next.yaml``), or why there is none."""

from __future__ import annotations

from rlbench.analysis.configs import config_label
from rlbench.analysis.findings import CONFIDENCE
from rlbench.analysis.result_set import Analysis
from rlbench.report.blocks import Block, Bullets, Heading, Paragraph
from rlbench.report.first_screen import NO_NEXT
from rlbench.report.learning_section import target_text
from rlbench.report.next_spec import NextSpec
from rlbench.report.section_input import SectionInput
from rlbench.report.style import fmt


def rec_lines(analysis: Analysis) -> list[str]:
    """One sentence per recommendation (those on reaching the target first, when there is one)."""
    units = {
        "env_steps_per_s": "env steps/s",
        "env_steps_per_s_per_cpu": "env steps/s per CPU",
        "env_steps_per_s_per_w": "env steps/s per W",
    }
    lines: list[str] = []
    lrn = analysis.learning
    for r in analysis.recs:
        if r.column in units:
            row = analysis.configs[analysis.configs["index"] == r.index].iloc[0]
            ci = (
                f" ({CONFIDENCE:.0%} CI {fmt(row['env_steps_per_s_ci_low'])}-{fmt(row['env_steps_per_s_ci_high'])})"
                if r.column == "env_steps_per_s" and fmt(row["env_steps_per_s_ci_low"]) != "-"
                else ""
            )
            digits = 1 if r.value is not None and r.value < 100 else 0
            said = " ".join(lines)  # a clause an earlier line of the same pick said is not said again
            note = "; ".join(c for c in r.note.split("; ") if c and c not in said)
            lines.append(
                f"For {r.goal}: {r.label} at {fmt(r.value, digits)} {units[r.column]}{ci}"
                + (f"; {row['bottleneck']}" if row["bottleneck"] not in said else "")
                + "."
                + (f" Note: {note}." if note else "")
            )
            continue
        target = target_text(lrn.target) if lrn is not None and lrn.target else "the target"
        if r.index is None:
            lines.append(f"Reaching {target}: {r.note}.")
            continue
        assert lrn is not None  # a pick for the target comes from the learning analysis
        row = lrn.ttt[lrn.ttt["index"] == r.index].iloc[0]
        reached = f"{int(row['reached'])}/{int(row['repeats'])} repeats reached it"
        if r.column == "time_to_target_s":
            ci = (
                f" ({CONFIDENCE:.0%} CI {fmt(row['time_to_target_s_ci_low'], 1)}-"
                f"{fmt(row['time_to_target_s_ci_high'], 1)})"
                if fmt(row["time_to_target_s_ci_low"]) != "-"
                else ""
            )
            what = (
                f"{fmt(r.value, 1)} s of training{ci}, {fmt(row['time_to_target_total_s'], 1)} s with the "
                f"runtime's start and the build, {fmt(row['env_steps_to_target'])} env steps"
            )
        elif r.column == "cpu_s_to_target":
            what = (
                f"{fmt(r.value, 1)} CPU-seconds ({fmt(row['cpus_given'], 1)} CPUs x "
                f"{fmt(row['time_to_target_s'], 1)} s)"
            )
        else:
            what = f"{fmt(r.value, 0)} J"
        lines.append(
            f"{r.goal[0].upper() + r.goal[1:]} ({target}): {r.label} at {what}; {reached}."
            + (f" Note: {r.note}." if r.note else "")
        )
    return lines


def next_blocks(analysis: Analysis, written: NextSpec | None) -> list[Block]:
    """What to run next, when a learner verdict names a knob (``next.yaml``): why, and the command."""
    step = analysis.next
    if step is None and analysis.next_stop:  # a verdict with no knob that fits: why there is no next.yaml
        return [
            Heading("Next sweep", 2),
            Bullets([f"No next.yaml, as {NO_NEXT[analysis.next_stop]} (Verdicts says why, in full)."], boxed=True),
        ]
    if step is None or written is None:
        return []
    label = config_label(analysis.configs[analysis.configs["index"] == step.index].iloc[0], analysis.axes)
    return [
        Heading("Next sweep", 2),
        Bullets(
            [
                f"{label}: {step.verdict.short} (its verdict in full: Verdicts).",
                f"next.yaml sweeps {written.knob} over {', '.join(map(str, written.values))} "
                f"from trial {written.trial_id}: "
                f"{written.command}"
                + (
                    " (a larger minibatch changes learning as well as speed: time to a target settles it)"
                    if written.knob == "minibatch_size"
                    else ""
                ),
            ],
            boxed=True,
        ),
    ]


def recommendations(given: SectionInput) -> list[Block]:
    """The Recommendations section (after autoconfig's answer, when there is one, and said so)."""
    analysis = given.analysis
    pooled = (
        [
            Paragraph(
                "Over every trial of the run by configuration (probes, search and race pooled, some read once): "
                "the answer is the Autoconfig section's.",
                muted=True,
            )
        ]
        if analysis.autoconfig is not None
        else []
    )
    lines = rec_lines(analysis) or [analysis.no_recommendations or "no configuration was measured"]
    return [Heading("Recommendations", 2), *pooled, Bullets(lines, boxed=True)]


def next_sweep(given: SectionInput) -> list[Block]:
    """The Next sweep section."""
    return next_blocks(given.analysis, given.written)
