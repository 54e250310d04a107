"""FaultyEnv injects exactly the fault asked for, at exactly the step asked for."""

from __future__ import annotations

import signal
import sys
import types

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


@pytest.fixture
def kills(monkeypatch):
    """The signals FaultyEnv sends itself, recorded instead of sent."""
    import envs.faulty as faulty

    sent: list[int] = []
    monkeypatch.setattr(faulty.os, "kill", lambda pid, sig: sent.append(sig))
    return sent


def test_segv_in_close_fires_in_close_only_after_its_step(kills):
    env = FaultyEnv({"fault": "segv_in_close", "at_step": 3})
    _steps(env, 2)
    env.close()
    assert kills == []  # closed before its step: a clean teardown
    _steps(env, 1)
    assert kills == []  # stepping is untouched
    env.close()
    assert kills == [signal.SIGSEGV]


def test_segv_in_shutdown_fires_when_ray_sets_the_driver_disconnected(kills, monkeypatch):
    """Ray's ``disconnect`` (inside ``ray.shutdown()``) calls ``global_worker.set_is_connected(False)``;
    ``ray.is_initialized()`` reads that flag. A stand-in worker, so no Ray starts and none is touched."""

    class Driver:
        connected = True

        def set_is_connected(self, is_connected):
            self.connected = is_connected

    driver = Driver()
    ray_private = types.ModuleType("ray._private")
    ray_private.worker = types.SimpleNamespace(global_worker=driver)
    monkeypatch.setitem(sys.modules, "ray", types.ModuleType("ray"))
    monkeypatch.setitem(sys.modules, "ray._private", ray_private)
    env = FaultyEnv({"fault": "segv_in_shutdown", "at_step": 3})
    _steps(env, 2)
    assert "set_is_connected" not in vars(driver)  # not hooked before its step
    _steps(env, 3)  # hooked once, however many steps follow
    driver.set_is_connected(True)
    assert kills == []
    driver.set_is_connected(False)
    assert kills == [signal.SIGSEGV] and driver.connected is False  # the flag is set, then the crash


def test_segv_after_end_fires_at_exit_now_only(kills):
    env = FaultyEnv({"fault": "segv_after_end", "at_step": 1})
    try:
        _steps(env, 1)

        def write(event):  # the trial's EventLog.write("end"): not this fault's moment
            return event

        def exit_now(code):
            return code

        write("end")
        assert kills == []
        exit_now(0)
        assert kills == [signal.SIGSEGV]
    finally:
        sys.setprofile(None)
