"""A history folder read whole: every run's trials as one table, the rounds of different runs kept apart.

A history grows by runs (:class:`~rlbench.results.layout.HistoryFolder`): the first measures some releases, a
later one adds releases or rounds, and a ``confirm`` run measures a flagged step's two releases alone. The
``history`` runs are read as one trials table whose ``round`` is global (``run number x 1000 + round``), so a
step between two releases pairs the rounds in which both ran, in whichever run; its ``trial_id`` is the run's
folder name and the trial's (``01-history/t000r0``). Each trial gets its phase split
(:func:`~rlbench.analysis.history.split.phase_rates`) and its build facts (how its figures were read, the
framework's effective config: :mod:`rlbench.analysis.history.changes`). Each run also says what it was: its
releases, rounds, start and end, and the machine's load while it ran (the sweep's ``uptime`` readings are
not kept; the load is the mean over its trials of the CPU that was not theirs, ``foreign_cpu_pct``). The folder's
trends, with their confirmations and each change point's ``rlbench bisect``, are read from it alone
(:func:`history_trends_of`, :func:`with_bisect`).
"""

from __future__ import annotations

import json
import re
import shlex
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from packaging.version import InvalidVersion, Version

from rlbench.adapters.base import ordered_versions
from rlbench.analysis.curves import Curve, trial_curves
from rlbench.analysis.history.split import phase_rates
from rlbench.analysis.window_rounds import windows_as_rounds
from rlbench.results.events_file import BuildEvent
from rlbench.results.layout import ITERATIONS_TABLE, TRIALS_TABLE, HistoryFolder, ResultsFolder
from rlbench.results.manifest import ManifestError, read_manifest
from rlbench.spec.load import axis_column
from rlbench.spec.versions import variant_name

#: Runs of one history are numbered below this; a run's round r is ``run x ROUND_BLOCK + r`` in the history.
ROUND_BLOCK = 1000


@dataclass(frozen=True)
class RunInfo:
    """One run of a history."""

    name: str
    """Its folder under ``runs/`` (``01-history``)."""
    kind: str
    """``history`` or ``confirm``."""
    versions: list[str]
    """The releases it measured, oldest first."""
    rounds: int
    """Its rounds."""
    trials: int
    """Trials it holds."""
    ok: int
    """Of them, finished ok."""
    started: str | None
    """When it began (the manifest's time)."""
    ended: str | None
    """When it ended (None: interrupted, or running)."""
    foreign_cpu_pct: float | None
    """Mean over its trials of the machine's CPU that was not theirs while they ran (other users' load), in % of
    one core."""
    processes: int | None = None
    """Its trial processes, where a process read several rounds (``rounds_per_process``); None: one a trial row."""
    rounds_per_process: int = 1
    """Rounds each trial process read as its measured windows (the spec's ``rounds_per_process``, issue 56): its
    rounds then came from ``rounds / rounds_per_process`` processes a release and configuration; 1: a process a
    round."""


@dataclass
class HistoryData:
    """Everything a history's analysis needs, from its folder."""

    package: str | None
    """The distribution whose releases it compares (``ray``)."""
    axes: list[str]
    """The grid's trials-table columns (a configuration is one value of each)."""
    trials: pd.DataFrame
    """The ``history`` runs' trials: global ``round``, ``trial_id`` ``<run>/<id>``, the split columns."""
    facts: dict[str, dict[str, Any]] = field(default_factory=dict)
    """trial_id -> its build facts (``read_paths``, ``framework_config``), where it recorded them."""
    curves: dict[str, Curve] = field(default_factory=dict)
    """trial_id -> its learning curve (:func:`~rlbench.analysis.curves.trial_curves`), where it has one."""
    confirmations: list[tuple[RunInfo, pd.DataFrame]] = field(default_factory=list)
    """Each ``confirm`` run with its trials (its own rounds; ``trial_id`` prefixed alike)."""
    runs: list[RunInfo] = field(default_factory=list)
    """Every run, oldest first."""

    def versions(self) -> list[str]:
        """Every release the history runs measured, oldest first."""
        found = {v for r in self.runs if r.kind == "history" for v in r.versions}
        return ordered_versions(found)


def variant_versions(spec: dict[str, Any]) -> tuple[str | None, dict[str, str]]:
    """(package, variant name -> version) of a history run's spec: each variant pins one release of one package."""
    package, out = None, {}
    for variant in spec.get("variants") or []:
        pins = variant.get("packages") or {}
        if isinstance(pins, dict) and len(pins) == 1:
            ((package, version),) = pins.items()
            out[str(variant.get("name"))] = str(version)
    return package, out


