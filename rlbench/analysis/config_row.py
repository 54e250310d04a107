"""The configuration row every verdict reads, typed (issue 58, item 1): :mod:`rlbench.analysis.configs`' row read once
into :class:`ConfigRow`, whose fields name the columns the verdicts (:mod:`rlbench.analysis.findings`,
:mod:`rlbench.analysis.sampling`), the next step and autoconfig's walk read. Standard library only, as
:mod:`rlbench.analysis.findings`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import Any


def num(value) -> float | None:
    """``value`` as a float, or None when it is missing, not a number or NaN."""
    if value is None:
        return None
    try:
        f = float(value)
    except (TypeError, ValueError):
        return None
    return None if math.isnan(f) else f


@dataclass(frozen=True)
class ConfigRow:
    """One configuration row as the verdicts read it: :mod:`rlbench.analysis.configs`' columns of the same names
    (docs/SCHEMA.md; every knob a verdict names among them), each a number or None (missing, not a number, NaN:
    :func:`num`), but for the flags, the words (None if not a string) and the grid index, kept as written."""

    index: Any = None
    n: float | None = None
    statuses: str | None = None
    reason: str | None = None
    noisy: bool = False
    asynchronous: bool = False
    env_steps_per_s: float | None = None
    env_steps_per_s_cv: float | None = None
    sample_frac: float | None = None
    learn_frac: float | None = None
    sync_frac: float | None = None
    other_frac: float | None = None
    replay_frac: float | None = None
    sampler_busy_frac: float | None = None
    learner_busy_frac: float | None = None
    busy_overlap_frac: float | None = None
    policy_lag_mean: float | None = None
    policy_lag_max: float | None = None
    cpus: float | None = None
    cpus_used: float | None = None
    env_runner_cpus_allocated: float | None = None
    env_runner_cpus_used: float | None = None
    learner_cpus_allocated: float | None = None
    learner_cpus_used: float | None = None
    aggregator_cpus_allocated: float | None = None
    aggregator_cpus_used: float | None = None
    driver_cpus_allocated: float | None = None
    driver_cpus_used: float | None = None
    learner_gpus: float | None = None
    gpu_util_pct: float | None = None
    host_steal_pct: float | None = None
    foreign_cpu_pct: float | None = None
    node_types: float | None = None
    straggler_env_runner: float | None = None
    straggler_step_ratio: float | None = None
    straggler_cpu_ratio: float | None = None
    straggler_wait_s: float | None = None
    straggler_wait_frac: float | None = None
    straggler_repeats: float | None = None
    learn_batch_s: float | None = None
    learn_update_s: float | None = None
    learn_copy_s: float | None = None
    learn_device_s: float | None = None
    learn_cpus_used: float | None = None
    learner_torch_threads: float | None = None
    gpu_busy_pct: float | None = None
    sgd_steps_per_iteration: float | None = None
    sgd_step_s: float | None = None
    cpu_twin_index: float | None = None
    cpu_twin_env_steps_per_s: float | None = None
    cpu_twin_ratio: float | None = None
    cpu_twin_evidence: str | None = None
    runner_sample_s: float | None = None
    runner_sample_cpu_s: float | None = None
    runner_env_s: float | None = None
    runner_env_cpu_s: float | None = None
    runner_inference_s: float | None = None
    runner_other_s: float | None = None
    sample_wait_s: float | None = None
    sample_steps_per_s: float | None = None
    sampling_efficiency: float | None = None
    env_ceiling_steps_per_s: float | None = None
    learner_steps_per_s: float | None = None
    ceiling_env_steps_per_s: float | None = None
    ceiling_frac: float | None = None
    num_env_runners: float | None = None
    num_envs_per_env_runner: float | None = None
    num_cpus_per_env_runner: float | None = None
    num_gpus_per_env_runner: float | None = None
    num_cpus_for_main_process: float | None = None
    num_cpus_per_learner: float | None = None
    num_learners: float | None = None
    driver_torch_threads: float | None = None
    minibatch_size: float | None = None
    num_epochs: float | None = None
    total_train_batch_size: float | None = None
    train_batch_size_per_learner: float | None = None

    @classmethod
    def of(cls, row: Mapping[str, Any] | ConfigRow) -> ConfigRow:
        """``row`` read once: a configuration row (a frame's record, a test's dict), or itself."""
        if isinstance(row, ConfigRow):
            return row
        raw = {f.name: row.get(f.name) for f in fields(cls)}
        words = {k: raw[k] if isinstance(raw[k], str) else None for k in ("statuses", "reason", "cpu_twin_evidence")}
        flags = {k: bool(raw[k]) for k in ("noisy", "asynchronous")}
        return cls(**{k: num(v) for k, v in raw.items()} | words | flags | {"index": raw["index"]})

    def cpus_of(self, role: str) -> tuple[float | None, float | None]:
        """(allocated, used) CPUs of a role: ``env_runner``, ``learner``, ``aggregator``, ``driver``."""
        return getattr(self, f"{role}_cpus_allocated"), getattr(self, f"{role}_cpus_used")
