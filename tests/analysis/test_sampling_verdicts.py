"""Why sampling is slow (rlbench.analysis.sampling) and what a configuration's verdicts ask for next
(rlbench.analysis.next_step), on hand-made configuration rows: each sampler verdict's trigger, the learner's "starved"
verdict deferring to it, the cores as the limit, and the ceiling composed from an env's and a learner's rates."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from rlbench.analysis.findings import learner_verdicts, verdict
from rlbench.analysis.labels import Kind
from rlbench.analysis.next_step import advices, advise, knob_values, knob_verdicts, next_sweep
from rlbench.analysis.runners import split_columns
from rlbench.analysis.sampling import ceiling_text, compose_ceiling, sampler_verdicts
from rlbench.analysis.trial_rows import add_ceiling_columns

#: Issue 49's Breakout trial at minibatch 1024 on an H200 (16 cores): 12 runners x 1 env, the driver's 3 CPUs and the
#: learner on the GPU; sampling 58% of each iteration; a runner's sample() 1.89 s, all of it on a CPU: the env 0.76 s,
#: the forward pass 0.67 s, the rest 0.46 s; the driver waited 0.33 s more; 1,838 env steps/s sampled against the
#: env's own 6,417/s in 12 processes.
BREAKOUT = {
    "index": 2,
    "env_steps_per_s": 1282.0,
    "sample_frac": 0.58,
    "learn_frac": 0.35,
    "sync_frac": 0.04,
    "other_frac": 0.03,
    "cpus": 16,
    "num_env_runners": 12,
    "num_envs_per_env_runner": 1,
    "num_cpus_per_env_runner": 1.0,
    "num_learners": 0,
    "learner_gpus": 1.0,
    "num_cpus_for_main_process": 3,
    "driver_cpus_allocated": 3.0,
    "env_runner_cpus_allocated": 12.0,
    "total_train_batch_size": 4000,
    "runner_sample_s": 1.89,
    "runner_sample_cpu_s": 1.89,
    "runner_env_s": 0.76,
    "runner_inference_s": 0.67,
    "runner_other_s": 0.46,
    "sample_wait_s": 0.33,
    "sample_steps_per_s": 1838.0,
    "env_ceiling_steps_per_s": 6417.0,
    "sampling_efficiency": 1838.0 / 6417.0,
}

#: A busy runner in a 1 ms env on a 2-core trial: 1 runner of 0.5 CPU beside the driver's 1 (room for 2 runners).
ENV_BOUND = {
    **BREAKOUT,
    "index": 0,
    "env_steps_per_s": 400.0,
    "sample_frac": 0.8,
    "learn_frac": 0.15,
    "learner_gpus": 0.0,
    "cpus": 2,
    "num_env_runners": 1,
    "num_cpus_per_env_runner": 0.5,
    "num_cpus_for_main_process": 1,
    "driver_cpus_allocated": 1.0,
    "env_runner_cpus_allocated": 0.5,
    "runner_sample_s": 1.2,
    "runner_sample_cpu_s": 1.18,
    "runner_env_s": 1.0,
    "runner_inference_s": 0.1,
    "runner_other_s": 0.1,
    "sample_wait_s": 0.05,
    "sample_steps_per_s": 800.0,
    "env_ceiling_steps_per_s": 950.0,
    "sampling_efficiency": 800.0 / 950.0,
}


def test_runners_busy_mostly_outside_the_env_ask_for_more_envs_per_runner_then_more_runners():
    v, more = sampler_verdicts(BREAKOUT)
    assert (v.kind, v.knob) == (Kind.INFERENCE_BOUND, "num_envs_per_env_runner")
    # 12 runners of 1 CPU beside the driver's 3 on 16 cores: one more fits, followed once more envs stop paying
    assert (more.kind, more.knob) == (Kind.INFERENCE_BOUND, "num_env_runners")
    assert "(60% of a runner's time): more env runners (num_env_runners, now 12; up to 13 fit" in more.text
    assert "cores idle" not in more.text  # no CPU use measured: nothing said of idle cores
    (alone,) = sampler_verdicts({**BREAKOUT, "cpus": 15})  # no room: envs per runner alone
    assert alone.knob == "num_envs_per_env_runner"
    busy = {**BREAKOUT, "cpus_used": 15.0}  # every core busy: more runners would share them
    assert [w.knob for w in sampler_verdicts(busy)] == ["num_envs_per_env_runner"]
    idle = sampler_verdicts({**BREAKOUT, "cpus_used": 9.5})[1].text
    assert "6.50 of the trial's 16 cores idle" in idle
    for evidence in (
        "a runner's sample() took 1.89 s an iteration (1.89 s of it on a CPU)",
        "the env 0.76 s, the forward pass 0.67 s, RLlib's other per-step work (connectors, episode bookkeeping) 0.46 s",
        "60% of a runner's time is not the env",
        "sampling ran at 1,838 env steps/s, 29% of the env's own rate in 12 processes (6,417/s",
        "now 1",
    ):
        assert evidence in v.text
    # the rest dearer than the forward pass: the same knob, named for what dominates
    w, _ = sampler_verdicts({**BREAKOUT, "runner_inference_s": 0.3, "runner_other_s": 0.83})
    assert (w.label, w.knob) == ("per-step work-bound", "num_envs_per_env_runner")


def test_the_starved_learner_names_no_knob_and_the_sampler_verdict_leads():
    (starved,) = learner_verdicts(BREAKOUT)
    assert starved.label == "learner starved" and starved.knob is None
    assert "num_env_runners" not in starved.text and "the sampler's verdict" in starved.text
    assert [v.knob for v in knob_verdicts(BREAKOUT)] == ["num_envs_per_env_runner", "num_env_runners"]
    advice = advise(BREAKOUT)
    assert advice.stop is None and advice.step.knob == "num_envs_per_env_runner"
    assert (advice.step.index, advice.step.current, advice.step.values) == (2, 1, (1, 2, 4, 8))
    label, findings = verdict(BREAKOUT, sampler_verdicts(BREAKOUT))
    assert label == "sampling-bound, inference-bound, learner starved"
    assert findings.index(advice.reason) < findings.index(starved.text)


def test_runners_busy_in_the_env_with_room_ask_for_more_env_runners():
    (v,) = sampler_verdicts(ENV_BOUND)
    assert (v.label, v.knob) == ("env-bound", "num_env_runners")
    assert "mostly in the env: 83% of a runner's sample()" in v.text
    assert "now 1; up to 2 fit the trial's 2 cores beside the other roles" in v.text
    assert "84% of the env's own rate in 1 process (950/s" in v.text
    advice = advise(ENV_BOUND)
    assert (advice.step.knob, advice.step.values) == ("num_env_runners", (1, 2))


def test_runners_in_the_env_without_room_say_the_cores_are_the_limit_and_name_no_knob():
    full = {**ENV_BOUND, "num_cpus_per_env_runner": 1.0, "env_runner_cpus_allocated": 1.0}
    (v,) = sampler_verdicts(full)
    assert (v.label, v.knob) == (Kind.CORES_LIMIT, None)
    assert "no more env runners than 1 fit the trial's 2 cores" in v.text and "cores are the limit" in v.text
    advice = advise(full)
    assert (advice.step, advice.stop) == (None, "cores_limit") and "this machine's cores are the limit" in advice.reason
    assert next_sweep(pd.DataFrame([full])) is None  # no next.yaml with a value that cannot fit
    # room by the allocation, but a runner on every core at the env's own ceiling: still the cores
    packed = {**ENV_BOUND, "num_env_runners": 2, "env_runner_cpus_allocated": 1.0, "num_cpus_for_main_process": 0}
    packed.update(driver_cpus_allocated=0.0, sampling_efficiency=0.9)
    assert [v.label for v in sampler_verdicts(packed)] == [Kind.CORES_LIMIT]
    assert "with a runner on each of the trial's 2 cores" in sampler_verdicts(packed)[0].text
    assert [v.label for v in sampler_verdicts({**packed, "sampling_efficiency": 0.5})] == ["env-bound"]


def test_runners_without_room_and_idle_cores_say_the_reservation_is_the_limit_not_the_cores():
    """Issue 57's env_waits_wide: 4 runners of a quarter CPU beside the driver's 1 fill the trial's 2 CPUs, while its
    roles keep 0.9 of its 2 cores busy: the reservation, not the cores' work, stops more runners."""
    full = {**ENV_BOUND, "num_cpus_per_env_runner": 1.0, "env_runner_cpus_allocated": 1.0, "cpus_used": 0.9}
    (v,) = sampler_verdicts(full)
    assert (v.kind, v.knob) == (Kind.CORES_LIMIT, None) and "cores are the limit" not in v.text
    assert "the trial's reservation is the limit, not its cores' work (its roles kept 0.90 of its 2 cores" in v.text
    assert "a smaller num_cpus_per_env_runner (now 1) lets more runners in" in v.text
    assert advise(full).stop == "cores_limit"  # the walk stops there as before: no knob named
    busy = {**full, "cpus_used": 1.9}  # every core busy: the cores are the limit
    assert "this machine's cores are the limit" in sampler_verdicts(busy)[0].text


