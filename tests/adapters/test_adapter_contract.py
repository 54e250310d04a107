"""The adapter contract (adapters/base.py, issue 51): ``Adapter`` is an abstract base class listing every member
once, every registered adapter gives every one, and an adapter that leaves one out fails when it is made, not when
a trial first asks for it."""

from __future__ import annotations

import inspect
import re

import pytest
import tomllib
from conftest import REPO

from rlbench.adapters import FRAMEWORKS, get_adapter
from rlbench.adapters.base import Adapter


def members() -> set[str]:
    """Every member the contract declares: its attributes (annotated) and its methods and properties."""
    declared = set(inspect.get_annotations(Adapter)) | {
        n for n, v in vars(Adapter).items() if not n.startswith("_") and (callable(v) or isinstance(v, property))
    }
    return declared - {"REQUIRED_ATTRIBUTES"}


def test_the_contract_lists_what_every_part_of_rlbench_asks():
    assert {"quick_settings", "train_batch", "trainer", "extra", "extra_modules", "requires", "serving"} <= members()
    assert {"key_handling", "quick_settings", "resource_demand", "trainer"} <= Adapter.__abstractmethods__


@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_every_registered_adapter_gives_every_member(framework):
    adapter = get_adapter(framework)
    assert isinstance(adapter, Adapter) and not inspect.isabstract(type(adapter))
    assert [m for m in sorted(members()) if not hasattr(adapter, m)] == []
    assert adapter.name == framework


#: A whole adapter's members, as plain values, for planting one without a member.
WHOLE = {
    "name": "x",
    "algorithms": ("PPO",),
    "preload_modules": (),
    "cold_start_s": 1.0,
    "key_handling": lambda self, algo: {},
    "result_metrics": lambda self: [],
    "resource_demand": lambda self, config: None,
    "torch_threads": lambda self, config: {},
    "train_batch": lambda self, config: None,
    "sampling_processes": lambda self, config: 1,
    "quick_settings": lambda self, config: {},
    "trainer": lambda self, config, *, seed, without=frozenset(): None,
}


def planted(without: str) -> type:
    return type(f"No_{without}", (Adapter,), {k: v for k, v in WHOLE.items() if k != without})


def test_an_adapter_that_leaves_a_member_out_fails_when_it_is_made():
    """adapters/common.py's base omitted ``quick_settings`` (issue 51): an adapter without it was made, and failed
    only when ``--quick`` asked."""
    planted("nothing")()  # whole: made
    with pytest.raises(TypeError, match="quick_settings"):
        planted("quick_settings")()
    with pytest.raises(TypeError, match="does not set name"):
        planted("name")()


@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_an_adapters_extra_is_one_pyproject_defines(framework):
    adapter = get_adapter(framework)
    extras = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    if adapter.extra is None:
        assert adapter.extra_modules == ()
        return
    assert adapter.extra in extras and adapter.extra_modules
    packages = {re.split(r"[<>=\[ ]", p, maxsplit=1)[0].lower().replace("-", "_") for p in extras[adapter.extra]}
    assert set(adapter.extra_modules) <= packages  # each module is one of the extra's distributions
