"""What a configuration's verdicts ask for next (rlbench.analysis.next_step.advise), on hand-made rows: the knob's
values that fit, or why there is none (no verdict names a knob; no larger value fits the trial's cores)."""

from __future__ import annotations

from verdict_rows import SHORT

from rlbench.analysis.next_step import advise


def test_a_knob_with_room_gives_its_values_around_the_current_one():
    advice = advise(SHORT)
    assert advice.stop is None and advice.step is not None
    step = advice.step
    # 4 cores, the env runner keeps 1: the driver may hold 1..3; half/same/twice/four times of 1 within that
    assert (step.index, step.knob, step.current, step.values) == (3, "num_cpus_for_main_process", 1, (1, 2))
    assert advice.reason == step.verdict.text and "short of threads" in advice.reason


def test_no_larger_value_that_fits_is_no_step_and_says_so():
    # 2 cores: the env runner holds 1, so the driver can hold 1 at most, which it has: the verdict stands, no value fits
    advice = advise({**SHORT, "cpus": 2})
    assert (advice.step, advice.stop) == (None, "no_fit")
    assert "no larger num_cpus_for_main_process than 1 fits the trial's 2 cores" in advice.reason


def test_no_verdict_no_step():
    sampling = {**SHORT, "learn_frac": 0.2, "sample_frac": 0.75}  # the CPU learner does not limit the iteration
    advice = advise(sampling)
    assert (advice.step, advice.stop, advice.reason) == (None, "no_knob", "no verdict names a knob")


def test_a_blocked_verdict_is_passed_for_the_next_that_has_a_step(monkeypatch):
    """issue 57: on 2 cores the driver's CPUs have no larger value that fits; the next verdict (envs a runner, with
    room) is the step, as the walk follows it; :func:`advices` keeps both, in order, each with why."""
    from rlbench.analysis import next_step
    from rlbench.analysis.findings import Verdict

    short = Verdict("short of threads", "the learner's one thread is busy", "num_cpus_for_main_process")
    envs = Verdict("per-step work-bound", "the forward pass dominates", "num_envs_per_env_runner")
    monkeypatch.setattr(next_step, "verdicts_in_order", lambda row: [short, envs])
    row = {**SHORT, "cpus": 2, "num_envs_per_env_runner": 1, "num_env_runners": 1, "total_train_batch_size": 400}
    options = next_step.advices(row)
    assert [(a.stop, a.verdict.knob, a.current) for a in options] == [
        ("no_fit", "num_cpus_for_main_process", 1.0),
        (None, "num_envs_per_env_runner", 1.0),
    ]
    advice = advise(row)
    assert advice.step.knob == "num_envs_per_env_runner" and advice.step.values == (1, 2, 4, 8)


#: issue 57's learner_wide start, as a 1-runner row: the CPU learner 71% of each iteration with its one thread busy,
#: sampling 28% (a runner's sample() 0.44 s: the env 0.02 s, the forward pass 0.20 s, RLlib's per-step work 0.22 s),
#: on 2 cores where the runner holds 1: no larger driver's CPUs fit.
LEARNER_BOUND = {
    **SHORT,
    "cpus": 2,
    "learn_frac": 0.71,
    "sample_frac": 0.28,
    "num_env_runners": 1,
    "num_envs_per_env_runner": 1,
    "num_cpus_per_env_runner": 1.0,
    "total_train_batch_size": 1000,
    "runner_sample_s": 0.44,
    "runner_sample_cpu_s": 0.43,
    "runner_env_s": 0.02,
    "runner_inference_s": 0.20,
    "runner_other_s": 0.22,
}


def test_the_other_sides_verdicts_follow_a_blocked_limiting_side():
    """issue 57: learning limits the iteration (71%) and its one knob does not fit; sampling's 28% (at least
    OTHER_SIDE_FRAC, a quarter) has its verdicts read after it, and the step is the sampler's."""
    from rlbench.analysis.next_step import advices

    options = advices(LEARNER_BOUND)
    assert [(a.stop, a.verdict.knob) for a in options][:2] == [
        ("no_fit", "num_cpus_for_main_process"),
        (None, "num_envs_per_env_runner"),
    ]
    advice = advise(LEARNER_BOUND)
    assert advice.step.knob == "num_envs_per_env_runner" and advice.step.values == (1, 2, 4, 8)


def test_an_other_side_under_a_quarter_of_the_iteration_is_not_read():
    """At 24% sampling (halving it would shorten the iteration by 12%) the limiting side's stop stands."""
    advice = advise({**LEARNER_BOUND, "learn_frac": 0.75, "sample_frac": 0.24})
    assert (advice.step, advice.stop) == (None, "no_fit")
