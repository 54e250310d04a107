"""The bisect's halving, on hand-made comparisons: a fake ``measure`` reads each version's speed from a
table and calls two versions different (with evidence) when their speeds differ, so every answer and
every probe can be worked out by hand."""

from __future__ import annotations

import pandas as pd

from rlbench.analysis.bisect import bisect, first_look, judge
from rlbench.analysis.change import TESTS, Change, unpaired
from rlbench.analysis.history.trends import VersionStep, first_look_changes, rounds_after

VERSIONS = ["1.0", "1.1", "1.2", "1.3", "1.4", "1.5", "1.6", "1.7", "1.8"]


def step(ratio: float | None, differs: bool, before: str = "a", after: str = "b") -> VersionStep:
    low, high = (None, None) if ratio is None else (ratio * 0.98, ratio * 1.02)
    rounds = 0 if ratio is None else 6
    change = Change(
        "paired",
        "rounds",
        rounds,
        rounds,
        ratio,
        low,
        high,
        ratio,
        low,
        high,
        TESTS["paired"],
        rounds,
        rounds,
        None if ratio is None else 0.03,
        differs,
    )
    return VersionStep(before, after, "throughput", change, "hand-made", "hand-made")


class Fake:
    """Speeds per version; a pair differs with evidence when the speeds differ, unless named in ``unclear``
    (beyond the threshold without evidence) or a version is in ``missing`` (no reading)."""

    def __init__(self, speeds: dict[str, float], unclear=(), missing=()):
        self.speeds, self.unclear, self.missing, self.calls = speeds, set(unclear), set(missing), []

    def __call__(self, reference: str, candidate: str) -> dict[str, VersionStep]:
        self.calls.append((reference, candidate))
        if {reference, candidate} & self.missing:
            return {"all": step(None, False, reference, candidate)}
        ratio = self.speeds[candidate] / self.speeds[reference]
        evidence = ratio != 1 and (reference, candidate) not in self.unclear
        return {"all": step(ratio, evidence, reference, candidate)}


def speeds(first_bad: str, slow: float = 0.5) -> dict[str, float]:
    return {v: (slow if v >= first_bad else 1.0) for v in VERSIONS}


def test_judging_a_comparison():
    assert judge({"all": step(0.80, True)}, 0.05, "slower") == "bad"
    assert judge({"all": step(0.97, True)}, 0.05, "slower") == "good"  # real, but under the threshold
    assert judge({"all": step(0.80, False)}, 0.05, "slower") == "unclear"
    assert judge({"all": step(1.30, True)}, 0.05, "slower") == "good"  # faster is not a slowdown
    assert judge({"all": step(1.30, True)}, 0.05, "faster") == "bad"
    assert judge({"all": step(None, False)}, 0.05, "slower") == "no data"
    # any configuration that slowed down with evidence makes the version bad
    assert judge({"a": step(1.0, False), "b": step(0.5, True)}, 0.05, "slower") == "bad"


def test_every_first_bad_version_is_found_in_log2_probes_and_confirmed():
    for first_bad in VERSIONS[1:]:
        fake = Fake(speeds(first_bad))
        result = bisect(VERSIONS, fake, threshold=0.05, package="pkg")
        assert (result.status, result.first_bad) == ("found", first_bad), first_bad
        assert result.last_good == VERSIONS[VERSIONS.index(first_bad) - 1]
        assert result.direction == "slower" and abs(result.step.change.paired_ratio - 0.5) < 1e-9
        probes = [p for p in result.probes if p.purpose == "probe"]
        assert len(probes) <= 3 and all(p.reference == "1.0" for p in probes)  # 9 versions: ceil(log2(8)) = 3
        assert fake.calls[0] == ("1.0", "1.8")  # the ends first
        confirm = [p for p in result.probes if p.purpose == "confirm"]
        if result.last_good == "1.0":  # the last bad probe (or the ends) compared the adjacent pair already
            assert confirm == []
        else:
            assert [(p.reference, p.candidate) for p in confirm] == [(result.last_good, first_bad)]
        assert result.sentence.startswith(
            f"first slower version: pkg=={first_bad} (pkg=={result.last_good} -> "
            f"pkg=={first_bad}: paired ratio 0.500, 95% CI 0.490-0.510, 6 rounds)"
        )


