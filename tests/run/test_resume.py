"""The result-folder guard: writability probe, the lock, and what a resume reruns or refuses (no Ray)."""

from __future__ import annotations

import copy
import json
import os
import signal
import subprocess
import sys

import pytest

from rlbench import SCHEMA_VERSION
from rlbench.measure.machine import MachineInfo
from rlbench.planning.plan import plan_trials, repeat_seeds, write_plan
from rlbench.results.files import write_json
from rlbench.results.layout import LOCK_FILE, ResultsFolder
from rlbench.results.lock import OutDirError, SweepLock, check_writable
from rlbench.results.records import TrialRecord, write_record
from rlbench.results.session import open_for_write
from rlbench.run.manifest import run_facts
from rlbench.run.resume import RESUMABLE_SPEC_KEYS, plan_resume, recorded_seeds
from rlbench.spec.load import spec_from_dict

MACHINE = MachineInfo(
    hostname="h",
    cpu_model="Test CPU",
    logical_cores=4,
    physical_cores=2,
    usable_cores=[0, 1, 2, 3],
    memory_bytes=8 * 2**30,
    gpus=[],
)
SOFTWARE = {
    "rlbench": "0.1.0",
    "schema_version": SCHEMA_VERSION,
    "python": "3.11.7",
    "ray": "2.60.0",
    "torch": "2.13.0",
    "gymnasium": "1.1.1",
    "numpy": "2.2.0",
}
BASE = {
    "name": "t",
    "environment": {"env": "envs.tiny:TinyEnv"},
    "cpus": 2,
    "grid": {"num_env_runners": [0, 1], "num_envs_per_env_runner": [1, 2]},
    "stop": {"iterations": 3},
    "trial_timeout_s": 60,
}


def _spec(**changes):
    data = copy.deepcopy(BASE)
    data.update(changes)
    return spec_from_dict(data, check_envs=False)


def _folder(tmp_path, statuses: dict[str, str | None], loaded=None, software=SOFTWARE):
    """A result folder of BASE (or ``loaded``): trial id -> status (None: started, no verdict)."""
    loaded = loaded or _spec()
    plans = plan_trials(loaded, MACHINE)
    tmp_path.mkdir(parents=True, exist_ok=True)
    write_json(
        tmp_path / "manifest.json",
        {
            "spec": loaded.spec.model_dump(mode="json", by_alias=True),
            "machine": {**MACHINE.__dict__},
            "software": software,
            **({"quick": True} if loaded.quick else {}),
        },
    )
    for plan in plans:
        if plan.trial_id in statuses:
            trial = write_plan(ResultsFolder(tmp_path), plan)
            if statuses[plan.trial_id] is not None:
                write_record(trial, TrialRecord(trial_id=plan.trial_id, status=statuses[plan.trial_id]))
    return tmp_path


def _open(out, loaded, machine=MACHINE, software=SOFTWARE):
    """The folder opened to resume, as the sweep opens it (its spec, machine and software checked)."""
    return open_for_write(out, "resume", facts=run_facts(loaded, machine, software, RESUMABLE_SPEC_KEYS))


def _seeds(out):
    session = _open(out, _spec())
    return recorded_seeds(session.folder, session.manifest)


def _resume(out, loaded=None, machine=MACHINE, software=SOFTWARE, retry_failed=False):
    loaded = loaded or _spec()
    session = _open(out, loaded, machine, software)
    plans = plan_trials(loaded, machine, repeat_seeds(loaded.spec, recorded_seeds(session.folder, session.manifest)))
    return plan_resume(session.folder, plans, retry_failed=retry_failed)


def test_resume_reruns_missing_and_interrupted_keeps_finished(tmp_path):
    out = _folder(tmp_path, {"t000r0": "ok", "t001r0": "failed", "t002r0": "interrupted", "t003r0": None})
    decision = _resume(out)
    assert decision.keep == {"t000r0": "ok", "t001r0": "failed"}
    assert set(decision.rerun) == {"t002r0", "t003r0"}
    assert decision.runs("t003r0") and not decision.runs("t000r0")


def test_retry_failed_reruns_failed_and_timeout_not_skipped(tmp_path):
    out = _folder(tmp_path, {"t000r0": "skipped", "t001r0": "failed", "t002r0": "timeout", "t003r0": "ok"})
    decision = _resume(out, retry_failed=True)
    assert decision.keep == {"t000r0": "skipped", "t003r0": "ok"}
    assert set(decision.rerun) == {"t001r0", "t002r0"}


def test_more_repeats_and_a_new_timeout_are_resumable(tmp_path):
    out = _folder(tmp_path, {"t000r0": "ok", "t001r0": "ok"})
    loaded = _spec(repeats=2, trial_timeout_s=300)
    decision = _resume(out, loaded)
    assert decision.keep == {"t000r0": "ok", "t001r0": "ok"}
    assert [p.trial_id for p in plan_trials(loaded, MACHINE) if decision.runs(p.trial_id)] == [
        "t000r1",
        "t001r1",
        "t002r0",
        "t002r1",
        "t003r0",
        "t003r1",
    ]


