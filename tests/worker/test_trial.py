"""The trial process's pure parts: Ray's start-up arguments and error descriptions (no Ray)."""

from __future__ import annotations

from rlbench.measure.machine import MachineInfo
from rlbench.planning.plan import plan_trials
from rlbench.spec.load import spec_from_dict
from rlbench.worker.events import describe_error
from rlbench.worker.runtime import ray_init_kwargs

MACHINE = MachineInfo(
    hostname="h", cpu_model="c", logical_cores=2, physical_cores=2, usable_cores=[0, 1], memory_bytes=2**30, gpus=[]
)


def _plan(**extra):
    data = {"name": "t", "environment": {"env": "envs.tiny:TinyEnv"}, "stop": {"iterations": 2}, **extra}
    return plan_trials(spec_from_dict(data, check_envs=False), MACHINE)[0]


def test_dashboard_off_by_default_and_local_only_when_on():
    off = ray_init_kwargs(_plan())
    assert off["address"] == "local" and off["include_dashboard"] is False
    on = ray_init_kwargs(_plan(ray={"include_dashboard": True}))
    assert on["include_dashboard"] is True and on["dashboard_host"] == "127.0.0.1"
    assert (off["num_cpus"], off["num_gpus"]) == (1, 0)  # 2 cores less the driver's 1


def test_describe_error_names_the_root_cause():
    try:
        try:
            raise ValueError("env exploded at step 7")
        except ValueError as inner:
            raise RuntimeError from inner  # what RLlib's env runner does
    except RuntimeError as outer:
        assert describe_error(outer) == "ValueError: env exploded at step 7 (surfaced as RuntimeError)"
    assert describe_error(KeyError("x")) == "KeyError: 'x'"


def test_event_tail_parses_only_complete_new_lines(tmp_path):
    from rlbench.results.events_file import EventTail, IterationEvent, RayInitEvent, StartEvent

    path = tmp_path / "events.jsonl"
    tail = EventTail(path)
    assert tail.poll() == []  # no file yet
    path.write_bytes(b'{"event": "start"}\n{"event": "ray_')  # the second line is still being written
    assert tail.poll() == [StartEvent(event="start")]
    with open(path, "ab") as f:
        f.write(b'init"}\n[1]\n{"event": "iteration", "iteration": 1}\n')  # a line that is no object is dropped
    assert tail.poll() == [
        StartEvent(event="start"),
        RayInitEvent(event="ray_init"),
        IterationEvent(event="iteration", iteration=1),
    ]
    assert tail.poll() == tail.events and len(tail.events) == 3  # nothing new, nothing parsed twice


class ScriptedTrainer:
    """A Trainer whose metric takes scripted values, one per iteration (the loop's stop rules alone)."""

    def __init__(self, values):
        self.values = list(values)
        self.trained = 0

    def train(self):
        self.trained += 1

    def iteration(self):
        from rlbench.adapters.timings import IterationTimings

        return IterationTimings(env_steps_sampled=10, sample_s=0.0)

    def metric(self, name):
        assert name == "episode_return_mean"
        return self.values[self.trained - 1]


def _train(tmp_path, stop, values):
    from rlbench.worker.events import EventLog
    from rlbench.worker.trial import _train as train

    plan = _plan(stop=stop, warmup_iterations=1)
    events = EventLog(tmp_path / "events.jsonl", 0.0)
    trainer = ScriptedTrainer(values)
    train(plan, trainer, events)
    events.close()
    from rlbench.results.files import read_events

    return trainer.trained, read_events(tmp_path / "events.jsonl")


