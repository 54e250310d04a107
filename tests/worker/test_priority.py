"""The driver niced as Ray nices its workers, checked in a thread of its own (niceness is per thread)."""

import os
import threading

from rlbench.worker.priority import RAY_WORKER_NICENESS_DEFAULT, nice_as_ray_worker, nice_levels


def _in_thread(fn):
    """Run ``fn`` in a thread of its own and return (its result, that thread's niceness): on Linux
    niceness is per thread, so the test process's own threads stay as they are."""
    got = {}

    def run():
        got["result"] = fn()
        got["nice"] = os.getpriority(os.PRIO_PROCESS, 0)

    t = threading.Thread(target=run)
    t.start()
    t.join()
    return got["result"], got["nice"]


def test_driver_is_niced_as_ray_nices_its_workers():
    base = os.getpriority(os.PRIO_PROCESS, 0)
    # Ray's default: +15 on the calling thread only, as Ray does to each worker's main thread
    applied, nice = _in_thread(lambda: nice_as_ray_worker({}))
    assert applied == RAY_WORKER_NICENESS_DEFAULT == 15 and nice == min(base + 15, 19)
    assert os.getpriority(os.PRIO_PROCESS, 0) == base
    # RAY_worker_niceness set: that increment; 0 or an unusable value changes nothing it should not
    assert _in_thread(lambda: nice_as_ray_worker({"RAY_worker_niceness": "3"})) == (3, min(base + 3, 19))
    assert _in_thread(lambda: nice_as_ray_worker({"RAY_worker_niceness": "0"})) == (0, base)
    assert _in_thread(lambda: nice_as_ray_worker({"RAY_worker_niceness": "-5"})) == (0, base)


def test_nice_levels_reads_each_local_runner_and_marks_a_gone_one():
    base = os.getpriority(os.PRIO_PROCESS, 0)
    gone = int(open("/proc/sys/kernel/pid_max").read()) + 1  # no process can have it
    assert nice_levels({1: os.getpid(), 2: gone}) == {"driver": base, "env_runners": {"1": base, "2": None}}
    assert nice_levels(None) == {"driver": base, "env_runners": {}}
