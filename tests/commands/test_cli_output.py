"""What a newcomer meets on the command line: `rlbench` alone, `--help` of each verb, `--version`,
and tables that read well without a terminal (CI logs, `| tee`, a file), in real subprocesses."""

from __future__ import annotations

import io
import os
import re
import subprocess
import sys

import pandas as pd
import pytest
from conftest import REPO

from rlbench.commands import VERBS, main
from rlbench.commands._common import LOG_WIDTH, make_console
from rlbench.report.terminal import results_table

ANSI_COLOUR = re.compile(r"\x1b\[[0-9;]*3[0-7]m|\x1b\[[0-9;]*38;")


def rlbench(*args: str, **env: str) -> subprocess.CompletedProcess:
    """``python -m rlbench ARGS`` with stdout and stderr pipes (no terminal); COLUMNS, NO_COLOR and
    FORCE_COLOR only as given."""
    base = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "NO_COLOR", "FORCE_COLOR", "TTY_COMPATIBLE")}
    return subprocess.run(
        [sys.executable, "-m", "rlbench", *args],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
        env={**base, **env},
    )


def test_rlbench_alone_says_what_to_run_and_where_results_go():
    done = rlbench()
    assert done.returncode == 0 and done.stderr == ""
    for text in (
        "rlbench sweep configs/smoke.yaml",
        "results/<sweep name>/<timestamp>/",
        "report.html",
        "--help",
        *[v.NAME for v in VERBS],
    ):
        assert text in done.stdout, text
    assert "error" not in done.stdout


def test_every_verb_has_help_with_examples(capsys):
    for verb in VERBS:
        with pytest.raises(SystemExit) as done:
            main([verb.NAME, "--help"])
        assert done.value.code == 0
        examples = capsys.readouterr().out.split("examples:\n", 1)[1]
        assert f"  rlbench {verb.NAME} " in examples, verb.NAME


def test_version_names_the_libraries_a_bug_report_needs(capsys):
    with pytest.raises(SystemExit) as done:
        main(["--version"])
    assert done.value.code == 0
    assert re.fullmatch(
        r"rlbench \S+ \(schema \d+; python \S+, ray \S+, torch \S+, gymnasium \S+\)\n", capsys.readouterr().out
    )


def _rows(stdout: str) -> list[str]:
    return [line for line in stdout.splitlines() if line.startswith("│")]


def test_without_a_terminal_tables_print_at_natural_width():
    """The old leading example on 2 cores wrapped every cell at 80 columns (``t000r`` / ``0``)."""
    done = rlbench("sweep", "configs/ppo_cpu.yaml", "--dry-run")
    assert done.returncode == 0, done.stderr
    rows = _rows(done.stdout)
    planned = int(re.search(r"(\d+) trials planned", done.stdout)[1])
    assert len(rows) == planned  # one line per trial: no cell wrapped onto a second line
    assert all(re.match(r"│ t\d{3}r\d │", row) for row in rows)
    assert max(len(line) for line in done.stdout.splitlines()) > 80
    assert not ANSI_COLOUR.search(done.stdout) and "\x1b[" not in done.stdout


def test_columns_is_respected():
    done = rlbench("sweep", "configs/ppo_cpu.yaml", "--dry-run", COLUMNS="100")
    assert done.returncode == 0, done.stderr
    table = [line for line in done.stdout.splitlines() if line[:1] in "┏┃┡│└"]
    assert len(table) > 16 and max(len(line) for line in table) == 100  # the table fits COLUMNS, cells fold


def test_no_color_wins_over_force_color():
    coloured = rlbench("sweep", "configs/ppo_cpu.yaml", "--dry-run", FORCE_COLOR="1")
    assert ANSI_COLOUR.search(coloured.stdout)  # the check can fail: forced colour has colour codes
    plain = rlbench("sweep", "configs/ppo_cpu.yaml", "--dry-run", FORCE_COLOR="1", NO_COLOR="1")
    assert plain.returncode == 0 and not ANSI_COLOUR.search(plain.stdout)