def test_training_stops_at_the_first_iteration_that_reaches_the_target(tmp_path):
    # NaN (no episode ended) never reaches; warm-up iterations count (the target may be met in iteration 1).
    trained, events = _train(tmp_path, {"iterations": 10, "episode_return_mean": 5}, [None, 4.0, 5.0, 9.0])
    assert trained == 3
    its = [e for e in events if e["event"] == "iteration"]
    assert [e["target_value"] for e in its] == [None, 4.0, 5.0]
    reached = [e for e in events if e["event"] == "target_reached"]
    assert [(e["iteration"], e["value"], e["threshold"], e["mode"]) for e in reached] == [(3, 5.0, 5.0, "at_least")]
    trained, _ = _train(
        tmp_path / "x" if (tmp_path / "x").mkdir() is None else None,
        {"iterations": 10, "episode_return_mean": 1},
        [1.0],
    )
    assert trained == 1


def test_lower_is_better_target_and_the_iteration_limit(tmp_path):
    (tmp_path / "a").mkdir()
    trained, events = _train(tmp_path / "a", {"iterations": 10, "episode_return_mean": {"at_most": 2}}, [5, 3, 2.5, 2])
    assert trained == 4
    (tmp_path / "b").mkdir()
    trained, events = _train(tmp_path / "b", {"iterations": 3, "episode_return_mean": 100}, [1, 2, 3, 4])
    assert trained == 3 and not [e for e in events if e["event"] == "target_reached"]


def test_describe_error_starts_where_from_none_cuts_the_chain():
    try:
        try:
            raise ConnectionError("socket closed")
        except ConnectionError:
            raise RuntimeError("node lost: n1 died while it ran (ConnectionError: socket closed)") from None
    except RuntimeError as e:
        assert describe_error(e) == "RuntimeError: node lost: n1 died while it ran (ConnectionError: socket closed)"


