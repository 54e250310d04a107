"""What a user reads first (issue 59), on the golden folders (tests/data/results-format-{1,2,3}, copied): the report's
first screen answers in a few lines, every long sentence stands once, no section is written without content, and
the terminal ends with the answer and the report's path, each line once."""

from __future__ import annotations

import contextlib
import io
import re
import shutil

import pytest
from conftest import REPO

from rlbench.commands import main
from rlbench.commands.exit_codes import EXIT_OK
from rlbench.report.first_screen import FIRST_SCREEN_LINES

#: A sentence this long said twice is a repeat worth catching; a shorter one (a heading, "1 run a side") may recur.
LONG = 120


@pytest.fixture(scope="module")
def reports(tmp_path_factory) -> dict[int, tuple[str, str, list[str]]]:
    """Per golden folder (a copy): its report.md, its next.yaml ("" when none) and the terminal's lines."""
    out = {}
    for version in (1, 2, 3):
        folder = shutil.copytree(
            REPO / "tests" / "data" / f"results-format-{version}", tmp_path_factory.mktemp("g") / "r"
        )
        terminal = io.StringIO()
        with contextlib.redirect_stdout(terminal):
            assert main(["report", str(folder)]) == EXIT_OK
        spec = folder / "next.yaml"
        lines = [line for line in terminal.getvalue().splitlines() if line.strip()]
        out[version] = ((folder / "report.md").read_text(), spec.read_text() if spec.exists() else "", lines)
    return out


def _first_screen(md: str) -> list[str]:
    """report.md's lines before its first section heading."""
    return md.split("\n## ", 1)[0].rstrip("\n").split("\n")


def _repeated_long_sentences(text: str) -> list[str]:
    pieces = {p.strip() for p in re.split(r"\n|(?<=[.;])\s", text)}
    return [p for p in pieces if len(p) > LONG and text.count(p) > 1]


@pytest.mark.parametrize("version", [1, 2, 3])
def test_the_first_screen_answers_in_a_few_lines(reports, version):
    md, _, _ = reports[version]
    top = _first_screen(md)
    assert len(top) <= FIRST_SCREEN_LINES, top
    text = "\n".join(top)
    assert "- Fastest: " in text and "- Why: " in text and "- Next: " in text and "**Sections**: [" in text
    if version == 1:  # the golden smoke sweep: its fastest, its words explained, the command, the ceiling
        assert "Fastest: num_env_runners=1, num_envs_per_env_runner=2 at 1,255 env steps/s" in text
        assert "not yet shown to beat num_env_runners=0, num_envs_per_env_runner=2 (1 run a side)" in text
        assert "per-step work-bound (env runners spend most of their time in RLlib's per-step work" in text
        assert re.search(
            r"Next: per-step work-bound: change num_envs_per_env_runner \(over 2, 4, 8, 16\): "
            r"rlbench sweep \S+/next.yaml",
            text,
        )
        assert "Ceiling: it runs at 13% of what its env and learner allow here (9,714 env steps/s" in text


@pytest.mark.parametrize("version", [1, 2, 3])
def test_no_long_sentence_is_said_twice(reports, version):
    md, spec, terminal = reports[version]
    assert _repeated_long_sentences(md) == []
    said = md + "\n" + spec + "\n" + "\n".join(terminal)
    verdicts = md.split("## Verdicts", 1)[1].split("\n## ", 1)[0]
    # a verdict's full sentence stands in the Verdicts alone: not in next.yaml's header, nor in the terminal
    for line in verdicts.splitlines():
        for clause in re.split(r"(?<=;)\s", line):
            if len(clause) > LONG:
                assert said.count(clause.strip()) == 1, clause


@pytest.mark.parametrize("version", [1, 2, 3])
def test_no_section_is_written_without_content(reports, version):
    md, _, _ = reports[version]
    sections = re.split(r"\n(?=## )", md)[1:]
    for section in sections:
        heading, _, body = section.partition("\n")
        assert body.strip(), f"{heading} has nothing under it"


@pytest.mark.parametrize("version", [1, 2, 3])
def test_the_terminal_ends_with_the_answer_and_the_report_each_line_once(reports, version):
    md, _, terminal = reports[version]
    assert terminal[-1].startswith("Report: ") and terminal[-1].rstrip().endswith("(and report.md)")
    answer = [line for line in terminal if not line.startswith("note: ")][:-1]
    assert answer and answer[0].startswith("Fastest: ") and len(answer) == len(set(answer))
    assert not any(line.startswith("recommendation:") for line in terminal)
    bullets = [line[2:] for line in _first_screen(md) if line.startswith("- ")]
    assert len(answer) == len(bullets)  # the same lines as the report's first screen
