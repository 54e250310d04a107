"""A warm trial's windows read as rounds (issue 56's ``rounds_per_process``): the unit a history's steps and a sweep's
variants pair by, one row a window, each with its own throughput and phase split."""

from __future__ import annotations

import pandas as pd

from rlbench.analysis.trial_rows import steady_throughput
from rlbench.analysis.windows import steady

#: Per-process figures a window's row leaves null (they are the whole process's: counted once, in its window 0 row).
PROCESS_COLUMNS = ("cpu_ms_per_k", "foreign_cpu_pct", "time_to_target_s", "trial_wall_s")


def windows_as_rounds(
    trials: pd.DataFrame, iterations: pd.DataFrame
) -> tuple[pd.DataFrame, pd.DataFrame, dict[str, str]]:
    """A run's trials with each warm trial (``rounds_per_process``, issue 56) read as one row per measured window:
    window k of the trial of round r is round r+k, ``trial_id`` ``<id>#w<k>`` (window 0 keeps the trial's id, and
    its learning curve and per-process figures, :data:`PROCESS_COLUMNS`), its ``env_steps_per_s`` the median of that
    window's steady iterations (:func:`~rlbench.analysis.trial_rows.steady_throughput`, the one definition), and
    the iterations relabelled alike so each window gets its own phase split. Also each window row's trial (process)
    id. A trial read in one window, or cold, is left as it is."""
    if trials.empty or iterations.empty or "window" not in iterations:
        return trials, iterations, {}
    window = pd.to_numeric(iterations["window"], errors="coerce")
    its = steady(iterations.assign(window=window))
    counts = its.dropna(subset=["window"]).groupby("trial_id")["window"].nunique()
    warm = {str(t) for t, n in counts.items() if n > 1}
    if not warm:
        return trials, iterations, {}
    rows, process_of = [], {}
    for _, row in trials.iterrows():
        tid = str(row["trial_id"])
        if tid not in warm:
            rows.append(row.to_dict())
            continue
        mine = its[its["trial_id"] == tid]
        for k in sorted(int(w) for w in mine["window"].dropna().unique()):
            read = row.to_dict()
            rid = tid if k == 0 else f"{tid}#w{k}"
            process_of[rid] = tid
            base = read.get("round", read.get("repeat"))
            read.update(trial_id=rid, round=int(base) + k, window=k, process=tid)
            read["env_steps_per_s"] = steady_throughput(mine[mine["window"] == k])
            if k:
                read.update({c: None for c in PROCESS_COLUMNS if c in read})
            rows.append(read)
    ids = iterations["trial_id"].astype(str)
    relabel = [f"{t}#w{int(w)}" if t in warm and pd.notna(w) and int(w) > 0 else t for t, w in zip(ids, window)]
    return pd.DataFrame(rows), iterations.assign(trial_id=relabel), process_of