def test_the_issue_49_case_proposes_no_runner_that_cannot_fit():
    """Busy in the env (the same trial with a dearer env): 12 runners and the driver's 3 CPUs hold 15 cores. 31% of a
    runner's sample() is the forward pass and RLlib's per-step work: more envs per runner first (issue 57), then the
    cores' limit; no runner that cannot fit either way."""
    in_env = {**BREAKOUT, "cpus": 15, "runner_env_s": 1.3, "runner_inference_s": 0.3, "runner_other_s": 0.29}
    shared, v = sampler_verdicts(in_env)
    assert (shared.label, shared.knob) == ("shared work at the cores limit", "num_envs_per_env_runner")
    assert "31% of it is the forward pass and RLlib's per-step work" in shared.text
    assert v.label == Kind.CORES_LIMIT and "no more env runners than 12 fit the trial's 15 cores" in v.text
    assert all(k.knob != "num_env_runners" for k in knob_verdicts(in_env))
    assert advise(in_env).step.knob == "num_envs_per_env_runner"
    assert [a.stop for a in advices(in_env)] == [None, "cores_limit"]
    # the env 90% of it: the shared work is small, the cores are the limit alone
    dear = {**in_env, "runner_env_s": 1.7, "runner_inference_s": 0.1, "runner_other_s": 0.09}
    assert [v.label for v in sampler_verdicts(dear)] == [Kind.CORES_LIMIT] and advise(dear).stop == "cores_limit"
    # on 16 cores one more fits: the sweep holds it, and nothing past it; more envs a runner after it
    w, too = sampler_verdicts({**in_env, "cpus": 16})
    assert w.label == "env-bound" and "up to 13 fit" in w.text
    assert (too.label, too.knob) == (Kind.SHARED_WORK_TOO, "num_envs_per_env_runner")
    assert advise({**in_env, "cpus": 16}).step.values == (6, 12, 13)


