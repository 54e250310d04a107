"""The verdicts as rules (rlbench.analysis.rules): the evaluator's order, groups and stops on tiny rows worked out by
hand, and every rule of both sides (findings.LEARNER_RULES, sampling.SAMPLER_RULES) saying only the kinds and knobs
it declares, each kind said by exactly the rules that declare it, over the sampler tests' rows and seeded rows around
them."""

from __future__ import annotations

import dataclasses
import random

import pytest
from test_sampling_verdicts import BREAKOUT, ENV_BOUND

from rlbench.analysis import findings, sampling
from rlbench.analysis.config_row import ConfigRow
from rlbench.analysis.findings import BOUND_FRAC, SHARE_WORTH_FRAC, learner_verdicts
from rlbench.analysis.knobs import Knob
from rlbench.analysis.labels import Kind
from rlbench.analysis.rules import Rule, Verdict, evaluate
from rlbench.analysis.sampling import sampler_verdicts


def _says(kind: Kind, at_least: float, asked: list[Kind]):
    """A check saying ``kind`` where the row has at least ``at_least`` cpus, noting that it was asked."""

    def check(row: ConfigRow, bound: float) -> Verdict | None:
        asked.append(kind)
        return Verdict(kind, f"{row.cpus:g} cpus", None) if (row.cpus or 0) >= at_least else None

    return check


def test_rules_say_their_verdicts_in_order_one_of_a_group_none_after_a_stop():
    asked: list[Kind] = []
    rules = (
        Rule((Kind.ENV_BOUND,), _says(Kind.ENV_BOUND, 8, asked)),
        Rule((Kind.WAITS_ON_STRAGGLER,), _says(Kind.WAITS_ON_STRAGGLER, 4, asked), group="wait"),
        Rule((Kind.WAITS_ON_TRANSFER,), _says(Kind.WAITS_ON_TRANSFER, 2, asked), group="wait"),
        Rule((Kind.ENV_WAITS,), _says(Kind.ENV_WAITS, 3, asked), stops=True),
        Rule((Kind.CORES_LIMIT,), _says(Kind.CORES_LIMIT, 1, asked)),
    )
    # 2 cpus: under the first two; the transfer (group "wait"); no stop under 3; the cores' limit.
    assert [v.kind for v in evaluate(rules, ConfigRow(cpus=2), BOUND_FRAC)] == [
        Kind.WAITS_ON_TRANSFER,
        Kind.CORES_LIMIT,
    ]
    assert asked == [Kind.ENV_BOUND, Kind.WAITS_ON_STRAGGLER, Kind.WAITS_ON_TRANSFER, Kind.ENV_WAITS, Kind.CORES_LIMIT]
    asked.clear()
    # 4 cpus: the straggler holds, so its group's transfer is not asked; the env waits and stops: no cores' limit.
    assert [v.kind for v in evaluate(rules, ConfigRow(cpus=4), BOUND_FRAC)] == [Kind.WAITS_ON_STRAGGLER, Kind.ENV_WAITS]
    assert asked == [Kind.ENV_BOUND, Kind.WAITS_ON_STRAGGLER, Kind.ENV_WAITS]
    assert [v.text for v in evaluate(rules, ConfigRow(cpus=8), BOUND_FRAC)] == ["8 cpus", "8 cpus", "8 cpus"]
    assert evaluate(rules, ConfigRow(cpus=0), BOUND_FRAC) == []
    # a rule that follows a stop is asked after it, and only it
    asked.clear()
    follows = (*rules[:4], Rule((Kind.SHARED_WORK_TOO,), _says(Kind.SHARED_WORK_TOO, 1, asked), after_stop=True))
    assert [v.kind for v in evaluate((*follows, rules[4]), ConfigRow(cpus=4), BOUND_FRAC)] == [
        Kind.WAITS_ON_STRAGGLER,
        Kind.ENV_WAITS,
        Kind.SHARED_WORK_TOO,
    ]
    assert asked == [Kind.ENV_BOUND, Kind.WAITS_ON_STRAGGLER, Kind.ENV_WAITS, Kind.SHARED_WORK_TOO]


