"""The fidelity diagnosis switches: names read from RLBENCH_SWITCH_OFF, unknown ones refused."""

from __future__ import annotations

import pytest

from rlbench.run.switches import ENV_VAR, SWITCHES, switched_off
from rlbench.spec.errors import SpecError


def test_none_by_default():
    assert switched_off({}) == []
    assert switched_off({ENV_VAR: " , "}) == []


def test_names_in_a_fixed_order_without_repeats():
    assert switched_off({ENV_VAR: "sampler, affinity,sampler"}) == ["affinity", "sampler"]
    assert switched_off({ENV_VAR: ",".join(reversed(SWITCHES))}) == list(SWITCHES)


def test_unknown_name_is_refused_with_the_known_ones():
    with pytest.raises(SpecError) as e:
        switched_off({ENV_VAR: "affinity,pinning"})
    assert "'pinning'" in str(e.value) and "affinity, threads, callback" in str(e.value)