def test_issue_57s_cores_limit_case_names_more_envs_per_runner_first():
    """A 1.5 ms env, 1 runner of 1 CPU beside the driver's 1 on 2 cores: the env 1.58 s, the forward pass 0.183 s,
    RLlib's other per-step work 0.669 s of a 2.43 s sample() (35% outside the env): more envs per runner, 1 -> 2, 4, 8
    while each env keeps a step of the 500-step batch; the cores' limit said after it."""
    row = {**ENV_BOUND, "num_cpus_per_env_runner": 1.0, "env_runner_cpus_allocated": 1.0}
    row.update(runner_sample_s=2.43, runner_sample_cpu_s=2.43, runner_env_s=1.58, runner_inference_s=0.183)
    row.update(runner_other_s=0.669, total_train_batch_size=500)
    shared, limit = sampler_verdicts(row)
    assert shared.knob == "num_envs_per_env_runner" and "35% of it is the forward pass" in shared.text
    assert "now 1)" in shared.text and limit.label == Kind.CORES_LIMIT
    assert advise(row).step.values == (1, 2, 4, 8)


def test_a_blocked_verdict_is_passed_for_the_next_that_has_a_step():
    """issue 57: the first knob-naming verdict with no larger value that fits does not decide alone."""
    row = {**ENV_BOUND, "num_cpus_per_env_runner": 1.0, "env_runner_cpus_allocated": 1.0, "total_train_batch_size": 1}
    row.update(
        runner_env_s=1.2, runner_inference_s=0.4, runner_other_s=0.4, runner_sample_s=2.0, runner_sample_cpu_s=2.0
    )
    options = advices(row)
    assert [a.stop for a in options] == ["no_fit", "cores_limit"]  # one env a step of a 1-step batch: no larger fits
    assert options[0].verdict.knob == "num_envs_per_env_runner" and options[0].current == 1.0
    assert advise(row).stop == "no_fit" and "but no larger num_envs_per_env_runner than 1" in advise(row).reason


