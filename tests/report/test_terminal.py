"""The terminal tables print text from an env or a folder as text: markup in it is not read (a
``[/]`` used to raise MarkupError and end the sweep), escape sequences never reach the terminal."""

from __future__ import annotations

import io

import pandas as pd
import pytest
from rich.console import Console
from rich.errors import MarkupError

from rlbench.analysis.change import TESTS, Change
from rlbench.analysis.comparison import Comparison, ComparisonRow
from rlbench.report.plan_table import plan_table
from rlbench.report.terminal import compare_table, results_table
from rlbench.results.events_file import TrialEvent
from rlbench.results.records import TrialRecord
from rlbench.run.progress import SweepProgress

#: An env's error text: markup that would not parse, markup that would, a path in brackets, a
#: tensor shape, and escape sequences that clear the screen and retitle the window.
HOSTILE = "RuntimeError: bad [/] [bold red]FAKE OK[/] at [/tmp/x] shape [32, 4] \x1b[2J\x1b]0;pwned\x07 \u202eevil"


def render(renderable) -> str:
    out = io.StringIO()
    Console(file=out, width=400, force_terminal=True, color_system="truecolor").print(renderable)
    return out.getvalue()


def visible_text(rendered: str) -> str:
    """The rendered text without rich's own styling sequences (ESC [ ... m)."""
    import re

    return re.sub(r"\x1b\[[0-9;]*m", "", rendered)


def test_the_hostile_text_would_break_markup():
    with pytest.raises(MarkupError):
        Console(file=io.StringIO()).print(f"[yellow]t000r0 failed[/]: {HOSTILE}")


def _check(rendered: str) -> None:
    text = visible_text(rendered)
    assert "\x1b" not in text and "\x07" not in text and "\u202e" not in text  # no raw control reaches the terminal
    for shown in (
        "[/]",
        "[bold red]FAKE OK[/]",
        "[/tmp/x]",
        "[32, 4]",
        "\\x1b[2J",
        "\\x1b]0;pwned\\x07",
        "\\u202eevil",
    ):
        assert shown in text, shown


def test_results_table():
    trials = pd.DataFrame(
        {
            "trial_id": ["t000r0", "t001r0"],
            "status": ["failed", "[blink]ok"],
            "env_config.msg": [HOSTILE, "[red]"],
            "env_steps_per_s": [None, 1.0],
            "reason": [HOSTILE, None],
        }
    )
    _check(render(results_table(trials, ["env_config.msg"])))


def test_plan_table(monkeypatch):
    from rlbench.measure.machine import MachineInfo
    from rlbench.planning.plan import plan_trials
    from rlbench.spec.load import spec_from_dict

    machine = MachineInfo(
        hostname="h", cpu_model="c", logical_cores=2, physical_cores=2, usable_cores=[0, 1], memory_bytes=2**30, gpus=[]
    )
    data = {
        "name": "t",
        "environment": {"env": "CartPole-v1"},
        "stop": {"iterations": 2},
        "grid": {"env_config.msg": [HOSTILE]},
    }
    runnable = plan_trials(spec_from_dict(data, check_envs=False), machine)
    plans = [p.model_copy(update={"skip_reason": HOSTILE}) for p in runnable]
    _check(render(plan_table(plans)))
    for interactive in (True, False):  # the live bar in a terminal; one line per trial in a log
        out = io.StringIO()
        console = Console(file=out, width=400, force_terminal=True, force_interactive=interactive)
        with SweepProgress(console, runnable) as progress:
            progress.start(runnable[0])
            progress.poll(runnable[0], [TrialEvent(event="ray_init")])
            progress.finish(runnable[0], TrialRecord(trial_id=runnable[0].trial_id, status="failed", reason=HOSTILE))
        text = visible_text(out.getvalue())
        assert "\\x1b[2J" in text and "\x1b[2J" not in text and "\x07" not in text, text


def test_compare_table():
    change = Change("unpaired", "[/]", 1, 1, 1.0, None, None, None, None, None, TESTS["unpaired"], 1, 1, None, False)
    row = ComparisonRow(
        label=HOSTILE,
        axes={},
        a="A",
        b=HOSTILE,
        a_env_steps_per_s=1.0,
        b_env_steps_per_s=1.0,
        change=change,
        verdict="[/]regressed",
        sentence=HOSTILE,
    )
    _check(render(compare_table(Comparison("folders", a=f"/a/{HOSTILE}", b="/b", threshold=0.05, axes=[], rows=[row]))))