#: The roles whose CPU is the training's own: the CPU cost counts them (Ray's own processes and rlbench's left out).
TRAINING_ROLES = ("driver", "learner", "env_runner", "aggregator")


def cpu_ms_per_k(trials: pd.DataFrame) -> pd.Series:
    """Per trial, the CPU milliseconds the training's processes (:data:`TRAINING_ROLES`) spent per 1,000 env steps
    over the steady window: the cores they kept busy (``<role>_cpus_used``) over the steps per second; None where
    either is missing."""
    columns = [f"{role}_cpus_used" for role in TRAINING_ROLES if f"{role}_cpus_used" in trials]
    if not columns:
        return pd.Series([None] * len(trials), index=trials.index, dtype=object)
    cores = trials[columns].apply(pd.to_numeric, errors="coerce").sum(axis=1, min_count=1)
    rate = pd.to_numeric(trials["env_steps_per_s"], errors="coerce")
    return (cores / rate * 1e6).where(rate > 0)


def _facts(folder: ResultsFolder, trial_id: str) -> dict[str, Any]:
    build = folder.trial(trial_id).event(BuildEvent)
    facts = {"read_paths": build.read_paths, "framework_config": build.framework_config} if build else {}
    return {k: v for k, v in facts.items() if v is not None}


def read_run(
    path: Path, number: int, kind: str
) -> tuple[RunInfo, pd.DataFrame, dict[str, dict[str, Any]], dict, dict[str, Curve]]:
    """One run: its info, its trials (global rounds, prefixed ids, split columns, ``version``), the trials' build
    facts, its spec and the trials' learning curves (prefixed ids). A run with no tables yet (interrupted before any
    trial ended) has an empty table."""
    folder = ResultsFolder(path)
    try:
        manifest = read_manifest(folder.manifest)
        # a run finished by a resume ended when its last resume did (the first run's own end is None: interrupted)
        ended = manifest.resumes[-1].ended_at if manifest.resumes else manifest.ended_at
        spec, started = manifest.spec, manifest.started_at
    except (ManifestError, OSError):
        spec, started, ended = {}, None, None
    package, versions = variant_versions(spec)
    table = folder.table(TRIALS_TABLE)
    trials = pd.read_parquet(table) if table.exists() else pd.DataFrame(columns=["trial_id", "status", "variant"])
    its = folder.table(ITERATIONS_TABLE)
    iterations = pd.read_parquet(its) if its.exists() else pd.DataFrame()
    learned = {"trial_id", "iteration", "env_steps_sampled", "wall_s", "episode_return_mean"} <= set(iterations)
    curves = trial_curves(iterations, trials.get("trial_id", [])) if learned and len(trials) else {}
    # the CPU per 1,000 env steps is a process's (its cores over its steady windows, its throughput over them), made
    # before its windows become rounds, so it stays on its window 0 row alone (PROCESS_COLUMNS)
    trials = trials.assign(cpu_ms_per_k=cpu_ms_per_k(trials)) if len(trials) else trials
    trials, iterations, process_of = windows_as_rounds(trials, iterations)
    split = phase_rates(iterations)
    trials = trials.join(split, on="trial_id") if len(trials) else trials
    facts = {f"{path.name}/{t}": _facts(folder, process_of.get(str(t), str(t))) for t in trials.get("trial_id", [])}
    for t, text in zip(trials.get("trial_id", []), trials.get("versions", [None] * len(trials))):
        try:
            imported = json.loads(text) if isinstance(text, str) else None
        except ValueError:
            imported = None
        if isinstance(imported, dict):
            facts[f"{path.name}/{t}"]["versions"] = {str(k): v for k, v in imported.items() if isinstance(v, str)}
    rounds = trials["round"] if "round" in trials else trials.get("repeat", pd.Series(dtype=int))
    trials = trials.assign(
        trial_id=[f"{path.name}/{t}" for t in trials["trial_id"]],
        round=[number * ROUND_BLOCK + int(r) for r in rounds],
        run=path.name,
        version=[versions.get(str(v)) for v in trials["variant"]],
    )
    foreign = pd.to_numeric(trials.get("foreign_cpu_pct", pd.Series(dtype=float)), errors="coerce")
    info = RunInfo(
        name=path.name,
        kind=kind,
        versions=ordered_versions(versions.values()),
        rounds=int(spec.get("rounds") or 0),
        trials=len(trials),
        ok=int((trials["status"] == "ok").sum()) if len(trials) else 0,
        started=None if started is None else str(started),
        ended=None if ended is None else str(ended),
        foreign_cpu_pct=float(foreign.mean()) if foreign.notna().any() else None,
        rounds_per_process=int(spec.get("rounds_per_process") or 1),
        processes=len(trials) - len([t for t, p in process_of.items() if t != p]) if process_of else None,
    )
    return info, trials, facts, spec | {"_package": package}, {f"{path.name}/{t}": c for t, c in curves.items()}


