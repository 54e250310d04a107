"""What a pinned release needs beyond the sweep's packages (rlbench/run/dependencies.py), on hand-written metadata:
the requirements Ray 2.40 and 2.47 state (their METADATA, shortened) against a sweep shaped like this machine's."""

from __future__ import annotations

from email.message import Message

from rlbench.run.dependencies import Needed, constraints, unmet, used_extras


def metadata(requires: list[str], extras: list[str] = ()) -> Message:
    m = Message()
    m["Name"] = "ray"
    for line in requires:
        m["Requires-Dist"] = line
    for extra in extras:
        m["Provides-Extra"] = extra
    return m


SWEEP = {"ray": "2.60.0", "gymnasium": "1.2.2", "numpy": "2.4.6", "pyyaml": "6.0", "lz4": "4.0", "torch": "2.13.0+cpu"}
RAY_240 = metadata(
    [
        "aiosignal",
        "pyyaml",
        "numpy>=1.20",
        'gymnasium==1.0.0; extra == "rllib"',
        'lz4; extra == "rllib"',
        'fastapi; extra == "serve"',
        'pyarrow<18; (sys_platform == "darwin" and platform_machine == "x86_64") and extra == "rllib"',
    ],
    ["rllib", "serve"],
)


def test_what_the_sweep_lacks_or_has_in_another_version_is_needed():
    got = unmet(RAY_240, ["rllib"], SWEEP, ["ray"])
    assert got == [Needed("aiosignal", None), Needed("gymnasium==1.0.0", "1.2.2")]
    assert [n.name for n in got] == ["aiosignal", "gymnasium"]


def test_an_extra_the_sweep_does_not_use_brings_nothing():
    assert [n.name for n in unmet(RAY_240, [], SWEEP, ["ray"])] == ["aiosignal"]


def test_the_extras_used_are_those_whose_packages_the_sweep_has():
    sweep_ray = metadata(['gymnasium==1.2.2; extra == "rllib"', 'lz4; extra == "rllib"', 'fastapi; extra == "serve"'])
    sweep_ray["Provides-Extra"] = "rllib"
    sweep_ray["Provides-Extra"] = "serve"
    assert used_extras(sweep_ray, SWEEP) == ["rllib"]  # no fastapi here: serve is not used


def test_constraints_hold_the_sweep_but_the_free_and_local_versions():
    text = constraints(SWEEP, ["ray", "gymnasium"])
    assert text.splitlines() == ["lz4==4.0", "numpy==2.4.6", "pyyaml==6.0"]  # torch's +cpu is no index's version
