"""Warm trials (issue 56, rlbench/run/warm.py) for real on the plain adapter (no Ray: a trial starts in about a
second): a trial launched once is read window by window, paused between them; it ends after its last window or when
retired, with its record; nothing of it outlives the pool."""

from __future__ import annotations

import psutil
import pytest

from rlbench.measure.machine import MachineInfo
from rlbench.planning.plan import plan_trials, write_plan
from rlbench.results.files import read_events
from rlbench.results.layout import ResultsFolder
from rlbench.run.trial import TrialLauncher
from rlbench.run.warm import WarmPool
from rlbench.spec.load import spec_from_dict

MACHINE = MachineInfo(
    hostname="h", cpu_model="c", logical_cores=2, physical_cores=2, usable_cores=[0, 1], memory_bytes=2**30, gpus=[]
)


def _plans(windows=3):
    data = {
        "name": "warm",
        "framework": "plain",
        "environment": {"env": "envs.synthetic:SyntheticEnv", "env_config": {"episode_len": 20}},
        "env_runners": {"num_env_runners": 0},
        "training": {"train_batch_size_per_learner": 50},
        "cpus": 1,
        "grid": {"env_config.step_cost_us": [0, 100]},
        "stop": {"iterations": 3},
        "warmup_iterations": 1,
        "sample_hz": 5,
    }
    plans = plan_trials(spec_from_dict(data, check_envs=False), MACHINE)
    return [p.model_copy(update={"windows": windows, "window_iterations": 2}) for p in plans]


def _pool(tmp_path, live_limit=3, available_bytes=lambda: 2**50):
    """A pool over a results folder in ``tmp_path``, the records it gives kept in a list; ``available_bytes`` the
    machine's available memory as the pool sees it (plenty unless a test says otherwise)."""
    folder = ResultsFolder(tmp_path)
    records = []
    pool = WarmPool(
        folder,
        TrialLauncher(frameworks=("plain",)),
        prepare=lambda plan: write_plan(folder, plan),
        on_record=records.append,
        live_limit=live_limit,
        available_bytes=available_bytes,
    )
    return pool, folder, records


@pytest.fixture()
def pool(tmp_path):
    got = _pool(tmp_path)
    yield got
    got[0].close()


def _iterations(folder, trial_id):
    return [
        (e["iteration"], e["warmup"], e["window"])
        for e in read_events(folder.trial(trial_id).events_file)
        if e["event"] == "iteration"
    ]


def test_two_trials_read_in_turns_each_built_once_and_ended_after_its_last_window(pool):
    pool, folder, records = pool
    a, b = _plans()
    order = [pool.read(a), pool.read(b), pool.read(b), pool.read(a)]
    assert [(r.trial_id, r.window, r.read) for r in order] == [
        (a.trial_id, 0, True),
        (b.trial_id, 0, True),
        (b.trial_id, 1, True),
        (a.trial_id, 1, True),
    ]
    assert pool.holds(a.trial_id) and pool.holds(b.trial_id) and records == []
    # each trial built once: one build event, its iterations numbered on across its windows
    for plan in (a, b):
        events = read_events(folder.trial(plan.trial_id).events_file)
        assert sum(e["event"] == "build" for e in events) == 1
        assert _iterations(folder, plan.trial_id) == [
            (1, True, 0),
            (2, False, 0),
            (3, False, 0),
            (4, False, 1),
            (5, False, 1),
        ]
    # the other one was paused while one read: b's window 1 ran after its gate, wholly after a's window 0 ended
    b_waits = [e["waited_s"] for e in read_events(folder.trial(b.trial_id).events_file) if e["event"] == "window_end"]
    assert b_waits[0] == 0.0 and b_waits[1] >= 0.0
    last = pool.read(a)  # its third and last window: it ends on its own, with its record
    assert last.window == 2 and last.record is not None and last.record.status == "ok"
    assert not pool.holds(a.trial_id) and [r.trial_id for r in records] == [a.trial_id]
    with pytest.raises(ValueError, match="needs a plan with windows"):
        pool.read(a.model_copy(update={"windows": None}))


def _start_pids(folder, plans):
    return [
        next(e["pid"] for e in read_events(folder.trial(p.trial_id).events_file) if e["event"] == "start")
        for p in plans
    ]


def _gone(pid):
    return not psutil.pid_exists(pid) or psutil.Process(pid).status() == psutil.STATUS_ZOMBIE


def test_a_retired_trial_stops_before_its_last_window_and_leaves_no_process(pool):
    pool, folder, records = pool
    a, _ = _plans()
    first = pool.read(a)
    [pid] = _start_pids(folder, [a])
    record = pool.retire(a.trial_id)
    assert first.read and record is not None and record.status == "ok" and records == [record]
    events = [e["event"] for e in read_events(folder.trial(a.trial_id).events_file)]
    assert events.count("window_end") == 1 and events[-1] == "end" and "shutdown" in events
    assert _gone(pid)
    assert pool.retire(a.trial_id) is None  # not held any more: nothing to do