def test_a_plan_it_cannot_read_fails_the_trial_with_one_line(tmp_path):
    """The trial process reads its plan inside its error handling (issue 42): a plan.json another rlbench wrote
    (here: learner_gpus beside a num_gpus_per_learner that says otherwise) fails that trial with one line in its
    error event, and the sweep's verdict is that line; before, the process died with a traceback in its log."""
    import json
    import subprocess
    import sys

    from conftest import REPO

    from rlbench.planning.plan import write_plan
    from rlbench.results.layout import ResultsFolder, TrialFolder
    from rlbench.run.verdict import verdict

    plan = _plan()
    trial = write_plan(ResultsFolder(tmp_path), plan)
    data = json.loads(trial.plan.read_text())
    data["config"]["learners"].update({"learner_gpus": 1, "num_gpus_per_learner": 0.5})
    trial.plan.write_text(json.dumps(data))
    done = subprocess.run(
        [sys.executable, "-m", "rlbench.worker.trial", str(trial.path), "0.0"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 1 and done.stdout == "" and done.stderr == ""  # its output goes to its log alone
    events = [json.loads(line) for line in trial.events_file.read_text().splitlines()]
    assert [e["event"] for e in events] == ["start", "error", "end"] and events[-1]["status"] == "failed"
    error = events[1]["error"]
    assert error == (
        f"PlanError: {trial.plan} is not a plan this rlbench reads: config.learners: learner_gpus=1 "
        "(old name num_gpus) means num_gpus_per_learner=1, but num_gpus_per_learner=0.5 is set too: keep one"
    )
    assert verdict(plan, TrialFolder(trial.path), 1, False) == ("failed", error)


def test_a_warm_trial_reads_its_windows_after_each_gate_and_stops_when_told(tmp_path):
    """Issue 56: the warm-up once inside window 0, then each window's steady iterations only after its gate; a
    stop gate ends it with the trainer never trained again."""
    import threading
    import time

    from rlbench.results.files import read_events
    from rlbench.results.layout import TrialFolder
    from rlbench.worker.events import EventLog
    from rlbench.worker.trial import _train_windows

    folder = TrialFolder(tmp_path)
    plan = _plan(stop={"iterations": 3}, warmup_iterations=1).model_copy(update={"windows": 3, "window_iterations": 2})
    events = EventLog(folder.events_file, 0.0)
    trainer = ScriptedTrainer([0.0] * 10)
    seen = []

    def sweep():  # the sweep's side: window 1 after window 0 ended, then stop before window 2
        while not any(e["event"] == "window_end" for e in read_events(folder.events_file)):
            time.sleep(0.01)
        seen.append(trainer.trained)  # paused: nothing trains until the gate
        time.sleep(0.1)
        seen.append(trainer.trained)
        folder.window_gate(1).touch()
        while sum(e["event"] == "window_end" for e in read_events(folder.events_file)) < 2:
            time.sleep(0.01)
        folder.window_gate("stop").touch()

    helper = threading.Thread(target=sweep)
    helper.start()
    folder.window_gate(0).touch()  # opened before the launch (the pool's read of a new trial)
    assert _train_windows(plan, trainer, events, folder)
    helper.join()
    events.close()
    got = read_events(folder.events_file)
    its = [(e["iteration"], e["warmup"], e["window"]) for e in got if e["event"] == "iteration"]
    assert its == [(1, True, 0), (2, False, 0), (3, False, 0), (4, False, 1), (5, False, 1)]
    ends = [(e["window"], e["iterations"]) for e in got if e["event"] == "window_end"]
    assert ends == [(0, 2), (1, 2)] and seen == [3, 3] and trainer.trained == 5


def test_a_trial_launched_ahead_warms_up_then_waits_for_window_0_and_a_stop_there_reads_nothing(tmp_path):
    """Issue 56's launch ahead (run/warm.py): after the launch gate the trial warms up, then waits for window 0's own
    gate, measuring nothing; a stop gate there ends it with no window (False: the trial is recorded skipped)."""
    import threading
    import time

    from rlbench.results.files import read_events
    from rlbench.results.layout import LAUNCH_GATE, TrialFolder
    from rlbench.worker.events import EventLog
    from rlbench.worker.trial import _train_windows, wait_for_window

    folder = TrialFolder(tmp_path)
    plan = _plan(stop={"iterations": 3}, warmup_iterations=1).model_copy(update={"windows": 3, "window_iterations": 2})
    folder.window_gate(LAUNCH_GATE).touch()
    assert wait_for_window(folder, 0, launch=True) == (True, 0.0)  # _run's gate before the runtime starts
    events = EventLog(folder.events_file, 0.0)
    trainer = ScriptedTrainer([0.0] * 10)
    seen = []

    def sweep():
        while not any(e["event"] == "iteration" for e in read_events(folder.events_file)):
            time.sleep(0.01)
        time.sleep(0.2)
        seen.append(trainer.trained)  # warmed up, waiting: window 0 not measured without its gate
        folder.window_gate("stop").touch()

    helper = threading.Thread(target=sweep)
    helper.start()
    assert not _train_windows(plan, trainer, events, folder)
    helper.join()
    events.close()
    got = read_events(folder.events_file)
    assert [(e["iteration"], e["warmup"]) for e in got if e["event"] == "iteration"] == [(1, True)]
    assert seen == [1] and not [e for e in got if e["event"] == "window_end"]


def test_a_ctrl_c_before_the_trials_first_event_leaves_no_traceback(tmp_path):
    """The sweep's Ctrl-C reached a trial process inside its set-up (``_die_with_parent``'s ctypes, before its output
    went to its log): multiprocessing printed the KeyboardInterrupt's traceback on the sweep's stderr (CI, 2026-11-30,
    the interrupts e2e). Raised there on purpose (a count-triggered fault): exit 1, nothing on stdout or stderr."""
    import subprocess
    import sys

    from conftest import REPO

    from rlbench.planning.plan import write_plan
    from rlbench.results.layout import ResultsFolder

    trial = write_plan(ResultsFolder(tmp_path), _plan())
    code = (
        "import sys, rlbench.worker.trial as t\n"
        "def interrupted():\n    raise KeyboardInterrupt\n"
        "t._die_with_parent = interrupted\n"
        "t.exit_now(t.main(sys.argv[1], 0.0))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code, str(trial.path)], cwd=REPO, capture_output=True, text=True, timeout=120
    )
    assert (done.returncode, done.stdout, done.stderr) == (1, "", "")
    assert not trial.events_file.exists()  # no event: the sweep's own record of it stands
