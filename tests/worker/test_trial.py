"""The trial process's pure parts: Ray's start-up arguments and error descriptions (no Ray)."""

from __future__ import annotations

from rlbench.measure.machine import MachineInfo
from rlbench.spec.load import spec_from_dict
from rlbench.spec.plan import plan_trials
from rlbench.worker.events import describe_error
from rlbench.worker.trial import ray_init_kwargs

MACHINE = MachineInfo(hostname="h", cpu_model="c", logical_cores=2, physical_cores=2, usable_cores=[0, 1],
                      memory_bytes=2**30, gpus=[])


def _plan(**extra):
    data = {"name": "t", "environment": {"env": "envs.tiny:TinyEnv"}, "stop": {"iterations": 2}, **extra}
    return plan_trials(spec_from_dict(data, check_envs=False), MACHINE)[0]


def test_dashboard_off_by_default_and_local_only_when_on():
    off = ray_init_kwargs(_plan())
    assert off["address"] == "local" and off["include_dashboard"] is False
    on = ray_init_kwargs(_plan(ray={"include_dashboard": True}))
    assert on["include_dashboard"] is True and on["dashboard_host"] == "127.0.0.1"
    assert (off["num_cpus"], off["num_gpus"]) == (1, 0)  # 2 cores less the driver's 1


def test_describe_error_names_the_root_cause():
    try:
        try:
            raise ValueError("env exploded at step 7")
        except ValueError as inner:
            raise RuntimeError from inner  # what RLlib's env runner does
    except RuntimeError as outer:
        assert describe_error(outer) == "ValueError: env exploded at step 7 (surfaced as RuntimeError)"
    assert describe_error(KeyError("x")) == "KeyError: 'x'"


def test_event_tail_parses_only_complete_new_lines(tmp_path):
    from rlbench.results.files import EventTail

    path = tmp_path / "events.jsonl"
    tail = EventTail(path)
    assert tail.poll() == []  # no file yet
    path.write_bytes(b'{"event": "start"}\n{"event": "ray_')  # the second line is still being written
    assert tail.poll() == [{"event": "start"}]
    with open(path, "ab") as f:
        f.write(b'init"}\n{"event": "iteration", "iteration": 1}\n')
    assert tail.poll() == [{"event": "start"}, {"event": "ray_init"}, {"event": "iteration", "iteration": 1}]
    assert tail.poll() == tail.events and len(tail.events) == 3  # nothing new, nothing parsed twice