def test_the_learners_work_says_its_first_cause_only():
    """A GPU learner whose batch building is 60% of its work (1.2 s of 2 s) on a device busy 10% over 8 minibatch
    steps an epoch: fed by the CPU and launch-bound both hold; the first of the group is said."""
    row = ConfigRow(
        env_steps_per_s=500.0,
        learn_frac=0.7,
        learner_gpus=1.0,
        learn_batch_s=1.2,
        learn_update_s=0.8,
        gpu_busy_pct=10.0,
        sgd_steps_per_iteration=80,
        num_epochs=10,
    )
    fed, launch = findings.LEARNER_RULES[1:3]
    assert (fed.group, launch.group) == ("work", "work")
    assert launch.check(row, BOUND_FRAC) is not None
    assert [v.kind for v in learner_verdicts(row)] == [Kind.FED_BY_CPU]
    assert [v.kind for v in learner_verdicts(dataclasses.replace(row, learn_batch_s=0.4))] == [Kind.LAUNCH_BOUND]


def test_an_env_that_waits_is_the_samplers_last_verdict_but_the_work_more_envs_share():
    """Runners on a CPU 0.65 s of their 2 s sample(): the env 1.5 s of it, 0.15 s on a CPU, the rest 0.5 s, all on
    one: the env waits, and a quarter of the call is the work more envs a runner share (asked after a stop); asked,
    the later rules would say a core and (the env 75% of the call) more runners, then more envs a runner."""
    waits = {**ENV_BOUND, "runner_sample_s": 2.0, "runner_sample_cpu_s": 0.65, "runner_env_s": 1.5}
    waits |= {"runner_env_cpu_s": 0.15, "runner_inference_s": 0.25, "runner_other_s": 0.25, "sample_wait_s": 0.05}
    env_waits, too = sampling.SAMPLER_RULES[2], sampling.SAMPLER_RULES[8]
    assert env_waits.stops and env_waits.kinds == (Kind.ENV_WAITS,)
    assert too.after_stop and too.kinds == (Kind.SHARED_WORK_TOO,)
    assert [v.kind for v in sampler_verdicts(waits)] == [Kind.ENV_WAITS, Kind.SHARED_WORK_TOO]
    shared = {"runner_env_s": 1.7, "runner_inference_s": 0.15, "runner_other_s": 0.15}  # 15% outside: not said
    assert [v.kind for v in sampler_verdicts({**waits, **shared})] == [Kind.ENV_WAITS]
    assert [v.kind for v in evaluate(sampling.SAMPLER_RULES[3:], ConfigRow.of(waits), BOUND_FRAC)] == [
        Kind.WAITS_FOR_CORE,
        Kind.ENV_BOUND,
        Kind.SHARED_WORK_TOO,
    ]


def _rows(n: int) -> list[dict]:
    """The sampler tests' two rows, and ``n`` seeded rows around them: each figure a rule reads drawn on either side
    of its thresholds, now and then missing."""
    rng = random.Random(58)

    def pick(*values):
        return rng.choice([*values, None]) if rng.random() < 0.15 else rng.choice(values)

    rows = [BREAKOUT, ENV_BOUND]
    for _ in range(n):
        busy, cpus = rng.uniform(0.1, 3.0), rng.choice([2, 4, 16])
        env = busy * rng.random()
        inference = (busy - env) * rng.random()
        rows.append(
            {
                **rng.choice([BREAKOUT, ENV_BOUND]),
                "asynchronous": rng.random() < 0.2,
                "sample_frac": rng.random(),
                "learn_frac": rng.random(),
                "sampler_busy_frac": rng.random(),
                "learner_busy_frac": rng.random(),
                "cpus": cpus,
                "cpus_used": pick(rng.uniform(0, cpus)),
                "learner_gpus": pick(0.0, 1.0),
                "num_learners": pick(0, 1),
                "learn_batch_s": pick(rng.uniform(0, 2)),
                "learn_update_s": pick(rng.uniform(0, 2)),
                "learn_cpus_used": pick(rng.uniform(0, 4)),
                "driver_torch_threads": pick(1, 2),
                "learner_torch_threads": pick(1, 2),
                "gpu_busy_pct": pick(rng.uniform(0, 100)),
                "sgd_steps_per_iteration": pick(1, 32),
                "num_epochs": pick(1, 4),
                "cpu_twin_ratio": pick(rng.uniform(0.5, 2)),
                "cpu_twin_index": 3,  # the twin's figures come with its ratio
                "cpu_twin_env_steps_per_s": 1200.0,
                "runner_sample_s": busy,
                "runner_sample_cpu_s": pick(busy * rng.uniform(0.3, 1.0)),
                "runner_env_s": env,
                "runner_env_cpu_s": pick(env * rng.uniform(0.1, 1.0)),
                "runner_inference_s": inference,
                "runner_other_s": pick(busy - env - inference),
                "sample_wait_s": pick(rng.uniform(0, 2)),
                "straggler_env_runner": pick(1, None),
                "straggler_wait_s": pick(rng.uniform(0, 1)),
                "sampling_efficiency": pick(rng.random()),
                "num_env_runners": pick(1, 2, 15),
                "num_gpus_per_env_runner": pick(0, 0.1),
            }
        )
    return rows


