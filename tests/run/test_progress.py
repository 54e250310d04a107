"""The sweep's progress and ETA: learnt from hand-made trial durations, skipped trials left out."""

from __future__ import annotations

import io

import pytest
from rich.console import Console

from rlbench.measure.machine import MachineInfo
from rlbench.planning.plan import plan_trials
from rlbench.results.events_file import TrialEvent, parse_event
from rlbench.results.records import TrialRecord
from rlbench.run.progress import (
    FIRST_GUESS_END_S,
    EtaEstimator,
    ParallelProgress,
    SweepProgress,
    TrialTiming,
    TrialWork,
    clock,
)
from rlbench.spec.load import spec_from_dict

FOUR = TrialWork(iterations=4, seconds=None)


def test_no_estimate_before_the_first_iteration():
    eta = EtaEstimator()
    assert eta.remaining_s([FOUR, FOUR]) is None
    assert eta.remaining_s([FOUR], running=FOUR, elapsed_s=30.0) is None
    assert eta.remaining_s([]) == 0.0


def test_first_guess_from_the_running_trials_cold_start_and_iterations():
    # running: cold start 10 s, 2 of 4 iterations done at 1 s each; 2 more queued like it
    eta = EtaEstimator().remaining_s(
        [FOUR, FOUR], running=FOUR, elapsed_s=12.0, running_iteration_s=(1.0, 1.0), running_start_s=10.0
    )
    assert eta == (2 * 1.0 + FIRST_GUESS_END_S) + 2 * (10.0 + 4 * 1.0 + FIRST_GUESS_END_S)


def test_learns_cold_start_iterations_and_shutdown_from_finished_trials():
    eta = EtaEstimator()
    eta.add(TrialTiming(start_s=10.0, iteration_s=(1.0, 1.0, 1.0, 1.0), end_s=2.0))
    eta.add(TrialTiming(start_s=6.0, iteration_s=(3.0, 3.0, 3.0, 3.0), end_s=4.0))
    eta.add(TrialTiming(start_s=99.0, iteration_s=(), end_s=99.0))  # failed before iterating: ignored
    # mean cold start 8, mean per-iteration 2 (each trial's mean counts once), mean shutdown 3
    assert eta.remaining_s([FOUR]) == 8.0 + 4 * 2.0 + 3.0
    # the running trial 5 s into its turn, no iteration yet: 3 s of cold start left
    assert eta.remaining_s([], running=FOUR, elapsed_s=5.0) == 3.0 + 8.0 + 3.0
    # ... and past the usual cold start: none left, not a negative one
    assert eta.remaining_s([], running=FOUR, elapsed_s=20.0) == 8.0 + 3.0
    # once it iterates, its own pace predicts its remaining iterations
    assert eta.remaining_s([], running=FOUR, elapsed_s=20.0, running_iteration_s=(5.0,)) == 3 * 5.0 + 3.0


def test_a_seconds_limit_is_passed_by_up_to_one_iteration():
    assert TrialWork(iterations=None, seconds=10.0).training_s(2.0) == 12.0
    assert TrialWork(iterations=3, seconds=10.0).training_s(2.0) == 6.0
    assert TrialWork(iterations=30, seconds=10.0).training_s(2.0) == 12.0


def test_clock():
    assert (clock(None), clock(0), clock(65.4), clock(3725)) == ("?", "0:00:00", "0:01:05", "1:02:05")


class FakeClock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def _old_ppo_cpu_plans():
    """The old configs/ppo_cpu.yaml grid on 2 cores: 16 trials, 14 of them skipped."""
    data = {
        "name": "t",
        "environment": {"env": "CartPole-v1"},
        "stop": {"iterations": 8},
        "repeats": 2,
        "grid": {"num_env_runners": [1, 2, 4, 8], "num_cpus_for_main_process": [1, 2]},
    }
    machine = MachineInfo("test", "fake", 2, 2, [0, 1], 2**34, [])
    return plan_trials(spec_from_dict(data, check_envs=False), machine)


def _events(start_s: float, iteration_s: float, n: int) -> list[TrialEvent]:
    build = {"event": "build"}
    its = [
        {
            "event": "iteration",
            "iteration": i + 1,
            "t_start_s": start_s + i * iteration_s,
            "t_end_s": start_s + (i + 1) * iteration_s,
        }
        for i in range(n)
    ]
    return [parse_event(e) for e in [build, *its]]


