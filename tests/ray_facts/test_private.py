"""The one seam to Ray's private API (rlbench/ray_facts/private.py): every name it reaches is there on the installed
Ray, the release each was checked against is stated, and a name not checked is refused."""

from __future__ import annotations

import importlib.metadata

import pytest

from rlbench.ray_facts import private


@pytest.mark.parametrize("name", sorted(private.PRIVATE_NAMES))
def test_every_private_name_is_there_on_the_installed_ray(name):
    """A Ray release that moves one fails here, by name, before a trial quietly loses what it gave (each use says
    what it loses: a session's name for the leftover check, the agents' minimal start, ...)."""
    held = private.owner(name)
    assert held is not None, f"{name}: gone in ray {importlib.metadata.version('ray')}"
    assert hasattr(held[0], held[1]), f"{name}: gone in ray {importlib.metadata.version('ray')}"


def test_each_name_says_the_release_it_was_checked_against_and_it_is_the_installed_one():
    """The pin (pyproject.toml: ray[rllib]>=2.60,<2.61) and the seam's checks are of one release line: a Ray upgrade
    rechecks each name and writes its new release here."""
    installed = importlib.metadata.version("ray").split(".")[:2]
    assert all(v.split(".")[:2] == installed for v in private.PRIVATE_NAMES.values()), private.PRIVATE_NAMES


def test_a_name_not_checked_is_refused_and_no_node_is_none():
    with pytest.raises(KeyError, match="not a private Ray name rlbench has checked"):
        private.owner("ray._private.services.get_node_ip_address")
    assert private.local_node() is None and private.session_dir() is None  # no ray.init in this process
