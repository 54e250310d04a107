"""The Ray range the RLlib adapter drives (``SUPPORTED_RAY``): an older pin is refused when the spec is
loaded, before any environment is made or trial run; the plain adapter needs no Ray at all."""

from __future__ import annotations

from pathlib import Path

import pytest

from rlbench.adapters import get_adapter, unsupported
from rlbench.adapters.rllib import SUPPORTED_RAY
from rlbench.spec.load import load_spec
from rlbench.spec.model import SpecError


def test_a_release_older_than_the_oldest_is_named_with_the_range():
    requires = {"ray": "2.40.0"}
    assert unsupported(requires, {"ray": "2.9.3"}, "rllib") == [
        "ray 2.9.3 is older than 2.40.0, the oldest the rllib adapter drives"
    ]
    # compared as numbers, not text: "2.100" is newer than "2.40", "2.4.1" older
    assert unsupported(requires, {"ray": "2.100.0"}, "rllib") == []
    assert unsupported(requires, {"ray": "2.4.1"}, "rllib") != []
    assert unsupported(requires, {"ray": "2.40.0rc1"}, "rllib") == []  # a pre-release counts as its release
    assert unsupported(requires, {"ray": None}, "rllib") == []  # not installed: the pins' check says so
    assert unsupported({}, {"ray": "1.0"}, "plain") == []


def test_each_adapter_states_its_range():
    assert get_adapter("rllib").requires == {"ray": SUPPORTED_RAY}
    assert get_adapter("plain").requires == {}


SPEC = """\
name: t
framework: {framework}
environment:
  env: envs.tiny:TinyEnv
stop: {{iterations: 3}}
variants:
  - name: now
  - {{name: old, packages: {{ray: "2.9.3"}}}}
"""


def test_an_older_ray_pin_is_refused_when_the_spec_loads(tmp_path: Path):
    path = tmp_path / "spec.yaml"
    path.write_text(SPEC.format(framework="rllib"))
    with pytest.raises(SpecError) as info:
        load_spec(path)
    assert str(info.value) == (
        f"{path}:8: variants[1].packages.ray: ray 2.9.3 is older than {SUPPORTED_RAY}, the "
        f"oldest the rllib adapter drives: pin {SUPPORTED_RAY} or later (docs/VERSIONS.md)"
    )
    path.write_text(SPEC.format(framework="plain"))  # the plain adapter drives no Ray: any pin is its user's business
    assert [p.variant for p in load_spec(path).points] == ["now", "old"]