def test_the_probes_of_one_search_worked_out_by_hand():
    fake = Fake(speeds("1.3"))
    result = bisect(VERSIONS[:5], fake, threshold=0.05)  # 1.0 .. 1.4, 1.3 the first slow one
    assert [(p.purpose, p.reference, p.candidate, p.outcome) for p in result.probes] == [
        ("ends", "1.0", "1.4", "bad"),
        ("probe", "1.0", "1.2", "good"),
        ("probe", "1.0", "1.3", "bad"),
        ("confirm", "1.2", "1.3", "bad"),
    ]


def test_bisect_json_is_versioned_with_each_steps_pair_nested():
    body = bisect(VERSIONS[:5], Fake(speeds("1.3")), threshold=0.05).as_json()
    assert body["schema_version"] == 2 and body["step"]["change"]["paired_ratio"] == 0.5
    assert body["probes"][0]["steps"]["all"]["change"]["runs_a"] == 6


def test_no_difference_at_the_ends_stops_before_any_probe():
    fake = Fake({v: 1.0 for v in VERSIONS})
    result = bisect(VERSIONS, fake, threshold=0.05, package="pkg")
    assert result.status == "no_difference" and result.first_bad is None and fake.calls == [("1.0", "1.8")]
    assert result.sentence.startswith("no difference of 5% or more between pkg==1.0 and pkg==1.8 (paired ratio 1.000")
    unclear = bisect(VERSIONS, Fake(speeds("1.4"), unclear={("1.0", "1.8")}), threshold=0.05)
    assert unclear.status == "no_difference" and "but without evidence" in unclear.sentence


def test_a_speedup_is_bisected_too():
    result = bisect(VERSIONS, Fake(speeds("1.6", slow=2.0)), threshold=0.05)
    assert (result.status, result.direction, result.first_bad) == ("found", "faster", "1.6")
    assert result.sentence.startswith("first faster version: 1.6 (1.5 -> 1.6: paired ratio 2.000")


def test_a_version_without_a_reading_is_skipped():
    fake = Fake(speeds("1.5"), missing={"1.4"})
    result = bisect(VERSIONS, fake, threshold=0.05)
    assert result.skipped == ["1.4"] and (result.status, result.first_bad, result.last_good) == ("found", "1.5", "1.3")


def test_an_unclear_probe_is_measured_again_then_the_bisect_says_it_cannot_decide():
    fake = Fake(speeds("1.2"), unclear={("1.0", "1.4")})
    result = bisect(VERSIONS, fake, threshold=0.05)
    assert fake.calls == [("1.0", "1.8"), ("1.0", "1.4"), ("1.0", "1.4")]
    assert result.status == "undecided" and result.first_bad is None
    assert result.sentence.startswith("1.4 could not be told apart from 1.0 twice (paired ratio 0.500")


def test_a_change_spread_over_releases_is_not_confirmed():
    gradual = {v: 1.0 - 0.03 * i for i, v in enumerate(VERSIONS)}  # 3% a release, 5% only over two
    # pairs 3% apart have no evidence of 5%: judged on the ratio, each adjacent pair is under the threshold
    result = bisect(VERSIONS, Fake(gradual), threshold=0.05)
    assert result.status == "unconfirmed" and result.first_bad is not None
    i = VERSIONS.index(result.first_bad)
    assert gradual[result.first_bad] / gradual["1.0"] <= 0.95 < gradual[VERSIONS[i - 1]] / gradual["1.0"]
    assert "but not than" in result.sentence and "spread over several releases" in result.sentence


class FakeLook:
    """A probe's first 3 rounds from the speeds table: each side's rounds the speed times 0.99, 1.00 and 1.01 (the
    pair ``noisy`` names: its candidate's rounds 0.5, 1.0 and 1.5 times its speed, so the look cannot say)."""

    def __init__(self, speeds: dict[str, float], noisy=()):
        self.speeds, self.noisy, self.calls = speeds, set(noisy), []

    def __call__(self, reference: str, candidate: str):
        self.calls.append((reference, candidate))
        a = [self.speeds[reference] * f for f in (0.99, 1.0, 1.01)]
        spread = (0.5, 1.0, 1.5) if (reference, candidate) in self.noisy else (0.99, 1.0, 1.01)
        b = [self.speeds[candidate] * f for f in spread]
        ratio = self.speeds[candidate] / self.speeds[reference]
        return {"all": step(ratio, False, reference, candidate)}, {"all": unpaired(a, b)}


