"""Energy over a time window, from the counters the samplers recorded: GPUs (NVML) and CPU packages (RAPL).

Both samplers store each device's energy since their first reading of it (counter differences,
wraps allowed for), so the energy over a window is, per device, its last sample in the window
minus its first, scaled to the window's length (the samples lie up to one sample period inside its
ends). A device with a missing reading in the window, or fewer than two samples there, makes the
figure None: a partial sum would read as a measurement.
"""

from __future__ import annotations

import pandas as pd

#: (utilization kind, device column, energy column, joules per unit) of each counter.
GPU_COUNTER = ("gpu", "gpu_index", "gpu_energy_mj", 1e-3)
CPU_COUNTER = ("cpu_energy", "cpu_package", "cpu_energy_uj", 1e-6)


def counter_energy_j(
    utilization: pd.DataFrame, window: tuple[float, float] | None, counter: tuple[str, str, str, float]
) -> float | None:
    """Energy (J) all devices of one counter kind used over ``window`` (seconds of the trial), or None.

    A device is (node, index): on a cluster every node's devices count from 0 (``node_id`` is null
    locally). None without rows of that kind, or when any device has fewer than two samples in the
    window or a missing reading there.
    """
    kind, device, column, joules = counter
    # Cheap way out first (no GPU, no RAPL: the usual case), checked per trial on big sweeps.
    if window is None or utilization.empty or device not in utilization or not utilization[device].notna().any():
        return None
    rows = utilization[utilization["kind"] == kind]
    if rows.empty:
        return None
    node = rows["node_id"].fillna("") if "node_id" in rows else pd.Series("", index=rows.index)
    rows = rows.assign(_dev=node + ":" + rows[device].astype("Int64").astype(str))
    inside = rows[(rows["t_s"] >= window[0]) & (rows["t_s"] <= window[1])].sort_values("t_s")
    total_j = 0.0
    for key in sorted(rows.loc[rows[device].notna(), "_dev"].unique()):
        d = inside[inside["_dev"] == key]
        if len(d) < 2 or d[column].isna().any():
            return None
        span_s = float(d["t_s"].iloc[-1] - d["t_s"].iloc[0])
        if span_s <= 0:
            return None
        delta_j = (float(d[column].iloc[-1]) - float(d[column].iloc[0])) * joules
        total_j += delta_j / span_s * (window[1] - window[0])
    return total_j


def gpu_energy_j(utilization: pd.DataFrame, window: tuple[float, float] | None) -> float | None:
    """Energy all GPUs used over ``window``, from NVML's total-energy counter (see the module), or None."""
    return counter_energy_j(utilization, window, GPU_COUNTER)


def cpu_energy_j(utilization: pd.DataFrame, window: tuple[float, float] | None) -> float | None:
    """Energy all CPU packages used over ``window``, from RAPL's package counters, or None.

    The whole package, whoever ran on it: on a shared machine other work is counted too.
    """
    return counter_energy_j(utilization, window, CPU_COUNTER)


def total_energy_j(utilization: pd.DataFrame, window: tuple[float, float] | None) -> tuple[float | None, str | None]:
    """(CPU + GPU energy over ``window``, which counters it sums: ``cpu+gpu``, ``cpu``, ``gpu``), or
    (None, None) when neither was measured."""
    cpu, gpu = cpu_energy_j(utilization, window), gpu_energy_j(utilization, window)
    parts = [name for name, value in (("cpu", cpu), ("gpu", gpu)) if value is not None]
    if not parts:
        return None, None
    return (cpu or 0.0) + (gpu or 0.0), "+".join(parts)