def test_values_appended_to_the_first_axis_are_resumable(tmp_path):
    out = _folder(tmp_path, {"t000r0": "ok", "t003r0": "ok"})
    grid = {"num_env_runners": [0, 1, 2], "num_envs_per_env_runner": [1, 2]}
    assert _resume(out, _spec(grid=grid)).keep == {"t000r0": "ok", "t003r0": "ok"}


def test_value_inserted_in_the_last_axis_is_refused(tmp_path):
    out = _folder(tmp_path, {"t000r0": "ok", "t001r0": "ok"})
    grid = {"num_env_runners": [0, 1], "num_envs_per_env_runner": [1, 3, 2]}
    with pytest.raises(OutDirError, match=r"trial t001r0 would now run differently.*num_envs_per_env_runner: 2 -> 3"):
        _resume(out, _spec(grid=grid))


@pytest.mark.parametrize(
    "changes, match",
    [
        ({"stop": {"iterations": 5}}, r"the spec changed \(spec.stop.iterations: 3 -> 5\)"),
        ({"training": {"lr": 0.001}}, r"spec.training.lr: None -> 0.001"),
        ({"grid": {"num_env_runners": [0], "num_envs_per_env_runner": [1, 2]}}, r"no longer plans trial t002r0"),
    ],
)
def test_incomparable_spec_is_refused(tmp_path, changes, match):
    out = _folder(tmp_path, {"t000r0": "ok", "t002r0": "ok"})
    with pytest.raises(OutDirError, match=match):
        _resume(out, _spec(**changes))


def test_other_machine_or_software_is_refused(tmp_path):
    out = _folder(tmp_path, {"t000r0": "ok"})
    other = MachineInfo(**{**MACHINE.__dict__, "cpu_model": "Other CPU"})
    with pytest.raises(OutDirError, match=r"different machine \(cpu_model: 'Test CPU' -> 'Other CPU'\)"):
        _resume(out, machine=other)
    with pytest.raises(OutDirError, match=r"software changed \(ray: '2.60.0' -> '2.61.0'\)"):
        _resume(out, software={**SOFTWARE, "ray": "2.61.0"})


def test_a_framework_package_the_folder_used_is_compared(tmp_path):
    """The versions that decide the numbers include the folder's frameworks' own distributions, asked of their
    adapters (issue 42): an SB3 sweep resumed under another stable-baselines3 is refused (results/session.py
    compared a fixed list, and the SB3 version recorded in the manifest was never read); under the same one it
    resumes; an RLlib sweep is not held to SB3's version."""
    sb3 = _spec(framework="sb3")
    out = _folder(tmp_path / "sb3", {"t000r0": "ok"}, sb3, {**SOFTWARE, "stable-baselines3": "2.9.2"})
    with pytest.raises(OutDirError, match=r"software changed \(stable-baselines3: '2.9.2' -> '2.9.3'\)"):
        _resume(out, sb3, software={**SOFTWARE, "stable-baselines3": "2.9.3"})
    assert _resume(out, sb3, software={**SOFTWARE, "stable-baselines3": "2.9.2"}).keep == {"t000r0": "ok"}
    rllib = _folder(tmp_path / "rllib", {"t000r0": "ok"}, software={**SOFTWARE, "stable-baselines3": "2.9.2"})
    assert _resume(rllib, software={**SOFTWARE, "stable-baselines3": "2.9.3"}).keep == {"t000r0": "ok"}


def test_only_a_quick_run_resumes_a_quick_folder(tmp_path):
    """A --quick folder's trials ran one iteration on a cut batch: a full run resuming it would mix the two, and a
    quick run resuming a full folder too; each is refused in one line that says which flag fits. A quick run
    resumes a quick folder (its spec and plans are the same: --quick is applied the same way each time)."""
    quick = spec_from_dict(copy.deepcopy(BASE), check_envs=False, quick=True)
    out = _folder(tmp_path / "quick", {"t000r0": "ok", "t001r0": None}, quick)
    with pytest.raises(OutDirError, match=r"it holds a --quick run \(resume it with --quick\)"):
        _resume(out)
    decision = _resume(out, quick)
    assert decision.keep == {"t000r0": "ok"} and set(decision.rerun) == {"t001r0"}
    full = _folder(tmp_path / "full", {"t000r0": "ok"})
    with pytest.raises(OutDirError, match=r"it holds a full run, not a --quick one \(resume it without --quick\)"):
        _resume(full, quick)


def test_folder_without_manifest_is_refused(tmp_path):
    (tmp_path / "trials").mkdir()
    assert ResultsFolder(tmp_path).holds_sweep()
    with pytest.raises(OutDirError, match="manifest.json is missing"):
        _resume(tmp_path)


def test_attempts_are_numbered(tmp_path):
    folder = ResultsFolder(tmp_path)
    assert folder.next_attempt("t000r0") == tmp_path / "attempts" / "t000r0" / "1"
    (tmp_path / "attempts" / "t000r0" / "1").mkdir(parents=True)
    assert folder.next_attempt("t000r0").name == "2"
    assert folder.trial("t000r0").path == tmp_path / "trials" / "t000r0"