def test_trials_retired_together_all_get_their_stop_gates_before_the_pool_waits_for_one(pool, monkeypatch):
    """retire_all: every stop gate is written before the first trial is waited for, so they shut down beside each
    other; each is recorded, none left running."""
    pool, folder, records = pool
    a, b = _plans()
    pool.read(a)
    pool.read(b)
    pids = _start_pids(folder, (a, b))
    finish, gates_then = pool._finish, []

    def watched(trial_id):
        gates_then.append([folder.trial(p.trial_id).window_gate("stop").exists() for p in (a, b)])
        return finish(trial_id)

    monkeypatch.setattr(pool, "_finish", watched)
    got = pool.retire_all([a.trial_id, b.trial_id, a.trial_id, "not-held"])
    assert gates_then == [[True, True], [True, True]]
    assert [r.trial_id for r in got] == [a.trial_id, b.trial_id] and records == got
    assert all(r.status == "ok" for r in got) and not pool.live
    assert all(_gone(pid) for pid in pids)


def test_on_ctrl_c_every_trial_is_asked_to_stop_before_the_pool_waits_for_one(pool, monkeypatch):
    """close(interrupted=True): each trial gets its SIGINT before the first is waited for, so they stop beside each
    other within one grace period; each recorded interrupted, none left running."""
    pool, folder, records = pool
    a, b = _plans()
    pool.read(a)
    pool.read(b)
    pids = _start_pids(folder, (a, b))
    seen = []
    for trial_id, live in pool.live.items():
        ask, poll = live.run.ask_to_stop, live.run.poll
        monkeypatch.setattr(live.run, "ask_to_stop", lambda ask=ask, t=trial_id: (seen.append(("ask", t)), ask())[1])
        monkeypatch.setattr(live.run, "poll", lambda *w, poll=poll, t=trial_id: (seen.append(("poll", t)), poll(*w))[1])
    got = pool.close(interrupted=True)
    first_poll = next(i for i, (what, _) in enumerate(seen) if what == "poll")
    assert sorted(seen[:first_poll]) == [("ask", a.trial_id), ("ask", b.trial_id)]
    assert [r.trial_id for r in got] == [a.trial_id, b.trial_id] and records == got
    assert all(r.status == "interrupted" for r in got) and not pool.live
    assert all(_gone(pid) for pid in pids)


def test_a_second_ctrl_c_while_the_pool_waits_kills_every_trial_left(pool, monkeypatch):
    """The second Ctrl-C (raised in the wait for the first trial) kills that one and each after it without waiting
    for them; all recorded interrupted, no process left."""
    pool, folder, records = pool
    a, b = _plans()
    pool.read(a)
    pool.read(b)
    pids = _start_pids(folder, (a, b))
    first = pool.live[a.trial_id].run

    def second_ctrl_c(*_):
        raise KeyboardInterrupt

    killed = []
    monkeypatch.setattr(first, "poll", second_ctrl_c)
    for trial_id, live in pool.live.items():
        kill = live.run.kill
        monkeypatch.setattr(live.run, "kill", lambda kill=kill, t=trial_id: (killed.append(t), kill())[1])
    got = pool.close(interrupted=True)
    assert killed == [a.trial_id, b.trial_id]
    assert [r.status for r in got] == ["interrupted", "interrupted"] and records == got and not pool.live
    assert all(_gone(pid) for pid in pids)


def test_the_pool_keeps_at_most_its_limit_and_ends_the_least_recently_read(tmp_path):
    pool, _, records = _pool(tmp_path, live_limit=1)
    try:
        a, b = _plans()
        pool.read(a)
        pool.read(b)  # a is ended to make room
        assert [r.trial_id for r in records] == [a.trial_id] and pool.holds(b.trial_id) and not pool.holds(a.trial_id)
    finally:
        pool.close()
    assert [r.trial_id for r in records] == [a.trial_id, b.trial_id]


