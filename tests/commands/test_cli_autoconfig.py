"""rlbench autoconfig's bad input, in-process: exit 2, one message naming the key or flag and the
fix, nothing run or written. And its arguments reach the driver (--address included)."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import REPO

from rlbench.commands import autoconfig, main, parser
from rlbench.commands._common import options_from
from rlbench.commands.exit_codes import EXIT_BAD_INPUT

GOOD = """\
name: ac
framework: plain
environment:
  env: envs.tiny:TinyEnv
cpus: 1
grid:
  num_envs_per_env_runner: [1, 2]
stop: {seconds: 1}
"""


def _run(capsys, monkeypatch, tmp_path: Path, spec_text: str, *extra: str):
    monkeypatch.chdir(REPO)
    spec = tmp_path / "spec.yaml"
    spec.write_text(spec_text)
    out = tmp_path / "out"
    code = main(["autoconfig", str(spec), "--out", str(out), *extra])
    text = capsys.readouterr()
    text = text.out + text.err
    errors = [line for line in text.splitlines() if line.startswith("error:")]
    assert len(errors) == 1, text
    assert not out.exists()  # nothing written
    return code, " ".join(text[text.index("error:") :].split())


@pytest.mark.parametrize("budget", ["soon", "20x", "-5", "0", "nan", "1m-3"])
def test_an_unparsable_budget(capsys, monkeypatch, tmp_path, budget):
    code, msg = _run(capsys, monkeypatch, tmp_path, GOOD, "--budget", budget)
    assert code == EXIT_BAD_INPUT and "--budget" in msg and "20m" in msg


def test_no_budget_at_all(capsys, monkeypatch, tmp_path):
    code, msg = _run(capsys, monkeypatch, tmp_path, GOOD)
    assert code == EXIT_BAD_INPUT and "--budget 20m" in msg and "autoconfig.budget_s" in msg


def test_a_budget_below_the_smallest_plan_that_can_answer(capsys, monkeypatch, tmp_path):
    # the plain adapter's 0.5 s of cold start + the spec's 1 s: 2 probes and 3 rounds of 2 are 8 trials of 1.5 s,
    # 12 s, and at least 4 s kept for the report: 16 s
    code, msg = _run(capsys, monkeypatch, tmp_path, GOOD, "--budget", "10s")
    assert code == EXIT_BAD_INPUT and "cannot buy an answer" in msg and "at least 16 s" in msg
    assert "give --budget 16s or more" in msg
    code, msg = _run(capsys, monkeypatch, tmp_path, GOOD + "autoconfig: {cold_start_s: 10}\n", "--budget", "60s")
    assert (
        code == EXIT_BAD_INPUT and "(autoconfig.cold_start_s)" in msg and "--budget 93s or more" in msg
    )  # 8 x 11 s / 0.95


@pytest.mark.parametrize("grid", ["{}", "{num_envs_per_env_runner: [2]}"])
def test_a_spec_with_no_grid_axis_of_two_values_is_walked_and_its_budget_checked(capsys, monkeypatch, tmp_path, grid):
    """No space to search: the walk's smallest plan is the start's reading and one step (issue 50), 1 + 3 x 2 - 1
    trials of 1.5 s (the plain adapter's 0.5 s of cold start + the spec's 1 s; the first round's start trial is the
    start's reading, issue 57), 9 s, and 4 s for the report."""
    spec = GOOD.replace("grid:\n  num_envs_per_env_runner: [1, 2]", f"grid: {grid}")
    code, msg = _run(capsys, monkeypatch, tmp_path, spec, "--budget", "10s")
    assert code == EXIT_BAD_INPUT and "the start's 1 reading, then one step of 3 rounds, the first with" in msg
    assert "at least 13 s" in msg and "--budget 13s or more" in msg


def test_walk_on_a_grid_moves_along_its_axes_from_its_baseline():
    from rlbench.measure.machine import probe_machine
    from rlbench.run.autoconfig_driver.space import prepare

    spec = REPO / "configs" / "autoconfig_envbound.yaml"
    setup = prepare(spec, budget="20m", objective=None, machine=probe_machine(), walk=True)
    assert setup.walk and setup.searched == [] and type(setup.session()).__name__ == "WalkSession"
    assert setup.grid_axes == {
        "num_env_runners": ("num_env_runners", (0, 1, 2, 3)),
        "num_envs_per_env_runner": ("num_envs_per_env_runner", (1, 2, 4, 8)),
    }
    searched = prepare(spec, budget="20m", objective=None, machine=probe_machine())
    assert not searched.walk and len(searched.searched) > 1  # without --walk: the grid search, as before
    args = parser().parse_args(["autoconfig", str(spec), "--budget", "20m", "--walk"])
    assert "--walk" in autoconfig.resume_command(Path("/tmp/x"), options_from(autoconfig.AutoconfigOptions, args))


def test_no_grid_point_fits_the_machine(capsys, monkeypatch, tmp_path):
    spec = GOOD.replace("num_envs_per_env_runner: [1, 2]", "cpus: [50000, 60000]").replace("cpus: 1\n", "")
    code, msg = _run(capsys, monkeypatch, tmp_path, spec, "--budget", "20m")
    assert code == EXIT_BAD_INPUT and "no grid point can run on this machine" in msg


def test_time_to_target_without_a_stop_target(capsys, monkeypatch, tmp_path):
    code, msg = _run(capsys, monkeypatch, tmp_path, GOOD, "--budget", "20m", "--objective", "time_to_target")
    assert code == EXIT_BAD_INPUT and "stop:" in msg and "target" in msg and "--objective throughput" in msg


def test_a_bad_autoconfig_key_and_a_baseline_off_the_grid(capsys, monkeypatch, tmp_path):
    code, msg = _run(capsys, monkeypatch, tmp_path, GOOD + "autoconfig: {trail_s: 5}\n", "--budget", "20m")
    assert code == EXIT_BAD_INPUT and "autoconfig.trail_s" in msg
    code, msg = _run(
        capsys, monkeypatch, tmp_path, GOOD + "autoconfig: {baseline: {num_env_runners: 1}}\n", "--budget", "20m"
    )
    assert code == EXIT_BAD_INPUT and "autoconfig.baseline.num_env_runners: not a grid axis" in msg


def test_resume_needs_out(capsys, monkeypatch):
    monkeypatch.chdir(REPO)
    assert main(["autoconfig", "configs/autoconfig_cpu.yaml", "--budget", "20m", "--resume"]) == EXIT_BAD_INPUT
    assert "--resume needs --out" in capsys.readouterr().out


def test_arguments_reach_the_driver():
    args = parser().parse_args(
        [
            "autoconfig",
            "s.yaml",
            "--budget",
            "1h30m",
            "--objective",
            "time_to_target",
            "--address",
            "10.0.0.1:6379",
            "--out",
            "/tmp/x",
            "--resume",
        ]
    )
    assert (args.budget, args.objective, args.address, str(args.out), args.resume) == (
        "1h30m",
        "time_to_target",
        "10.0.0.1:6379",
        "/tmp/x",
        True,
    )
    opts = options_from(autoconfig.AutoconfigOptions, args)
    assert "--address 10.0.0.1:6379" in autoconfig.resume_command(Path("/tmp/x"), opts)


def test_budget_parsing():
    from rlbench.run.autoconfig_driver.space import parse_budget

    assert [parse_budget(t) for t in ("20m", "90s", "1h30m", "600", "1.5m")] == [1200, 90, 5400, 600, 90]


def test_a_signal_whose_interrupt_was_swallowed_still_stops_as_interrupted(capsys, monkeypatch, tmp_path):
    """A SIGTERM whose KeyboardInterrupt third-party code caught (here: while the report is built) still
    ends the command with 130 and the resume line, not with the answer's 0."""
    import sys as _sys

    import rlbench.run.autoconfig_driver.driver as driver
    from rlbench.commands.exit_codes import EXIT_INTERRUPTED
    from rlbench.results.layout import ResultsFolder
    from rlbench.run.autoconfig_driver.driver import Outcome
    from rlbench.worker import interrupts

    def ran(setup, out_dir, **kw):
        ResultsFolder(out_dir).path.mkdir(parents=True)
        ResultsFolder(out_dir).manifest.write_text("{}")
        return Outcome(None, None, False, 3, 12.0)

    def report_swallowing_it(*a):
        try:
            interrupts.interrupt(15, _sys._getframe())
        except BaseException:  # noqa: BLE001 - the test plants a report that swallows the interrupt
            pass
        return 0

    monkeypatch.chdir(REPO)
    monkeypatch.setattr(driver, "run_autoconfig", ran)
    monkeypatch.setattr(autoconfig, "_finish", report_swallowing_it)
    spec, out = tmp_path / "spec.yaml", tmp_path / "out"
    spec.write_text(GOOD)
    assert (
        autoconfig.run(
            parser().parse_args(["autoconfig", str(spec), "--budget", "20m", "--out", str(out)]),
            autoconfig.Console(width=400),
        )
        == EXIT_INTERRUPTED
    )
    assert f"--out {out} --resume" in capsys.readouterr().out


def _begun(tmp_path: Path, **forged: dict) -> tuple[Path, Path]:
    """A folder as ``rlbench autoconfig`` begins one, before its first trial: its manifest (made by the sweep's
    own code on this machine, then the parts in ``forged`` overwritten) and its state, with the settings a
    ``--budget 20s`` resume of GOOD brings, so nothing but the forged fields can refuse it."""
    from rlbench.measure.machine import probe_machine
    from rlbench.results.files import write_json
    from rlbench.results.layout import ResultsFolder
    from rlbench.run.autoconfig_driver import prepare
    from rlbench.run.autoconfig_driver.trial_files import State
    from rlbench.run.manifest import manifest

    spec, out = tmp_path / "spec.yaml", tmp_path / "out"
    spec.write_text(GOOD)
    machine = probe_machine()
    setup = prepare(spec, budget="20s", objective=None, machine=machine)
    made = manifest(setup.loaded, machine, [], ["rlbench", "autoconfig"]).as_json()
    for part, fields in forged.items():
        made[part].update(fields)
    out.mkdir()
    write_json(out / "manifest.json", made)
    state = State(ResultsFolder(out))
    s = setup.section
    state.data.update(objective=s.objective, budget_s=setup.budget_s, seed=s.seed, trial_s=s.trial_s)
    state.save()
    return spec, out


def _snapshot(root: Path) -> dict[str, int]:
    return {str(p.relative_to(root)): p.stat().st_mtime_ns for p in root.rglob("*")}


@pytest.mark.parametrize(
    "forged, named",
    [
        (
            {"machine": {"cpu_model": "Forged CPU 9000"}},
            "this is a different machine (cpu_model: 'Forged CPU 9000' -> '{cpu}'",
        ),
        ({"software": {"rlbench": "0.0.1"}}, "the software changed (rlbench: '0.0.1' -> '{rlbench}'"),
    ],
)
def test_a_resume_begun_on_another_machine_or_by_another_rlbench_is_refused(
    capsys, monkeypatch, tmp_path, forged, named
):
    """Issue 35's defect: ``--resume`` went on in such a folder (TrialBatches skipped the checks a sweep's
    resume makes), mixing trials that cannot be compared. Refused now, the difference named, nothing written
    (had it gone on, it would have run 20 s of plain trials and ended with 0)."""
    from rlbench import __version__
    from rlbench.measure.machine import probe_machine

    monkeypatch.chdir(REPO)
    spec, out = _begun(tmp_path, **forged)
    before = _snapshot(out)
    code = main(["autoconfig", str(spec), "--budget", "20s", "--out", str(out), "--resume"])
    text = capsys.readouterr().out
    assert code == EXIT_BAD_INPUT, text
    message = " ".join(text[text.index("error:") :].split())
    assert f"cannot resume {out}: " + named.format(cpu=probe_machine().cpu_model, rlbench=__version__) in message
    assert "old and new trials would not be comparable" in message
    assert _snapshot(out) == before


def test_a_resume_reads_its_state_only_from_a_folder_without_links(capsys, monkeypatch, tmp_path):
    """autoconfig_state.json is read after the folder's link check: a state planted as a link to a file
    elsewhere is refused as a link, its target never read (it read it first, and named its version)."""
    monkeypatch.chdir(REPO)
    spec, out = _begun(tmp_path)
    elsewhere = tmp_path / "elsewhere.json"
    elsewhere.write_text('{"schema_version": 99}')
    (out / "autoconfig_state.json").unlink()
    (out / "autoconfig_state.json").symlink_to(elsewhere)
    code = main(["autoconfig", str(spec), "--budget", "20s", "--out", str(out), "--resume"])
    text = " ".join(capsys.readouterr().out.split())
    assert code == EXIT_BAD_INPUT
    assert "autoconfig_state.json" in text and "never follows a symbolic link" in text
    assert "state version" not in text


@pytest.mark.parametrize("head, refused", [("algo: DQN\n", "DQN"), ("grid_algo", "SAC")])
def test_an_algorithm_that_trains_on_replay_is_refused_before_any_trial(capsys, monkeypatch, tmp_path, head, refused):
    # issue 37: the cost model is of an on-policy iteration; DQN's and SAC's repeat sample, store, replay, update
    text = GOOD.replace("framework: plain\n", "" if head == "grid_algo" else head)
    if head == "grid_algo":
        text = text.replace(
            "  num_envs_per_env_runner: [1, 2]\n", "  num_envs_per_env_runner: [1, 2]\n  algo: [PPO, SAC]\n"
        )
    code, msg = _run(capsys, monkeypatch, tmp_path, text, "--budget", "20m")
    assert code == EXIT_BAD_INPUT
    assert f"algo: autoconfig cannot search {refused}: its cost model is of an on-policy iteration" in msg
    assert "replayed steps" in msg and "rlbench sweep" in msg
