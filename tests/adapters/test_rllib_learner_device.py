"""The learner's split on a GPU learner, known answers on the CPU: a hand-made learner driven on a fake host clock
and a fake CUDA-event clock (rlbench.adapters.cuda_clock's seam), through the probe, into an iteration's columns.

Every duration is a power of two, so every sum below is exact."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from test_rllib_learner_probe import _Data, _Metrics

from rlbench.adapters.cuda_clock import CudaClock, cuda_clock
from rlbench.adapters.rllib.learner_probe import (
    BATCH_S,
    BATCHES,
    BUSY_S,
    COPY_S,
    DEVICE_S,
    SGD_STEPS,
    UPDATE_S,
    install,
)
from rlbench.adapters.rllib.results import iteration_timings
from rlbench.adapters.timings import IterationTimings


class FakeClocks:
    """The host's clock and the device's, advanced by the fake learner's work."""

    def __init__(self):
        self.host_s = 0.0
        self.device_s = 0.0

    def host(self) -> float:
        return self.host_s


class FakeEvent:
    def __init__(self, clocks: FakeClocks, device: FakeDevice):
        self.clocks, self.device, self.at = clocks, device, None

    def record(self) -> None:
        self.at = self.clocks.device_s

    def seconds_to(self, end: FakeEvent) -> float:
        assert self.device.synchronized_after(self) and self.device.synchronized_after(end), "read before a sync"
        return end.at - self.at


class FakeDevice:
    """A fake :class:`~rlbench.adapters.cuda_clock.DeviceClock`: events stamp the fake device time; counts syncs."""

    def __init__(self, clocks: FakeClocks):
        self.clocks, self.syncs, self.recorded = clocks, 0, []

    def event(self) -> FakeEvent:
        event = FakeEvent(self.clocks, self)
        self.recorded.append(event)
        return event

    def synchronize(self) -> None:
        self.syncs += 1
        self._synced_upto = len(self.recorded)

    def synchronized_after(self, event: FakeEvent) -> bool:
        return self.recorded.index(event) < getattr(self, "_synced_upto", 0)


class _Piece:
    """A learner connector piece that costs ``host_s`` of the host's time."""

    def __init__(self, clocks: FakeClocks, host_s: float):
        self.clocks, self.host_s = clocks, host_s

    def __call__(self, *, batch, **kwargs):
        self.clocks.host_s += self.host_s
        return batch


class NumpyToTensor(_Piece):
    """Named as RLlib's piece that moves the batch to the learner's device: the copy."""


class _Pipeline:
    def __init__(self, pieces):
        self.connectors = pieces

    def __call__(self, *, batch, **kwargs):
        for piece in self.connectors:
            batch = piece(batch=batch)
        return batch


class GpuLearner:
    """RLlib's Learner.update on a GPU, its costs known: building a batch 1/8 s of the host (1/32 s of it the copy),
    each minibatch step 1/64 s of the host (launches) and 1/16 s of the device."""

    BUILD_S, COPY_S, STEP_HOST_S, STEP_DEVICE_S = 0.125, 0.03125, 0.015625, 0.0625

    def __init__(self, clocks: FakeClocks):
        self.clocks, self.metrics = clocks, _Metrics()
        self._learner_connector = _Pipeline(
            [_Piece(clocks, self.BUILD_S - self.COPY_S), NumpyToTensor(clocks, self.COPY_S)]
        )

    def _make_batch_if_necessary(self, training_data):
        if training_data.batch is not None:
            return training_data.batch
        return self._learner_connector(batch={"default_policy": {}})

    def before_gradient_based_update(self, *, timesteps):
        pass

    def _update(self, batch):
        self.clocks.host_s += self.STEP_HOST_S
        self.clocks.device_s += self.STEP_DEVICE_S
        return {}, {}, {}

    def update(self, training_data, minibatches: int):
        self.before_gradient_based_update(timesteps={})
        batch = self._make_batch_if_necessary(training_data=training_data)
        for _ in range(minibatches):
            self._update(batch)
        return self.metrics.reduce()


def _gpu_learner():
    clocks = FakeClocks()
    learner = GpuLearner(clocks)
    device = FakeDevice(clocks)
    install(learner, clock=clocks.host, device_clock=device)
    return learner, device


def test_a_gpu_learner_splits_into_batch_copy_updates_and_device_time():
    learner, device = _gpu_learner()
    got = learner.update(_Data(), minibatches=12)
    assert got[BATCHES] == 1 and got[SGD_STEPS] == 12
    assert got[BATCH_S] == 0.125 and got[COPY_S] == 0.03125  # the copy is part of building the batch
    assert got[UPDATE_S] == 12 * 0.015625 and got[DEVICE_S] == 12 * 0.0625
    assert got[BUSY_S] == 0.125 + 12 * 0.015625  # batch and updates: disjoint, and all of the busy time
    # the events were read after one synchronize for the whole update, not one a step
    assert device.syncs == 1 and len(device.recorded) == 2 * 12