def test_the_first_look_stops_a_probe_only_where_its_rounds_are_clear_either_way():
    # 3 rounds a side all apart: the rank test's p is 1/20, the ratio's interval 0.29-0.31 (every resample's
    # medians are among the rounds)
    slower = unpaired([99, 100, 101], [29, 30, 31])
    assert slower.p_value == 0.05 and 0.28 < slower.ci_low and slower.ci_high < 0.32
    assert first_look({"all": slower}, 0.30, "slower") == "bad"  # beyond twice the threshold (below 0.4)
    assert first_look({"all": slower}, 0.30, "faster") is None  # not a speed-up, not within 30% either
    # 0.65: beyond the threshold but not beyond twice it (the first look's margin), and not within it: read on
    assert first_look({"all": unpaired([99, 100, 101], [64, 65, 66])}, 0.30, "slower") is None
    assert first_look({"all": unpaired([99, 100, 101], [79, 80, 81])}, 0.30, "slower") == "good"  # 0.8: within 30%
    assert first_look({"all": unpaired([99, 100, 101], [99, 100, 101])}, 0.30, "slower") == "good"
    assert first_look({"all": unpaired([99, 100, 101], [50, 100, 150])}, 0.30, "slower") is None  # too wide
    assert first_look({}, 0.30, "slower") is None
    # one configuration clear is enough to be bad; every one must be within the threshold to be good
    same = unpaired([99, 100, 101], [99, 100, 101])
    assert first_look({"a": same, "b": slower}, 0.30, "slower") == "bad"
    assert first_look({"a": same, "b": unpaired([99, 100, 101], [50, 100, 150])}, 0.30, "slower") is None


def test_a_clear_first_look_decides_every_probe_without_the_rest_of_the_rounds():
    fake, look = Fake(speeds("1.3", slow=0.3)), FakeLook(speeds("1.3", slow=0.3))
    result = bisect(VERSIONS[:5], fake, threshold=0.30, package="pkg", look=look)
    assert [(p.purpose, p.reference, p.candidate, p.outcome, p.decided_by) for p in result.probes] == [
        ("ends", "1.0", "1.4", "bad", "first look"),
        ("probe", "1.0", "1.2", "good", "first look"),
        ("probe", "1.0", "1.3", "bad", "first look"),
        ("confirm", "1.2", "1.3", "bad", "first look"),
    ]
    assert fake.calls == [] and len(look.calls) == 4  # the rest of the rounds never ran
    assert (result.status, result.first_bad, result.last_good) == ("found", "1.3", "1.2")
    assert "decided at the first look, the rounds as independent repeats: ratio of medians 0.300" in result.sentence
    assert result.as_json()["probes"][0]["first_look"]["all"]["p_value"] == 0.05


def test_a_first_look_that_cannot_say_reads_the_rest_of_the_rounds_and_is_judged_on_them():
    fake, look = Fake(speeds("1.3", slow=0.3)), FakeLook(speeds("1.3", slow=0.3), noisy={("1.0", "1.2")})
    result = bisect(VERSIONS[:5], fake, threshold=0.30, look=look)
    assert fake.calls == [("1.0", "1.2")]  # the noisy pair alone ran its remaining rounds
    probe = result.probes[1]
    assert (probe.candidate, probe.outcome, probe.decided_by) == ("1.2", "good", "rounds")
    assert probe.first_look["all"].ratio is not None and probe.steps["all"].change.runs_a == 6
    assert (result.status, result.first_bad) == ("found", "1.3")


def test_rounds_of_the_rest_are_numbered_after_the_first_so_each_pairs_its_two_sides():
    first = pd.DataFrame({"variant": ["a", "b", "a", "b"], "round": [0, 0, 1, 1], "repeat": [0, 0, 1, 1]})
    rest = pd.DataFrame({"variant": ["b", "a"], "round": [0, 0], "repeat": [0, 0]})
    both = rounds_after(first, rest, 2)
    assert list(both["round"]) == [0, 0, 1, 1, 2, 2] and list(both["repeat"]) == [0, 0, 1, 1, 2, 2]
    assert list(both.index) == list(range(6))


def test_first_look_changes_compare_the_rounds_read_as_independent_repeats():
    trials = pd.DataFrame(
        {
            "variant": ["v-1", "v-2"] * 3,
            "round": [0, 0, 1, 1, 2, 2],
            "status": ["ok"] * 6,
            "env_steps_per_s": [100.0, 30.0, 99.0, 29.0, 101.0, 31.0],
            "index": [0] * 6,
        }
    )
    change = first_look_changes(trials, [], ("v-1", "v-2"))["all"]
    assert change.design == "unpaired" and change.p_value == 0.05 and abs(change.ratio - 0.30) < 1e-9
