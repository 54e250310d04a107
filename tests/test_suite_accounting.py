"""scripts/suite_accounting.py on a hand-made basetemp and command log: copies counted once, links and hostile lines
skipped, the sums as written."""

from __future__ import annotations

import json
from pathlib import Path

from conftest import load_script


def _script():
    return load_script("suite_accounting")


def _trial(folder: Path, events: list[dict], extra: str = "") -> None:
    folder.mkdir(parents=True)
    (folder / "events.jsonl").write_text("".join(json.dumps(e) + "\n" for e in events) + extra)


RAY = [
    {"event": "start", "t_s": 0.5},
    {"event": "ray_init", "t_s": 5.0, "ray_init_s": 4.0, "session_dir": "/tmp/ray/session_x"},
    {"event": "build", "t_s": 11.0, "build_s": 6.0},
    {"event": "iteration", "t_s": 12.0, "wall_s": 1.0},
    {"event": "iteration", "t_s": 13.5, "wall_s": 1.5},
]
FREE = [{"event": "start", "t_s": 0.2}, {"event": "iteration", "t_s": 0.9, "wall_s": 0.5}]


def test_trials_are_counted_once_and_hostile_things_skipped(tmp_path):
    base = tmp_path / "base"
    _trial(base / "a" / "trials" / "t000r0", RAY)
    _trial(base / "copy" / "trials" / "t000r0", RAY)  # a test's copy of the same folder: the same bytes
    _trial(base / "a" / "trials" / "t001r0", FREE, extra="[" * 100_000 + "\n")  # a line too deep to decode
    (base / "link").symlink_to(base / "a")  # followed, it would count both again
    lines = _script().trial_summary(base)
    assert lines[0].startswith("1 real Ray trials: 14 s of trial wall; ray_init 4 s (mean 4.0), build 6 s")
    assert lines[0].endswith("iterations 2 s")  # 1.0 + 1.5 s, printed to the second
    assert lines[1] == "1 Ray-free trials: 1 s of trial wall"


def test_the_command_log_is_summed(tmp_path):
    log = tmp_path / "cli.log"
    log.write_text("1.0\t10.00\t2.00\t5.00\t-m rlbench sweep a\n2.0\t4.50\t1.50\t0.50\t-m rlbench report b\nbad line\n")
    lines = _script().cli_summary(log)
    assert lines[0] == "2 rlbench commands: 14 s of wall, 4 s of their own CPU, 6 s of their reaped children's"
    assert "sweep a" in lines[1] and "report b" in lines[2]