def test_one_synchronize_per_reporting_window_whatever_the_steps():
    learner, device = _gpu_learner()
    for n, steps in enumerate((1, 30, 310), start=1):
        got = learner.update(_Data(), minibatches=steps)
        assert device.syncs == n and got[DEVICE_S] == steps * 0.0625
    # a reduce with no update since the last one reads nothing and waits for nothing
    learner.metrics.reduce()
    assert device.syncs == 3


def test_the_copy_piece_keeps_its_class_name_and_type():
    learner, _ = _gpu_learner()
    piece = learner._learner_connector.connectors[1]
    # RLlib names each piece's timer by its class name, and removes pieces by their class
    assert type(piece).__name__ == "NumpyToTensor" and isinstance(piece, NumpyToTensor)
    assert type(learner._learner_connector.connectors[0]) is _Piece  # the other pieces untouched


def test_replayed_batches_and_loader_threads_time_their_copies():
    # DQN and SAC convert a replayed batch (_convert_batch_type); APPO and IMPALA's GPU loader threads copy theirs
    clocks = FakeClocks()
    learner = GpuLearner(clocks)

    def convert(batch, to_device=True):
        clocks.host_s += 0.25
        return batch

    def to_device(batch):
        clocks.host_s += 0.5
        return batch

    learner._convert_batch_type = convert
    learner._gpu_loader_threads = [SimpleNamespace(_to_device_safe=to_device)]
    install(learner, clock=clocks.host, device_clock=FakeDevice(clocks))
    learner._convert_batch_type({})
    learner._gpu_loader_threads[0]._to_device_safe({})
    assert learner.metrics.reduced(COPY_S) == 0.75


def test_a_cpu_learner_logs_no_copy_or_device_time_and_keeps_its_reduce():
    clocks = FakeClocks()
    learner = GpuLearner(clocks)
    reduce = learner.metrics.reduce
    install(learner, clock=clocks.host, device_clock=None)
    got = learner.update(_Data(), minibatches=4)
    assert COPY_S not in got and DEVICE_S not in got
    assert (got[BATCH_S], got[UPDATE_S]) == (0.125, 4 * 0.015625)
    assert learner.metrics.reduce == reduce and type(learner._learner_connector.connectors[1]) is NumpyToTensor


def test_the_real_seam_gives_a_clock_for_a_cuda_device_only():
    import torch

    assert cuda_clock(torch.device("cpu")) is None and cuda_clock(None) is None
    # the learner's own device picks it: a CPU learner, as RLlib builds it here, gets none
    assert isinstance(cuda_clock(SimpleNamespace(type="cuda")), CudaClock)  # made lazily: no event, no sync yet


def test_the_probe_split_read_back_as_an_iteration(tmp_path):
    """What one GPU learner logged, as RLlib hands it to the driver (the learners' values summed), becomes the
    iteration's split: per learner, the rest of learn_s visible."""
    learner, _ = _gpu_learner()
    logged = learner.update(_Data(), minibatches=16)
    result = {
        "timers": {"env_runner_sampling_timer": 1.0, "learner_update_timer": 2.5},
        "env_runners": {"num_env_steps_sampled": 4000},
        "learners": {
            "rlbench": {k[1]: v for k, v in logged.items() if k[0] == "rlbench"},
            "__all_modules__": {"learner_connector": {"connector_pipeline_timer": 0.0625}},
        },
    }
    algo = SimpleNamespace(
        config=SimpleNamespace(num_env_runners=2, num_learners=0),
        metrics=SimpleNamespace(peek=lambda key, default=0.0: 0.0),
    )
    t = IterationTimings(**iteration_timings(algo, result))
    assert (t.learn_batches, t.learn_batch_s, t.learn_copy_s) == (1.0, 0.125, 0.03125)
    assert (t.learn_update_s, t.learn_device_s) == (0.25, 1.0)  # 16 steps: 16/64 s of the host, 16/16 s of the GPU
    assert t.learn_other_s == 2.5 - 0.125 - 0.25
    assert t.learner_connector_s == 0.0625  # one batch built: RLlib's mean is its time
    assert t.sgd_steps == 16


def test_asynchronous_learners_leave_the_rest_of_learn_s_null():
    result = {
        "timers": {"learner_update_timer": 0.5},
        "learners": {
            "rlbench": {"batches_built": 40, "batch_s": 2.0, "update_s": 6.0},
            "__all_modules__": {"learner_connector": {"connector_pipeline_timer": 0.03125}},
        },
    }
    algo = SimpleNamespace(
        config=SimpleNamespace(num_env_runners=2, num_learners=0),
        metrics=SimpleNamespace(peek=lambda key, default=0.0: 0.0),
    )
    t = iteration_timings(algo, result, asynchronous=True)
    # APPO/IMPALA: learn_s is the driver's wait; the learner worked beside it
    assert (t["learn_other_s"], t["sgd_s"]) == (None, None)
    # the pipeline ran once per batch: 40 calls of 1/32 s, not the mean of one (issue 43's fix)
    assert t["learner_connector_s"] == pytest.approx(1.25)
