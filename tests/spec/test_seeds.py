"""The seeds a trial runs with, pinned by value: a folder written before any change to how seeds are derived
must rerun (resume, reproduce, autoconfig's resume) with exactly the seeds it ran with.

Two sequences exist, each pinned here with values computed by the code that wrote the old folders (c79e751):
a sweep's repeats (``seed: N``: repeat r's seed) and autoconfig's requests (its run's seed, the stage, the
rung or round, the slot), the latter as the trial plan holds it (below 2**31)."""

from __future__ import annotations

from rlbench.spec.seeds import SEED_LIMIT, derive_seed

#: ``seed: 0`` and ``seed: 7``: repeats 0-3 and 0-2; a huge and a negative base (SHA-256 of the text, big-endian).
REPEATS = {
    (0, 0): 1027618141,
    (0, 1): 2047170917,
    (0, 2): 797168820,
    (0, 3): 1909138716,
    (7, 0): 977540460,
    (7, 1): 1927674721,
    (7, 2): 918809248,
    (2**40, 1): 1845188146,
    (-3, 0): 2019410620,
}

#: autoconfig's request seeds before the trial plan reduced them below 2**31 (little-endian, 32 bits) ...
REQUESTS = {
    (0, "search", 0, 0): 2323816071,
    (0, "search", 0, 1): 4027154263,
    (0, "search", 0, 2): 508422716,
    (0, "race", 0, 0): 3002360294,
    (0, "race", 1, 0): 3186473233,
    (0, "race", 2, 0): 2002372718,
    (11, "search", 2, 5): 31033386,
}


def test_a_request_and_the_trial_plan_made_of_it_carry_those_seeds():
    """End to end through the decision core and the driver's plan of a request: the seeds the trials run with."""
    from autoconfig.helpers import cand  # tests/autoconfig/helpers.py (pythonpath: tests)

    from rlbench.autoconfig.decide import Race
    from rlbench.autoconfig.search import SuccessiveHalving

    race = Race([cand(1)], cand(2), objective="throughput", budget_s=100.0, trial_s=1.0, seed=0)
    assert {r.seed for r in race.ask()} == {854876646}  # round 0 of seed 0: (0, "race", 0, 0)
    search = SuccessiveHalving(
        [cand(1), cand(2)], objective="throughput", budget_s=100.0, trial_s=1.0, seed=0, finalists=0
    )
    assert [r.seed for r in search.ask()] == [176332423, 176332423, 1879670615, 1879670615, 508422716, 508422716]


def test_a_sweeps_repeat_seeds_are_the_ones_old_folders_ran_with():
    assert {k: derive_seed(*k) for k in REPEATS} == REPEATS
    assert {k: derive_seed(*k, sequence="repeat") for k in REPEATS} == REPEATS  # the default, said


def test_autoconfigs_trial_seeds_are_the_ones_old_folders_ran_with():
    """The plan took the request's 32-bit seed modulo 2**31 (run/autoconfig_driver, before the one derivation):
    the request sequence gives that seed directly."""
    assert {k: derive_seed(*k, sequence="request") for k in REQUESTS} == {
        k: v % SEED_LIMIT for k, v in REQUESTS.items()
    }
    assert {k: derive_seed(*k, sequence="request") for k in REQUESTS} == {
        (0, "search", 0, 0): 176332423,
        (0, "search", 0, 1): 1879670615,
        (0, "search", 0, 2): 508422716,
        (0, "race", 0, 0): 854876646,
        (0, "race", 1, 0): 1038989585,
        (0, "race", 2, 0): 2002372718,
        (11, "search", 2, 5): 31033386,
    }


#: servebench's cell seeds as its cell_seed wrote them before the one derivation (the arithmetic of c3a2e51 and
#: e9c689c: ``(seed * 1_000_003 + batch * 7_919 + input_bytes) % 2**32``): (run seed, batch, input bytes) -> seed.
CELLS = {
    (0, 1, 16): 7935,
    (0, 64, 4096): 510912,
    (7, 256, 64): 9027349,
    (2**32 - 1, 8, 16): 4294030661,
    (123456789, 1024, 1048576): 2628571775,
}


def test_servebenchs_cell_seeds_are_the_ones_old_folders_ran_with():
    """Issue 51: cell_seed is the one derivation's ``cell`` sequence, and a servebench folder reruns with its states."""
    from rlbench.studies.servebench import ServebenchConfig, cell_seed

    assert {k: derive_seed(*k, sequence="cell") for k in CELLS} == CELLS
    assert {k: cell_seed(ServebenchConfig(seed=k[0]), k[1], k[2]) for k in CELLS} == CELLS


def test_one_seed_bound_a_spec_seed_that_would_overflow_in_the_trial_is_refused_at_load(tmp_path):
    """Issue 51: ``seed: [4294967295]`` passed the load (numpy's bound) and would overflow where RLlib seeds env runner
    1 with seed + 1; a spec's seeds share the derived seeds' bound, below 2**31."""
    import pytest

    from rlbench.spec.errors import SpecError
    from rlbench.spec.limits import MAX_SEED
    from rlbench.spec.load import load_spec

    assert MAX_SEED == SEED_LIMIT - 1
    for seed in ("[4294967295]", "4294967295", f"[{SEED_LIMIT}]"):
        spec = tmp_path / "s.yaml"
        spec.write_text(
            f"name: s\nframework: plain\nenvironment: {{env: CartPole-v1}}\nstop: {{iterations: 3}}\nseed: {seed}\n"
        )
        with pytest.raises(SpecError) as refused:
            load_spec(spec)
        said = str(refused.value)
        assert "seed" in said and f"seeds must be 0 to {MAX_SEED}" in said and "seed + i" in said, said
    spec.write_text(
        f"name: s\nframework: plain\nenvironment: {{env: CartPole-v1}}\nstop: {{iterations: 3}}\nseed: [{MAX_SEED}]\n"
    )
    assert load_spec(spec).spec.seed == [MAX_SEED]