def test_a_driver_waiting_on_a_straggler_names_it():
    straggling = {
        **ENV_BOUND,
        "num_env_runners": 2,
        "env_runner_cpus_allocated": 1.0,
        "runner_sample_s": 2.0,
        "runner_sample_cpu_s": 1.95,
        "runner_env_s": 1.7,
        "sample_wait_s": 1.0,
        "straggler_env_runner": 2,
        "straggler_step_ratio": 3.0,
        "straggler_wait_s": 0.9,
    }
    waits, busy = sampler_verdicts(straggling)
    assert (waits.label, waits.knob) == ("waits on a straggler", None)
    assert "it waited 0.9 s an iteration on a straggler, env runner 2 (3.0x the others' time per env step" in waits.text
    assert "after the others were done: 30% of its sampling time" in waits.text
    assert busy.label == Kind.CORES_LIMIT  # 2 runners of 0.5 beside the driver's 1 fill the 2 cores
    # a straggler is named whatever the share (under load, issue 49's planted one: the driver waited 23%)
    assert sampler_verdicts({**straggling, "sample_wait_s": 0.5})[0].label == "waits on a straggler"
    # no straggler by the rule: the slowest runner and the transfer, from a quarter of the driver's sampling on
    no_straggler = {**straggling, "straggler_env_runner": None, "straggler_wait_s": None}
    (transfer, _) = sampler_verdicts(no_straggler)
    assert (
        transfer.label == "waits on transfer"
        and "it waited 1 s an iteration beyond a runner's own sample()" in transfer.text
    )
    assert "33% of its sampling time" in transfer.text and "episodes' transfer" in transfer.text
    assert sampler_verdicts({**no_straggler, "sample_wait_s": 0.5})[0].label == Kind.CORES_LIMIT  # 20%: under it


def test_runners_off_their_cpu_wait_for_a_core_or_for_their_env():
    # every part of sample() off the CPU alike (the env 42% on it, the rest 40%): they wait for a core
    idle = {**ENV_BOUND, "runner_sample_cpu_s": 0.5, "runner_env_cpu_s": 0.42, "cpus_used": 1.95}
    waits, split = sampler_verdicts(idle)
    assert (waits.label, waits.knob) == ("waits for a core", None) and "on a CPU 42% of it" in waits.text
    assert "the trial's own roles kept 1.95 of its 2 cores busy" in waits.text
    assert split.label == Kind.CORES_LIMIT and "more runners would share them" in split.text  # its own cores, all busy
    # the trial's own roles leave its cores idle: others took them; the split's verdict still follows
    waits, split = sampler_verdicts({**idle, "cpus_used": 0.9})
    assert "processes outside it took them" in waits.text and (split.label, split.knob) == (
        "env-bound",
        "num_env_runners",
    )
    # the env off its CPU while the rest of the call is on it: the env waits; more runners overlap it while they fit
    sleepy = {**idle, "cpus_used": 0.9, "runner_env_cpu_s": 0.1, "runner_sample_cpu_s": 0.3}
    (w,) = sampler_verdicts(sleepy)
    assert (w.label, w.knob) == ("env waits", "num_env_runners")
    assert "on a CPU 10% of its steps, the rest of the call 100%" in w.text
    full = {**sleepy, "num_cpus_per_env_runner": 1.0, "env_runner_cpus_allocated": 1.0}
    (x,) = sampler_verdicts(full)
    assert (x.label, x.knob) == ("env waits", None) and "smaller num_cpus_per_env_runner" in x.text


def test_a_gpu_machine_with_the_forward_pass_dominating_proposes_runners_on_it_only_as_a_sweep():
    heavy = {**BREAKOUT, "runner_env_s": 0.3, "runner_inference_s": 1.2, "runner_other_s": 0.39}
    envs, runners, gpu = sampler_verdicts(heavy)
    assert (envs.knob, runners.knob) == ("num_envs_per_env_runner", "num_env_runners")
    assert (gpu.label, gpu.knob) == ("forward pass on the CPU", None)
    assert "63% of a runner's sample()" in gpu.text and "a measured question" in gpu.text
    assert len(sampler_verdicts({**heavy, "learner_gpus": 0.0})) == 2  # no GPU: no such sweep


def test_a_mixed_iteration_reads_each_side_worth_shortening_the_larger_first():
    """Issue 57's inference_wide at 1 runner x 8 envs: sampling and learning about half each, no side bound, no
    verdict named a knob and the walk stopped; a side of at least a third is worth shortening (a sixth of the
    iteration or more), so the walk and next.yaml read its verdicts, the larger share's first."""
    mixed = {**BREAKOUT, "sample_frac": 0.48, "learn_frac": 0.45, "learner_gpus": 0.0, "cpus": 15}
    assert sampler_verdicts(mixed) == [] and verdict(mixed, [])[0] == "mixed"  # the report's words stay
    assert [v.knob for v in knob_verdicts(mixed)] == ["num_envs_per_env_runner"]
    assert advise(mixed).step.knob == "num_envs_per_env_runner"
    quarter = {**mixed, "sample_frac": 0.3, "learn_frac": 0.45}  # sampling under a third: not worth it
    assert knob_verdicts(quarter) == []