def test_final_table_keeps_each_trial_on_one_line_and_groups_skips(monkeypatch):
    monkeypatch.delenv("COLUMNS", raising=False)
    out = io.StringIO()
    console = make_console(file=out)
    assert console.width == LOG_WIDTH and not console.is_terminal
    reason = "needs 8 CPUs for actors (8 env runners x 1 CPU) but only 1 are left after the driver's 1 of cpus=2"
    trials = pd.DataFrame(
        {
            "trial_id": ["t000r0", "t000r1", "t001r0", "t001r1", "t002r0"],
            "status": ["ok", "failed", "skipped", "skipped", "skipped"],
            "reason": [None, "env raised ValueError: bad [bold]action[/bold] " + "x" * 100, reason, reason, "other"],
            "num_env_runners": [1, 1, 8, 8, 16],
            "env_steps_per_s": [1234.5, None, None, None, None],
        }
    )
    groups = {
        "t001r0": "need more CPUs than this machine's 2",
        "t001r1": "need more CPUs than this machine's 2",
        "t002r0": "need more CPUs than this machine's 2",
    }
    console.print(results_table(trials, ["num_env_runners"], groups))
    rows = _rows(out.getvalue())
    assert [row.split("│")[1].strip() for row in rows] == ["t000r0", "t000r1", "3 trials"]
    assert "8, 16" in rows[2] and "need more CPUs than this machine's 2" in rows[2]
    assert "[bold]action[/bold]" in rows[1]  # a reason is printed as it is, not as markup


@pytest.mark.parametrize("columns", ["60"])
def test_make_console_takes_columns_when_set(monkeypatch, columns):
    monkeypatch.setenv("COLUMNS", columns)
    assert make_console(file=io.StringIO()).width == int(columns)


def test_an_interrupt_outside_any_verb_exits_130_with_a_word(monkeypatch, capsys):
    import signal

    import rlbench.commands as commands
    from rlbench.commands.exit_codes import EXIT_INTERRUPTED
    from rlbench.worker import interrupts

    def interrupted(argv):
        raise KeyboardInterrupt

    before = {sig: signal.getsignal(sig) for sig in interrupts.SIGNALS}
    monkeypatch.setattr(commands, "_main", interrupted)
    try:
        assert commands.main(["sweep", "x.yaml"]) == EXIT_INTERRUPTED
        assert all(
            signal.getsignal(sig) is interrupts.interrupt  # left installed (an ignored one stays ignored)
            for sig in interrupts.SIGNALS
            if before[sig] != signal.SIG_IGN
        )
    finally:
        interrupts.restore(before)
    assert "Interrupted." in capsys.readouterr().err


@pytest.mark.parametrize("where", ["before its first verdict", "in its tables"])
def test_a_sweep_interrupted_outside_a_trial_ends_with_the_resume_line(monkeypatch, capsys, tmp_path, where):
    """A signal between trials or after them (issue 39): the resume line and 130, no traceback. With no trial
    recorded, the tables (no rows, no columns) were built all the same and raised KeyError('status')."""
    import signal

    import rlbench.commands.sweep as sweep_command
    from rlbench.commands.exit_codes import EXIT_INTERRUPTED
    from rlbench.results.records import TrialRecord
    from rlbench.run.sweep import SweepOutcome
    from rlbench.worker import interrupts

    def run_sweep(loaded, out_dir, **kw):
        out_dir.mkdir(parents=True)
        (out_dir / "manifest.json").write_text("{}")  # the folder was taken
        if where == "in its tables":
            return SweepOutcome(out_dir, trial_ids=["t000r0"], records=[TrialRecord(trial_id="t000r0", status="ok")])
        return SweepOutcome(out_dir, trial_ids=["t000r0"], interrupted=True)

    def tables(*a):
        raise KeyboardInterrupt

    spec, out = tmp_path / "s.yaml", tmp_path / "out"
    spec.write_text("name: s\nframework: plain\nenvironment: {env: envs.tiny:TinyEnv}\nstop: {iterations: 2}\n")
    monkeypatch.chdir(REPO)
    monkeypatch.setattr(sweep_command, "run_sweep", run_sweep)
    monkeypatch.setattr(sweep_command, "_results", tables)
    before = {sig: signal.getsignal(sig) for sig in interrupts.SIGNALS}
    try:
        assert main(["sweep", str(spec), "--out", str(out)]) == EXIT_INTERRUPTED
    finally:
        interrupts.restore(before)
    said = " ".join(capsys.readouterr().out.split())
    left = (
        "1 of 1 trials still to run"
        if where == "before its first verdict"
        else "all 1 trials have their verdict; the tables and report are left to write"
    )
    assert left in said and f"Resume with: rlbench sweep {spec} --out {out} --resume" in said, said