def test_a_trial_moves_to_its_next_attempt_in_one_rename(tmp_path):
    folder = ResultsFolder(tmp_path)
    folder.trial("t000r0").path.mkdir(parents=True)
    (folder.trial("t000r0").path / "plan.json").write_text("{}")
    assert folder.move_to_attempts("t000r0") == tmp_path / "attempts" / "t000r0" / "1"
    assert not folder.trial("t000r0").exists() and (tmp_path / "attempts" / "t000r0" / "1" / "plan.json").exists()


def test_check_writable_creates_nothing(tmp_path):
    check_writable(tmp_path / "a" / "b")
    assert list(tmp_path.iterdir()) == []
    (tmp_path / "file").write_text("x")
    with pytest.raises(OutDirError, match="is not a folder"):
        check_writable(tmp_path / "file" / "out")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["file"]


def test_lock_excludes_a_second_sweep_and_names_the_owner(tmp_path):
    with SweepLock(tmp_path):
        assert (tmp_path / LOCK_FILE).read_text() == f"{os.getpid()}\n"
        with pytest.raises(OutDirError, match=rf"another rlbench sweep \(pid {os.getpid()}\) is writing"):
            SweepLock(tmp_path).acquire()
    SweepLock(tmp_path).acquire().release()  # free again once released


def test_lock_of_a_killed_owner_is_not_stale(tmp_path):
    """kill -9 of the lock's owner frees it at once: the kernel drops a dead process's flock."""
    code = (
        "import sys, time; from pathlib import Path; from rlbench.results.lock import SweepLock; "
        "SweepLock(Path(sys.argv[1])).acquire(); print('locked', flush=True); time.sleep(60)"
    )
    owner = subprocess.Popen([sys.executable, "-c", code, str(tmp_path)], stdout=subprocess.PIPE, text=True)
    try:
        assert owner.stdout.readline().strip() == "locked"
        with pytest.raises(OutDirError, match=f"pid {owner.pid}"):
            SweepLock(tmp_path).acquire()
        os.kill(owner.pid, signal.SIGKILL)
        owner.wait(10)
        lock = SweepLock(tmp_path).acquire()
        assert (tmp_path / LOCK_FILE).read_text() == f"{os.getpid()}\n"
        lock.release()
    finally:
        owner.kill()
        owner.wait()


def test_a_resume_reuses_the_seeds_the_folder_ran_with(tmp_path):
    """seed: null draws seeds at planning; a resume must plan the same ones (its trials' plans are compared)."""
    out = _folder(tmp_path, {"t000r0": "ok", "t001r0": None})
    ran = {ResultsFolder(out).trial(t).plan.read_text() for t in ("t000r0", "t001r0")}
    (seed,) = {json.loads(text)["seed"] for text in ran}
    manifest = json.loads((out / "manifest.json").read_text())
    write_json(out / "manifest.json", {**manifest, "repeat_seeds": [seed + 1, 777]})
    assert _seeds(out) == {0: seed, 1: 777}  # the trials' plans win; the manifest covers repeats not yet run
    loaded = _spec(repeats=3)
    seeds = repeat_seeds(loaded.spec, _seeds(out))
    assert seeds[:2] == [seed, 777] and seeds[2] not in (seed, 777)
    folder = _open(out, loaded).folder
    decision = plan_resume(folder, plan_trials(loaded, MACHINE, seeds), retry_failed=False)
    assert decision.keep == {"t000r0": "ok"} and "t001r0" in decision.rerun
    fresh = plan_trials(loaded, MACHINE)  # seeds drawn anew: the kept trial would run differently
    with pytest.raises(OutDirError, match=r"trial t000r0 would now run differently.*seed"):
        plan_resume(folder, fresh, retry_failed=False)


def test_a_spec_with_relative_values_resumes_on_the_same_machine(tmp_path):
    """The plans hold resolved values: the same machine resolves them the same way, so nothing differs."""
    grid = {"num_env_runners": [0, "cpus-1"], "num_envs_per_env_runner": [1, 2]}
    loaded = _spec(grid=grid)
    plans = plan_trials(loaded, MACHINE)
    assert [p.axes["num_env_runners"] for p in plans] == [0, 0, 1, 1]  # cpus: 2, so cpus-1 is 1
    write_json(
        tmp_path / "manifest.json",
        {
            "spec": loaded.spec.model_dump(mode="json", by_alias=True),
            "machine": {**MACHINE.__dict__},
            "software": SOFTWARE,
        },
    )
    for plan in plans[:3]:
        write_record(write_plan(ResultsFolder(tmp_path), plan), TrialRecord(trial_id=plan.trial_id, status="ok"))
    decision = _resume(tmp_path, _spec(grid=grid))
    assert decision.keep == {"t000r0": "ok", "t001r0": "ok", "t002r0": "ok"} and decision.rerun == {}