def test_no_sampler_verdict_when_sampling_does_not_limit_or_was_not_measured():
    assert sampler_verdicts({**BREAKOUT, "sample_frac": 0.3, "learn_frac": 0.6}) == []
    assert sampler_verdicts({**BREAKOUT, "runner_sample_s": None}) == []  # an older folder, another framework
    assert sampler_verdicts({**BREAKOUT, "env_steps_per_s": None}) == []
    # the learner limits first: its knob leads, the sampler has none
    learner_first = {**BREAKOUT, "sample_frac": 0.2, "learn_frac": 0.7}
    assert sampler_verdicts(learner_first) == []


def test_knob_values_of_envs_per_runner_leave_each_env_a_step():
    assert knob_values("num_envs_per_env_runner", 1, {"total_train_batch_size": 4000, "num_env_runners": 12}) == (
        1,
        2,
        4,
        8,
    )
    assert knob_values("num_envs_per_env_runner", 4, {"total_train_batch_size": 40, "num_env_runners": 2}) == (4, 8, 16)
    no_fit = {**BREAKOUT, "total_train_batch_size": 12, "num_envs_per_env_runner": 1}
    envs, runners = advices(no_fit)
    assert envs.stop == "no_fit" and "leaves each env a step of the train batch" in envs.reason
    assert advise(no_fit).step.knob == "num_env_runners" and runners.step.values == (6, 12, 13)


def test_compose_ceiling_one_after_the_other_or_the_slower():
    # synchronous: 1,000 steps at 4,000/s (0.25 s) then learned at 1,000/s (1 s): 1,000 steps in 1.25 s
    assert compose_ceiling(4000.0, 1000.0, asynchronous=False) == pytest.approx(800.0)
    assert compose_ceiling(4000.0, 1000.0, asynchronous=True) == 1000.0
    assert compose_ceiling(4000.0, None, asynchronous=False) == 4000.0  # it learns nothing
    assert compose_ceiling(None, 1000.0, asynchronous=False) is None  # no env ceiling measured: no guess


def test_add_ceiling_columns_on_fixed_iterations():
    its = pd.DataFrame(
        {
            "trial_id": ["a"] * 3 + ["b"] * 3 + ["c"] * 2,
            "iteration": [1, 2, 3, 1, 2, 3, 1, 2],
            "warmup": [True, False, False] * 2 + [True, False],
            "wall_s": 1.0,
            "env_steps_sampled": [1000] * 6 + [500, 500],
            "learn_s": [9.0, 0.5, 0.5, 9.0, 0.1, 0.1, 0.0, 0.0],  # b: APPO's driver wait, not the learning
            "learner_busy_s": [9.0, 0.5, 0.5, 9.0, 0.25, 0.25, 0.0, 0.0],
        }
    )
    trials = pd.DataFrame(
        {
            "trial_id": ["a", "b", "c", "d"],
            "asynchronous": [False, True, False, False],
            "env_steps_per_s": [500.0, 3000.0, 450.0, 100.0],
            "env_ceiling_steps_per_s": [2000.0, 4000.0, 500.0, None],
        }
    )
    add_ceiling_columns(trials, its)
    # a: 2,000 steps in 1 s of learning (the warm-up left out): 2,000/s; with the env's 2,000/s in turn, 1,000/s
    # b: 2,000 steps over 0.5 s of the learners' own work: 4,000/s; the slower of it and the env's 4,000/s
    # c: learns nothing (learn_s 0): the env's own 500/s; d: no env ceiling measured: null
    assert trials["learner_steps_per_s"].tolist()[:2] == [2000.0, 4000.0] and math.isnan(
        trials["learner_steps_per_s"][2]
    )
    assert trials["ceiling_env_steps_per_s"].tolist()[:3] == [1000.0, 4000.0, 500.0]
    assert trials["ceiling_frac"].tolist()[:3] == [0.5, 0.75, 0.9] and math.isnan(trials["ceiling_frac"][3])


