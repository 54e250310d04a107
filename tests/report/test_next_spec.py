"""next.yaml: the sweep a learner verdict asks for, on a generated results folder (scripts/bench_tables.py): it
loads with the spec loader, sweeps the named knob around the current value from the configuration's trial, keeps
the folder's text out of its keys, and is removed when no verdict asks for one."""

from __future__ import annotations

import importlib.util

import pandas as pd
import yaml
from conftest import REPO

from rlbench.analysis.findings import REPEATS_FOR_EVIDENCE, Verdict
from rlbench.analysis.next_step import NextSweep
from rlbench.planning.plan import read_plan, write_plan
from rlbench.report.next_spec import write_next_spec
from rlbench.results.layout import ResultsFolder
from rlbench.spec.load import load_spec

_spec = importlib.util.spec_from_file_location("bench_tables", REPO / "scripts" / "bench_tables.py")
bench_tables = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(bench_tables)

LAUNCH = Verdict("launch-bound", "launch- or sync-bound: 160 minibatch steps an iteration", "minibatch_size")


def _folder(tmp_path):
    out = bench_tables.generate(
        tmp_path / "r", trials=4, iterations=3, repeats=2, grid={"num_envs_per_env_runner": [1, 2]}
    )
    trials = pd.DataFrame(
        [
            {"trial_id": p.trial_id, "index": p.index, "repeat": p.repeat, "status": "ok"}
            for p in (read_plan(t) for t in ResultsFolder(out).trials())
        ]
    )
    return out, trials


def test_next_yaml_sweeps_the_knob_from_the_configurations_trial(tmp_path):
    out, trials = _folder(tmp_path)
    written = write_next_spec(out, NextSweep(1, LAUNCH, "minibatch_size", 64, (64, 128, 256)), trials)
    assert written.path == ResultsFolder(out).next_spec and written.trial_id == "t001r0"
    assert written.command == f"rlbench sweep {out}/next.yaml"
    loaded = load_spec(written.path)  # a spec the loader takes as it is
    assert loaded.spec.name == "bench-next" and loaded.spec.repeats == REPEATS_FOR_EVIDENCE
    assert [p.axes for p in loaded.points] == [{"minibatch_size": v} for v in (64, 128, 256)]
    # everything but the knob is the configuration's trial: its envs per runner (grid point 1), cores, stop
    plan = read_plan(ResultsFolder(out).trial("t001r0"))
    first = loaded.points[0].config.model_dump()
    want = plan.config.model_dump()
    want["cpus"] = plan.cpus
    assert first == want and loaded.spec.stop.iterations == 3
    text = written.path.read_text()
    # the verdict's short form (its full sentence stands in the report's Verdicts alone, issue 59), and the
    # configuration by name, not by its grid index
    assert (
        f"# Why: launch-bound: change minibatch_size; the verdict in full, with its numbers, is in the report's "
        f"Verdicts ({out}/report.md)." in text
    )
    assert "launch- or sync-bound: 160 minibatch steps" not in text
    assert "A larger minibatch changes learning as well as speed" in text and "time to a target does" in text
    assert f"# Run it: rlbench sweep {out}/next.yaml" in text


def test_the_folders_text_stays_in_the_comments(tmp_path):
    out, trials = _folder(tmp_path)
    evil = Verdict("launch-bound", "x\nrepeats: 99\u2028grid: {cpus: [1]}\x85name: pwned", "minibatch_size")
    path = write_next_spec(out, NextSweep(0, evil, "minibatch_size", 64, (64, 128)), trials).path
    spec = yaml.safe_load(path.read_text())
    assert spec["name"] == "bench-next" and spec["repeats"] == REPEATS_FOR_EVIDENCE
    assert spec["grid"] == {"minibatch_size": [64, 128]}
    comments = [line for line in path.read_text().split("\n") if line.startswith("#")]
    assert all(line.isascii() and line.isprintable() for line in comments)


def test_a_driver_whose_threads_the_spec_set_sweeps_its_threads(tmp_path):
    out, trials = _folder(tmp_path)
    folder = ResultsFolder(out)
    plan = read_plan(folder.trial("t000r0"))
    config = plan.config.model_copy(
        update={"threads": plan.config.threads.model_copy(update={"driver_torch_threads": 1})}
    )
    write_plan(folder, plan.model_copy(update={"config": config}))
    short = Verdict(
        "learner short of threads",
        "the CPU learner is short of threads",
        "num_cpus_for_main_process",
    )
    written = write_next_spec(out, NextSweep(0, short, "num_cpus_for_main_process", 1, (1, 2)), trials)
    assert (written.knob, written.values) == ("driver_torch_threads", (1, 2))
    assert [p.axes for p in load_spec(written.path).points] == [
        {"driver_torch_threads": 1},
        {"driver_torch_threads": 2},
    ]


def test_no_verdict_no_file(tmp_path):
    out, trials = _folder(tmp_path)
    write_next_spec(out, NextSweep(1, LAUNCH, "minibatch_size", 64, (64, 128)), trials)
    assert write_next_spec(out, None, trials) is None
    assert not ResultsFolder(out).next_spec.exists()  # an older next.yaml goes: its verdict no longer holds


def test_no_next_sweep_where_the_cores_are_the_limit_says_why():
    """A sampler verdict that says the cores are the limit (rlbench.analysis.next_step.advise's ``cores_limit``): no
    next.yaml, and the report's "Next sweep" says why instead of staying silent."""
    from types import SimpleNamespace

    from rlbench.report.blocks import Bullets
    from rlbench.report.recommendations_section import next_blocks

    analysis = SimpleNamespace(next=None, next_stop="cores_limit")
    heading, bullets = next_blocks(analysis, None)
    assert heading.text == "Next sweep" and isinstance(bullets, Bullets)
    assert bullets.items == ["No next.yaml, as no more env runners fit (Verdicts says why, in full)."]
    assert next_blocks(SimpleNamespace(next=None, next_stop=""), None) == []
    # a verdict whose knob has no larger value that fits (issue 57's inference_wide at 1 x 32: the learner's threads)
    _, no_fit = next_blocks(SimpleNamespace(next=None, next_stop="no_fit"), None)
    assert no_fit.items == [
        "No next.yaml, as the knob its verdict names has no larger value that fits the trial's cores (Verdicts says "
        "why, in full)."
    ]
