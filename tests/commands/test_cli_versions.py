"""``rlbench history`` and ``rlbench bisect`` on bad input: exit 2, one clear message, nothing installed,
run or written. In-process, with a local folder index written by the test (no network)."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import REPO
from wheels import write_wheel

from rlbench.adapters.rllib import SUPPORTED_RAY
from rlbench.commands import main
from rlbench.commands.exit_codes import EXIT_BAD_INPUT

SPEC = """\
name: v
framework: plain
environment:
  env: envs.tiny:TinyEnv
stop: {iterations: 2}
env_ceiling_s: 0
"""


@pytest.fixture
def spec(tmp_path: Path, monkeypatch) -> Path:
    monkeypatch.chdir(REPO)
    monkeypatch.setenv("RLBENCH_ENV_CACHE", str(tmp_path / "envs"))
    for version in ("1.0.0", "1.1.0", "1.2.0"):
        write_wheel(tmp_path / "wheels", "pkg", version, {"pkg/__init__.py": ""})
    path = tmp_path / "spec.yaml"
    path.write_text(SPEC)
    return path


def refused(capsys, tmp_path: Path, *argv: str) -> str:
    """Run the command; assert exit 2, nothing written or installed; return the message on one line."""
    code = main([*argv, "--out", str(tmp_path / "out")])
    text = " ".join(capsys.readouterr().out.split())
    assert code == EXIT_BAD_INPUT, text
    assert text.startswith("error: ") and text.count("error: ") == 1, text
    assert not (tmp_path / "out").exists() and not (tmp_path / "envs").exists()
    return text.removeprefix("error: ")


def history(spec: Path, versions: str, *extra: str) -> list[str]:
    return [
        "history",
        str(spec),
        "--package",
        "pkg",
        "--versions",
        versions,
        "--index",
        str(spec.parent / "wheels"),
        *extra,
    ]


def bisect(spec: Path, good: str, bad: str, *extra: str) -> list[str]:
    return [
        "bisect",
        str(spec),
        "--package",
        "pkg",
        "--good",
        good,
        "--bad",
        bad,
        "--index",
        str(spec.parent / "wheels"),
        *extra,
    ]


def test_a_version_the_index_does_not_list(spec, tmp_path, capsys):
    wheels = spec.parent / "wheels"
    assert refused(capsys, tmp_path, *history(spec, "1.0.0,1.5.0")) == (
        f"--versions 1.5.0: pkg 1.5.0 is not in the index {wheels} (it has 1.0.0, 1.1.0, 1.2.0): give versions it lists"
    )
    assert refused(capsys, tmp_path, *bisect(spec, "0.9.0", "1.2.0")).startswith(
        "--good/--bad 0.9.0: pkg 0.9.0 is not in the index"
    )


def test_a_version_given_twice_or_written_as_a_range(spec, tmp_path, capsys):
    assert (
        refused(capsys, tmp_path, *history(spec, "1.0.0,1.1.0,1.0.0"))
        == "--versions: 1.0.0 given twice: name each version once"
    )
    assert (
        refused(capsys, tmp_path, *history(spec, "1.0.0,>=1.1"))
        == "--versions: '>=1.1' is not an exact version such as 2.59.0 (ranges are not versions)"
    )
    assert (
        refused(capsys, tmp_path, *history(spec, "1.0.0")) == "--versions 1.0.0: give at least two versions to compare"
    )


def test_good_equal_to_bad(spec, tmp_path, capsys):
    assert (
        refused(capsys, tmp_path, *bisect(spec, "1.1.0", "1.1.0"))
        == "--good and --bad are both 1.1.0: give two different versions"
    )


def test_bisect_needs_the_rounds_that_can_give_evidence_and_a_target_for_time_to_target(spec, tmp_path, capsys):
    assert (
        refused(capsys, tmp_path, *bisect(spec, "1.0.0", "1.2.0", "--rounds", "3"))
        == "--rounds 3: a probe needs 6 rounds to give evidence either way"
    )
    assert refused(capsys, tmp_path, *bisect(spec, "1.0.0", "1.2.0", "--metric", "time_to_target")).startswith(
        f"--metric time_to_target: {spec} has no stop target"
    )
    assert (
        refused(capsys, tmp_path, *bisect(spec, "1.0.0", "1.2.0", "--versions-from", "1.0.0,1.1.0"))
        == "--versions-from does not list 1.2.0: give the ends in it too"
    )


def test_an_unsupported_ray_is_refused_before_any_install(spec, tmp_path, capsys):
    spec.write_text(SPEC.replace("framework: plain\n", ""))  # the RLlib adapter: ray >= SUPPORTED_RAY
    argv = ["history", str(spec), "--package", "ray", "--versions", f"2.9.3,{SUPPORTED_RAY}"]
    assert refused(capsys, tmp_path, *argv) == (
        f"--versions 2.9.3: ray 2.9.3 is older than {SUPPORTED_RAY}, the oldest the rllib adapter drives: pin "
        f"{SUPPORTED_RAY} or later (docs/VERSIONS.md)"
    )
    argv = ["bisect", str(spec), "--package", "ray", "--good", "2.9.3", "--bad", SUPPORTED_RAY]
    assert refused(capsys, tmp_path, *argv).startswith("--versions 2.9.3: ray 2.9.3 is older than")


def test_a_spec_with_variants_of_its_own(spec, tmp_path, capsys):
    spec.write_text(SPEC + "variants:\n  - name: A\n")
    assert refused(capsys, tmp_path, *history(spec, "1.0.0,1.1.0")) == (
        f"{spec}: variants: this command makes the variants itself, one per --versions entry; remove 'variants:' "
        "from the spec (or run the spec as it is with rlbench sweep)"
    )


def test_the_dry_run_plans_the_versions_as_interleaved_variants(spec, tmp_path, capsys):
    code = main(history(spec, "1.0.0,1.2.0", "--rounds", "2", "--dry-run"))
    text = capsys.readouterr().out
    assert code == 0, text
    rows = [line.split("│")[1:5] for line in text.splitlines() if line.startswith("│ t")]
    # round 1 starts with the other version: the order rotates, so neither side always goes first
    assert [[c.strip() for c in r] for r in rows] == [
        ["t000r0", "pkg-1.0.0", "0", "2"],
        ["t001r0", "pkg-1.2.0", "0", "2"],
        ["t001r1", "pkg-1.2.0", "1", "2"],
        ["t000r1", "pkg-1.0.0", "1", "2"],
    ]
    assert "4 trials planned, 4 to run; dry run: nothing was run or written." in text
    assert not (tmp_path / "envs").exists()


def test_the_whole_series_fails_history_only_where_the_last_release_is_slower():
    """Issue 60's exit code, on hand-made trends: a throughput change point into the last release's segment fails, a
    recovered one, a phase's and a trade do not; a cumulative comparison fails where the last release is the slower
    and no API change lies between; one label a configuration, none where a flagged step fails it already."""
    from types import SimpleNamespace as N

    from rlbench.commands.history import slower_series

    def point(metric="throughput", verdict="regressed", trade="", later=("1.2", "1.3")):
        return N(metric=metric, verdict=verdict, trade=trade, before="1.1", after="1.2", later=list(later))

    def cumulative(before, after, slower=True, metric="throughput"):
        return N(metric=metric, slower=slower, before=before, after=after)

    def step(before, after, outcome="", slower=False):
        return N(metric="throughput", slower=slower, before=before, after=after, outcome=outcome)

    versions = [N(version=v) for v in ("1.0", "1.1", "1.2", "1.3")]

    def trend(points=(), cumulatives=(), steps=()):
        return N(
            label="all", points=versions, change_points=list(points), cumulative=list(cumulatives), steps=list(steps)
        )

    assert slower_series([trend([point()], [cumulative("1.0", "1.3")])]) == ["all 1.1->1.2"]
    assert slower_series([trend([], [cumulative("1.0", "1.3")])]) == ["all 1.0->1.3"]
    assert slower_series([trend([point()], steps=[step("1.1", "1.2", slower=True)])]) == []  # the step fails it
    assert slower_series([trend([], [cumulative("1.0", "1.3")], [step("1.1", "1.2", "API change")])]) == []
    assert slower_series([trend([], [cumulative("1.2", "1.3")], [step("1.1", "1.2", "API change")])]) == [
        "all 1.2->1.3"
    ]
    quiet = trend(
        [
            point(later=("1.2",)),  # recovered before 1.3
            point(metric="inference_s"),
            point(trade="a trade, not only a regression: slower, but it learns better"),
            point(verdict="improved"),
        ],
        [cumulative("1.0", "1.2"), cumulative("1.0", "1.3", slower=False), cumulative("1.0", "1.3", metric="cpu_cost")],
    )
    assert slower_series([quiet]) == []


def test_a_history_on_a_cluster_reads_each_round_as_a_trial_unless_told():
    """The history specs read 3 rounds a process; on a cluster (--address) the sweep refuses windows, so the history
    asks for 1 there unless --rounds-per-process says otherwise."""
    from pathlib import Path

    from rlbench.commands.history import HistoryOptions, per_process

    base = {"config": Path("s.yaml"), "package": "ray"}
    assert per_process(HistoryOptions(**base)) is None  # the spec's
    assert per_process(HistoryOptions(**base, address="127.0.0.1:6379")) == 1
    assert per_process(HistoryOptions(**base, address="127.0.0.1:6379", rounds_per_process=3)) == 3