def test_split_columns_of_a_trial():
    its = pd.DataFrame(
        {
            "iteration": [1, 2, 3],
            "warmup": [True, False, False],
            "wall_s": [5.0, 2.0, 2.0],
            "sample_s": [4.0, 1.5, 1.7],
            "sampler_busy_s": [3.0, 1.2, 1.2],
            "env_step_s": [1.0, 0.5, 0.5],
            "inference_s": [1.0, 0.4, 0.4],
        }
    )
    runners = pd.DataFrame(
        {
            "iteration": [1, 1, 2, 2, 3, 3],
            "sample_cpu_s": [3.0, 3.0, 1.0, 1.2, 1.1, 1.1],
            "env_step_cpu_s": [1.0, 1.0, 0.4, 0.4, 0.5, 0.3],
        }
    )
    out = split_columns(its[~its["warmup"]], runners, asynchronous=False)
    assert out["runner_sample_s"] == 1.2 and out["runner_env_s"] == 0.5 and out["runner_inference_s"] == 0.4
    assert out["runner_other_s"] == pytest.approx(0.3) and out["sample_wait_s"] == pytest.approx(0.4)
    assert out["runner_sample_cpu_s"] == pytest.approx(1.1)  # per iteration the runners' mean, then the median
    assert out["runner_env_cpu_s"] == pytest.approx(0.4)
    assert split_columns(its[~its["warmup"]], runners, asynchronous=True)["sample_wait_s"] is None
    assert set(split_columns(its.drop(columns=["sampler_busy_s"]), runners, False).values()) == {None}


def test_the_ceiling_line_names_the_lever():
    row = {
        **BREAKOUT,
        "learner_steps_per_s": 4000.0,
        "ceiling_env_steps_per_s": compose_ceiling(6417.0, 4000.0, False),
    }
    text = ceiling_text(row)
    assert text.startswith(
        "runs at 52% of what its env and learner allow here (2,464 env steps/s: the env alone 6,417/s"
    )
    assert "the learner 4,000/s, one after the other" in text and text.endswith(
        "the lever is sampling, at 29% of the env's own rate"
    )
    near = ceiling_text({**row, "env_steps_per_s": 2400.0})
    assert "runs at 97%" in near and "close to it" in near
    # sampling near the env's rate: what is left is weight sync and the driver's other work
    rest = ceiling_text({**row, "sample_steps_per_s": 6000.0, "sampling_efficiency": 6000 / 6417, "other_frac": 0.3})
    assert rest.endswith("the lever is the rest of the iteration: weight sync 4% and the driver's other work 30% of it")
    assert "does not guess" in ceiling_text({**row, "ceiling_env_steps_per_s": None})
    assert ceiling_text({**row, "env_steps_per_s": None}) is None


def test_env_bound_runners_with_room_name_more_envs_a_runner_after_more_runners():
    """issue 57's env_bound workload at 2 runners x 1 env (a 1 ms env; runners of 0.33 CPU, 3 fit): a runner's
    sample() 0.414 s, the env 0.28 s (68%), the forward pass 0.031 s, RLlib's per-step work 0.101 s. More runners
    first; then, for a walk whose race of them showed no gain (a third runner read 0.92x there), more envs a runner
    (the exhaustive grid: 2 x 4 1.21x over 2 x 1). No cores' limit while a runner fits."""
    row = {**ENV_BOUND, "num_env_runners": 2, "num_cpus_per_env_runner": 0.33, "env_runner_cpus_allocated": 0.66}
    row.update(runner_sample_s=0.414, runner_sample_cpu_s=0.387, runner_env_s=0.28, runner_inference_s=0.031)
    row.update(runner_other_s=0.101, total_train_batch_size=500, sample_steps_per_s=1162.0)
    row.update(env_ceiling_steps_per_s=1940.0, sampling_efficiency=1162.0 / 1940.0)  # 60% of the env's rate in 2
    more, too = sampler_verdicts(row)
    assert (more.kind, more.knob) == (Kind.ENV_BOUND, "num_env_runners")
    assert (too.kind, too.knob) == (Kind.SHARED_WORK_TOO, "num_envs_per_env_runner")
    assert too.text.startswith("and where more runners do not pay: 32% of it is the forward pass")
    assert [(a.stop, a.verdict.knob) for a in advices(row)] == [
        (None, "num_env_runners"),
        (None, "num_envs_per_env_runner"),
    ]
    assert advise(row).step.knob == "num_env_runners"
    # a fifth of it outside the env no more (the env 85%): more runners alone
    (alone,) = sampler_verdicts({**row, "runner_env_s": 0.352, "runner_inference_s": 0.02, "runner_other_s": 0.042})
    assert alone.kind is Kind.ENV_BOUND
