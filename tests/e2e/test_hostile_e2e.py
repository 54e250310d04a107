"""An env whose error text is hostile (markup that does not parse, fake markup, brackets, escape
sequences that clear the screen and retitle the terminal), through the real CLI on a terminal: the
sweep goes on to its next trial and its report, and the text prints as text. On the plain adapter
(no Ray): how RLlib wraps an env's error is the crash tests' (tests/e2e/test_exit_e2e.py)."""

from __future__ import annotations

import pandas as pd
import pytest
from conftest import run_cli, trial_processes_alive

pytestmark = pytest.mark.slow

#: YAML double quotes: \e is ESC, \a is BEL.
HOSTILE_YAML = r'"failed at [/tmp/x] [/] [bold red]FAKE OK[/] shape [32, 4] \e[2J\e]0;pwned\a end"'
SPEC = f"""\
name: hostile
framework: plain
environment:
  env: envs.faulty:FaultyEnv
  env_config: {{at_step: 200, message: {HOSTILE_YAML}}}
env_runners: {{num_env_runners: 0}}
training: {{train_batch_size_per_learner: 128, minibatch_size: 64, num_epochs: 1}}
rl_module: {{fcnet_hiddens: [8]}}
cpus: 2
grid: {{env_config.fault: [raise, none]}}
stop: {{iterations: 3}}
warmup_iterations: 1
env_ceiling_s: 0.2
trial_timeout_s: 120
"""


def test_hostile_env_error_text_does_not_stop_the_sweep(tmp_path):
    spec = tmp_path / "hostile.yaml"
    spec.write_text(SPEC)
    out = tmp_path / "out"
    # FORCE_COLOR: rich writes to the pipe as to a terminal (progress bar, status spinner, colours)
    done = run_cli("sweep", str(spec), "--out", str(out), env={"FORCE_COLOR": "1", "COLUMNS": "300"})
    text = done.stdout + done.stderr
    assert done.returncode == 1, text  # one trial failed; not a crash (that would be another code)
    assert "Traceback" not in text and "MarkupError" not in text
    trials = pd.read_parquet(out / "trials.parquet").set_index("trial_id")
    assert trials.loc["t000r0", "status"] == "failed" and trials.loc["t001r0", "status"] == "ok"
    assert "[/] [bold red]FAKE OK[/] shape [32, 4]" in trials.loc["t000r0", "reason"]
    assert (out / "report.html").exists() and (out / "report.md").exists()
    assert "\x1b[2J" not in text and "\x1b]0;pwned" not in text and "\x07" not in text  # never raw to the terminal
    assert "\\x1b[2J\\x1b]0;pwned\\x07" in text  # shown, escaped
    assert "t000r0 failed" in text
    assert trial_processes_alive(out) == []
