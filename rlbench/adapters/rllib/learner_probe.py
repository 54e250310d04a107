"""What each learner did in an iteration, exactly: busy seconds, updates, and the policy lag of each update.

RLlib 2.60 reports none of these per iteration. Its learners time nothing for PPO, IMPALA's
``learner_thread_update_timer`` is an average, and the policy lag
(``learners/<module>/diff_num_grad_updates_vs_sampler_policy``) is logged with ``window=1``, so a
result shows the last update's lag only. rlbench installs this probe on every learner after the
algorithm is built (the driver's own learner, or each remote learner through
``LearnerGroup.foreach_learner``); it wraps, on the learner instance only:

- ``_make_batch_if_necessary``: the learner connector turning episodes into a train batch (GAE
  for PPO, V-trace inputs for APPO/IMPALA), timed when it builds a batch (IMPALA's update thread
  calls it again with the batch already made; that call returns at once and is not counted). RLlib
  2.40-2.43 have no such method: their update calls the learner connector pipeline inline, and that call is timed
  (:mod:`.compat`);
- ``before_gradient_based_update``: called once per ``Learner.update``, that is once per weights
  version (``_weights_seq_no`` goes up by one): counted as one learner update;
- ``_update``: one minibatch step (forward, loss, backward, the gradient all-reduce with several
  learners, the optimizer step): timed and counted;
- ``after_gradient_based_update`` of a learner with target networks (DQN's and SAC's: they keep
  ``last_update_ts_by_mid``): the target-network update RLlib runs after every ``Learner.update`` when
  ``target_network_update_freq`` env steps have passed (SAC: a soft update, ``tau``, every time), with the
  learning-rate schedulers' step; timed and counted as busy. Each module's ``get_target_network_pairs``
  (called once per target update, by that method alone) is wrapped too, to count the target updates
  exactly (RLlib keeps only a lifetime sum);
- ``_compute_off_policyness``: RLlib's policy lag of the minibatch (the learner's weights version
  minus the version the env runner sampled it with, averaged over the batch's valid timesteps);
  rlbench reads back the value RLlib logged and keeps its mean and its max. The version goes up at
  the start of each update, so on-policy counts 1: PPO's lag is always 1 (measured with 2 learners),
  APPO's and IMPALA's were 2.5-4.8 on the tiny env (tests/e2e/test_async_e2e.py).

The learner's time is split (docs/SCHEMA.md, ``learn_batch_s`` ...): the batch builds' seconds (``batch_s``, with
their count ``batches``) and the minibatch updates' (``update_s``) are disjoint parts of ``busy_s``. On a GPU learner
(the learner's device is CUDA, :func:`rlbench.adapters.cuda_clock.cuda_clock`) it also times:

- the host-to-device copies (``copy_s``): the ``NumpyToTensor`` pieces of the learner connector pipeline (PPO's
  train batch moves to the device there, before the GAE piece runs the value pass on the device), RLlib's
  ``_convert_batch_type`` (a replayed batch, DQN and SAC), and the GPU loader threads' ``_to_device_safe``
  (APPO and IMPALA with a GPU: beside the batch building, on threads of their own);
- the device's own time in each ``_update`` (``device_s``): a CUDA event pair recorded around each (no sync), read
  once, after one synchronize, when the learner's metrics are reduced: once per ``Learner.update`` for PPO, once
  per aggregation (``BATCHES_PER_AGGREGATION`` updates) for APPO and IMPALA. GAE's value pass runs on the device
  inside the batch build (RLlib PR 47401): it is counted once, in ``batch_s``, not in ``device_s``.

The totals are logged into the learner's own MetricsLogger (``sum``, ``mean`` and ``max``
reductions, cleared on every reduce: on 2.40-2.52 by ``clear_on_reduce=True``, :func:`.compat.per_iteration`),
so RLlib carries them to the driver with the learner's
results and sums (means, maxes) them over learners: ``result["learners"]["rlbench"][...]``.
Standard library only at import time; it runs inside RLlib's learner processes. ``install`` takes the clock and
the device clock as seams: the tests drive a hand-made learner on fake ones (known answers on the CPU).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from rlbench.adapters.cuda_clock import DeviceClock, cuda_clock
from rlbench.adapters.rllib import compat

#: Keys (under ``learners``) of what the probes log.
BUSY_S = ("rlbench", "busy_s")
UPDATES = ("rlbench", "updates")
SGD_STEPS = ("rlbench", "sgd_steps")
LAG_MEAN = ("rlbench", "policy_lag_mean")
LAG_MAX = ("rlbench", "policy_lag_max")
TARGET_UPDATE_S = ("rlbench", "target_update_s")
TARGET_UPDATES = ("rlbench", "target_updates")
#: The learner's split: train batches built (and their seconds), minibatch updates' seconds; on a GPU learner the
#: host-to-device copies and the device's time in the updates.
BATCHES = ("rlbench", "batches_built")
BATCH_S = ("rlbench", "batch_s")
UPDATE_S = ("rlbench", "update_s")
COPY_S = ("rlbench", "copy_s")
DEVICE_S = ("rlbench", "device_s")

#: The attribute RLlib 2.60's DQN learner (and SAC's, its subclass) keeps: module id -> env step of its last
#: target-network update. A learner without it has no target network to time.
TARGET_TIMESTEPS = "last_update_ts_by_mid"

#: RLlib's key (under the module id) of one minibatch's policy lag, and the batch column it is computed from.
RLLIB_LAG_KEY = "diff_num_grad_updates_vs_sampler_policy"
WEIGHTS_SEQ_NO = "weights_seq_no"

#: The learner connector piece that turns the batch's arrays into tensors on the learner's device (RLlib 2.60's
#: ``NumpyToTensor``): on a GPU learner, the host-to-device copy.
COPY_CONNECTOR = "NumpyToTensor"

#: Default of :func:`install`'s ``device_clock``: ask :func:`~rlbench.adapters.cuda_clock.cuda_clock` of the learner's
#: device.
LEARNER_DEVICE = object()


def _wrap(learner: Any, name: str, make: Callable[[Callable], Callable]) -> None:
    original = getattr(learner, name)
    wrapped = make(original)
    wrapped.__wrapped__ = original  # type: ignore[attr-defined]
    setattr(learner, name, wrapped)


def install(
    learner: Any,
    *,
    clock: Callable[[], float] = time.perf_counter,
    device_clock: Any = LEARNER_DEVICE,
    at: compat.Release | None = None,
) -> bool:
    """Install the probes on one learner (idempotent); returns True.

    Args:
        clock: the host's seconds (a fake one in tests).
        device_clock: the GPU's events (:class:`~rlbench.adapters.cuda_clock.DeviceClock`); by default the
            learner's own device's, None on a CPU learner (no copy or device time is logged then).
        at: the RLlib release whose paths to take (:mod:`.compat`); by default the running Ray's.
    """
    if getattr(learner, "_rlbench_probe", False):
        return True
    metrics, perf = learner.metrics, clock
    _SUM, _MEAN, _MAX = (compat.per_iteration(reduce, at) for reduce in ("sum", "mean", "max"))
    connector_timer = compat.connector_timer_key(at)
    if connector_timer is not None:  # RLlib's own timer of the pipeline, made an iteration's mean
        compat.register(metrics, connector_timer, "mean", at)
    device: DeviceClock | None = (
        cuda_clock(getattr(learner, "_device", None)) if device_clock is LEARNER_DEVICE else device_clock
    )

    def busy(seconds: float) -> None:
        metrics.log_value(BUSY_S, seconds, **_SUM)

    def copied(seconds: float) -> None:
        metrics.log_value(COPY_S, seconds, **_SUM)

    def built(seconds: float) -> None:
        busy(seconds)
        metrics.log_value(BATCH_S, seconds, **_SUM)
        metrics.log_value(BATCHES, 1, **_SUM)

    def make_batch(original):
        def timed(*args, **kwargs):
            data = kwargs.get("training_data", args[0] if args else None)
            builds = getattr(data, "batch", None) is None
            t = perf()
            try:
                return original(*args, **kwargs)
            finally:
                if builds:
                    built(perf() - t)

        return timed

    def before_update(original):
        def counted(*args, **kwargs):
            metrics.log_value(UPDATES, 1, **_SUM)
            return original(*args, **kwargs)

        return counted

    pending: list[tuple[Any, Any]] = []  # (start, end) device events of the updates not read yet

    def update(original):
        def timed(*args, **kwargs):
            events = (device.event(), device.event()) if device is not None else None
            if events:
                events[0].record()
            t = perf()
            try:
                return original(*args, **kwargs)
            finally:
                seconds = perf() - t
                if events:
                    events[1].record()
                    pending.append(events)
                busy(seconds)
                metrics.log_value(UPDATE_S, seconds, **_SUM)
                metrics.log_value(SGD_STEPS, 1, **_SUM)

        return timed

    def reduce(original):
        # the end of a reporting window (PPO: of Learner.update): one synchronize makes every pending pair readable
        def read_device_time(*args, **kwargs):
            if pending:
                done, pending[:] = list(pending), []
                device.synchronize()
                metrics.log_value(DEVICE_S, sum(start.seconds_to(end) for start, end in done), **_SUM)
            return original(*args, **kwargs)

        return read_device_time

    def timed_copy(original):
        def timed(*args, **kwargs):
            t = perf()
            try:
                return original(*args, **kwargs)
            finally:
                copied(perf() - t)

        return timed

    def off_policyness(original):
        def read_back(batch, *args, **kwargs):
            out = original(batch, *args, **kwargs)
            # Only modules whose batch carries the sampler's weights version get a lag from RLlib.
            lags = [
                metrics.peek((mid, RLLIB_LAG_KEY), default=None)
                for mid, module_batch in batch.items()
                if WEIGHTS_SEQ_NO in module_batch
            ]
            lags = [float(v) for v in lags if v is not None]
            if lags:
                lag = sum(lags) / len(lags)
                metrics.log_value(LAG_MEAN, lag, **_MEAN)
                metrics.log_value(LAG_MAX, lag, **_MAX)
            return out

        return read_back

    pairs_calls = [0]  # get_target_network_pairs calls, over every module of this learner

    def counted_pairs(original):
        def counted(*args, **kwargs):
            pairs_calls[0] += 1
            return original(*args, **kwargs)

        return counted

    def after_update(original):
        def timed(*args, **kwargs):
            calls, t = pairs_calls[0], perf()
            try:
                return original(*args, **kwargs)
            finally:
                seconds = perf() - t
                busy(seconds)
                metrics.log_value(TARGET_UPDATE_S, seconds, **_SUM)
                metrics.log_value(TARGET_UPDATES, pairs_calls[0] - calls, **_SUM)

        return timed

    if compat.batch_build_in_learner(at):
        _wrap(learner, "_make_batch_if_necessary", make_batch)
    elif getattr(learner, "_learner_connector", None) is not None:  # 2.40-2.43: the pipeline is called inline
        _time_calls(learner._learner_connector, perf, built)
    if hasattr(learner, TARGET_TIMESTEPS):
        for module in _modules(learner):
            if hasattr(module, "get_target_network_pairs"):
                _wrap(module, "get_target_network_pairs", counted_pairs)
        _wrap(learner, "after_gradient_based_update", after_update)
    _wrap(learner, "before_gradient_based_update", before_update)
    _wrap(learner, "_update", update)
    if hasattr(learner, "_compute_off_policyness"):
        _wrap(learner, "_compute_off_policyness", off_policyness)
    if device is not None:
        _wrap(metrics, "reduce", reduce)
        _time_copies(learner, perf, copied, timed_copy)
    learner._rlbench_probe = True
    return True


def _time_copies(
    learner: Any, perf: Callable[[], float], copied: Callable[[float], None], timed_copy: Callable[[Callable], Callable]
) -> None:
    """Time a GPU learner's host-to-device copies where RLlib 2.60 makes them (the module docstring's list)."""
    for piece in _pieces(getattr(learner, "_learner_connector", None)):
        if type(piece).__name__ == COPY_CONNECTOR:
            _time_calls(piece, perf, copied)
    if hasattr(learner, "_convert_batch_type"):
        _wrap(learner, "_convert_batch_type", timed_copy)
    for thread in getattr(learner, "_gpu_loader_threads", None) or ():
        if hasattr(thread, "_to_device_safe"):
            _wrap(thread, "_to_device_safe", timed_copy)


def _pieces(connector: Any) -> list[Any]:
    """Every piece of a connector pipeline, nested pipelines opened (a piece is itself when it has none)."""
    if connector is None:
        return []
    inner = getattr(connector, "connectors", None)
    if not isinstance(inner, list):
        return [connector]
    return [piece for c in inner for piece in _pieces(c)]


_TIMED_CLASSES: dict[type, type] = {}


def _time_calls(piece: Any, perf: Callable[[], float], report: Callable[[float], None]) -> None:
    """Time every call of one connector piece. A pipeline calls its pieces as ``piece(...)``, which Python looks up
    on the class, so the piece's class becomes a subclass of its own of the same name (RLlib names its per-piece
    timers by the class name: they stay as they were) whose ``__call__`` adds the seconds."""
    cls = type(piece)
    timed_cls = _TIMED_CLASSES.get(cls)
    if timed_cls is None:

        def __call__(self, *args, **kwargs):
            t = self._rlbench_clock()
            try:
                return super(timed_cls, self).__call__(*args, **kwargs)
            finally:
                self._rlbench_report(self._rlbench_clock() - t)

        timed_cls = _TIMED_CLASSES[cls] = type(
            cls.__name__, (cls,), {"__call__": __call__, "__module__": cls.__module__}
        )
    piece._rlbench_clock, piece._rlbench_report = perf, report
    piece.__class__ = timed_cls


def _modules(learner: Any) -> list[Any]:
    """The learner's RLModules, unwrapped (RLlib's MultiRLModule maps module ids to them)."""
    multi = getattr(learner, "module", None)
    return [m.unwrapped() if hasattr(m, "unwrapped") else m for m in (multi.values() if multi is not None else ())]


def install_on_learners(algo: Any) -> int:
    """Install the probes on the algorithm's learners; returns how many learners have them."""
    group = algo.learner_group
    if group is None:
        return 0
    if group.is_local:
        install(group._learner)
        return 1
    return sum(1 for r in group.foreach_learner(install) if r.ok and r.get())