def test_a_sweep_with_skipped_trials_counts_and_times_only_the_ones_that_run():
    plans = _old_ppo_cpu_plans()
    assert sum(p.skip_reason is None for p in plans) == 2
    out, now = io.StringIO(), FakeClock()
    progress = SweepProgress(Console(file=out, width=300), plans, clock_s=now)
    assert [p.trial_id for p in progress.plans] == ["t000r0", "t000r1"]
    assert sum(progress.per_trial.values()) == 16  # 2 trials x 8 iterations, not 16 x 8
    with progress:
        first, second = progress.plans
        progress.start(first)
        assert progress._eta_text() == "after the first iteration"
        now.now = 12.0  # cold start 10 s, two 1-s iterations so far: the first guess
        progress.poll(first, _events(10.0, 1.0, 2))
        assert progress.eta_s() == pytest.approx(6 * 1.0 + FIRST_GUESS_END_S + 10.0 + 8 * 1.0 + FIRST_GUESS_END_S)
        now.now = 20.0  # 8 iterations, then 2 s to the verdict
        progress.poll(first, _events(10.0, 1.0, 8))
        progress.finish(first, TrialRecord(trial_id="t000r0", status="ok"))
        assert progress.eta_s() == pytest.approx(10.0 + 8.0 + 2.0)
        progress.start(second)
        now.now = 25.0
        progress.poll(second, [])
        assert progress.eta_s() == pytest.approx(5.0 + 8.0 + 2.0)
        now.now = 40.0
        progress.poll(second, _events(10.0, 1.0, 8))
        progress.finish(second, TrialRecord(trial_id="t000r1", status="ok"))
        assert progress.eta_s() == 0.0
    lines = out.getvalue().splitlines()
    assert lines == [
        "running 2 trials; one line each as it finishes",
        "[1/2] t000r0 num_env_runners=1, num_cpus_for_main_process=1: ok, 8 iterations in 20.0 s; "
        "sweep 0:00:20 elapsed, ETA 0:00:20",
        "[2/2] t000r1 num_env_runners=1, num_cpus_for_main_process=1: ok, 8 iterations in 20.0 s; "
        "sweep 0:00:40 elapsed, ETA 0:00:00",
    ]


def test_in_a_terminal_the_bar_counts_only_trials_that_run():
    out = io.StringIO()
    console = Console(file=out, force_terminal=True, force_interactive=True, width=200)
    progress = SweepProgress(console, _old_ppo_cpu_plans(), clock_s=FakeClock())
    assert progress.progress is not None
    assert progress.progress.tasks[0].total == 16
    assert progress.progress.tasks[0].fields["eta"] == "after the first iteration"


def test_the_eta_of_a_parallel_sweep_spreads_the_work_over_the_trials_running():
    data = {"name": "t", "environment": {"env": "CartPole-v1"}, "stop": {"iterations": 4}, "repeats": 4}
    plans = plan_trials(spec_from_dict(data, check_envs=False), MachineInfo("test", "fake", 2, 2, [0, 1], 2**34, []))
    out, now = io.StringIO(), FakeClock()
    progress = ParallelProgress(Console(file=out, width=300), plans, clock_s=now)
    with progress:
        a, b, c, d = progress.plans
        progress.start(a)
        progress.start(b)
        now.now = 12.0  # both: cold start 10 s, two 1-s iterations so far
        progress.poll(a, _events(10.0, 1.0, 2))
        progress.poll(b, _events(10.0, 1.0, 2))
        # each running one: 2 more iterations + the first guess's end; the 2 queued: 10 + 4 + end each, spread
        # over the 2 running
        one = 2.0 + FIRST_GUESS_END_S
        assert progress.eta_s() == pytest.approx((2 * one + 2 * (10.0 + 4.0 + FIRST_GUESS_END_S)) / 2)
        now.now = 16.0
        progress.poll(a, _events(10.0, 1.0, 4))
        progress.finish(a, TrialRecord(trial_id=a.trial_id, status="ok"))  # learnt: start 10, 1 s/it, end 2
        progress.start(c)
        # b alone runs now (10 + 4 + 2 expected, 16 s in: nothing left but its end), c just started, d queued
        # b: 2 of 4 iterations seen at 1 s each, 2 left + its end 2; c: 10 + 4 + 2; d queued: 16; over 2 running
        assert progress.eta_s() == pytest.approx((4.0 + 16.0 + 16.0) / 2)
    assert out.getvalue().splitlines()[-1].startswith("[1/4] t000r0 ")
    assert "ok, 4 iterations in 16.0 s; 1 running; sweep 0:00:16 elapsed, ETA 0:00:18" in out.getvalue()
