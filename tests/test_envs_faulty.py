"""FaultyEnv injects exactly the fault asked for, at exactly the step asked for."""

from __future__ import annotations

import pytest

from envs.faulty import FaultyEnv


def _steps(env: FaultyEnv, n: int) -> None:
    env.reset(seed=0)
    for _ in range(n):
        _, _, terminated, truncated, _ = env.step(0)
        if terminated or truncated:
            env.reset()


def test_raise_at_step():
    env = FaultyEnv({"fault": "raise", "at_step": 30, "episode_len": 7})
    _steps(env, 29)  # steps count across episodes
    with pytest.raises(RuntimeError, match="FaultyEnv: injected failure at step 30"):
        env.step(0)


def test_memory_grows_by_a_chunk_per_step_up_to_the_cap():
    env = FaultyEnv({"fault": "memory", "at_step": 3, "memory_chunk_bytes": 1000, "memory_max_bytes": 2500})
    _steps(env, 5)  # steps 3, 4, 5 allocate
    assert sum(a.nbytes for a in env._hog) == 3000 and all((a == 1).all() for a in env._hog)


def test_none_never_fails_and_unknown_fault_is_refused():
    _steps(FaultyEnv({"fault": "none", "at_step": 1}), 50)
    with pytest.raises(ValueError, match="fault must be one of"):
        FaultyEnv({"fault": "explode"})