def read_history(path: Path) -> HistoryData:
    """The history in folder ``path`` (:class:`~rlbench.results.layout.HistoryFolder`), every run read."""
    history = HistoryFolder(Path(path))
    frames, data = [], HistoryData(None, [], pd.DataFrame())
    for run in history.runs():
        number, kind = int(re.match(r"\d+", run.name).group()), run.name.split("-")[1]  # type: ignore[union-attr]
        info, trials, facts, spec, curves = read_run(run, number, kind)
        data.runs.append(info)
        data.facts.update(facts)
        if kind == "confirm":
            data.confirmations.append((info, trials))
            continue
        data.curves.update(curves)
        frames.append(trials)
        data.package = data.package or spec.get("_package")
        if not data.axes and spec.get("grid"):
            data.axes = [axis_column(str(a)) for a in spec["grid"]]
    frames = [f for f in frames if len(f)]
    data.trials = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()
    return data


def neighbours(before: list[str], added: list[str]) -> set[str]:
    """Each of the releases ``added`` to a history of ``before`` beside its neighbours once both are in order: run
    with them, so that every step of a new release pairs round by round."""
    ordered = ordered_versions({*before, *added})
    return {ordered[i + d] for v in added for i in [ordered.index(v)] for d in (-1, 1) if 0 <= i + d < len(ordered)}


def history_trends_of(out_dir: Path, threshold: float):
    """(the folder's :class:`HistoryData`, its trends with their confirmations): read from the folder alone (the
    page is rebuilt from the folder, never from a run's memory)."""
    from rlbench.analysis.change import paired
    from rlbench.analysis.history.trends import confirm_steps, history_trends
    from rlbench.analysis.variants import grid_points

    data = read_history(out_dir)
    if data.trials.empty:
        return data, []
    package = data.package or ""
    versions = [(v, variant_name(package, v)) for v in data.versions()]
    trends = history_trends(
        data.trials,
        data.axes,
        versions,
        threshold=threshold,
        facts=data.facts,
        package=data.package,
        curves=data.curves,
    )
    confirmations = {}
    for info, trials in data.confirmations:
        if len(info.versions) != 2 or trials.empty:
            continue
        a, b = info.versions
        ok = trials[trials["status"] == "ok"]
        for point in grid_points(trials, [c for c in data.axes if c in trials]):
            mine = ok.loc[ok.index.isin(point.rows)]
            sides = []
            for side in (a, b):
                at = mine[mine["version"] == side]
                sides.append({int(r): float(v) for r, v in zip(at["round"], at["env_steps_per_s"]) if np.isfinite(v)})
            confirmations[(point.label, a, b)] = (info.name, paired(*sides))
    return data, confirm_steps(trends, confirmations, threshold)


def with_bisect(trends: list, package: str, bisect: tuple[Path, str | None, list[str] | None] | None) -> list:
    """The trends with each throughput change point's ``between`` (releases the index lists between its two sides;
    None: not read) and its ``rlbench bisect`` command where such releases lie between (or the index was not read).
    ``bisect``: (the spec, ``--index``, the index's listing), None where the history is rebuilt without them."""
    if bisect is None:
        return trends
    config, index, listed = bisect
    out = []
    for trend in trends:
        points = []
        for point in trend.change_points:
            if point.metric == "throughput" and point.reported:
                between = None
                if listed is not None:
                    try:
                        low, high = Version(point.before), Version(point.after)
                        between = sum(1 for v in listed if low < Version(v) < high)
                    except InvalidVersion:
                        between = None
                command = ["rlbench", "bisect", str(config), "--package", package]
                command += ["--good", point.before, "--bad", point.after] if point.verdict == "regressed" else []
                command += ["--good", point.after, "--bad", point.before] if point.verdict == "improved" else []
                command += ["--index", index] if index else []
                line = shlex.join(command) if between is None or between > 0 else None
                point = replace(point, between=between, bisect=line)
            points.append(point)
        out.append(replace(trend, change_points=points))
    return out
