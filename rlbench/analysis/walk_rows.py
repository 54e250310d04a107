"""The configuration rows of a results folder as its trials stand now: what ``rlbench autoconfig``'s walk reads each
point's verdict from, between its steps.

The same tables and the same rows as the report's (:func:`rlbench.analysis.tables.build_tables`, then
:func:`rlbench.analysis.configs.configurations` over the trials whose plan was read), so a point's verdict in the walk
is the one its report would give. The autoconfig driver calls it, the one module of the analysis the run room imports.
Rebuilding the tables from the per-trial files costs about 0.3 s at 4 trials here (2 cores, 2026-11-28).
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from rlbench.analysis.configs import configurations, result_axes, sm_count
from rlbench.analysis.tables import build_tables, measured_rows
from rlbench.results.layout import ResultsFolder


def configuration_rows(out_dir: Path) -> pd.DataFrame:
    """One row per configuration of the folder's finished trials, with its verdicts' inputs (the tables are rebuilt
    and written as the report would)."""
    tables = build_tables(Path(out_dir))
    trials = measured_rows(tables["trials"])
    if trials.empty:
        return pd.DataFrame()
    manifest = ResultsFolder(Path(out_dir)).read_manifest()
    return configurations(
        trials, result_axes(manifest, trials), tables["iterations"], tables["utilization"], sm_count(manifest)
    )
