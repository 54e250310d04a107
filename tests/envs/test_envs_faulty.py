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


def test_memory_takes_the_whole_cap_inside_one_step_then_hangs(monkeypatch):
    import envs.faulty as faulty

    class Hung(Exception):
        pass

    def sleep(_s):  # the hang, made observable
        raise Hung

    monkeypatch.setattr(faulty.time, "sleep", sleep)
    env = FaultyEnv({"fault": "memory", "at_step": 3, "memory_chunk_bytes": 1000, "memory_max_bytes": 2500})
    _steps(env, 2)
    assert env._hog == []
    with pytest.raises(Hung):
        env.step(0)  # step 3: 1000 + 1000 + 500 bytes, touched, then the hang
    assert [a.nbytes for a in env._hog] == [1000, 1000, 500] and all((a == 1).all() for a in env._hog)


def test_none_never_fails_and_unknown_fault_is_refused():
    _steps(FaultyEnv({"fault": "none", "at_step": 1}), 50)
    with pytest.raises(ValueError, match="fault must be one of"):
        FaultyEnv({"fault": "explode"})