@pytest.fixture(scope="module")
def said() -> dict[tuple[str, int], list[Verdict]]:
    """(side, rule's place) -> every verdict the rule said over :func:`_rows`, through the sides' own functions, at
    the bound from which a side limits the iteration and at the one where no side does."""
    out: dict[tuple[str, int], list[Verdict]] = {}

    def noting(side: str, i: int, rule: Rule) -> Rule:
        def check(row: ConfigRow, bound: float) -> Verdict | None:
            verdict = rule.check(row, bound)
            out.setdefault((side, i), []).extend([verdict] if verdict else [])
            return verdict

        return dataclasses.replace(rule, check=check)

    with pytest.MonkeyPatch.context() as mp:
        for module, name in ((sampling, "SAMPLER_RULES"), (findings, "LEARNER_RULES")):
            mp.setattr(module, name, tuple(noting(name, i, r) for i, r in enumerate(getattr(module, name))))
        for row in _rows(3000):
            for bound in (BOUND_FRAC, SHARE_WORTH_FRAC):
                sampler_verdicts(row, bound), learner_verdicts(row, bound)
    return out


def _rules() -> dict[tuple[str, int], Rule]:
    return {
        (name, i): rule
        for name, rules in (("SAMPLER_RULES", sampling.SAMPLER_RULES), ("LEARNER_RULES", findings.LEARNER_RULES))
        for i, rule in enumerate(rules)
    }


def test_every_kind_is_declared_by_a_rule():
    assert {kind for rule in _rules().values() for kind in rule.kinds} == set(Kind)


def test_each_rule_says_the_kinds_and_names_the_knobs_it_declares_and_all_of_them(said):
    for place, rule in _rules().items():
        verdicts = said.get(place, [])
        assert {v.kind for v in verdicts} == set(rule.kinds), place
        assert {v.knob for v in verdicts} == set(rule.knobs), place


def test_every_kind_is_said_by_exactly_the_rules_that_declare_it(said):
    rules = _rules()
    for kind in Kind:
        declare = {place for place, rule in rules.items() if kind in rule.kinds}
        assert {place for place, verdicts in said.items() if any(v.kind is kind for v in verdicts)} == declare, kind


def test_the_cpu_learners_knob_is_whose_process_holds_it():
    """One rule, two knobs: the driver's CPUs, or each remote learner's (a CPU learner keeping 1.9 of its 2 threads
    busy on 8 cores)."""
    row = {"env_steps_per_s": 500.0, "learn_frac": 0.7, "learn_batch_s": 0.5, "learn_update_s": 1.5, "cpus": 8}
    row |= {"learner_gpus": 0.0, "learn_cpus_used": 1.9, "driver_torch_threads": 2, "learner_torch_threads": 2}
    assert [v.knob for v in learner_verdicts(row)] == [Knob.NUM_CPUS_FOR_MAIN_PROCESS]
    assert [v.knob for v in learner_verdicts({**row, "num_learners": 1})] == [Knob.NUM_CPUS_PER_LEARNER]