def test_a_snapshot_reads_a_kept_trial_as_ended_in_a_copy_and_leaves_it_built(pool, tmp_path):
    """Issue 56: a walk's current point's row is read over its kept trial's windows so far: the snapshot writes the
    trial's events, utilization and a record saying it still runs into another folder, where the tables read it as a
    finished trial (its window's 2 steady iterations); its own folder gets no record, and it reads its next window."""
    from rlbench import SCHEMA_VERSION
    from rlbench.analysis.tables import build_tables
    from rlbench.results.manifest import Manifest, Software
    from rlbench.run.trial import KEPT_REASON

    pool, folder, records = pool
    a, _ = _plans()
    pool.read(a)
    copy = ResultsFolder(tmp_path / "copy")
    copy.path.mkdir()
    manifest = Manifest(software=Software(schema_version=SCHEMA_VERSION))
    (copy.path / "manifest.json").write_text(manifest.model_dump_json())
    pool.snapshot(a.trial_id, copy.trial(a.trial_id))
    trials = build_tables(copy.path)["trials"].set_index("trial_id")
    assert trials.loc[a.trial_id, "status"] == "ok" and trials.loc[a.trial_id, "reason"] == KEPT_REASON
    assert trials.loc[a.trial_id, "steady_iterations"] == 2
    assert not folder.trial(a.trial_id).record.exists() and records == []
    assert pool.holds(a.trial_id) and pool.read(a).window == 1


def test_the_pool_ends_the_least_recently_read_where_another_would_leave_too_little_memory(tmp_path):
    """Under its limit, the pool still ends a kept trial before launching one that would leave less than
    FREE_RESERVE_BYTES free: the machine's available memory less the largest kept trial's resident memory (its
    sampler's reading of a live process: more than 0 bytes), here exactly the reserve."""
    from rlbench.run.warm import FREE_RESERVE_BYTES

    pool, _, records = _pool(tmp_path, live_limit=5, available_bytes=lambda: FREE_RESERVE_BYTES)
    try:
        a, b = _plans()
        pool.read(a)
        pool.read(b)
        assert [r.trial_id for r in records] == [a.trial_id] and pool.holds(b.trial_id)
    finally:
        pool.close()


def test_with_memory_to_spare_the_pool_keeps_every_trial_up_to_its_limit(tmp_path):
    pool, _, records = _pool(tmp_path, live_limit=5)
    try:
        a, b = _plans()
        pool.read(a)
        pool.read(b)
        assert records == [] and pool.holds(a.trial_id) and pool.holds(b.trial_id)
    finally:
        pool.close()


def test_read_in_turns_reads_window_k_of_every_trial_before_window_k_plus_1_of_any(pool):
    """A sweep's rounds_per_process: two trials of 3 and 2 windows read in turns, the first of a turn rotating
    (a0 b0, b1 a1, a2), each to its record, none left held."""
    from rlbench.run.warm import read_in_turns

    pool, folder, records = pool
    a, b = _plans()
    b = b.model_copy(update={"windows": 2})
    seen = []
    read_in_turns(pool, [a, b], lambda plan, k: seen.append((plan.trial_id, k)))
    assert seen == [(a.trial_id, 0), (b.trial_id, 0), (b.trial_id, 1), (a.trial_id, 1), (a.trial_id, 2)]
    assert sorted(r.trial_id for r in records) == [a.trial_id, b.trial_id] and not pool.live
    assert {r.status for r in records} == {"ok"}
    assert [w for _, _, w in _iterations(folder, b.trial_id)] == [0, 0, 0, 1, 1]


def test_a_sweep_with_rounds_per_process_reads_every_round_from_fewer_processes(tmp_path):
    """rounds 4, 2 a process, two grid points, through the CLI on the plain adapter: 4 trial processes (not 8),
    each with two windows of two steady iterations, every one ok; no trial process left."""
    from conftest import run_cli

    (tmp_path / "s.yaml").write_text(
        "name: w\nframework: plain\nenvironment: {env: envs.synthetic:SyntheticEnv, env_config: {episode_len: 20}}\n"
        "env_runners: {num_env_runners: 0}\ntraining: {train_batch_size_per_learner: 50}\ncpus: 1\n"
        "grid: {env_config.step_cost_us: [0, 100]}\nrounds: 4\nrounds_per_process: 2\nstop: {iterations: 3}\n"
        "warmup_iterations: 1\nsample_hz: 5\nenv_ceiling_s: 0\n"
    )
    done = run_cli("sweep", str(tmp_path / "s.yaml"), "--out", str(tmp_path / "out"))
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "4 repeats (2 a process, as its windows)" in done.stdout
    folder = ResultsFolder(tmp_path / "out")
    import pandas as pd

    trials = pd.read_parquet(folder.table("trials.parquet"))
    assert sorted(trials["trial_id"]) == ["t000r0", "t000r2", "t001r0", "t001r2"] and set(trials["status"]) == {"ok"}
    for tid in trials["trial_id"]:
        assert _iterations(folder, tid) == [(1, True, 0), (2, False, 0), (3, False, 0), (4, False, 1), (5, False, 1)]
    mine = str(tmp_path / "out")  # a trial process names its folder in its argv; other sweeps may run beside
    assert not [p for p in psutil.process_iter(["cmdline"]) if mine in " ".join(p.info["cmdline"] or [])]


