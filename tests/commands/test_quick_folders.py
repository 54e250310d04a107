"""A --quick folder as the commands read it (issue 42; a generated result set, no Ray): compare refuses it in
one line (exit 2), its report recommends nothing and says why, and the command that resumes it says --quick."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

from conftest import REPO

from rlbench.analysis.result_set import QUICK_NO_RECOMMENDATIONS
from rlbench.commands import main
from rlbench.commands.exit_codes import EXIT_BAD_INPUT
from rlbench.run.sweep import resume_command

_spec = importlib.util.spec_from_file_location("bench_tables", REPO / "scripts" / "bench_tables.py")
bench_tables = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(bench_tables)


def _quick_set(path: Path) -> Path:
    out = bench_tables.generate(path, trials=4, iterations=3, repeats=1, grid={"num_env_runners": [0, 1, 2, 3]})
    manifest = json.loads((out / "manifest.json").read_text())
    (out / "manifest.json").write_text(json.dumps({**manifest, "quick": True}))
    return out


def test_compare_refuses_a_quick_folder_in_one_line(tmp_path, capsys):
    quick = _quick_set(tmp_path / "quick")
    full = bench_tables.generate(
        tmp_path / "full", trials=4, iterations=3, repeats=1, grid={"num_env_runners": [0, 1, 2, 3]}
    )
    for argv in (["compare", str(full), str(quick)], ["compare", str(quick), str(full)], ["compare", str(quick)]):
        assert main(argv) == EXIT_BAD_INPUT
        lines = [line for line in capsys.readouterr().out.splitlines() if line.strip()]
        assert len(lines) == 1 and lines[0].startswith(
            f"error: {quick} holds a --quick run (one repeat, no warm-up, one iteration on a cut train batch)"
        )
    assert not (quick / "compare.csv").exists() and not (full / "compare.csv").exists()


def test_the_report_of_a_quick_folder_recommends_nothing_and_says_why(tmp_path, capsys):
    quick = _quick_set(tmp_path / "quick")
    assert main(["report", str(quick)]) == 0
    printed = capsys.readouterr().out
    assert "Fastest: none ranked: a --quick run" in printed and "For highest throughput" not in printed
    md = (quick / "report.md").read_text()
    recs = md[md.index("## Recommendations") : md.index("## Learning")]
    assert QUICK_NO_RECOMMENDATIONS in recs and "For highest" not in recs
    configs = md[md.index("## Configurations") : md.index("## Verdicts")]
    rows = [line for line in configs.splitlines() if line.startswith("| ") and not line.startswith("| rank")]
    assert len(rows) == 4 and all(row.startswith("| - |") for row in rows)  # every measured row shown, none ranked


def test_the_command_that_resumes_a_quick_sweep_says_quick():
    assert (
        resume_command(Path("configs/smoke.yaml"), Path("/tmp/r"), quick=True)
        == "rlbench sweep configs/smoke.yaml --quick --out /tmp/r --resume"
    )
    assert "--quick" not in resume_command(Path("configs/smoke.yaml"), Path("/tmp/r"))