def _epochs(folder, trial_id, started_epoch):
    """(the end of its last warm-up iteration, the start of its first measured one), as epochs."""
    its = [e for e in read_events(folder.trial(trial_id).events_file) if e["event"] == "iteration"]
    warm = max(e["t_end_s"] for e in its if e["warmup"])
    first = min(e["t_start_s"] for e in its if not e["warmup"])
    return started_epoch + warm, started_epoch + first


def test_trials_launched_together_measure_nothing_until_both_have_warmed_up(pool):
    """Issue 56: the pool starts two trials together, each up to its first window (the launch gate); neither
    measures a window until both have built and warmed up, so each one's first measured iteration starts after the
    other's last warm-up iteration ended; each window 0 is charged its share of the launch (more than its own
    window) and waited at its gate; the reads then go on as for any kept trial."""
    pool, folder, records = pool
    a, b = _plans()
    assert pool.launch([a, b, a]) == [a.trial_id, b.trial_id]  # each once
    assert pool.holds(a.trial_id) and pool.holds(b.trial_id)
    first_a, first_b = pool.read(a), pool.read(b)
    assert (first_a.window, first_a.read, first_b.window, first_b.read) == (0, True, 0, True)
    assert pool.read(a).window == 1
    pool.close()
    started = {r.trial_id: r.started_epoch for r in records}
    warm_a, measure_a = _epochs(folder, a.trial_id, started[a.trial_id])
    warm_b, measure_b = _epochs(folder, b.trial_id, started[b.trial_id])
    assert measure_a >= warm_b and measure_b >= warm_a
    waits = {
        plan.trial_id: [
            e["waited_s"] for e in read_events(folder.trial(plan.trial_id).events_file) if e["event"] == "window_end"
        ]
        for plan in (a, b)
    }
    assert waits[a.trial_id][0] > 0 and waits[b.trial_id][0] > 0  # each waited at window 0's own gate
    for plan, read in ((a, first_a), (b, first_b)):
        own = sum(
            e["wall_s"]
            for e in read_events(folder.trial(plan.trial_id).events_file)
            if e["event"] == "window_end" and e["window"] == 0
        )
        assert read.charged_s > own  # the launch's share, beside its window


def test_a_launch_fills_the_pool_up_to_its_limit_and_ends_no_kept_trial(tmp_path):
    pool, _, records = _pool(tmp_path, live_limit=2)
    try:
        a, b = _plans()
        c = b.model_copy(update={"trial_id": "t001r1", "repeat": 1})
        pool.read(a)
        assert pool.launch([b, c]) == [b.trial_id]  # room for one: c launches when it is read
        assert records == [] and pool.holds(a.trial_id) and pool.holds(b.trial_id)
    finally:
        pool.close()


def test_a_trial_launched_ahead_and_ended_unread_is_skipped_with_its_reason_and_leaves_no_process(pool):
    """A walk that stops at its budget may end a trial it launched ahead before reading it: it measured nothing, so it
    is recorded skipped, saying why, not ok with no reading."""
    from rlbench.worker.trial import UNREAD_REASON

    pool, folder, records = pool
    a, b = _plans()
    pool.launch([a, b])
    pool.read(a)
    record = pool.retire(b.trial_id)
    assert record is not None and (record.status, record.reason) == ("skipped", UNREAD_REASON)
    pid = next(e["pid"] for e in read_events(folder.trial(b.trial_id).events_file) if e["event"] == "start")
    assert not psutil.pid_exists(pid) or psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    assert pool.holds(a.trial_id) and [r.trial_id for r in records] == [b.trial_id]


def test_a_windows_end_is_polled_often_only_near_when_it_is_due():
    from rlbench.run.warm import DUE_LEAD_S, DUE_POLL_S, due_poll_s

    assert DUE_LEAD_S == 0.3
    assert due_poll_s(10.0, None) is None  # nothing says when: the trial's own interval
    assert due_poll_s(10.0, 12.0) is None  # 2 s early
    assert due_poll_s(11.75, 12.0) == DUE_POLL_S  # 0.25 s before it is due
    assert due_poll_s(12.25, 12.0) == DUE_POLL_S  # 0.25 s late
    assert due_poll_s(12.4, 12.0) is None  # 0.4 s late: a slow window is waited for as before


def test_a_trials_next_window_is_due_after_its_last_ones_length_and_not_after_its_launch(pool):
    pool, _, _ = pool
    a, _ = _plans()
    pool.read(a)  # launched in this read: its gate-to-end holds the launch, so it says nothing of a window
    assert pool.live[a.trial_id].window_s is None
    pool.read(a)
    live = pool.live[a.trial_id]
    assert live.window_s is not None and 0 < live.window_s < a.timeout_s
